// The batch balance's reference: every choice of micro-batch counts, for its tests and its
// fuzzer (fuzz/fuzz_batch_balance.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

#include "models/batch_balance.hpp"

namespace hetplan::test {

// The shares with the least step among every choice of counts (each a multiple of the group's
// `multiple`, at least one multiple, at most its cap) whose samples make the batch exactly.
inline models::BatchShares brute_force_batch(const std::vector<models::ReplicaGroup>& groups,
                                             int global_batch) {
  models::BatchShares best;
  std::vector<int> counts(groups.size());
  std::function<void(std::size_t, long long)> visit = [&](std::size_t g, long long samples) {
    if (g == groups.size()) {
      if (samples != global_batch) return;
      double step = 0;
      for (std::size_t k = 0; k < groups.size(); ++k)
        step = std::max(step, groups[k].step_s(counts[k]));
      if (!best.feasible || step < best.step_s) {
        best.feasible = true;
        best.step_s = step;
        best.micro_batches = counts;
      }
      return;
    }
    const models::ReplicaGroup& group = groups[g];
    for (int m = group.multiple; m <= group.max_micro_batches; m += group.multiple) {
      const long long more = static_cast<long long>(group.replicas) * group.micro_batch * m;
      if (samples + more > global_batch) break;
      counts[g] = m;
      visit(g + 1, samples + more);
    }
  };
  if (!groups.empty()) visit(0, 0);
  return best;
}

}  // namespace hetplan::test
