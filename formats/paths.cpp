#include "formats/paths.hpp"

#include <cstdlib>
#include <filesystem>

namespace hetplan::formats {

std::string resolve_relative(const std::string& written, const std::string& referring_file) {
  const std::filesystem::path path(written);
  if (path.is_absolute()) return written;
  const auto folder = std::filesystem::path(referring_file).parent_path();
  return (folder / path).lexically_normal().string();
}

namespace {

bool holds_bundled_data(const std::filesystem::path& folder) {
  std::error_code error;
  return std::filesystem::is_directory(folder / "profiles", error);
}

}  // namespace

std::string bundled_data_dir() {
  if (const char* set = std::getenv("HETPLAN_DATA_DIR"); set && *set) return set;
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const auto installed = self.parent_path().parent_path() / "share" / "hetplan";
    if (holds_bundled_data(installed)) return installed.string();
  }
  const std::filesystem::path source = HETPLAN_SOURCE_DATA_DIR;
  if (holds_bundled_data(source)) return source.string();
  return {};
}

std::string bundled_path(const std::string& relative) {
  const std::string root = bundled_data_dir();
  if (root.empty()) return relative;
  return (std::filesystem::path(root) / relative).string();
}

}  // namespace hetplan::formats
