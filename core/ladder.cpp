#include "core/ladder.hpp"

namespace hetplan {

std::string_view to_string(LadderStep step) {
  switch (step) {
    case LadderStep::single_card:
      return "single-card";
    case LadderStep::collectives:
      return "collectives";
    case LadderStep::checkpoint:
      return "checkpoint";
    case LadderStep::boundary:
      return "boundary";
    case LadderStep::scale:
      return "scale";
    case LadderStep::gradient_exchange:
      return "gradient-exchange";
  }
  return "?";
}

}  // namespace hetplan
