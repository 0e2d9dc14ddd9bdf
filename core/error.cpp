#include "core/error.hpp"

namespace hetplan {

std::string to_string(const SourceLocation& location) {
  if (location.line <= 0) return location.file;
  return location.file + ":" + std::to_string(location.line) + ":" +
         std::to_string(location.column);
}

SourceLocation location_at(const std::string& file, std::string_view text, std::size_t offset) {
  if (offset > text.size()) offset = text.size();
  int line = 1, column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {file, line, column};
}

namespace {
std::string compose(const SourceLocation& location, const std::string& field,
                    const std::string& message) {
  std::string text = to_string(location);
  text += ": ";
  if (!field.empty()) {
    text += field;
    text += ": ";
  }
  text += message;
  return text;
}
}  // namespace

InputError::InputError(SourceLocation location, std::string field, std::string message)
    : std::runtime_error(compose(location, field, message)),
      location_(std::move(location)),
      field_(std::move(field)),
      message_(std::move(message)) {}

}  // namespace hetplan
