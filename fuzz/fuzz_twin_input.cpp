// The digital twin's input as the worker reads it: JSON to twin::input_from_json, then
// check_twin_input (seed corpus: plans of the default scenario lowered onto its cluster), or a
// resource pool's ({"pool": ...}) to pool_from_json and check_twin_pool.
// The readers may only throw std::runtime_error, naming the field; the checks never throw. An
// input the check accepts must survive to_json and back unchanged, since that is how it reaches
// the worker; a pool the check accepts must merge onto one fabric.
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "sim/twin/json.hpp"
#include "sim/twin_input.hpp"

namespace {

// Reads `document` with `read` and, when `check` accepts it, writes it back and reads it again.
// The accepted input, or nothing.
template <typename Read, typename Check>
auto exercise(const nlohmann::json& document, Read read, Check check)
    -> std::optional<decltype(read(document))> {
  decltype(read(document)) input;
  try {
    input = read(document);
  } catch (const std::runtime_error& error) {
    if (error.what()[0] == '\0') __builtin_trap();
    return std::nullopt;
  }
  if (!check(input).empty()) return std::nullopt;
  const std::string text = hetplan::sim::twin::to_json(input).dump();
  const auto again = read(nlohmann::json::parse(text));
  if (hetplan::sim::twin::to_json(again).dump() != text) __builtin_trap();
  return input;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hetplan::sim;
  const nlohmann::json document = nlohmann::json::parse(data, data + size, nullptr, false);
  if (document.is_discarded()) return 0;  // not JSON: the worker's parser rejects it
  if (twin::is_pool(document)) {
    const auto pool = exercise(document, twin::pool_from_json, check_twin_pool);
    if (pool && merge_pool(*pool).size() != pool->jobs.size()) __builtin_trap();
  } else {
    (void)exercise(document, twin::input_from_json, check_twin_input);
  }
  return 0;
}
