// Shared by the libFuzzer targets: run one loader on the input and let only InputError pass;
// the property fuzzers read their numbers with ByteReader; the targets that read files write
// the input into a ScratchFolder.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
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

// A folder of this process's own under the temporary directory (`<prefix><pid>`), emptied when
// made and removed with its contents when destroyed: a target keeps one in a static.
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& prefix)
      : path_(std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Writes the input's bytes as `file`, replacing what it held.
inline void write_input(const std::filesystem::path& file, const std::uint8_t* data,
                        std::size_t size) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
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
