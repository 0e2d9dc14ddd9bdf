// Rendering of plan-search results for the terminal and as JSON. Pure functions of result
// structs; timings are rendered only on request, since they differ from run to run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/scenario.hpp"
#include "planner/search.hpp"
#include "validation/ladder.hpp"

namespace hetplan::cli {

// `ladder`: where the cluster stands on the validation ladder; every plan is marked validated or
// not by it (with none, nothing is validated).
std::string search_text(const planner::SearchResult& result, const Scenario& scenario,
                        const validation::LadderReport* ladder);
nlohmann::ordered_json search_json(const planner::SearchResult& result, const Scenario& scenario,
                                   const validation::LadderReport* ladder);

}  // namespace hetplan::cli
