// Goodput of a plan from the scenario's `reliability:` section: its nodes' failure rate, its
// checkpoint's size and the best (or the given) checkpoint interval (docs/models/reliability.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/scenario.hpp"
#include "models/reliability.hpp"
#include "sim/estimator.hpp"
#include "sim/twin_input.hpp"

namespace hetplan::sim {

// Goodput of a plan running at `tokens_per_s` with steps of `step_time_s`. None without a
// reliability section (or without a step time); `notes` says what was not counted.
std::optional<models::Goodput> plan_goodput(const Scenario& scenario, const Plan& plan,
                                            double tokens_per_s, double step_time_s,
                                            std::vector<std::string>& notes);

// A simulated step as every front end reports it: the twin's result beside the analytic
// estimate, goodput from the scenario's reliability section, and notes (the stragglers drawn,
// what goodput did not count).
struct SimulatedStep {
  TwinResult result;
  std::uint64_t seed = 0;
  double analytic_step_time_s = 0;
  double analytic_tokens_per_s = 0;
  std::optional<models::Goodput> goodput;
  std::vector<std::string> notes;
  std::vector<std::string> stage_islands;  // in pipeline order
};

SimulatedStep simulated_step(const Scenario& scenario, const Plan& plan, const Estimate& estimate,
                             const TwinInput& input, const TwinResult& result);

}  // namespace hetplan::sim
