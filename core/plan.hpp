// A plan: an explicit placement of one training job. Pipeline stages in order, each on one
// island with its layer range and (tp, dp). A tensor- or data-parallel group never spans islands
// because it lives inside one stage. Or, for data parallelism across chip types, replica groups:
// each a pipeline on one island with its share of the global batch, the groups exchanging
// gradients over the cluster's declared gradient path. docs/formats/plan.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/workload.hpp"

namespace hetplan {

enum class Schedule { one_f_one_b, interleaved };

// How replica groups on different islands exchange their gradients
// (docs/models/mixed-data-parallel.md#exchange): a ring of the groups, or through one group's
// nodes as a parameter server (only when a plan says so).
enum class GradientExchange { ring, parameter_server };

struct PlanStage {
  std::string island;
  int first_layer = 0;
  int num_layers = 0;
  int tp = 1;
  int dp = 1;
  SourceLocation location;         // the stage entry
  SourceLocation island_location;  // its island field
  // The stage's own recompute, overriding the plan's and the workload's (both together: a
  // stage's `recompute_layers` needs its `recompute: full`).
  std::optional<Recompute> recompute = std::nullopt;
  std::optional<int> recompute_layers = std::nullopt;
  // Expert parallelism (mixture-of-experts models): the experts spread over ep ranks of the
  // stage (ep divides the experts) and each expert's GEMMs over etp ranks (expert tensor
  // parallelism; 0: as tp), Megatron-Core's expert groups: etp consecutive ranks, ep of them
  // etp apart, ep x etp dividing tp x dp (docs/models/moe.md#parallelism). With etp = tp the
  // experts spread over ep of the stage's dp replicas.
  int ep = 1;
  int etp = 0;
  // Under the interleaved schedule, the layers of each of the stage's model chunks in chunk
  // order (virtual_stages entries summing to num_layers), for layouts of unequal chunks such as
  // Megatron's --pipeline-model-parallel-layout; empty: num_layers / virtual_stages each.
  std::vector<int> chunk_layers = {};
  SourceLocation chunk_layers_location = {};  // its field
};

// Expert tensor parallelism as written (0: unset) resolved against the tp it defaults to, and
// that of a stage.
inline int expert_tp(int etp, int tp) {
  return etp > 0 ? etp : tp;
}
inline int expert_tp(const PlanStage& stage) {
  return expert_tp(stage.etp, stage.tp);
}

// The layers of chunk `chunk` of `stage` with `chunks` model chunks per stage.
inline int chunk_layer_count(const PlanStage& stage, int chunk, int chunks) {
  if (!stage.chunk_layers.empty()) return stage.chunk_layers[static_cast<std::size_t>(chunk)];
  return stage.num_layers / (chunks > 0 ? chunks : 1);
}

// The scenario a plan was made for, as `hetplan plan --out` records it: its path relative to the
// plan file's folder and the SHA-256 of its text then.
struct PlanScenario {
  std::string path;
  std::string sha256;
};

// One group of identical data-parallel replicas of a plan with replica groups: a pipeline of
// its own (the stages' dp is the group's replica count) and the group's share of the batch.
struct ReplicaGroupPlan {
  int micro_batches = 1;       // per replica and step
  double gradient_weight = 0;  // each replica's: its samples over the global batch
  // The group's own settings, overriding the plan's (the dtype is the plan's: one for all).
  std::optional<int> micro_batch;
  std::optional<Recompute> recompute;
  std::optional<int> recompute_layers;
  std::optional<int> zero_stage;
  std::optional<Schedule> schedule;
  std::optional<int> virtual_stages;
  std::vector<PlanStage> stages;
  SourceLocation location;         // the group entry
  SourceLocation weight_location;  // its gradient_weight
};

struct Plan {
  std::string name;
  std::optional<PlanScenario> scenario;
  std::optional<int> micro_batch;      // overrides the workload's
  std::optional<Recompute> recompute;  // overrides the workload's
  std::optional<int> recompute_layers;  // with recompute: full, overrides the workload's
  std::optional<int> zero_stage;       // overrides the workload's
  std::optional<DType> dtype;          // overrides the workload's (e.g. fp16 where bf16 is missing)
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;  // model chunks per pipeline stage (interleaved)
  std::vector<PlanStage> stages;  // empty when the plan has replica groups
  // Data parallelism across chip types: at least two groups, each on its own island; the
  // plan-level settings above apply to every group. Empty for a plan of one pipeline.
  std::vector<ReplicaGroupPlan> replica_groups;
  // With replica groups: how they exchange gradients; with a parameter server, the island of
  // the group whose nodes serve.
  GradientExchange gradient_exchange = GradientExchange::ring;
  std::string parameter_server;
  // With replica groups: ZeRO shards over every replica of every group rather than inside each
  // group (docs/models/mixed-data-parallel.md#zero-across-groups).
  bool zero_across_groups = false;
  // Not read from files: the replicas a single pipeline's ZeRO shards over when it is one of
  // several replica groups sharding across groups (0: its stages' dp).
  int zero_shards = 0;
  SourceLocation location;

  bool has_replica_groups() const { return !replica_groups.empty(); }
};

std::string_view to_string(Schedule schedule);
std::string_view to_string(GradientExchange exchange);

}  // namespace hetplan
