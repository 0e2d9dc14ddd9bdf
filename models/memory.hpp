// Memory of one pipeline stage on one chip: weights, gradients, optimizer states (sharded by the
// ZeRO stage), activations per layer after Korthikanti et al. (2022) for no, selective and full
// recompute with or without sequence parallelism, the micro-batches in flight under 1F1B and
// interleaving, the output head's logits, and a runtime reserve. docs/models/memory.md.
#pragma once

#include "core/plan.hpp"
#include "core/workload.hpp"

namespace hetplan::models {

// What the memory model needs to know about one stage.
struct StageShape {
  int num_layers = 0;
  bool has_embedding = false;  // first stage
  bool has_head = false;       // last stage
  int tp = 1;
  int dp = 1;
  int pipeline_stages = 1;
  int stage_index = 0;
  int virtual_stages = 1;
  int micro_batches = 1;  // per pipeline per step
  int micro_batch = 1;    // sequences per micro-batch
  Recompute recompute = Recompute::none;
  int zero_stage = 0;
};

struct StageMemory {
  double parameters = 0;  // parameters held by one chip (before ZeRO-3 sharding)
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;           // all in-flight micro-batches
  double activation_per_layer = 0;  // one layer, one micro-batch
  double head = 0;                  // logits and loss buffers of the last stage
  double reserve = 0;               // runtime, libraries, allocator slack
  double total() const { return weights + gradients + optimizer + activations + head + reserve; }
};

// Bytes of runtime context, communication buffers and allocator slack reserved on every chip
// (docs/models/memory.md#reserve).
inline constexpr double kRuntimeReserveBytes = 2.0 * (1ull << 30);

// Activation bytes one layer keeps for the backward pass, for one micro-batch on one chip.
double layer_activation_bytes(const ModelShape& model, const TrainingSettings& training,
                              int micro_batch, int tp, Recompute recompute);

StageMemory stage_memory(const ModelShape& model, const TrainingSettings& training,
                         const StageShape& stage);

}  // namespace hetplan::models
