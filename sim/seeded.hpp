// Counter-based draws for the twin's variability: a draw depends only on its key (seed and
// indices mixed together), never on the order anything runs in, and is the same on every
// machine.
#pragma once

#include <cstdint>
#include <string_view>

namespace hetplan::sim {

// splitmix64's finaliser.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The top 53 bits of `bits` as a number in [0, 1).
inline double unit_interval(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) / 9007199254740992.0;
}

// FNV-1a of a name, to key draws by names.
inline std::uint64_t name_hash(std::string_view name) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

}  // namespace hetplan::sim
