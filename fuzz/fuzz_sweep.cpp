// parse_sweep on arbitrary text, then its points when the grid is small (seed corpus: the
// bundled sweeps and variants).
#include "fuzz/fuzz_common.hpp"
#include "sweep/sweep.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = hetplan::fuzz::as_text(data, size);
  hetplan::fuzz::expect_only_input_errors([&] {
    const hetplan::sweep::Sweep sweep = hetplan::sweep::parse_sweep(text, "fuzz-sweep.yaml");
    std::size_t grid = 1;
    for (const auto& axis : sweep.axes) grid *= axis.values.size();
    if (grid <= 10000) (void)hetplan::sweep::points(sweep);
  });
  return 0;
}
