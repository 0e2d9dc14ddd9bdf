#pragma once

#include <string>

namespace hetplan::formats {

// Resolves a path written inside a file relative to that file's folder (absolute stays as is).
std::string resolve_relative(const std::string& written, const std::string& referring_file);

}  // namespace hetplan::formats
