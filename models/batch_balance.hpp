// Data parallelism across chip types (docs/models/mixed-data-parallel.md): replica groups of
// different speeds share one global batch. Each group's replicas take as many micro-batches as
// make every replica finish its step together, and each replica's gradient counts by the samples
// it saw, so that the all-reduced gradient is the mean over the global batch, as on identical
// replicas.
#pragma once

#include <limits>
#include <vector>

namespace hetplan::models {

// One group of identical data-parallel replicas: one chip type, one layout. A replica that runs
// `m` micro-batches takes `fixed_s + m * per_micro_batch_s` (for a pipeline of p stages under
// 1F1B, fixed_s holds the fill and drain, the optimizer step and the exposed synchronisation).
struct ReplicaGroup {
  int replicas = 1;
  int micro_batch = 1;  // sequences per micro-batch
  double fixed_s = 0;
  double per_micro_batch_s = 0;
  // A replica's micro-batch count is a multiple of this (the interleaved schedule needs a
  // multiple of the stage count) and at most max_micro_batches.
  int multiple = 1;
  int max_micro_batches = std::numeric_limits<int>::max();

  double step_s(int micro_batches) const { return fixed_s + micro_batches * per_micro_batch_s; }
};

struct BatchShares {
  bool feasible = false;
  std::vector<int> micro_batches;  // per replica of each group (at least `multiple`)
  double step_s = 0;               // the slowest group's step: the job's
};

// The micro-batch counts, one per group, whose samples add up to `global_batch` sequences
// exactly (replicas x micro_batch x count, over the groups) and whose slowest group is as fast as
// any such choice allows; every group takes part. Not feasible when no choice adds up (the
// groups' sample granularities cannot make the batch, or the caps are too low). Deterministic;
// O(groups x global_batch) per candidate step time, with a binary search over the candidates.
BatchShares balance_batch(const std::vector<ReplicaGroup>& groups, int global_batch);

// Each replica's gradient weight when its gradient is the mean over its own samples: its
// samples over the global batch (so the weights of all replicas add up to 1 and the weighted sum
// is the mean over every sample). In group order, `replicas` entries per group.
std::vector<double> gradient_weights(const std::vector<ReplicaGroup>& groups,
                                     const std::vector<int>& micro_batches);

// The exchange between replica groups of a gradient all-reduce across islands
// (docs/models/mixed-data-parallel.md#exchange): each group has reduce-scattered the gradient
// (`bytes`) inside itself, so its nodes hold its partial sum in equal shares; the groups then
// all-reduce those sums in a ring over the declared path, node with node. Each node of the group
// with the fewest nodes sends and receives 2 (G - 1) / G of its share, bytes / nodes, at
// `path_bandwidth` (B/s per node, each direction), and each of the 2 (G - 1) ring steps pays
// `path_latency`. One group exchanges nothing.
double cross_group_exchange_s(double bytes, const std::vector<int>& nodes_per_group,
                              double path_bandwidth, double path_latency);

// The same exchange through a parameter server: group `server`'s nodes. The other groups push
// their partial sums to it, node with node over the fewest nodes of any group, and pull the sum
// back once it is complete (push, then pull). Each server node's port (`server_port`, B/s each
// direction) carries every other group's share at once, and no push is faster than the
// slowest path (`path_bandwidth`), so each phase takes the longer of (G - 1) shares through the
// port and one share over the slowest path; the two phases pay `path_latency` each.
double parameter_server_exchange_s(double bytes, const std::vector<int>& nodes_per_group,
                                   double path_bandwidth, double server_port,
                                   double path_latency);

}  // namespace hetplan::models
