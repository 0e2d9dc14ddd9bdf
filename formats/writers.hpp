// Writing files hetplan produces: plan files in the format the plan loader reads, and an
// atomic write (temporary file in the same folder, then rename) so that an interrupted write
// leaves the old file whole.
#pragma once

#include <string>

#include "core/plan.hpp"

namespace hetplan::formats {

// The plan as a hetplan/plan/v1 document that load_plan reads back unchanged.
std::string plan_yaml(const Plan& plan, const std::string& comment = {});

// Writes `text` to `path` atomically. Throws std::runtime_error naming the path on failure.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace hetplan::formats
