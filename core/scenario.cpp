#include "core/scenario.hpp"

namespace hetplan {

std::string_view to_string(Objective objective) {
  return objective == Objective::throughput ? "throughput" : "cost";
}

}  // namespace hetplan
