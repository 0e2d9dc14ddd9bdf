// validation::validate_published_runs on arbitrary text written as the one published-run file
// of a scratch folder, predicted with the bundled profiles: the case reader, the hardware
// matching (chip, NVLink and network figures in free text) and the estimate of every case it
// accepts. Seed corpus: the bundled published-run files (dev set, FP8 and mixture-of-experts
// runs), each cut to its first 4 KB.
#include "fuzz/fuzz_common.hpp"
#include "validation/published_runs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const hetplan::fuzz::ScratchFolder scratch("hetplan-fuzz-runs-");
  static const std::string profiles = std::string(HETPLAN_SOURCE_DIR) + "/profiles";
  hetplan::fuzz::write_input(scratch.path() / "runs.yaml", data, size);
  hetplan::fuzz::expect_only_input_errors([&] {
    const auto report =
        hetplan::validation::validate_published_runs(scratch.path().string(), profiles);
    // The report's text and JSON are what a user sees: build both.
    (void)hetplan::validation::report_text(report);
    (void)hetplan::validation::report_json(report).dump();
  });
  return 0;
}
