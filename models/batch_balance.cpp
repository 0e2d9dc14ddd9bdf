#include "models/batch_balance.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hetplan::models {
namespace {

// Whether every figure of a group is usable.
bool sound(const ReplicaGroup& g) {
  return g.replicas >= 1 && g.micro_batch >= 1 && g.multiple >= 1 && g.max_micro_batches >= 1 &&
         std::isfinite(g.fixed_s) && g.fixed_s >= 0 && std::isfinite(g.per_micro_batch_s) &&
         g.per_micro_batch_s >= 0;
}

}  // namespace

BatchShares balance_batch(const std::vector<ReplicaGroup>& groups, int global_batch) {
  BatchShares out;
  if (groups.empty() || global_batch < 1) return out;
  const std::size_t n = groups.size();
  // A unit: `multiple` micro-batches on every replica of the group; each group takes at least
  // one.
  std::vector<long long> unit(n);
  std::vector<int> most(n);
  long long rest = global_batch;
  for (std::size_t g = 0; g < n; ++g) {
    if (!sound(groups[g])) return out;
    unit[g] = static_cast<long long>(groups[g].replicas) * groups[g].micro_batch * groups[g].multiple;
    if (unit[g] > global_batch) return out;
    most[g] = static_cast<int>(std::min<long long>(groups[g].max_micro_batches / groups[g].multiple,
                                                   global_batch / unit[g]));
    if (most[g] < 1) return out;
    rest -= unit[g];
  }
  if (rest < 0) return out;
  auto time = [&](std::size_t g, int units) { return groups[g].step_s(units * groups[g].multiple); };
  // The most units group g can take within `limit` seconds (0: not even one).
  auto within = [&](std::size_t g, double limit) {
    int lo = 0, hi = most[g];
    while (lo < hi) {
      const int mid = lo + (hi - lo + 1) / 2;
      if (time(g, mid) <= limit) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  // Whether the groups can make the batch exactly within `limit`, and with which units: bounded
  // reachability over the samples beyond each group's first unit. used[g][s]: the fewest extra
  // units of group g that reach s from a sum the earlier groups reach (-1: none).
  const auto span = static_cast<std::size_t>(rest) + 1;
  std::vector<std::vector<int>> used(n, std::vector<int>(span, -1));
  auto solve = [&](double limit, std::vector<int>* units) {
    for (std::size_t g = 0; g < n; ++g) {
      const int extra = within(g, limit) - 1;
      if (extra < 0) return false;
      const auto w = static_cast<std::size_t>(unit[g]);
      for (std::size_t s = 0; s < span; ++s) {
        const bool before = g == 0 ? s == 0 : used[g - 1][s] >= 0;
        if (before) {
          used[g][s] = 0;
        } else if (s >= w && used[g][s - w] >= 0 && used[g][s - w] < extra) {
          used[g][s] = used[g][s - w] + 1;
        } else {
          used[g][s] = -1;
        }
      }
    }
    if (used[n - 1][span - 1] < 0) return false;
    if (units) {
      units->assign(n, 0);
      std::size_t s = span - 1;
      for (std::size_t g = n; g-- > 0;) {
        const int k = used[g][s];
        (*units)[g] = 1 + k;
        s -= static_cast<std::size_t>(k) * static_cast<std::size_t>(unit[g]);
      }
    }
    return true;
  };
  // The step is one group's time at some count: search the candidates.
  std::vector<double> candidates;
  for (std::size_t g = 0; g < n; ++g)
    for (int u = 1; u <= most[g]; ++u) candidates.push_back(time(g, u));
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  if (!solve(candidates.back(), nullptr)) return out;
  std::size_t lo = 0, hi = candidates.size() - 1;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (solve(candidates[mid], nullptr)) hi = mid;
    else lo = mid + 1;
  }
  std::vector<int> units;
  solve(candidates[lo], &units);
  out.feasible = true;
  for (std::size_t g = 0; g < n; ++g) {
    out.micro_batches.push_back(units[g] * groups[g].multiple);
    out.step_s = std::max(out.step_s, groups[g].step_s(out.micro_batches.back()));
  }
  return out;
}

std::vector<double> gradient_weights(const std::vector<ReplicaGroup>& groups,
                                     const std::vector<int>& micro_batches) {
  double total = 0;
  for (std::size_t g = 0; g < groups.size() && g < micro_batches.size(); ++g)
    total += static_cast<double>(groups[g].replicas) * groups[g].micro_batch * micro_batches[g];
  std::vector<double> weights;
  for (std::size_t g = 0; g < groups.size() && g < micro_batches.size(); ++g) {
    const double samples = static_cast<double>(groups[g].micro_batch) * micro_batches[g];
    for (int r = 0; r < groups[g].replicas; ++r) weights.push_back(total > 0 ? samples / total : 0);
  }
  return weights;
}

double cross_group_exchange_s(double bytes, const std::vector<int>& nodes_per_group,
                              double path_bandwidth, double path_latency) {
  const auto groups = static_cast<double>(nodes_per_group.size());
  if (nodes_per_group.size() < 2 || bytes <= 0) return 0;
  const int fewest = *std::min_element(nodes_per_group.begin(), nodes_per_group.end());
  if (fewest < 1 || !(path_bandwidth > 0)) return std::numeric_limits<double>::infinity();
  const double steps = 2 * (groups - 1);
  return steps / groups * (bytes / fewest) / path_bandwidth + steps * path_latency;
}

double parameter_server_exchange_s(double bytes, const std::vector<int>& nodes_per_group,
                                   double path_bandwidth, double server_port,
                                   double path_latency) {
  const auto groups = static_cast<double>(nodes_per_group.size());
  if (nodes_per_group.size() < 2 || bytes <= 0) return 0;
  const int fewest = *std::min_element(nodes_per_group.begin(), nodes_per_group.end());
  if (fewest < 1 || !(path_bandwidth > 0) || !(server_port > 0))
    return std::numeric_limits<double>::infinity();
  const double share = bytes / fewest;
  const double phase = std::max(share / path_bandwidth, (groups - 1) * share / server_port);
  return 2 * phase + 2 * path_latency;
}

}  // namespace hetplan::models
