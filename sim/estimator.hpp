// The analytic estimate of one training step of a plan: per-stage compute from the operator
// cost model, tensor-parallel and pipeline communication from the collective model, the
// pipeline schedule's bubble, data-parallel gradient synchronisation, the optimizer step, and
// per-stage memory. Fast enough to score thousands of plans. docs/models/estimator.md.
#pragma once

#include <string>
#include <vector>

#include "core/cluster.hpp"
#include "core/plan.hpp"
#include "core/workload.hpp"
#include "models/compute.hpp"
#include "models/memory.hpp"

namespace hetplan::sim {

struct EstimateOptions {
  models::EfficiencyDefaults defaults;
  double intra_latency_default = 2.5e-6;  // s per collective step inside a node
  double network_latency_default = 5e-6;  // s per collective step across nodes
  double intra_bus_efficiency_default = 0.77;
  double network_bus_efficiency_default = 0.9;
};

struct StageEstimate {
  std::string island;
  std::string chip;
  int first_layer = 0;
  int num_layers = 0;
  int tp = 1;
  int dp = 1;
  double forward_s = 0;      // one micro-batch, compute only
  double backward_s = 0;     // one micro-batch, compute incl. recompute
  double tp_comm_s = 0;      // one micro-batch, forward and backward
  double p2p_s = 0;          // one micro-batch, sends and receives at its boundaries
  double micro_batch_s = 0;  // forward + backward + tp + p2p, per micro-batch (all chunks)
  double dp_sync_s = 0;      // gradient reduction of the step
  double optimizer_s = 0;
  bool cross_island_boundary = false;  // sends to the next stage cross islands
  models::StageMemory memory;
  double memory_capacity = 0;  // bytes; 0 when unknown
  bool fits = false;
};

struct ExposedCommunication {
  double tensor_parallel = 0;
  double pipeline = 0;      // stage-boundary sends inside an island
  double cross_island = 0;  // stage-boundary sends between islands
  double data_parallel = 0;
  double total() const { return tensor_parallel + pipeline + cross_island + data_parallel; }
};

struct Estimate {
  bool feasible = true;
  std::vector<std::string> reasons;      // why the plan cannot run as written
  std::vector<std::string> assumptions;  // priors used in place of unknown figures
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double model_flops_per_step = 0;
  double bubble_s = 0;
  double bubble_fraction = 0;
  double compute_s = 0;  // the bottleneck stage's compute over all micro-batches
  double optimizer_s = 0;
  ExposedCommunication exposed;
  int micro_batches = 0;
  int micro_batch = 0;
  int chips = 0;
  std::vector<StageEstimate> stages;
};

// Estimates one step. Never throws on a plan that cannot run: the estimate is infeasible and
// says why. The plan must have passed formats::check_plan_references for this cluster and
// workload (islands exist, layers covered).
Estimate estimate_step(const Cluster& cluster, const Workload& workload, const Plan& plan,
                       const EstimateOptions& options = {});

}  // namespace hetplan::sim
