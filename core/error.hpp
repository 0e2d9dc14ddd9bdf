// Error policy (docs/architecture.md#errors):
// - Bad input ends the request with an InputError: it names file:line:column, the field path and
//   what was expected. The CLI prints its one-line message and exits with code 2.
// - An infeasible plan is not an error: it is a result with reasons.
// - Asserts are for programmer errors only; anything input can trigger is an InputError.
#pragma once

#include <stdexcept>
#include <cstddef>
#include <string>
#include <string_view>

namespace hetplan {

struct SourceLocation {
  std::string file;  // as the user named it
  int line = 0;      // 1-based; 0 when unknown (then only the file is named)
  int column = 0;    // 1-based
};

std::string to_string(const SourceLocation& location);

// The line and column of a byte offset in a text (an offset past the end is the end), for
// errors a reader finds by scanning: a NUL byte, a size limit, a table it reached the end of the
// file without finding.
SourceLocation location_at(const std::string& file, std::string_view text, std::size_t offset);

class InputError : public std::runtime_error {
 public:
  // field: the dotted path of the offending field ("memory.capacity", "stages[2].tp"); may be
  // empty for errors about the file as a whole. message: what was expected and what was found.
  InputError(SourceLocation location, std::string field, std::string message);

  const SourceLocation& location() const { return location_; }
  const std::string& field() const { return field_; }
  const std::string& message() const { return message_; }

 private:
  SourceLocation location_;
  std::string field_;
  std::string message_;
};

}  // namespace hetplan
