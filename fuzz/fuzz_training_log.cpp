// parse_training_log on arbitrary text (seed corpus: the Megatron-LM, MindSpeed-LLM and
// Megatron-DeepSpeed logs in tests/importers/data), then summarize() as callers do. Only
// hetplan::InputError may come out.
#include "fuzz/fuzz_common.hpp"
#include "importers/training_logs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = hetplan::fuzz::as_text(data, size);
  hetplan::fuzz::expect_only_input_errors([&] {
    const hetplan::importers::TrainingLog log =
        hetplan::importers::parse_training_log(text, "train.log");
    volatile double sink = hetplan::importers::summarize(log).median_elapsed_s;
    sink = sink + static_cast<double>(log.arguments.size() + log.iterations.size());
    (void)sink;
  });
  return 0;
}
