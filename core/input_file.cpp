#include "core/input_file.hpp"

#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace hetplan {

std::string read_input_file(const std::string& path, std::size_t max_bytes, std::string_view what) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (std::filesystem::is_directory(status))
    throw InputError({path, 0, 0}, "", "expected a file, got a directory");
  // A pipe or a device would block or never end: only regular files are read.
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw InputError({path, 0, 0}, "", "expected a regular file, got a pipe, socket or device");
  if (!std::filesystem::is_regular_file(status))
    throw InputError({path, 0, 0}, "", "cannot open the file for reading");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, 0}, "", "cannot open the file for reading");
  in.seekg(0, std::ios::end);
  const auto size = in.tellg();
  if (size < 0) throw InputError({path, 0, 0}, "", "cannot read the file");
  if (static_cast<std::size_t>(size) > max_bytes) {
    throw InputError({path, 0, 0}, "",
                     "expected " + std::string(what) + " of at most " +
                         std::to_string(max_bytes >> 20) + " MiB, got " + std::to_string(size) +
                         " bytes");
  }
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), size);
  if (!in) throw InputError({path, 0, 0}, "", "cannot read the file");
  return text;
}

void refuse_nul_bytes(std::string_view text, const std::string& file, std::string_view what) {
  const std::size_t nul = text.find('\0');
  if (nul == std::string_view::npos) return;
  throw InputError(location_at(file, text, nul), "",
                   "expected " + std::string(what) + ", got a NUL byte");
}

std::string quoted(std::string_view text) {
  constexpr std::size_t kMaxShown = 40;
  std::string out = "\"";
  for (char c : text.substr(0, kMaxShown)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  if (text.size() > kMaxShown) out += "...";
  out += '"';
  return out;
}

}  // namespace hetplan
