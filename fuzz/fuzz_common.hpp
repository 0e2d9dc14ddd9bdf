// Shared by the libFuzzer targets: run one loader on the input and let only InputError pass;
// the property fuzzers read their numbers with ByteReader.
#pragma once

#include <cmath>
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

// Numbers for the property fuzzers, read from the input one byte at a time (0 past its end).
class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  int next() { return at_ < size_ ? data_[at_++] : 0; }
  // A time in seconds from two bytes: 0 when `zero_one_in` > 0 and the first byte is a multiple
  // of it, else a mantissa of 1 to 9.9 times 10 to a power from `lowest` up, `powers` of them.
  double time(int lowest, int powers, int zero_one_in) {
    const int a = next(), b = next();
    if (zero_one_in > 0 && a % zero_one_in == 0) return 0.0;
    return (1.0 + (b % 90) / 10.0) * std::pow(10.0, a % powers + lowest);
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

}  // namespace hetplan::fuzz
