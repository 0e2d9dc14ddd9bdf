#include "core/plan.hpp"

namespace hetplan {

std::string_view to_string(Schedule schedule) {
  return schedule == Schedule::one_f_one_b ? "1f1b" : "interleaved";
}

std::string_view to_string(GradientExchange exchange) {
  return exchange == GradientExchange::ring ? "ring" : "parameter-server";
}

}  // namespace hetplan
