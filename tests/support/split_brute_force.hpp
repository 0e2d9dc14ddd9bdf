// The layer split's reference: every composition of the layers, for the split's tests and its
// fuzzer (fuzz/fuzz_layer_split.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <vector>

#include "planner/layer_split.hpp"

namespace hetplan::test {

// The best pipeline time over every split that gives each stage at least one unit (and its
// min_layers) and respects the caps, among those `keep` keeps (all without it); infinity when
// there is none.
inline double brute_force_split(
    const planner::SplitProblem& problem,
    const std::function<bool(const std::vector<int>&)>& keep = nullptr) {
  const int g = problem.granularity;
  std::vector<int> layers(problem.stages.size());
  double best = std::numeric_limits<double>::infinity();
  auto least = [&](std::size_t j) {
    return std::max(g, (problem.stages[j].min_layers + g - 1) / g * g);
  };
  std::function<void(std::size_t, int)> walk = [&](std::size_t j, int left) {
    if (j + 1 == problem.stages.size()) {
      if (left < least(j) || left > problem.stages[j].max_layers) return;
      layers[j] = left;
      if (!keep || keep(layers)) best = std::min(best, planner::pipeline_time(problem, layers));
      return;
    }
    for (int n = least(j); n <= std::min(left, problem.stages[j].max_layers); n += g) {
      layers[j] = n;
      walk(j + 1, left - n);
    }
  };
  if (!problem.stages.empty() && problem.layers % g == 0) walk(0, problem.layers);
  return best;
}

}  // namespace hetplan::test
