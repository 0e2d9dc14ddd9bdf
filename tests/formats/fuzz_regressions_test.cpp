// Inputs the fuzzers (fuzz/) found to misbehave, kept in data/fuzz-regressions/<target>-*: each
// must now end in an InputError. The prefix names the loader: chip, plan, hf_config or
// check_file (the input written to a file next to the fixtures).
#include <filesystem>

#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "tests/formats/test_support.hpp"
// After the project headers: <signal.h> (pulled in by gtest) defines si_value, a parameter
// name in core/units.hpp.
#include <gtest/gtest.h>

namespace hetplan {
namespace {

using testing::input_error_of;
using testing::kDataDir;

TEST(FuzzRegressions, EveryKeptInputIsAnInputError) {
  const std::filesystem::path folder = kDataDir + "/fuzz-regressions";
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name == "README.md") continue;
    SCOPED_TRACE(name);
    const std::string path = entry.path().string();
    const std::string text = formats::read_text_file(path);
    std::string error;
    if (name.starts_with("chip-")) {
      error = input_error_of([&] { (void)formats::parse_chip(text, path); });
    } else if (name.starts_with("plan-")) {
      error = input_error_of([&] { (void)formats::parse_plan(text, path); });
    } else if (name.starts_with("hf_config-")) {
      error = input_error_of([&] { (void)formats::parse_hf_config(text, path); });
    } else if (name.starts_with("check_file-")) {
      error = input_error_of([&] { (void)formats::check_file(path); });
    } else {
      ADD_FAILURE() << "unknown prefix (expected chip-, plan-, hf_config- or check_file-)";
      continue;
    }
    EXPECT_TRUE(error.starts_with(path)) << error;
  }
}

}  // namespace
}  // namespace hetplan
