// The step of one job whose data-parallel replicas run on different islands
// (docs/models/mixed-data-parallel.md#step): each replica group is a pipeline on one island with
// its own layout, the global batch is shared out so that the groups finish together
// (models/batch_balance), each replica's gradient is weighted by its samples, and the groups'
// gradients meet over the cluster's declared gradient path, hierarchically (reduce inside each
// group, exchange between the groups, gather back inside each).
#pragma once

#include <string>
#include <vector>

#include "core/cluster.hpp"
#include "core/plan.hpp"
#include "core/workload.hpp"
#include "sim/estimator.hpp"

namespace hetplan::sim {

struct ReplicaGroupStep {
  std::string island;
  int replicas = 0;            // the group's data-parallel degree
  int micro_batch = 0;         // sequences per micro-batch
  int micro_batches = 0;       // per replica, from the balancing
  long long samples = 0;       // replicas x micro_batch x micro_batches
  double gradient_weight = 0;  // each replica's: its samples over the global batch
  // A replica of the group takes fixed_s + m x per_micro_batch_s for m micro-batches (two
  // estimates of the group, at k and 2k micro-batches, k the schedule's granularity).
  double fixed_s = 0;
  double per_micro_batch_s = 0;
  int granularity = 1;  // the micro-batch count is a multiple of it (interleaved: the stages)
  int chips = 0;
  int nodes = 0;
  Estimate estimate;  // the group alone on its share of the batch, its own gradient sync included
};

struct MixedDataParallelStep {
  bool feasible = false;
  std::vector<std::string> reasons;      // why the groups cannot train the job together
  std::vector<std::string> assumptions;  // what the step takes for granted
  std::vector<ReplicaGroupStep> groups;
  double slowest_group_s = 0;  // the balanced groups' step: the slowest one's estimate
  // The exchange between the groups over the declared path, after each group has reduced its
  // gradients inside itself; exposed in full (nothing of the step hides it).
  double exchange_s = 0;
  double exchange_bytes = 0;  // the model's gradients, in the precision they are reduced in
  GradientPathKind path_kind = GradientPathKind::host_staged;
  double path_bandwidth = 0;  // B/s per node: the narrowest path of the ring of groups
  double path_latency = 0;    // s: the slowest path's
  double step_time_s = 0;
  double tokens_per_s = 0;
  int chips = 0;
};

// The step of `groups` (one plan per replica group, each a pipeline on one island; the plans'
// stages hold the group's replicas as their dp) training `workload` together. Infeasible, with
// the reasons, when the groups do not share a dtype, two share an island, the cluster declares
// no gradient path between neighbouring groups, a group cannot train the model on its own, or
// no shares of the global batch add up.
MixedDataParallelStep estimate_mixed_data_parallel(const Cluster& cluster, const Workload& workload,
                                                   const std::vector<Plan>& groups,
                                                   const EstimateOptions& options = {});

}  // namespace hetplan::sim
