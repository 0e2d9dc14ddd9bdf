// hetplan's version, from the project() line of the top CMakeLists.txt: one place for the CLI's
// --version and everything that records which program made a result.
#pragma once

#include <string_view>

namespace hetplan {

std::string_view version();  // "0.1.0"

}  // namespace hetplan
