// Rendering of calibration results and held-out checks for the terminal and as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "validation/calibrate.hpp"

namespace hetplan::cli {

std::string fits_text(const validation::Calibration& calibration);
std::string checks_text(const std::vector<validation::StepCheck>& checks);
nlohmann::ordered_json calibration_json(const validation::Calibration& calibration,
                                        const std::vector<validation::StepCheck>& checks);

}  // namespace hetplan::cli
