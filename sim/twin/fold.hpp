// Alike replicas simulated once (docs/twin.md#folding): when a plan's pipeline replicas fall
// into periods of `k` consecutive replicas that the fabric cannot tell apart — every stage's
// chips of a period fill whole leaf groups, and nothing varies from one replica to another (no
// jitter, no slow node) — the step is the same for every period, and two periods of it show
// everything one period sees: its own flows, and the flows that cross to the next period (a
// ring's step from its last replica to the next period's first, through the leaves' uplinks).
// The twin then simulates two periods, with the tiers all periods share (a limiting spine, the
// zone links) at the share of their capacity that two periods' traffic finds there, and reports
// the step, the ranks and the links of the whole plan. No SimGrid here: it rewrites an input.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/twin_input.hpp"

namespace hetplan::sim::twin {

// A node of the folded input and the plan's nodes it stands for.
struct FoldedNode {
  int region_node = 0;   // the plan's first node of its stage's chips
  int period_nodes = 1;  // nodes per period of its stage
  int offset = 0;        // in its stage's folded chips, in nodes: [0, 2 period_nodes)
};

struct Folding {
  TwinInput input;  // two periods of every stage
  int period = 1;   // replicas per period
  int full_dp = 1;  // the plan's replicas per stage
  std::vector<std::vector<FoldedNode>> nodes;  // [island][node of the folded input]

  // Traffic on the shared tiers (spines, zone links) of the whole plan over the folded one's.
  // Their capacities in `input` are divided by it.
  double scale() const { return full_dp / (2.0 * period); }

  // The plan's nodes that node `node` of island `island` of the folded input stands for: the
  // first period's stands for the plan's first, the second for every other one.
  std::vector<int> images(int island, int node) const;
};

// The folding of `in`, or nothing when its replicas do not fall into at least three such
// periods (then folding would save nothing) or something tells them apart.
std::optional<Folding> fold_replicas(const TwinInput& in);

}  // namespace hetplan::sim::twin
