// The digital twin's input as the worker reads it: JSON to twin::input_from_json, then
// check_twin_input (seed corpus: plans of the default scenario lowered onto its cluster), or a
// resource pool's ({"pool": ...}) to pool_from_json and check_twin_pool.
// input_from_json may only throw std::runtime_error, naming the field; check_twin_input never
// throws. An input the check accepts must survive to_json and back unchanged, since that is how
// it reaches the worker.
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "sim/twin/json.hpp"
#include "sim/twin_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json document = nlohmann::json::parse(data, data + size, nullptr, false);
  if (document.is_discarded()) return 0;  // not JSON: the worker's parser rejects it
  if (hetplan::sim::twin::is_pool(document)) {
    // A resource pool's jobs: the same rules, and merge_pool may only throw
    // std::invalid_argument, which check_twin_pool turns into a problem.
    hetplan::sim::TwinPoolInput pool;
    try {
      pool = hetplan::sim::twin::pool_from_json(document);
    } catch (const std::runtime_error& error) {
      if (error.what()[0] == '\0') __builtin_trap();
      return 0;
    }
    if (!hetplan::sim::check_twin_pool(pool).empty()) return 0;
    if (hetplan::sim::merge_pool(pool).size() != pool.jobs.size()) __builtin_trap();
    const std::string text = hetplan::sim::twin::to_json(pool).dump();
    const auto again = hetplan::sim::twin::pool_from_json(nlohmann::json::parse(text));
    if (hetplan::sim::twin::to_json(again).dump() != text) __builtin_trap();
    return 0;
  }
  hetplan::sim::TwinInput input;
  try {
    input = hetplan::sim::twin::input_from_json(document);
  } catch (const std::runtime_error& error) {
    if (error.what()[0] == '\0') __builtin_trap();
    return 0;
  }
  if (!hetplan::sim::check_twin_input(input).empty()) return 0;
  const std::string text = hetplan::sim::twin::to_json(input).dump();
  const auto again = hetplan::sim::twin::input_from_json(nlohmann::json::parse(text));
  if (hetplan::sim::twin::to_json(again).dump() != text) __builtin_trap();
  return 0;
}
