// Every floating-point number of a JSON document rounded to six significant digits
// (core/units.hpp round6): the one rounding of the JSON the CLI, the sweep and the exporters
// write, so that their figures do not depend on the last bits of floating-point arithmetic.
#pragma once

#include <nlohmann/json.hpp>

#include "core/units.hpp"

namespace hetplan::formats {

inline nlohmann::ordered_json rounded(nlohmann::ordered_json value) {
  if (value.is_number_float()) return round6(value.get<double>());
  if (value.is_structured()) {
    for (auto& element : value) element = rounded(std::move(element));
  }
  return value;
}

}  // namespace hetplan::formats
