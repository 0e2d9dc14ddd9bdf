// Memory of one pipeline stage on one chip: weights, gradients, optimizer states (sharded by the
// ZeRO stage), activations per layer after Korthikanti et al. (2022) for no, selective and full
// recompute with or without sequence parallelism, the micro-batches in flight under 1F1B and
// interleaving, the output head's logits, and the transient buffers of the step (collective
// and pipeline buffers, library workspaces, the sequence-parallel gather, the backward pass's
// gradient tensors). docs/models/memory.md.
#pragma once

#include <algorithm>
#include <span>

#include "core/plan.hpp"
#include "core/workload.hpp"

namespace hetplan::models {

// One layer's activation bytes (layer_activation_bytes) for one micro-batch of `micro_batch`
// sequences on a chip of a tensor-parallel group of `tp`, for every way a layer can be kept:
// for callers that size many stages of one kind (the planner), computed once.
struct LayerActivations {
  int micro_batch = 0;
  int tp = 0;
  int etp = 0;                  // expert tensor parallelism (tp when not folded)
  double expert_imbalance = 0;  // the busiest chip's routed tokens over the mean it assumed
  double kept[3] = {};        // by Recompute: none, selective, full
  double dense_kept[3] = {};  // the same for a mixture-of-experts model's dense layer
  double bytes(Recompute mode, bool dense_mlp) const {
    return (dense_mlp ? dense_kept : kept)[static_cast<int>(mode)];
  }
};

// What the memory model needs to know about one stage.
struct StageShape {
  int num_layers = 0;
  // Of them, a mixture-of-experts model's dense layers (its first `dense_layers`; they sit at
  // the start of the stage's first model chunk).
  int dense_layers = 0;
  bool has_embedding = false;  // first stage
  bool has_head = false;       // last stage
  int tp = 1;
  int dp = 1;
  int ep = 1;   // expert parallelism: the routed experts spread over ep ranks, etp apart
  int etp = 0;  // expert tensor parallelism: each expert split over etp ranks (0: as tp)
  int expert_tp() const { return hetplan::expert_tp(etp, tp); }
  int pipeline_stages = 1;
  int stage_index = 0;
  int virtual_stages = 1;
  // With model chunks of different sizes (a plan's chunk_layers): each chunk's layers, in chunk
  // order; the activations are the peak over the interleaved schedule of the chunks in flight.
  // Empty: virtual_stages chunks of num_layers / virtual_stages.
  std::span<const int> chunk_layers = {};
  int micro_batches = 1;  // per pipeline per step
  int micro_batch = 1;    // sequences per micro-batch
  Recompute recompute = Recompute::none;
  int recompute_layers = 0;  // with full: the layers of each model chunk recomputed, 0 all
  int zero_stage = 0;
  // The replicas ZeRO shards over, when more than dp (replica groups on different islands
  // sharding across groups); 0: dp.
  int zero_shards = 0;
  // Forward operations the schedule runs ahead of 1F1B's or the interleaved warm-up: 1 under
  // Megatron-Core's combined 1F1B (the expert-parallel overlap), whose merged step starts the
  // next forward pass before the backward pass beside it frees its activations.
  int extra_warmup = 0;
  // The layers' activation bytes, when the caller has them for this micro_batch and tp
  // (layer_activations); else stage_memory computes them.
  const LayerActivations* layer_activations = nullptr;
};

// The capacity a process can allocate on a chip: the profile's `memory.usable`, else the prior
// share of the capacity (docs/models/memory.md#usable).
inline constexpr double kUsableShareOfCapacity = 0.94;

struct StageMemory {
  double parameters = 0;  // parameters held by one chip (before ZeRO-3 sharding)
  double expert_parameters = 0;  // of them, the routed experts' (sharded over dp / ep replicas)
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;           // all in-flight micro-batches
  double activation_per_layer = 0;  // one layer, one micro-batch (a recomputed one, if any is)
  double head = 0;                  // logits and loss buffers of the last stage
  double transient = 0;             // buffers of the step (docs/models/memory.md#transient)
  // The optimizer step's fp32 copy of gradients kept in a lower precision. It lives while the
  // activations are free, so only what it needs beyond them raises the peak
  // (docs/models/memory.md#gradients).
  double optimizer_step = 0;
  double optimizer_step_extra() const {
    return std::max(0.0, optimizer_step - activations - head);
  }
  double total() const {
    return weights + gradients + optimizer + activations + head + transient +
           optimizer_step_extra();
  }
};

// Transient figures (docs/models/memory.md#transient): NCCL's default NCCL_BUFFSIZE of 4 MiB per
// channel and peer, for 16 channels each way, per communicator a chip is in; the GEMM and
// attention libraries' workspaces.
inline constexpr double kCollectiveBufferBytes = 16.0 * 2.0 * 4.0 * (1ull << 20);
inline constexpr double kWorkspaceBytes = 64.0 * (1ull << 20);

// Activation bytes one layer keeps for the backward pass, for one micro-batch on one chip;
// `dense_mlp`: a mixture-of-experts model's dense layer. `training` as the chip sees it, its
// imbalance the busiest chip's (for_expert_parallel).
// `etp`: a mixture's expert tensor parallelism (0: as tp).
double layer_activation_bytes(const ModelShape& model, const TrainingSettings& training,
                              int micro_batch, int tp, Recompute recompute, bool dense_mlp = false,
                              int etp = 0);
// layer_activation_bytes for every recompute mode, dense and not.
LayerActivations layer_activations(const ModelShape& model, const TrainingSettings& training,
                                   int micro_batch, int tp, int etp = 0);

// The forward operations stage `stage` (0-based, of `stages`) runs before its first backward
// operation under Megatron-LM's schedules over `micro_batches` micro-batches of `chunks` model
// chunks (at most all of them): plain 1F1B one per later stage, the interleaved schedule
// 2 (p − rank − 1) + (v − 1) p, and `extra_warmup` more (Megatron-Core's combined 1F1B runs one).
// The memory model counts what they hold; sim::pipeline_order runs them.
int pipeline_warmup(int stage, int stages, int micro_batches, int chunks, int extra_warmup = 0);

// Micro-batches (interleaved: model chunks of one micro-batch) whose activations stage
// `stage_index` of `stages` holds when it starts its first backward pass: its warm-up
// (pipeline_warmup) plus the one the backward pass is for, at most m v. Besides it, a stage's
// memory reads of its place only whether it is the first or the last (stage_memory).
// `extra_warmup`: forward operations the schedule runs ahead beyond those (Megatron-Core's combined
// 1F1B runs one, docs/models/memory.md#micro-batches-in-flight).
double chunks_in_flight(int stages, int stage_index, int virtual_stages, int micro_batches,
                        int extra_warmup = 0);

// The most of `chunk_bytes` (one micro-batch's saved activations of each of the stage's model
// chunks, in chunk order) that stage `stage_index` of `stages` holds at once under Megatron's
// interleaved schedule over `micro_batches` micro-batches: its forward operations in warm-up,
// then one forward and one backward at a time (sim/pipeline_schedule.hpp's order). With equal
// chunks it is chunks_in_flight x a chunk's bytes.
double peak_in_flight(int stages, int stage_index, int micro_batches,
                      std::span<const double> chunk_bytes, int extra_warmup = 0);

StageMemory stage_memory(const ModelShape& model, const TrainingSettings& training,
                         const StageShape& stage);

}  // namespace hetplan::models
