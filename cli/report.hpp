// Rendering of estimates for the terminal and as JSON. Pure functions of result structs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/plan.hpp"
#include "core/units.hpp"
#include "formats/rounded_json.hpp"
#include "sim/estimator.hpp"
#include "sim/replica_groups.hpp"

namespace hetplan::cli {

// Six significant digits (core/units.hpp), so that JSON output does not depend on the last bits
// of floating-point arithmetic across compilers.
using hetplan::round6;
// A copy of `value` with every floating-point number in it rounded by round6.
using formats::rounded;

// value with `precision` digits after the point, for the text reports.
std::string fixed(double value, int precision);
// The 80% interval of `tokens_per_s` under the estimate's step band, "71122-152261"; empty when a
// chip of the plan states no band (docs/models/uncertainty.md).
std::string tokens_interval_text(const sim::Estimate& estimate, double tokens_per_s);

std::string estimate_text(const sim::Estimate& estimate, const Plan& plan);
nlohmann::ordered_json estimate_json(const sim::Estimate& estimate, const Plan& plan);

// A plan with replica groups on different islands (data parallelism across chip types).
std::string replica_groups_text(const sim::MixedDataParallelStep& step, const Plan& plan);
nlohmann::ordered_json replica_groups_json(const sim::MixedDataParallelStep& step,
                                           const Plan& plan);
// Its simulation (`hetplan simulate`), beside the analytic step.
std::string replica_groups_simulation_text(const sim::ReplicaGroupsSimulation& simulated,
                                           const sim::MixedDataParallelStep& step,
                                           const Plan& plan);
nlohmann::ordered_json replica_groups_simulation_json(const sim::ReplicaGroupsSimulation& simulated,
                                                      const sim::MixedDataParallelStep& step,
                                                      const Plan& plan);

}  // namespace hetplan::cli
