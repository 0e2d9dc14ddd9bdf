#include "formats/paths.hpp"

#include <filesystem>

namespace hetplan::formats {

std::string resolve_relative(const std::string& written, const std::string& referring_file) {
  const std::filesystem::path path(written);
  if (path.is_absolute()) return written;
  const auto folder = std::filesystem::path(referring_file).parent_path();
  return (folder / path).lexically_normal().string();
}

}  // namespace hetplan::formats
