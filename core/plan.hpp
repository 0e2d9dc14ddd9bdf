// A plan: an explicit placement of one training job. Pipeline stages in order, each on one
// island with its layer range and (tp, dp). A tensor- or data-parallel group never spans islands
// because it lives inside one stage. docs/formats/plan.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/workload.hpp"

namespace hetplan {

enum class Schedule { one_f_one_b, interleaved };

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
  // Expert parallelism (mixture-of-experts models): the experts spread over ep of the stage's
  // dp replicas (ep divides dp and the experts); each expert's GEMMs split over tp.
  int ep = 1;
};

// The scenario a plan was made for, as `hetplan plan --out` records it: its path relative to the
// plan file's folder and the SHA-256 of its text then.
struct PlanScenario {
  std::string path;
  std::string sha256;
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
  std::vector<PlanStage> stages;
  SourceLocation location;
};

std::string_view to_string(Schedule schedule);

}  // namespace hetplan
