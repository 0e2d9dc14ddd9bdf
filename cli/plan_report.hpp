// Rendering of plan-search results for the terminal and as JSON. Pure functions of result
// structs; timings are rendered only on request, since they differ from run to run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/scenario.hpp"
#include "planner/search.hpp"

namespace hetplan::cli {

std::string search_text(const planner::SearchResult& result, const Scenario& scenario);
nlohmann::ordered_json search_json(const planner::SearchResult& result, const Scenario& scenario);

}  // namespace hetplan::cli
