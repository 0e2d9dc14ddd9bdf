// parse_validation_record on arbitrary text (seed corpus: the test records).
#include "formats/loaders.hpp"
#include "fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = hetplan::fuzz::as_text(data, size);
  hetplan::fuzz::expect_only_input_errors(
      [&] { (void)hetplan::formats::parse_validation_record(text, "fuzz-record.yaml"); });
  return 0;
}
