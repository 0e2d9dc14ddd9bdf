// TwinInput and TwinResult (and a pool's) as JSON: what crosses the boundary to and from the worker process.
// Reading is strict (every field required, types checked); a malformed document throws
// std::runtime_error naming the field.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/twin_input.hpp"

namespace hetplan::sim::twin {

nlohmann::ordered_json to_json(const TwinInput& input);
TwinInput input_from_json(const nlohmann::json& json);

nlohmann::ordered_json to_json(const TwinResult& result);
TwinResult result_from_json(const nlohmann::json& json);

nlohmann::ordered_json to_json(const TwinBreakdown& breakdown);

// A pool is {"pool": {...}}, so that the worker tells it from a single plan's input.
nlohmann::ordered_json to_json(const TwinPoolInput& pool);
bool is_pool(const nlohmann::json& json);
TwinPoolInput pool_from_json(const nlohmann::json& json);

nlohmann::ordered_json to_json(const TwinPoolResult& result);
TwinPoolResult pool_result_from_json(const nlohmann::json& json);

}  // namespace hetplan::sim::twin
