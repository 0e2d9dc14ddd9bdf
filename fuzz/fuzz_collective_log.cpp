// The collective-benchmark importers on arbitrary text: nccl-tests / rccl-tests text, nccl-tests
// -J JSON and hccl_test output (seed corpus: tests/importers/data), with and without hints, and
// the format sniffer. Only hetplan::InputError may come out.
#include "fuzz/fuzz_common.hpp"
#include "importers/collective_logs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = hetplan::fuzz::as_text(data, size);
  namespace importers = hetplan::importers;
  const importers::LogHints hints{"all_reduce", 8};
  volatile double sink = 0;
  auto touch = [&](const std::vector<importers::CollectiveSweep>& sweeps) {
    for (const auto& sweep : sweeps) {
      for (const auto& point : sweep.points) {
        sink = sink + point.bytes + point.out_of_place_busbw.value_or(0.0) +
               point.in_place_busbw.value_or(0.0);
      }
    }
  };
  (void)importers::sniff_collective_log(text);
  hetplan::fuzz::expect_only_input_errors(
      [&] { touch(importers::parse_nccl_tests(text, "f.log")); });
  hetplan::fuzz::expect_only_input_errors(
      [&] { touch(importers::parse_nccl_tests_json(text, "f.json", hints)); });
  hetplan::fuzz::expect_only_input_errors(
      [&] { touch(importers::parse_hccl_test(text, "f.txt", hints)); });
  return 0;
}
