// Rendering of calibration results and held-out checks for the terminal and as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "validation/calibrate.hpp"
#include "validation/run_calibration.hpp"

namespace hetplan::cli {

std::string fits_text(const validation::Calibration& calibration);
std::string checks_text(const std::vector<validation::StepCheck>& checks);
nlohmann::ordered_json calibration_json(const validation::Calibration& calibration,
                                        const std::vector<validation::StepCheck>& checks);

// A calibration from training runs (`calibrate --from-runs`): each term fitted or kept at its
// prior, and each run's step before and after.
std::string run_fit_text(const validation::RunCalibration& calibration);
nlohmann::ordered_json run_fit_json(const validation::RunCalibration& calibration);

}  // namespace hetplan::cli
