// Goodput of a plan from the scenario's `reliability:` section: its nodes' failure rate, its
// checkpoint's size and the best (or the given) checkpoint interval (docs/models/reliability.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/scenario.hpp"
#include "models/reliability.hpp"

namespace hetplan::sim {

// Goodput of a plan running at `tokens_per_s` with steps of `step_time_s`. None without a
// reliability section (or without a step time); `notes` says what was not counted.
std::optional<models::Goodput> plan_goodput(const Scenario& scenario, const Plan& plan,
                                            double tokens_per_s, double step_time_s,
                                            std::vector<std::string>& notes);

}  // namespace hetplan::sim
