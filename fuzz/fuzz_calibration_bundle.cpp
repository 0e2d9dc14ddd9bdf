// parse_calibration_bundle on arbitrary text (seed corpus: probe bundles), and for a bundle it
// accepts the held-out checks against the bundled H100 profile (validation::check_bundle: the
// training step's estimate and each layer's operators, dense or a mixture of experts): no
// exception but an input error, and no predicted time that is not a finite number.
#include <cmath>
#include <cstdlib>

#include "formats/loaders.hpp"
#include "fuzz/fuzz_common.hpp"
#include "validation/calibrate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const hetplan::ChipProfile profile = hetplan::formats::load_chip(
      std::string(HETPLAN_SOURCE_DIR) + "/profiles/nvidia-h100-sxm5-80gb.yaml");
  const std::string text = hetplan::fuzz::as_text(data, size);
  hetplan::fuzz::expect_only_input_errors([&] {
    const auto bundle = hetplan::formats::parse_calibration_bundle(text, "fuzz-bundle.json");
    for (const auto& check : hetplan::validation::check_bundle(profile, bundle)) {
      if (check.feasible && !std::isfinite(check.predicted_s)) std::abort();
    }
  });
  return 0;
}
