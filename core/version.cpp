#include "core/version.hpp"

namespace hetplan {

std::string_view version() {
  return HETPLAN_VERSION;
}

}  // namespace hetplan
