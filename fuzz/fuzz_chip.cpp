// parse_chip on arbitrary text (seed corpus: profiles/*.yaml). A profile it accepts is written
// again (chip_yaml) and read back with the same comments, each kept with its key.
#include <optional>
#include <stdexcept>

#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = hetplan::fuzz::as_text(data, size);
  std::optional<hetplan::ChipProfile> chip;
  hetplan::fuzz::expect_only_input_errors(
      [&] { chip = hetplan::formats::parse_chip(text, "fuzz-chip.yaml"); });
  if (!chip) return 0;
  std::string again;
  try {
    again = hetplan::formats::chip_yaml(*chip);
  } catch (const std::invalid_argument&) {
    return 0;  // a profile the writer refuses (a figure with no exact spelling): its own error
  }
  const hetplan::ChipProfile back = hetplan::formats::parse_chip(again, "fuzz-chip-again.yaml");
  if (back.comments != chip->comments) __builtin_trap();
  return 0;
}
