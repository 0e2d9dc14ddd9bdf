// Reading an input file whole, with a size bound, and showing a value in an error message: the
// two things every loader (formats/) and importer (importers/) needs the same way.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hetplan {

// The whole file. Throws InputError naming the file when it is not a readable regular file or
// is larger than max_bytes ("expected <what> of at most N MiB, got M bytes").
std::string read_input_file(const std::string& path, std::size_t max_bytes,
                            std::string_view what = "a file");

// Throws InputError at the line and column of the first NUL byte of a text (a log cut by a
// crash is often padded with them; a NUL is never part of what a tool prints):
// "expected <what>, got a NUL byte".
void refuse_nul_bytes(std::string_view text, const std::string& file, std::string_view what);

// A value as error messages show it: in double quotes, at most 40 characters then "...",
// quotes and backslashes escaped, control characters as spaces.
std::string quoted(std::string_view text);

}  // namespace hetplan
