#include "models/batch_balance.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

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
  // Every sum of units is a multiple of their greatest common divisor: the sums below are
  // counted in steps of it (the batch beyond the first units must be one).
  long long step = 0;
  for (std::size_t g = 0; g < n; ++g) step = std::gcd(step, unit[g]);
  if (rest % step != 0) return out;
  std::vector<std::size_t> steps(n);  // a unit in steps
  for (std::size_t g = 0; g < n; ++g) steps[g] = static_cast<std::size_t>(unit[g] / step);
  // Whether the groups can make the batch exactly within `limit`, and with which units: bounded
  // reachability over the samples beyond each group's first unit, in steps. used[g][s]: the
  // fewest extra units of group g that reach s from a sum the earlier groups reach (-1: none).
  const auto span = static_cast<std::size_t>(rest / step) + 1;
  std::vector<std::vector<int>> used(n, std::vector<int>(span, -1));
  auto solve = [&](double limit, std::vector<int>& units) {
    for (std::size_t g = 0; g < n; ++g) {
      const int extra = within(g, limit) - 1;
      if (extra < 0) return false;
      const std::size_t w = steps[g];
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
    units.assign(n, 0);
    std::size_t s = span - 1;
    for (std::size_t g = n; g-- > 0;) {
      const int k = used[g][s];
      units[g] = 1 + k;
      s -= static_cast<std::size_t>(k) * steps[g];
    }
    return true;
  };
  // The same question without the units, as a bitset of reachable sums: each group adds 0 to
  // `extra` units, in chunks of 1, 2, 4, ... units and the remainder (every count up to `extra`
  // is the sum of some of them), each a shift and an or. The search below asks it many times;
  // the table above is filled once, for the units of the answer.
  const std::size_t words = (span + 63) / 64;
  std::vector<std::uint64_t> bits(words);
  auto shift_or = [&](std::size_t shift) {
    const std::size_t q = shift / 64, r = shift % 64;
    for (std::size_t i = words; i-- > q;) {
      std::uint64_t moved = bits[i - q] << r;
      if (r > 0 && i > q) moved |= bits[i - q - 1] >> (64 - r);
      bits[i] |= moved;
    }
  };
  auto reachable = [&](double limit) {
    std::fill(bits.begin(), bits.end(), 0);
    bits[0] = 1;
    for (std::size_t g = 0; g < n; ++g) {
      long long extra = within(g, limit) - 1;
      if (extra < 0) return false;
      const std::size_t w = steps[g];
      for (long long chunk = 1; extra > 0; chunk *= 2) {
        const long long take = std::min(chunk, extra);
        extra -= take;
        const auto shift = static_cast<std::size_t>(take) * w;
        if (shift < span) shift_or(shift);
      }
    }
    return ((bits[(span - 1) / 64] >> ((span - 1) % 64)) & 1) != 0;
  };
  // The step is one group's time at some count (a candidate); the answer is the least candidate
  // at which the batch is reachable. No candidate below the least at which the groups together
  // can hold the batch reaches it, so the search starts there: that candidate is found by a
  // binary search over the bits of non-negative doubles (ordered as integers), and the
  // candidates above it are merged from the groups' increasing times as the search needs them,
  // at doubling steps and then by halves. A large batch has millions of candidates; they are
  // never all made.
  double largest = 0;
  for (std::size_t g = 0; g < n; ++g) largest = std::max(largest, time(g, most[g]));
  if (!reachable(largest)) return out;
  auto holds_batch = [&](double limit) {
    long long samples = 0;
    for (std::size_t g = 0; g < n; ++g) samples += within(g, limit) * unit[g];
    return samples >= global_batch;
  };
  std::uint64_t below = 0, at = std::bit_cast<std::uint64_t>(largest);  // !holds(below), holds(at)
  if (holds_batch(0.0)) at = 0;
  while (below + 1 < at) {
    const std::uint64_t mid = below + (at - below) / 2;
    (holds_batch(std::bit_cast<double>(mid)) ? at : below) = mid;
  }
  const double least = std::bit_cast<double>(at);
  // Each group's next candidate at or above `least`.
  std::vector<int> next(n);
  for (std::size_t g = 0; g < n; ++g)
    next[g] = least > 0 ? within(g, std::nextafter(least, 0.0)) + 1 : 1;
  std::vector<double> candidates;  // increasing, distinct, from `least`
  auto candidate = [&](std::size_t k) {
    while (candidates.size() <= k) {
      std::size_t pick = n;
      for (std::size_t g = 0; g < n; ++g)
        if (next[g] <= most[g] && (pick == n || time(g, next[g]) < time(pick, next[pick])))
          pick = g;
      if (pick == n) return largest;  // past the last candidate
      const double value = time(pick, next[pick]++);
      if (candidates.empty() || value > candidates.back()) candidates.push_back(value);
    }
    return candidates[k];
  };
  std::size_t lo = 0, hi = 1;  // the answer lies at an index in [lo, hi]
  while (!reachable(candidate(hi - 1))) {
    lo = hi;
    hi *= 2;
  }
  hi -= 1;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (reachable(candidate(mid)))
      hi = mid;
    else lo = mid + 1;
  }
  const double limit = candidate(lo);
  std::vector<int> units;
  solve(limit, units);  // reachable at `limit`, so it succeeds
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
