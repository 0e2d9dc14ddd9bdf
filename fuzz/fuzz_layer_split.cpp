// The layer split against brute force on small problems built from the input's bytes: stage
// speeds and fixed parts from 1e-12 to 1e6 s, caps, least layers, chunks and micro-batches.
// A split that is not the optimum, breaks a constraint or misses the layer total, or a
// problem with a split that the solver calls impossible (or the reverse), is a finding; so is a
// whole-layer water level (the search's bound, planner/score.hpp) above the optimal split's
// bottleneck or below the fluid balance it starts from.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_common.hpp"
#include "planner/layer_split.hpp"
#include "planner/score.hpp"
#include "tests/support/split_brute_force.hpp"

using hetplan::planner::SplitProblem;
using hetplan::planner::SplitStage;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hetplan::fuzz::ByteReader in(data, size);
  SplitProblem problem;
  const int p = 1 + in.next() % 4;
  problem.granularity = 1 + in.next() % 3;
  problem.virtual_stages = problem.granularity;
  problem.layers = problem.granularity * (p + in.next() % 10);
  problem.micro_batches = 1 + in.next() % 16;
  for (int j = 0; j < p; ++j) {
    SplitStage s;
    s.per_layer_s = in.time(-12, 19, 0);
    s.fixed_s = in.time(-12, 19, 5);
    const int cap = in.next();
    s.max_layers = cap % 4 == 0 ? problem.layers : cap % (problem.layers + 1);
    s.min_layers = in.next() % 8 == 0 ? in.next() % 5 : 0;
    problem.stages.push_back(s);
  }
  const double expected = hetplan::test::brute_force_split(problem);
  const auto split = hetplan::planner::solve_split(problem);
  if (std::isfinite(expected) != split.has_value()) __builtin_trap();
  if (!split) return 0;
  int total = 0;
  for (std::size_t j = 0; j < split->layers.size(); ++j) {
    const int n = split->layers[j];
    if (n % problem.granularity != 0 || n < problem.granularity ||
        n > problem.stages[j].max_layers || n < problem.stages[j].min_layers)
      __builtin_trap();
    total += n;
  }
  if (total != problem.layers) __builtin_trap();
  if (std::fabs(split->pipeline_s - expected) > 1e-9 * expected) __builtin_trap();
  std::vector<hetplan::planner::LevelGroup> groups;
  hetplan::planner::PipelineFloor floor;
  for (const auto& s : problem.stages) {
    groups.push_back({s.per_layer_s, s.fixed_s, 1, s.max_layers});
    floor.add(s.per_layer_s, s.fixed_s, 1);
  }
  const double fluid = floor.fluid_tau(problem.layers);
  const double level = hetplan::planner::whole_layer_level(groups, problem.layers, fluid);
  if (level > split->bottleneck_s * (1 + 1e-9) || level < fluid * (1 - 1e-9)) __builtin_trap();
  return 0;
}
