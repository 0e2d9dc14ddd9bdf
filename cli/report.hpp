// Rendering of estimates for the terminal and as JSON. Pure functions of result structs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/plan.hpp"
#include "sim/estimator.hpp"

namespace hetplan::cli {

std::string estimate_text(const sim::Estimate& estimate, const Plan& plan);
nlohmann::ordered_json estimate_json(const sim::Estimate& estimate, const Plan& plan);

}  // namespace hetplan::cli
