// Helpers for the loader tests: run a loader and return the InputError's message.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace hetplan::testing {

inline const std::string kSourceDir = HETPLAN_SOURCE_DIR;
inline const std::string kDataDir = kSourceDir + "/tests/formats/data";

// The what() of the InputError that load() throws; a marker string when it throws nothing or
// something else, so that EXPECT_EQ shows what happened.
template <typename Load>
std::string input_error_of(Load&& load) {
  try {
    load();
  } catch (const InputError& error) {
    return error.what();
  } catch (const std::exception& error) {
    return std::string("<not an InputError: ") + error.what() + ">";
  } catch (...) {
    return "<not an InputError: unknown exception>";
  }
  return "<no error>";
}

// Replaces the one occurrence of `from` in `text` (fails the test when it is not there once).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "fixture text lacks: " << from;
  if (at == std::string::npos) return text;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << "fixture text repeats: " << from;
  return text.replace(at, from.size(), to);
}

}  // namespace hetplan::testing
