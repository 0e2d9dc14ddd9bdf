// The exact layer split of a pipeline: how many layers each stage holds so that the pipeline
// time m x max(tau) + (sum(tau) - max(tau)) / v is smallest, under each stage's memory cap.
// docs/planner.md#layer-split.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace hetplan::planner {

// One stage as the split sees it: tau = layers x per_layer_s + fixed_s.
struct SplitStage {
  double per_layer_s = 0;  // one layer, one micro-batch, forward + backward + tp
  double fixed_s = 0;      // embedding or head, stage-boundary sends
  int max_layers = 0;      // the memory cap; 0 when not even one unit fits
  int min_layers = 0;      // the fewest it may hold (partial recompute); at least one unit
};

struct SplitProblem {
  std::vector<SplitStage> stages;
  int layers = 0;          // to place, all of them
  int granularity = 1;     // every stage holds a multiple of this (the virtual stages)
  int micro_batches = 1;   // m
  int virtual_stages = 1;  // v
};

struct Split {
  std::vector<int> layers;  // per stage
  double pipeline_s = 0;    // m max(tau) + (sum(tau) - max(tau)) / v
  double bottleneck_s = 0;  // max(tau)
};

// The most layers, a multiple of `step` up to `layers`, whose memory `total(n)` is within
// `capacity` (0 when none is). A stage's memory never falls as it takes more layers (each of its
// parts grows with them, and the optimizer step's extra copy only fills what freed activations
// leave), so it fits up to some count and no further. It grows by nearly the same bytes per
// layer (docs/models/memory.md), so the first two counts' slope points at the last count that
// fits; that count and the next are checked, and a bisection settles whatever they leave open:
// usually four checks instead of O(log layers).
template <typename Total>
int most_fitting_layers(int step, int layers, double capacity, Total&& total) {
  int lo = 0;                  // units known to fit (0: none checked)
  int hi = layers / step + 1;  // units known not to fit
  auto check = [&](int units) { (total(units * step) <= capacity ? lo : hi) = units; };
  if (hi > 2) {
    const double one = total(step);
    (one <= capacity ? lo : hi) = 1;
    if (lo == 1) {
      const double two = total(2 * step);
      (two <= capacity ? lo : hi) = 2;
      const double slope = two - one;
      if (lo == 2 && slope > 0) {
        const double room = (capacity - two) / slope;  // units beyond the second
        const int guess = room < hi - 2 ? 2 + static_cast<int>(room) : hi - 1;
        if (guess > lo && guess < hi) check(guess);
        if (guess + 1 > lo && guess + 1 < hi) check(guess + 1);
      }
    }
  }
  while (hi - lo > 1) check(lo + (hi - lo) / 2);
  return lo * step;
}

// Pipeline time of a given split.
double pipeline_time(const SplitProblem& problem, const std::vector<int>& layers);

// One stage in units of `granularity` layers, as the solver works on it.
struct SplitUnit {
  double time = 0;  // one unit's time
  double fixed = 0;
  int cap = 0;    // units
  int least = 1;  // units
};

// The solver's buffers, for callers that solve many problems and allocate once.
struct SplitWorkspace {
  std::vector<SplitUnit> units;
  std::vector<std::size_t> order;
  std::vector<int> counts, best_counts, trial, bound_units;
  std::vector<std::pair<std::size_t, int>> kinds;  // alike stages: one of them, how many
  std::vector<std::pair<double, std::size_t>> grow, bounds;  // one candidate per kind
};

// The optimal split, or nothing when no split fits (too few layers for the stages, or the
// memory caps hold fewer layers than the model has). Every stage gets at least one unit, and
// at least its min_layers (rounded up to whole units).
// Ties are broken the same way every time (earlier stages first).
std::optional<Split> solve_split(const SplitProblem& problem);
// The same into `out` with the workspace's buffers; false when no split fits.
bool solve_split(const SplitProblem& problem, SplitWorkspace& work, Split& out);

// Whether `layers` has equal middle stages (the first and the last may differ): the splits
// Megatron-Core's --decoder-first/last-pipeline-num-layers express, and the only uneven ones
// MindSpeed-LLM takes beside virtual pipeline stages (core/framework.hpp).
bool first_last_form(const std::vector<int>& layers);

// The optimal split among those of first_last_form: the same problem as solve_split, with every
// middle stage holding the same count. Into `out`; false when no such split fits.
bool solve_first_last_split(const SplitProblem& problem, Split& out);

}  // namespace hetplan::planner
