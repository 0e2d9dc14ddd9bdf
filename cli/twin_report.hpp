// The digital twin from the command line: options from the scenario, goodput from the
// scenario's reliability section, and the text and JSON reports of simulated steps.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/scenario.hpp"
#include "models/reliability.hpp"
#include "sim/estimator.hpp"
#include "sim/twin_input.hpp"

namespace hetplan::cli {

struct Simulated {
  sim::TwinResult result;
  std::uint64_t seed = 0;
  double analytic_step_time_s = 0;
  double analytic_tokens_per_s = 0;
  std::optional<models::Goodput> goodput;
  std::vector<std::string> notes;
  std::vector<std::string> stage_islands;  // in pipeline order
};

Simulated simulated(const Scenario& scenario, const Plan& plan, const sim::Estimate& estimate,
                    const sim::TwinInput& input, const sim::TwinResult& result);

std::string simulation_text(const Simulated& simulated);
nlohmann::ordered_json simulation_json(const Simulated& simulated);

// A plan of a search, simulated: its rank by the analytic model and its simulation.
struct RankedSimulation {
  std::size_t analytic_rank = 0;  // 1-based, in the search's ranking
  Simulated simulated;
};
// Best first: by simulated goodput when the scenario gives reliability figures, by simulated
// tokens/s otherwise; ties by the analytic rank.
void rank_by_simulation(std::vector<RankedSimulation>& plans);
std::string ranked_simulations_text(const std::vector<RankedSimulation>& plans);
nlohmann::ordered_json ranked_simulations_json(const std::vector<RankedSimulation>& plans);

}  // namespace hetplan::cli
