// validation::validate_published_runs on arbitrary text written as the one published-run file
// of a scratch folder, predicted with the bundled profiles: the case reader, the hardware
// matching (chip, NVLink and network figures in free text) and the estimate of every case it
// accepts. Seed corpus: the bundled published-run files (dev set, FP8 and mixture-of-experts
// runs), each cut to its first 4 KB.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fuzz/fuzz_common.hpp"
#include "validation/published_runs.hpp"

namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path folder;
  Scratch() {
    folder = fs::temp_directory_path() / ("hetplan-fuzz-runs-" + std::to_string(::getpid()));
    fs::remove_all(folder);
    fs::create_directories(folder);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(folder, ignored);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Scratch scratch;
  static const std::string profiles = std::string(HETPLAN_SOURCE_DIR) + "/profiles";
  const fs::path file = scratch.folder / "runs.yaml";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  hetplan::fuzz::expect_only_input_errors([&] {
    const auto report =
        hetplan::validation::validate_published_runs(scratch.folder.string(), profiles);
    // The report's text and JSON are what a user sees: build both.
    (void)hetplan::validation::report_text(report);
    (void)hetplan::validation::report_json(report).dump();
  });
  return 0;
}
