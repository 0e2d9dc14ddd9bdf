// The step of one job whose data-parallel replicas run on different islands
// (docs/models/mixed-data-parallel.md#step): each replica group is a pipeline on one island with
// its own layout, the global batch is shared out so that the groups finish together
// (models/batch_balance), each replica's gradient is weighted by its samples, and the groups'
// gradients meet over the cluster's declared gradient path, hierarchically (reduce inside each
// group, exchange between the groups, gather back inside each).
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster.hpp"
#include "core/plan.hpp"
#include "core/workload.hpp"
#include "models/batch_balance.hpp"
#include "sim/estimator.hpp"
#include "sim/twin_input.hpp"

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

// How the groups exchange: a ring (each group with the next), or through group `server`'s
// nodes as a parameter server (each other group with it).
struct GroupExchange {
  GradientExchange algorithm = GradientExchange::ring;
  int server = 0;  // a group index, with a parameter server
  // ZeRO shards over every replica of every group (docs/models/mixed-data-parallel.md
  // #zero-across-groups): a ring only, every group at ZeRO stage 1 or more.
  bool zero_across_groups = false;
};

// The declared gradient paths the exchange of `islands` (one per group) uses: the pairs of
// groups it joins (a ring: each with the next, two groups one pair; a parameter server: each
// other group with the server), the narrowest bandwidth (B/s per node), the slowest latency,
// host-staged when any pair's is, with a parameter server the server's port (its widest path:
// one port per node carries them all), the pairs whose figures are assumed, and the pairs
// without a declared path.
struct GradientPaths {
  std::vector<std::pair<int, int>> pairs;  // group indices
  GradientPathKind kind = GradientPathKind::device_rdma;
  double bandwidth = std::numeric_limits<double>::infinity();
  double latency = 0;
  double server_port = 0;
  std::vector<std::pair<std::string, std::string>> assumed;
  std::vector<std::pair<std::string, std::string>> missing;
};
GradientPaths gradient_paths(const Cluster& cluster, const std::vector<std::string>& islands,
                             const GroupExchange& exchange = {});

// One group's step as a line in its micro-batch count: `group` (models::ReplicaGroup) holds
// its replicas, micro-batch, the line's fixed part and slope (two estimates of the plan alone,
// at k and 2k micro-batches per replica, k the schedule's granularity: the stages under the
// interleaved schedule, else 1) and k; with its chips and nodes. Not feasible, with the first
// reason, when the plan cannot train the model on its own.
struct ReplicaGroupLine {
  bool feasible = false;
  std::string reason;
  std::string island;
  DType dtype = DType::bf16;
  models::ReplicaGroup group;
  int chips = 0;
  int nodes = 0;
};
ReplicaGroupLine replica_group_line(const Cluster& cluster, const Workload& workload,
                                    const Plan& plan, const EstimateOptions& options = {});

struct MixedDataParallelStep {
  bool feasible = false;
  std::vector<std::string> reasons;      // why the groups cannot train the job together
  std::vector<std::string> assumptions;  // what the step takes for granted
  std::vector<std::string> warnings;     // what the deployment practice warns against
  std::vector<ReplicaGroupStep> groups;
  double slowest_group_s = 0;  // the balanced groups' step: the slowest one's estimate
  // The exchange between the groups over the declared path, after each group has reduced its
  // gradients inside itself; exposed in full (nothing of the step hides it).
  double exchange_s = 0;
  double exchange_bytes = 0;  // the model's gradients, in the precision they are reduced in
                              // (ZeRO across groups: and its weights, gathered back)
  // ZeRO-3 across groups: the weights' all-gathers over the path in every micro-batch that the
  // slowest group's compute does not hide, all micro-batches together (in the step).
  double zero3_gather_s = 0;
  GroupExchange exchange;  // ring, or a parameter server
  GradientPathKind path_kind = GradientPathKind::host_staged;
  double path_bandwidth = 0;  // B/s per node: the narrowest path the exchange uses
  double path_latency = 0;    // s: the slowest path's
  double step_time_s = 0;
  double tokens_per_s = 0;
  int chips = 0;
};

// The step of `groups` (one plan per replica group, each a pipeline on one island; the plans'
// stages hold the group's replicas as their dp) training `workload` together. Infeasible, with
// the reasons, when the groups do not share a dtype, two share an island, the cluster declares
// no gradient path between groups the exchange joins, a group cannot train the model on its
// own, or no shares of the global batch add up.
// With `micro_batches` (one count per group, per replica), the groups take those shares instead
// of the balanced ones; they must make the global batch. `exchange`: a ring unless the plan
// asks for a parameter server.
MixedDataParallelStep estimate_mixed_data_parallel(const Cluster& cluster, const Workload& workload,
                                                   const std::vector<Plan>& groups,
                                                   const EstimateOptions& options = {},
                                                   const std::vector<int>* micro_batches = nullptr,
                                                   const GroupExchange& exchange = {});

// The flag that marks such a step wherever it is shown: "cross-vendor all-reduce over a
// host-staged path" (or a device RDMA path).
std::string cross_vendor_flag(GradientPathKind kind);

// The groups of a plan with replica groups as plans of one pipeline each, with the plan's
// settings (micro-batch, recompute, ZeRO stage, dtype, schedule) under each group's own.
std::vector<Plan> replica_group_plans(const Plan& plan);

// The exchange a plan with replica groups asks for (the server as a group index).
GroupExchange group_exchange(const Plan& plan);

// The step of a plan with replica groups, at the shares the plan states.
MixedDataParallelStep estimate_replica_groups(const Cluster& cluster, const Workload& workload,
                                              const Plan& plan, const EstimateOptions& options = {});

// The twin's view of a plan with replica groups (docs/twin.md#replica-groups): each group's
// pipeline lowered with its share of the batch (`step` is estimate_replica_groups of `plan`),
// simulated together on one fabric, then the exchange of gradients between them over the
// declared paths as flows.
TwinPoolInput replica_group_twin_pool(const Cluster& cluster, const Workload& workload,
                                      const Plan& plan, const MixedDataParallelStep& step,
                                      const TwinOptions& options = {});

// The simulated step: the groups' simulated steps, then the exchange between the groups.
struct ReplicaGroupsSimulation {
  std::vector<double> group_step_s;  // simulated, per group
  double slowest_group_s = 0;
  double exchange_s = 0;  // simulated: from the slowest group's end to the exchange's
  double step_time_s = 0;
  double tokens_per_s = 0;
  std::vector<TwinLinkLoad> exchange_links;  // the exchange's most loaded links
};
// ZeRO-3 across groups: the step's gathers over the path (`step`'s zero3_gather_s) are added
// analytically.
ReplicaGroupsSimulation replica_groups_simulation(const Workload& workload,
                                                  const MixedDataParallelStep& step,
                                                  const TwinPoolResult& simulated);

}  // namespace hetplan::sim
