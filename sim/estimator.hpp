// The analytic estimate of one training step of a plan: per-stage compute from the operator
// cost model, tensor-parallel and pipeline communication from the collective model, the
// pipeline schedule's bubble, data-parallel gradient synchronisation, the optimizer step, and
// per-stage memory. Fast enough to score thousands of plans. docs/models/estimator.md.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/cluster.hpp"
#include "core/plan.hpp"
#include "core/workload.hpp"
#include "models/collectives.hpp"
#include "models/compute.hpp"
#include "models/memory.hpp"

namespace hetplan::sim {

struct EstimateOptions {
  models::EfficiencyDefaults defaults;
  double intra_latency_default = 2.5e-6;  // s per collective step inside a node
  double network_latency_default = 5e-6;  // s per collective step across nodes
  double intra_bus_efficiency_default = 0.77;
  double network_bus_efficiency_default = 0.9;
  // A stage whose memory leaves less than this share of the usable capacity free fits but is
  // flagged tight (StageEstimate::tight): allocator fragmentation and buffers the model does
  // not know of can take that much (docs/models/memory.md#headroom).
  double memory_headroom = 0.03;
  // Whether stage kernels write their assumptions as text. The search leaves them out of the
  // many kernels it builds and estimates the plans it ranks again with them.
  bool notes = true;
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
  double ep_comm_s = 0;      // one micro-batch: expert-parallel all-to-alls
  // The all-to-alls of one micro-batch, all chunks: dispatch and combine of each layer forward,
  // and again backward, where a fully recomputed layer's forward adds its two. ep_comm_s is
  // their count times StageKernel::a2a_s. 0 without expert parallelism.
  int ep_forward_all_to_alls = 0;
  int ep_backward_all_to_alls = 0;
  double p2p_s = 0;          // one micro-batch, sends and receives at its boundaries
  double zero3_gather_s = 0;  // one micro-batch: ZeRO-3's weight all-gathers not hidden by compute
  // ZeRO >= 2 shards the gradients, so every micro-batch's are reduce-scattered as its backward
  // pass makes them; the step's last reduction is dp_sync_s, the others' exposed part is spread
  // over the micro-batches here ((m - 1) / m of one). 0 with one micro-batch.
  double zero_reduce_s = 0;
  double micro_batch_s = 0;  // forward + backward + tp + p2p + ZeRO gathers and reductions
  double dp_sync_s = 0;      // gradient reduction of the step (all-reduce or reduce-scatter)
  double param_gather_s = 0;  // the sharded optimizer's weight all-gather after its step
  double optimizer_s = 0;
  bool cross_island_boundary = false;  // sends to the next stage cross islands
  models::StageMemory memory;
  double memory_capacity = 0;  // bytes; 0 when unknown
  double memory_usable = 0;    // bytes a process can allocate; 0 when unknown
  bool fits = false;
  // Fits, but the 80% interval of its memory (Estimate::memory_band) reaches past usable; without
  // a band, less than the headroom is left free.
  bool tight = false;
};

struct ExposedCommunication {
  double tensor_parallel = 0;
  double pipeline = 0;      // stage-boundary sends inside an island
  double cross_island = 0;  // stage-boundary sends between islands
  double data_parallel = 0;
  double expert_parallel = 0;  // the all-to-alls of mixture-of-experts layers
  double total() const {
    return tensor_parallel + pipeline + cross_island + data_parallel + expert_parallel;
  }
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
  // How sure the figures are (docs/models/uncertainty.md): the weakest evidence level of the
  // plan's chips, and the 80% intervals of measured over predicted step time and peak memory,
  // the widest of the plan's chips' (empty when one of them states none).
  EvidenceLevel evidence = EvidenceLevel::datasheet;
  std::string weakest_chip;  // the chip of that level with the widest step band
  std::optional<Band> step_band;
  std::optional<Band> memory_band;
  // A stage is tight (StageEstimate::tight): the plan may run out of memory although the
  // estimate fits.
  bool memory_tight() const {
    return std::any_of(stages.begin(), stages.end(), [](const StageEstimate& s) { return s.tight; });
  }
};

// A figure's 80% interval from its estimate and the band of measured over predicted: a time or
// a size scales with the band (low..high), a rate against it (value / high .. value / low).
struct Interval {
  double low = 0, high = 0;
};
Interval scaled_interval(double value, const Band& band);
Interval rate_interval(double value, const Band& band);
// Whether the memory interval of `stage` reaches past what a process can allocate: the plan is
// tight (it may run out of memory although the estimate fits).
bool memory_tight(const StageEstimate& stage, const std::optional<Band>& memory_band);

// A stage's activation recomputation: the mode, and with full recompute the layers of each
// model chunk recomputed (0: all; Megatron's block method, docs/models/memory.md#partial-recompute).
struct StageRecompute {
  Recompute mode = Recompute::none;
  int layers = 0;
  bool operator==(const StageRecompute&) const = default;
};

// The effective training settings of a plan: the workload's, with the plan's overrides.
struct StepSettings {
  TrainingSettings training;
  int micro_batch = 1;
  int virtual_stages = 1;
  int zero_shards = 0;  // replicas ZeRO shards over (Plan::zero_shards); 0: each stage's dp
};
StepSettings step_settings(const Workload& workload, const Plan& plan);

// Why the workload's tensor-parallel overlap (Megatron-Core's userbuffers, MindSpeed's MC2) does
// not apply to a stage on `chip`, or empty when it does: it needs sequence parallelism, and MC2
// refuses mixture-of-experts models. The estimate and the launch arguments follow this one rule.
std::string tp_overlap_refusal(const ChipProfile& chip, const ModelShape& model,
                               const TrainingSettings& training);

// Why the workload's flex MoE dispatcher (DeepEP, HybridEP) does not apply to a stage on `chip`,
// or empty when it does: those libraries run on NVIDIA GPUs only. The estimate and the launch
// arguments follow this one rule.
std::string flex_dispatcher_refusal(const ChipProfile& chip);

// Why the workload's expert-parallel overlap (Megatron-Core's combined 1F1B schedule) does not
// apply to a plan of `stages` pipeline stages under `settings`, or empty when it does: Megatron-
// Core refuses it with full recompute, with the mixture in the recomputed modules and in fp32,
// and with pipeline parallelism it needs the interleaved schedule. Empty too when the workload
// does not ask for it. The estimate and the launch arguments follow this one rule.
std::string ep_overlap_refusal(const StepSettings& settings, int stages);
// The share of stage `stage`'s forward and backward operations the combined 1F1B schedule pairs:
// (m v - w) / (m v), w its warm-up (Megatron's, plus one; 1 without pipelining).
double ep_overlap_paired_share(int stages, int stage, int virtual_stages, int micro_batches);

// What the fabric offers one chip of an island.
struct IslandLinks {
  models::LinkLevel intra;        // within the chip's fast group
  models::LinkLevel intra_cross;  // between groups of one node (falls back to intra)
  models::LinkLevel inter;        // per chip, across nodes under one leaf
  // The same two intra-node levels for an all-to-all (a mixture's expert-parallel exchange):
  // the profile's measured all-to-all figures where it has them, else intra and intra_cross.
  models::LinkLevel intra_a2a;
  models::LinkLevel intra_cross_a2a;
  double nic_per_chip = 0;
  double intra_efficiency = 1;    // achieved share of the intra-node bandwidth
  double network_efficiency = 1;  // achieved share of the NIC bandwidth
  int chips_per_node = 1;
  int group_size = 1;
};

// Everything about a stage that depends on its island, (tp, dp) and the step's settings but not
// on its layers or its place in the pipeline: per-layer compute and tensor-parallel times, the
// embedding's and head's extra times, links, and the reasons it cannot run at all. Built once,
// it prices any number of plans (the planner caches them).
struct StageKernel {
  const Island* island = nullptr;
  const ChipProfile* chip = nullptr;
  int tp = 1;
  int dp = 1;
  int ep = 1;              // expert parallelism (mixture-of-experts models)
  int etp = 1;             // expert tensor parallelism: each expert split over etp ranks
  bool has_rates = false;  // false: the chip cannot run the dtype; see problems
  double peak_flops = 0;
  double memory_bandwidth = 0;  // achieved B/s (nominal x efficiency)
  double layer_forward_s = 0;   // one layer, one micro-batch
  double layer_backward_s = 0;  // without recompute
  double layer_tp_s = 0;        // exposed tensor-parallel collectives of one layer, fwd and bwd
  double layer_selective_s = 0;     // what selective recompute adds to a layer's backward
  double layer_recompute_tp_s = 0;  // the collectives of a recomputed forward (full recompute)
  // Mixture of experts: the expert-parallel all-to-alls of one layer (dispatch and combine,
  // forward and backward), and those a recomputed forward repeats.
  double layer_a2a_s = 0;
  double layer_recompute_a2a_s = 0;
  // A mixture-of-experts model's dense layers, its first `dense_layers` (DeepSeek's
  // first_k_dense_replace; docs/models/moe.md#dense-layers): the same figures for one of them.
  // They have no all-to-alls.
  struct DenseLayer {
    double forward_s = 0;
    double backward_s = 0;
    double tp_s = 0;
    double selective_s = 0;
    double recompute_tp_s = 0;
  };
  bool has_dense_layers = false;
  DenseLayer dense_layer;
  double a2a_bytes = 0;  // one all-to-all's send buffer per chip (nccl-tests' size); 0 without ep
  double a2a_s = 0;      // one all-to-all over ep_group
  // The flex dispatcher across nodes (models::flex_forwarded_traffic): what one all-to-all sends
  // per chip over the intra-node link (its own copies and those it forwards) and over the
  // network (one copy per other node); both 0 for a flat exchange of a2a_bytes.
  double a2a_node_bytes = 0;
  double a2a_network_bytes = 0;
  // The share of an all-to-all that the combined 1F1B schedule hides behind the other
  // micro-batch's compute (the chip's efficiency.ep_comm_overlap or the prior) when the workload
  // asks for the overlap and the stage has all-to-alls; 0 otherwise. Whether the plan allows
  // it is ep_overlap_refusal's.
  double ep_overlap = 0;
  double embedding_forward_s = 0;
  double embedding_backward_s = 0;
  double head_forward_s = 0;
  double head_backward_s = 0;
  double boundary_tp_s = 0;  // tensor-parallel collectives the embedding or the head add
  // Multi-token prediction modules on the last stage (their compute is in head_forward_s and
  // head_backward_s): their tensor-parallel collectives, their layers' all-to-alls and how many.
  double mtp_tp_s = 0;
  double mtp_ep_s = 0;
  int mtp_all_to_alls = 0;  // each way
  IslandLinks links;
  models::CollectiveGroup tp_group;
  models::CollectiveGroup dp_group;
  models::CollectiveGroup ep_group;   // ep ranks, stride etp
  models::CollectiveGroup etp_group;  // etp consecutive ranks (the tp group when etp = tp)
  // tp x dp / (ep x etp) ranks, stride ep x etp: the experts' gradients
  models::CollectiveGroup expert_dp_group;
  double boundary_gather_s = 0;  // receiving a boundary without sequence parallelism: the tp group's all-gather
  std::optional<double> memory_capacity;
  std::optional<double> memory_usable;
  // One layer's activation bytes for the setting's micro-batch, every way it can be kept (a
  // stage's memory reads them).
  models::LayerActivations activations;
  std::vector<std::string> problems;     // reasons any stage of this kind cannot run
  std::vector<std::string> assumptions;  // priors used
  std::vector<std::string> embedding_problems;  // only when it holds the embedding
  std::vector<std::string> head_problems;       // only when it holds the output head
  std::vector<std::string> embedding_assumptions;
  std::vector<std::string> head_assumptions;

  // One layer, one micro-batch, compute, tensor-parallel and expert-parallel communication,
  // recomputed in `mode`.
  double layer_time(Recompute mode) const {
    double time = layer_forward_s + layer_backward_s + layer_tp_s + layer_a2a_s;
    if (mode == Recompute::selective) time += layer_selective_s;
    if (mode == Recompute::full)
      time += layer_forward_s + layer_recompute_tp_s + layer_recompute_a2a_s;
    return time;
  }
  // The embedding of the first stage for one micro-batch, with its collectives.
  double embedding_time() const {
    return embedding_forward_s + embedding_backward_s + boundary_tp_s;
  }
  // The output head of the last stage for one micro-batch: the final norm, logits and loss,
  // the multi-token prediction modules, their collectives.
  double head_time() const {
    return head_forward_s + head_backward_s + boundary_tp_s + mtp_tp_s + mtp_ep_s;
  }
  // The same for one of a mixture's dense layers.
  double dense_layer_time(Recompute mode) const {
    double time = dense_layer.forward_s + dense_layer.backward_s + dense_layer.tp_s;
    if (mode == Recompute::selective) time += dense_layer.selective_s;
    if (mode == Recompute::full) time += dense_layer.forward_s + dense_layer.recompute_tp_s;
    return time;
  }
  // The least time of one layer of either kind, for bounds.
  double least_layer_time(Recompute mode) const {
    return has_dense_layers ? std::min(layer_time(mode), dense_layer_time(mode)) : layer_time(mode);
  }
  // Lower bounds of the above under the combined 1F1B schedule, for the search's bounds: every
  // all-to-all hidden to the kernel's ep_overlap share (a plan's warm-up, and the compute beside
  // them, may leave more exposed; docs/planner.md#ep-overlap). Equal to them without it.
  double layer_time_bound(Recompute mode) const {
    return layer_time(mode) - ep_overlap * layer_a2a_s;
  }
  double least_layer_time_bound(Recompute mode) const {
    return has_dense_layers ? std::min(layer_time_bound(mode), dense_layer_time(mode))
                            : layer_time_bound(mode);
  }
  double head_time_bound() const { return head_time() - ep_overlap * mtp_ep_s; }
  // One micro-batch through `layers` layers in `chunks` model chunks under `recompute`, the
  // first `dense_count` of them a mixture's dense layers (StageLayers).
  double layers_time(int layers, const StageRecompute& recompute, int chunks,
                     int dense_count = 0) const;
};

// What a stage's layers cost for one micro-batch: `num_layers` layers in `chunks` model chunks,
// of which the first `dense` are a mixture's dense layers (at the start of the first chunk, so
// under partial recompute they are recomputed first), the others the kernel's layer.
struct StageLayers {
  double forward_s = 0;
  double backward_s = 0;  // with the recomputed forwards
  double tp_s = 0;
  double ep_s = 0;
  int ep_forward_all_to_alls = 0;
  int ep_backward_all_to_alls = 0;
};
// `chunk_layers`: the sizes of the stage's model chunks when they differ (PlanStage::
// chunk_layers); empty: `chunks` chunks of num_layers / chunks layers.
StageLayers stage_layers(const StageKernel& kernel, int num_layers, int dense,
                         const StageRecompute& recompute, int chunks,
                         std::span<const int> chunk_layers = {});

// Where a stage sits, as far as one micro-batch's time through it depends on that: whether it
// holds the embedding or the output head, how many of its layers are a mixture's dense layers,
// how it recomputes and in how many chunks its layers run, and the share of its operations the
// combined 1F1B schedule pairs (0 without the expert-parallel overlap).
struct StagePlace {
  bool first = false;
  bool last = false;
  int dense_layers = 0;
  StageRecompute recompute;
  int chunks = 1;
  std::span<const int> chunk_layers = {};  // PlanStage::chunk_layers; empty: equal chunks
  double ep_paired = 0;
};

// One micro-batch of `layers` layers through a stage of kernel `k` at `place`: its compute,
// tensor- and expert-parallel time, the embedding's or the head's where it holds them, the
// all-to-alls the combined 1F1B schedule hides taken off (docs/models/estimator.md#ep-overlap).
// The step model's one definition of a stage's time: the estimate assembles it
// (assemble_estimate, which adds the boundaries and the ZeRO per-micro-batch collectives) and
// the plan search's layer split takes its straight line through two layer counts (stage_line).
struct StageMicroBatch {
  double forward_s = 0;
  double backward_s = 0;
  double tp_s = 0;
  double ep_s = 0;
  int ep_forward_all_to_alls = 0;
  int ep_backward_all_to_alls = 0;
  double total() const { return forward_s + backward_s + tp_s + ep_s; }
};
StageMicroBatch stage_micro_batch(const StageKernel& k, const StagePlace& place, int layers);

// stage_micro_batch's time as a straight line in the stage's layers, `fixed_s + layers x
// per_layer_s`, through `from` and `from + step` layers: exact from `from` layers on (every term
// of the model is linear in the layers there), the form the exact layer split solves.
struct StageLine {
  double per_layer_s = 0;
  double fixed_s = 0;
};
StageLine stage_line(const StageKernel& k, const StagePlace& place, int from, int step);

// How many of the layers [first_layer, first_layer + num_layers) of a stage are a mixture's
// dense layers (the model's first `dense_layers`). With `virtual_stages` chunks the stage's
// layers are Megatron's interleaved ones: its chunk c holds num_layers / v layers from
// c x layers / v + first_layer / v.
int stage_dense_layers(const ModelShape& model, int first_layer, int num_layers,
                       int virtual_stages);

// The same for every stage of a pipeline whose stages may give their chunks' sizes
// (PlanStage::chunk_layers): the model's layers in virtual-stage order (chunk c of stage s is
// virtual stage c x stages + s), each chunk taking as many as it holds.
std::vector<int> pipeline_dense_layers(const ModelShape& model,
                                       const std::vector<PlanStage>& stages, int virtual_stages);

// `ep`: expert parallelism of a mixture-of-experts model (1 otherwise); `etp` its expert tensor
// parallelism (0: as tp; docs/models/moe.md#parallelism).
StageKernel make_stage_kernel(const Cluster& cluster, const ModelShape& model,
                              const StepSettings& settings, const Island& island, int tp, int dp,
                              const EstimateOptions& options = {}, int ep = 1, int etp = 0);

// Seconds of a tensor-parallel collective of `collective_s` that stay exposed beside a GEMM of
// `gemm_s`, when overlapped execution hides at most `overlap` of it (docs/models/estimator.md#overlap).
double exposed_beside(double collective_s, double gemm_s, double overlap);

// One stage of a plan as the assembly sees it.
struct StageSlot {
  const StageKernel* kernel = nullptr;
  int first_layer = 0;
  int num_layers = 0;
  // The plan file's entry for the stage, when there is one: its reasons start with it
  // ("plan.yaml:6:5: stage 0 (a): tp 3 does not divide ..."). The planner's plans have none.
  const SourceLocation* location = nullptr;
  // The stage's own recompute; without it, the step settings'.
  std::optional<StageRecompute> recompute = std::nullopt;
  // Its model chunks' sizes when they differ (PlanStage::chunk_layers), and then its dense
  // layers as the layout places them; empty: equal chunks, dense layers by stage_dense_layers.
  std::span<const int> chunk_layers = {};
  int dense_layers = 0;
};

// The recompute of the step settings, and of a stage with its own or without.
StageRecompute settings_recompute(const StepSettings& settings);
// How a stage's layers beyond the recomputed ones run: under partial recompute (a count per
// chunk) they keep their activations; otherwise every layer runs in the settings' mode.
inline Recompute marginal_recompute(const StepSettings& settings) {
  const StageRecompute r = settings_recompute(settings);
  return r.mode == Recompute::full && r.layers > 0 ? Recompute::none : r.mode;
}
inline StageRecompute slot_recompute(const StepSettings& settings, const StageSlot& slot) {
  return slot.recompute ? *slot.recompute : settings_recompute(settings);
}

// Memory of a stage at a position of a pipeline of `stages` stages, one chip.
models::StageMemory slot_memory(const ModelShape& model, const StepSettings& settings,
                                const StageKernel& kernel, int num_layers, int stage_index,
                                int stages, int micro_batches);
models::StageMemory slot_memory(const ModelShape& model, const StepSettings& settings,
                                const StageKernel& kernel, int num_layers, int stage_index,
                                int stages, int micro_batches, const StageRecompute& recompute,
                                int dense_layers = 0, std::span<const int> chunk_layers = {});

// A boundary between two consecutive stages: the time it adds to both stages per micro-batch
// (activations forward, their gradients backward, once per model chunk).
struct Boundary {
  double time_s = 0;
  bool cross_island = false;
  bool connected = true;  // false: the islands' zones have no link between them
};
Boundary stage_boundary(const Cluster& cluster, const ModelShape& model,
                        const StepSettings& settings, const StageKernel& a, const StageKernel& b);

// One collective of a stage's data-parallel gradient synchronisation.
struct SyncCollective {
  models::Collective kind = models::Collective::all_reduce;
  double bytes = 0;  // nccl-tests' buffer size (docs/models/collectives.md)
};
// The gradient synchronisation of a stage whose chips hold `parameters` parameters, in order: a
// reduce-scatter of the gradients and an all-gather of the updated weights with a sharded
// optimizer (ZeRO 1 and 2; the all-gather follows the optimizer step), the reduce-scatter alone
// with ZeRO-3 (its weights stay sharded and are gathered per micro-batch), one all-reduce
// otherwise. At most two, held in place (the planner prices them for every plan it scores).
struct SyncCollectives {
  std::array<SyncCollective, 2> items{};
  std::size_t count = 0;
  const SyncCollective* begin() const { return items.data(); }
  const SyncCollective* end() const { return items.data() + count; }
  std::size_t size() const { return count; }
};
SyncCollectives dp_sync_collectives(const TrainingSettings& training, double parameters);

// A stage's data-parallel synchronisation on kernel `k` holding `memory`'s parameters: the
// gradient reduction (the dense parameters over every replica, the routed experts' over those
// that hold the same experts), the updated weights' all-gather under ZeRO 1 and 2, and under
// ZeRO-3 one all-gather of the stage's weights (before the compute that hides it). Zero
// without data parallelism.
struct StageSyncTimes {
  double dp_sync_s = 0;
  double param_gather_s = 0;
  double zero3_gather_s = 0;
};
StageSyncTimes stage_sync_times(const StageKernel& k, const TrainingSettings& training,
                                const models::StageMemory& memory);

// The estimate of a step from its stages' kernels, written over `out`. The caller has checked
// the plan's structure (one dp, whole micro-batches, island capacity); estimate_step does.
// Without `notes`, `assumptions` and the stages' island and chip names stay empty (the planner
// scores plans without them and estimates the ones it ranks again in full).
// `boundaries`, when given, holds stage_boundary of each pair of consecutive slots (the planner
// keeps them per pair of kernels); `memories`, when given, slot_memory of each slot (the
// planner keeps them per kernel, place and layer count), and `syncs`, with them,
// stage_sync_times of each slot.
void assemble_estimate(const Cluster& cluster, const ModelShape& model,
                       const StepSettings& settings, const std::vector<StageSlot>& slots,
                       Estimate& out, double memory_headroom = EstimateOptions{}.memory_headroom,
                       bool notes = true, const std::vector<Boundary>* boundaries = nullptr,
                       const std::vector<models::StageMemory>* memories = nullptr,
                       const std::vector<StageSyncTimes>* syncs = nullptr);

// Estimates one step. Never throws on a plan that cannot run: the estimate is infeasible and
// says why. The plan must have passed formats::check_plan_references for this cluster and
// workload (islands exist, layers covered).
Estimate estimate_step(const Cluster& cluster, const Workload& workload, const Plan& plan,
                       const EstimateOptions& options = {});

}  // namespace hetplan::sim
