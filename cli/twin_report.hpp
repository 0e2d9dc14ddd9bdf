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
#include "sim/goodput.hpp"
#include "sim/twin_input.hpp"

namespace hetplan::cli {

using Simulated = sim::SimulatedStep;  // sim/goodput.hpp: what every front end reports

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
