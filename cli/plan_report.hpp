// Rendering of plan-search results for the terminal and as JSON. Pure functions of result
// structs; timings are rendered only on request, since they differ from run to run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/scenario.hpp"
#include "planner/search.hpp"
#include "sim/twin_input.hpp"
#include "validation/ladder.hpp"

namespace hetplan::cli {

// `ladder`: where the cluster stands on the validation ladder; every plan is marked validated or
// not by it (with none, nothing is validated). `pool`: the resource pool's jobs simulated alone
// and together on the fabric, shown under the pool in the three states (may be null).
std::string search_text(const planner::SearchResult& result, const Scenario& scenario,
                        const validation::LadderReport* ladder,
                        const sim::PoolSimulation* pool = nullptr);
nlohmann::ordered_json search_json(const planner::SearchResult& result, const Scenario& scenario,
                                   const validation::LadderReport* ladder,
                                   const sim::PoolSimulation* pool = nullptr);

// The pool's simulation: a few lines for the three-state table, and as JSON.
std::string pool_simulation_text(const sim::PoolSimulation& pool);
nlohmann::ordered_json pool_simulation_json(const sim::PoolSimulation& pool);

}  // namespace hetplan::cli
