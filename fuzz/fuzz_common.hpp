// Shared by the libFuzzer targets: run one loader on the input and let only InputError pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace hetplan::fuzz {

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Calls load(); an InputError is the expected outcome for bad input. Any other exception escapes
// to libFuzzer, which reports it as a crash (an uncaught exception aborts).
template <typename Load>
void expect_only_input_errors(Load&& load) {
  try {
    load();
  } catch (const InputError& error) {
    // The message must name something: touch it so a broken message is noticed by ASan.
    if (error.what()[0] == '\0') __builtin_trap();
  }
}

}  // namespace hetplan::fuzz
