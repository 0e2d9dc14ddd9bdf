// SHA-256 (FIPS 180-4): the hashes of a plan's input files (exporters/, input_hashes) and of
// the evidence file a validation record names (validation/evidence).
#pragma once

#include <string>
#include <string_view>

namespace hetplan {

// Lower-case hex SHA-256 of bytes.
std::string sha256_hex(std::string_view data);

}  // namespace hetplan
