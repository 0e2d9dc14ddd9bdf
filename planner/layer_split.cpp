#include "planner/layer_split.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

namespace hetplan::planner {
namespace {

using Unit = SplitUnit;
using Next = std::pair<double, std::size_t>;  // a stage's tau after one more unit, the stage

constexpr double kNone = std::numeric_limits<double>::infinity();

// The searches below hold one candidate per kind of stage, and there are few kinds (a pipeline's
// stages of one island and tensor-parallel size are alike), so the next candidate is found by a
// scan: the least (tau, key), exactly the order a min-heap of the pairs pops them in. A spent
// candidate's tau is kNone.
std::size_t least_candidate(const std::vector<Next>& candidates) {
  std::size_t best = 0;
  double tau = candidates[0].first;
  std::size_t key = candidates[0].second;
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    const auto& [t, k] = candidates[i];
    if (t < tau || (t == tau && k < key)) {
      best = i;
      tau = t;
      key = k;
    }
  }
  return best;
}

// floor(x) clamped to [lo, hi] (integers, lo <= hi), and lo for a NaN: the same as clamping x
// first, so the truncating cast below never sees a value out of an int's range. Without SSE4.1
// std::floor is a call into libm; the split solver takes a few dozen floors per plan.
int floor_clamped(double x, int lo, int hi) {
  if (!(x > lo)) return lo;  // also a NaN
  if (x >= hi) return hi;
  const int t = static_cast<int>(x);  // toward zero; x > lo >= INT_MIN
  return t > x ? t - 1 : t;
}

// The least total time with every stage's tau at most `bound`: each stage starts with its
// least units and the rest go to the stages with the cheapest units first. Returns false when
// the bound leaves too little room. `order` lists stages by unit time, cheapest first.
bool fill_under(const std::vector<Unit>& units, const std::vector<std::size_t>& order, int total,
                double bound, std::vector<int>& counts) {
  const std::size_t p = units.size();
  counts.resize(p);
  int left = total;
  for (std::size_t j = 0; j < p; ++j) {
    counts[j] = units[j].least;
    left -= units[j].least;
    if (units[j].fixed + units[j].least * units[j].time > bound) return false;
  }
  for (std::size_t j : order) {
    if (left == 0) break;
    const Unit& u = units[j];
    // The largest count with fixed + count x time within the bound (a relative 1e-12 above it,
    // for rounding). The quotient only guesses it: (limit - fixed) / time loses digits when a
    // unit's time is tiny beside the fixed part, so the count is settled both ways by the
    // expression the bounds are made with. At most cap + 1 (the cap bounds it after), at least
    // 0 (none to add below).
    const double limit = bound * (1 + 1e-12);
    int room = floor_clamped((limit - u.fixed) / u.time, 0, u.cap + 1);
    while (room > 0 && u.fixed + room * u.time > limit) --room;
    while (room <= u.cap && u.fixed + (room + 1) * u.time <= limit) ++room;
    room = std::min(room, u.cap);
    const int add = std::min(left, std::max(0, room - u.least));
    counts[j] += add;
    left -= add;
  }
  return left == 0;
}

double objective(const std::vector<Unit>& units, const std::vector<int>& counts, int m, int v) {
  double max_tau = 0, sum_tau = 0;
  for (std::size_t j = 0; j < units.size(); ++j) {
    const double tau = units[j].fixed + counts[j] * units[j].time;
    max_tau = std::max(max_tau, tau);
    sum_tau += tau;
  }
  return m * max_tau + (sum_tau - max_tau) / v;
}

}  // namespace

double pipeline_time(const SplitProblem& problem, const std::vector<int>& layers) {
  double max_tau = 0, sum_tau = 0;
  for (std::size_t j = 0; j < problem.stages.size(); ++j) {
    const SplitStage& s = problem.stages[j];
    const double tau = s.fixed_s + layers[j] * s.per_layer_s;
    max_tau = std::max(max_tau, tau);
    sum_tau += tau;
  }
  return problem.micro_batches * max_tau + (sum_tau - max_tau) / problem.virtual_stages;
}

std::optional<Split> solve_split(const SplitProblem& problem) {
  SplitWorkspace work;
  Split out;
  if (!solve_split(problem, work, out)) return std::nullopt;
  return out;
}

bool solve_split(const SplitProblem& problem, SplitWorkspace& work, Split& out) {
  const std::size_t p = problem.stages.size();
  const int g = std::max(1, problem.granularity);
  if (p == 0 || problem.layers % g != 0) return false;
  const int total = problem.layers / g;
  std::vector<Unit>& units = work.units;
  units.resize(p);
  long capacity = 0;
  long least = 0;
  for (std::size_t j = 0; j < p; ++j) {
    const SplitStage& s = problem.stages[j];
    units[j] = {s.per_layer_s * g, s.fixed_s, s.max_layers / g,
                std::max(1, (s.min_layers + g - 1) / g)};
    if (units[j].cap < units[j].least) return false;
    capacity += units[j].cap;
    least += units[j].least;
  }
  if (capacity < total || least > total) return false;

  std::vector<std::size_t>& order = work.order;
  order.resize(p);
  std::iota(order.begin(), order.end(), 0);
  // By unit time, ties in stage order (std::sort with the index: stable, and no buffer).
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return units[a].time < units[b].time || (units[a].time == units[b].time && a < b);
  });

  // Alike stages (a pipeline's middle stages of one kind) take units alike and offer the same
  // bounds below, so the two searches run over kinds of stage rather than stages. Alike stages
  // sit together in `order`, which sorts by unit time.
  auto alike = [](const Unit& a, const Unit& b) {
    return a.time == b.time && a.fixed == b.fixed && a.cap == b.cap && a.least == b.least;
  };
  std::vector<std::pair<std::size_t, int>>& kinds = work.kinds;
  kinds.clear();
  for (std::size_t at = 0, run = 0; at < p; ++at) {
    const std::size_t j = order[at];
    if (at > 0 && units[order[at - 1]].time != units[j].time) run = kinds.size();
    auto same = std::find_if(kinds.begin() + static_cast<long>(run), kinds.end(),
                             [&](const auto& kind) { return alike(units[kind.first], units[j]); });
    if (same != kinds.end()) {
      ++same->second;
    } else {
      kinds.emplace_back(j, 1);
    }
  }

  // The smallest feasible bottleneck: add units one at a time where tau stays smallest (optimal
  // for a min-max of increasing functions). Only its value is kept: alike stages are offered a
  // unit at the same tau one after the other, so adding one to each stage of a kind at once
  // reaches the same value.
  //
  // The adding starts below the fluid level tau_f, where sum (tau_f - fixed) / time reaches the
  // unit count: no allocation's bottleneck is lower, so a start whose every stage ends below
  // tau_f (one unit under its floor there, at least its least) is part of some optimal
  // allocation, and adding from it reaches the same bottleneck as adding from the least units
  // each — with a few steps per stage instead of one per unit.
  std::vector<int>& counts = work.counts;  // per kind
  counts.resize(kinds.size());
  long placed = 0;
  {
    double inverse = 0, offset = 0;
    for (const Unit& u : units) {
      inverse += 1.0 / u.time;
      offset += u.fixed / u.time;
    }
    const double fluid = (total + offset) / inverse;
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      const Unit& u = units[kinds[i].first];
      // One unit under the floor at the fluid level, within [least, cap].
      counts[i] = floor_clamped((fluid - u.fixed) / u.time, u.least + 1, u.cap + 1) - 1;
      placed += static_cast<long>(counts[i]) * kinds[i].second;
    }
    if (placed > total) {
      placed = least;
      for (std::size_t i = 0; i < kinds.size(); ++i) counts[i] = units[kinds[i].first].least;
    }
  }
  double bottleneck = 0;
  std::vector<Next>& grow = work.grow;  // per kind: its tau with one more unit, the kind
  grow.clear();
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const Unit& u = units[kinds[i].first];
    bottleneck = std::max(bottleneck, u.fixed + counts[i] * u.time);
    grow.emplace_back(counts[i] < u.cap ? u.fixed + (counts[i] + 1) * u.time : kNone, i);
  }
  while (placed < total) {
    const std::size_t i = least_candidate(grow);  // capacity >= total guarantees one
    const Unit& u = units[kinds[i].first];
    ++counts[i];
    placed += kinds[i].second;
    bottleneck = std::max(bottleneck, grow[i].first);
    grow[i].first = counts[i] < u.cap ? u.fixed + (counts[i] + 1) * u.time : kNone;
  }

  // A higher bottleneck can still pay when it moves layers to faster stages and the sum of
  // stage times falls by more than m - 1/v times the rise. Try each larger candidate bound, in
  // increasing order, until the rise alone costs more than the largest possible saving.
  const int m = problem.micro_batches;
  const int v = problem.virtual_stages;
  std::vector<int>& best_counts = work.best_counts;
  // The greedy's own allocation keeps every stage within the bottleneck, so the fill under it
  // succeeds; should rounding ever defeat that, the larger bounds below are tried from nothing.
  double best = std::numeric_limits<double>::infinity();
  if (fill_under(units, order, total, bottleneck, best_counts))
    best = objective(units, best_counts, m, v);
  // The least sum of stage times any allocation has: every stage at its least units, the rest
  // on the cheapest units first, each stage up to its cap.
  double floor_sum = 0;
  for (std::size_t j = 0; j < p; ++j) floor_sum += units[j].fixed + units[j].least * units[j].time;
  for (long left = total - least; std::size_t j : order) {
    if (left == 0) break;
    const long add = std::min<long>(left, units[j].cap - units[j].least);
    floor_sum += static_cast<double>(add) * units[j].time;
    left -= add;
  }
  const double slope = m - 1.0 / v;
  std::vector<Next>& bounds = work.bounds;           // per kind: its next bound, the stage
  std::vector<int>& bound_units = work.bound_units;  // per kind: the count at that bound
  bounds.clear();
  bound_units.clear();
  for (const auto& kind : kinds) {
    const std::size_t j = kind.first;
    // The count whose tau first passes the bottleneck, if the stage may hold it.
    const int c = floor_clamped((bottleneck - units[j].fixed) / units[j].time, units[j].least - 2,
                                units[j].cap) +
                  1;
    const bool open = c >= units[j].least && c <= units[j].cap;
    bounds.emplace_back(open ? units[j].fixed + c * units[j].time : kNone, j);
    bound_units.push_back(c);
  }
  std::vector<int>& trial = work.trial;
  double tried = bottleneck;  // the last bound filled: alike stages offer the same bound again
  while (!bounds.empty()) {
    const std::size_t at = least_candidate(bounds);
    const auto [b, j] = bounds[at];
    if (b == kNone) break;
    const int c = bound_units[at]++;
    bounds[at].first = c + 1 <= units[j].cap ? units[j].fixed + (c + 1) * units[j].time : kNone;
    if (b <= tried) continue;
    if (slope * b + floor_sum / v >= best) break;
    tried = b;
    if (!fill_under(units, order, total, b, trial)) continue;
    const double value = objective(units, trial, m, v);
    if (!std::isfinite(best) || value < best - 1e-12 * best) {
      best = value;
      best_counts.swap(trial);
    }
  }

  if (!std::isfinite(best)) return false;
  out.layers.resize(p);
  for (std::size_t j = 0; j < p; ++j) out.layers[j] = best_counts[j] * g;
  out.pipeline_s = pipeline_time(problem, out.layers);
  out.bottleneck_s = 0;
  for (std::size_t j = 0; j < p; ++j) {
    out.bottleneck_s = std::max(
        out.bottleneck_s, problem.stages[j].fixed_s + out.layers[j] * problem.stages[j].per_layer_s);
  }
  return true;
}

bool first_last_form(const std::vector<int>& layers) {
  return layers.size() <= 3 ||
         std::all_of(layers.begin() + 1, layers.end() - 1, [&](int n) { return n == layers[1]; });
}

bool solve_first_last_split(const SplitProblem& problem, Split& out) {
  const std::size_t p = problem.stages.size();
  const int g = std::max(1, problem.granularity);
  if (p == 0 || problem.layers % g != 0) return false;
  const int total = problem.layers / g;
  std::vector<Unit> units(p);
  for (std::size_t j = 0; j < p; ++j) {
    const SplitStage& s = problem.stages[j];
    units[j] = {s.per_layer_s * g, s.fixed_s, s.max_layers / g,
                std::max(1, (s.min_layers + g - 1) / g)};
    if (units[j].cap < units[j].least) return false;
  }
  if (p <= 3) {
    // Every split of three stages or fewer has equal middle stages.
    SplitWorkspace work;
    return solve_split(problem, work, out);
  }
  const int m = problem.micro_batches;
  const int v = std::max(1, problem.virtual_stages);
  const Unit& first = units.front();
  const Unit& last = units.back();
  // The middle count c, the same on every middle stage, within each one's least and cap.
  int c_low = 1, c_high = total;
  for (std::size_t j = 1; j + 1 < p; ++j) {
    c_low = std::max(c_low, units[j].least);
    c_high = std::min(c_high, units[j].cap);
  }
  double best = kNone;
  int best_c = 0, best_f = 0;
  const int middles = static_cast<int>(p) - 2;
  for (int c = c_low; c <= c_high; ++c) {
    const int ends = total - middles * c;  // the first's and the last's units together
    if (ends < first.least + last.least) break;
    double middle_max = 0, middle_sum = 0;
    for (std::size_t j = 1; j + 1 < p; ++j) {
      const double tau = units[j].fixed + c * units[j].time;
      middle_max = std::max(middle_max, tau);
      middle_sum += tau;
    }
    const int f_low = std::max(first.least, ends - last.cap);
    const int f_high = std::min(first.cap, ends - last.least);
    for (int f = f_low; f <= f_high; ++f) {
      const double a = first.fixed + f * first.time;
      const double b = last.fixed + (ends - f) * last.time;
      const double max_tau = std::max({middle_max, a, b});
      const double value = m * max_tau + (middle_sum + a + b - max_tau) / v;
      if (value < best) {  // ties: the first found (fewer middle units, then fewer first)
        best = value;
        best_c = c;
        best_f = f;
      }
    }
  }
  if (best == kNone) return false;
  out.layers.assign(p, best_c * g);
  out.layers.front() = best_f * g;
  out.layers.back() = (total - middles * best_c - best_f) * g;
  double max_tau = 0;
  for (std::size_t j = 0; j < p; ++j)
    max_tau = std::max(max_tau, units[j].fixed + out.layers[j] / g * units[j].time);
  out.pipeline_s = pipeline_time(problem, out.layers);
  out.bottleneck_s = max_tau;
  return true;
}

}  // namespace hetplan::planner
