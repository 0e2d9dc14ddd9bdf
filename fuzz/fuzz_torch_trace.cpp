// parse_torch_trace on arbitrary text (seed corpus: the Kineto exports and trace-* bad fixtures
// in tests/importers/data). Only hetplan::InputError may come out.
#include "fuzz/fuzz_common.hpp"
#include "importers/torch_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = hetplan::fuzz::as_text(data, size);
  hetplan::fuzz::expect_only_input_errors([&] {
    const hetplan::importers::TorchTrace trace =
        hetplan::importers::parse_torch_trace(text, "trace.json");
    volatile double sink = trace.span_s;
    for (const auto& op : trace.kernels) sink = sink + op.total_s + op.max_s;
    for (const auto& op : trace.cpu_ops) sink = sink + op.total_s;
    (void)sink;
  });
  return 0;
}
