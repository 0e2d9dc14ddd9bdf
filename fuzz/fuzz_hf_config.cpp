// parse_hf_config on arbitrary text (seed corpus: Hugging Face config.json files). Also computes
// the parameter count of every accepted shape, as the cost models do.
#include "formats/loaders.hpp"
#include "fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = hetplan::fuzz::as_text(data, size);
  hetplan::fuzz::expect_only_input_errors([&] {
    const hetplan::ModelShape model = hetplan::formats::parse_hf_config(text, "config.json");
    volatile double parameters = model.total_parameters();
    (void)parameters;
  });
  return 0;
}
