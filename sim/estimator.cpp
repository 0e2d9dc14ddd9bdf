#include "sim/estimator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "models/transformer_ops.hpp"
#include "sim/pipeline_schedule.hpp"

namespace hetplan::sim {
namespace {

// How a stage's reasons start: the plan file's entry when the stage has one, then its index
// and island.
std::string stage_where(const StageSlot& slot, int index) {
  std::string where;
  if (slot.location && slot.location->line > 0) where = to_string(*slot.location) + ": ";
  where += "stage " + std::to_string(index) + " (" + slot.kernel->island->name + "): ";
  return where;
}

using models::Collective;
using models::CollectiveGroup;
using models::LinkLevel;

std::string gib(double bytes) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << bytes / (1ull << 30) << " GiB";
  return out.str();
}

std::string fixed2(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

// The links one chip of an island sees, from its profile and the island's NICs.
IslandLinks island_links(const Island& island, const ChipProfile& chip,
                         const EstimateOptions& options, std::vector<std::string>& assumptions) {
  const EfficiencyModel& eff = chip.efficiency;
  IslandLinks links;
  links.chips_per_node = island.chips_per_node;
  links.group_size = std::min(chip.intra_node.group_size, island.chips_per_node);
  auto note = [&](const std::string& what) {
    assumptions.push_back("chip " + chip.id + ": " + what);
  };
  const double intra_eff = eff.intra_bus_efficiency.value_or(options.intra_bus_efficiency_default);
  if (!eff.intra_bus_efficiency && options.notes) {
    note("intra-node collective efficiency unknown, prior " + fixed2(intra_eff) + " used");
  }
  const double net_eff =
      eff.network_bus_efficiency.value_or(options.network_bus_efficiency_default);
  if (!eff.network_bus_efficiency && options.notes) {
    note("network collective efficiency unknown, prior " + fixed2(net_eff) + " used");
  }
  // What a training step's communication takes over what the model gives it, where runs have
  // measured it (docs/models/in-step.md): every link's rate divided, every latency multiplied.
  const double slower = eff.in_step.communication.value_or(1.0);
  links.intra_efficiency = intra_eff / slower;
  links.network_efficiency = net_eff / slower;
  links.nic_per_chip = island.nic_count * island.nic_speed / island.chips_per_node;
  links.inter = {links.nic_per_chip * links.network_efficiency,
                 eff.network_latency.value_or(options.network_latency_default) * slower};
  double intra_bw = 0;
  if (chip.intra_node.bandwidth) {
    intra_bw = *chip.intra_node.bandwidth;
  } else {
    if (options.notes) note("intra-node bandwidth unknown; the node's NIC bandwidth per chip is used");
    intra_bw = links.nic_per_chip;
  }
  links.intra = {intra_bw * links.intra_efficiency,
                 eff.intra_latency.value_or(options.intra_latency_default) * slower};
  links.intra_cross = links.intra;
  if (links.group_size < island.chips_per_node) {
    if (chip.intra_node.cross_group_bandwidth) {
      links.intra_cross.bus_bandwidth =
          *chip.intra_node.cross_group_bandwidth * links.intra_efficiency;
    } else {
      if (options.notes)
        note("bandwidth between intra-node groups unknown; the NIC bandwidth per chip is used");
      links.intra_cross.bus_bandwidth = links.nic_per_chip * links.network_efficiency;
    }
  }
  // All-to-alls measured inside a node (docs/models/moe.md#exchange): their bus bandwidth over
  // the link's and their latency replace the collectives' for the expert-parallel exchange, in
  // the same proportion between fast groups.
  links.intra_a2a = links.intra;
  links.intra_cross_a2a = links.intra_cross;
  if (eff.intra_all_to_all_efficiency) {
    const double ratio = *eff.intra_all_to_all_efficiency / intra_eff;
    links.intra_a2a.bus_bandwidth *= ratio;
    links.intra_cross_a2a.bus_bandwidth *= ratio;
    if (eff.intra_all_to_all_latency) {
      links.intra_a2a.latency = *eff.intra_all_to_all_latency * slower;
      links.intra_cross_a2a.latency = std::max(links.intra_cross.latency, links.intra_a2a.latency);
    }
  }
  return links;
}

// A group of `ranks` consecutive chips every `stride` chips (tp groups have stride 1; dp groups
// stride tp), laid out node by node.
// all_to_all: the group carries an expert-parallel exchange (IslandLinks::intra_a2a).
CollectiveGroup make_group(const IslandLinks& links, int ranks, int stride, double inter_scale,
                           bool all_to_all = false) {
  CollectiveGroup group;
  group.ranks = ranks;
  const int per_node = std::max(1, links.chips_per_node / std::max(1, stride));
  group.ranks_per_node = std::min(ranks, per_node);
  const int span = group.ranks_per_node * stride;  // chips of a node the group touches
  const models::LinkLevel& intra = all_to_all ? links.intra_a2a : links.intra;
  const models::LinkLevel& intra_cross = all_to_all ? links.intra_cross_a2a : links.intra_cross;
  group.intra = span <= links.group_size ? intra : intra_cross;
  if (span > links.group_size) {
    // The node's ranks span fast groups: those of one group reach each other over its link.
    group.ranks_per_fast_group = std::max(1, links.group_size / std::max(1, stride));
    group.fast = intra;
  }
  group.inter = links.inter;
  group.inter.bus_bandwidth *= inter_scale;
  return group;
}

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

// Missing operator classes become problems; fallbacks become assumptions (when `notes`).
void check_coverage(const ChipProfile& chip, const std::vector<models::Op>& ops,
                    std::vector<std::string>& problems, std::vector<std::string>& assumptions,
                    bool notes) {
  std::array<bool, kOpClassCount> missing{}, fallback{};
  for (const auto& op : ops) {
    const auto c = static_cast<std::size_t>(op.op_class);
    const OpCoverage coverage = chip.coverage(op.op_class);
    if (coverage.support == Support::missing) missing[c] = true;
    if (coverage.support == Support::fallback && !fallback[c]) {
      fallback[c] = true;
      if (!notes) continue;
      std::ostringstream note;
      note << "chip " << chip.id << ": " << to_string(op.op_class) << " runs as a fallback, "
           << coverage.slowdown << "x slower";
      assumptions.push_back(note.str());
    }
  }
  for (std::size_t c = 0; c < missing.size(); ++c) {
    if (!missing[c]) continue;
    problems.push_back("chip " + chip.id + " lacks operator class " +
                       std::string(to_string(static_cast<OpClass>(c))));
  }
}

}  // namespace

std::string tp_overlap_refusal(const ChipProfile& chip, const ModelShape& model,
                               const TrainingSettings& training) {
  if (!training.sequence_parallel) return "it needs sequence parallelism";
  // Ascend trains with MindSpeed-LLM, whose MC2 (the matmul fused with its collective) refuses
  // mixture-of-experts models ("mc2 is not compatible with moe models").
  if (model.moe() && chip.family == "ascend")
    return "MindSpeed's MC2 does not take mixture-of-experts models (Ascend trains with "
           "MindSpeed-LLM)";
  return "";
}

std::string flex_dispatcher_refusal(const ChipProfile& chip) {
  // DeepEP and HybridEP are CUDA libraries (NVSHMEM, NVLink); other stacks dispatch with their
  // framework's all-to-all.
  if (chip.family != "nvidia") return "DeepEP and HybridEP run on NVIDIA GPUs only";
  return "";
}

std::string ep_overlap_refusal(const StepSettings& settings, int stages) {
  const TrainingSettings& t = settings.training;
  if (!t.overlap_ep_comm) return "";
  // The workload loader refused these, but a plan may change the recompute and the dtype.
  switch (ep_overlap_conflict(t)) {
    case EpOverlapConflict::none:
      break;
    case EpOverlapConflict::full_recompute:
      return "Megatron-Core refuses it with full recomputation";
    case EpOverlapConflict::moe_recompute:
      return "Megatron-Core refuses it with the mixture among the recomputed modules";
    case EpOverlapConflict::fp32:
      return "Megatron-Core runs it in bf16 or fp16 models only";
  }
  if (stages > 1 && settings.virtual_stages <= 1)
    return "with pipeline parallelism Megatron-Core runs it only under the interleaved schedule";
  return "";
}

double ep_overlap_paired_share(int stages, int stage, int virtual_stages, int micro_batches) {
  const int ops = micro_batches * virtual_stages;
  if (ops <= 0) return 0;
  const int warmup = pipeline_warmup(stage, stages, micro_batches, virtual_stages, 1);
  return static_cast<double>(ops - warmup) / static_cast<double>(ops);
}

StepSettings step_settings(const Workload& workload, const Plan& plan) {
  StepSettings settings;
  settings.training = workload.training;
  if (plan.recompute) {
    // The plan's recompute replaces the workload's, with its own layer count (or all layers).
    settings.training.recompute = *plan.recompute;
    settings.training.recompute_layers = plan.recompute_layers.value_or(0);
  }
  if (plan.zero_stage) settings.training.zero_stage = *plan.zero_stage;
  if (plan.dtype) settings.training.dtype = *plan.dtype;
  settings.micro_batch = plan.micro_batch.value_or(settings.training.micro_batch);
  settings.virtual_stages = plan.virtual_stages;
  settings.zero_shards = plan.zero_shards;
  return settings;
}

StageKernel make_stage_kernel(const Cluster& cluster, const ModelShape& model,
                              const StepSettings& settings, const Island& island, int tp, int dp,
                              const EstimateOptions& options, int ep, int etp) {
  const TrainingSettings& training = settings.training;
  const ChipProfile& chip = cluster.chip_of(island);
  StageKernel k;
  k.island = &island;
  k.chip = &chip;
  k.tp = tp;
  k.dp = dp;
  k.ep = ep;
  if (etp <= 0) etp = tp;
  k.etp = etp;
  // The expert groups tile the stage's tp x dp ranks (Megatron-Core's expert rank order: etp
  // innermost, then ep, then the expert data-parallel ranks).
  const bool expert_groups_fit =
      (static_cast<long long>(tp) * dp) % (static_cast<long long>(ep) * etp) == 0;
  k.memory_capacity = chip.memory_capacity;
  // Mixture of experts: the busiest expert's load over the mean (the workload's, else the prior),
  // and the busiest chip's, which the chip's compute, activations and exchanges carry.
  double expert_imbalance = training.expert_imbalance;
  if (model.moe() && expert_imbalance <= 0 &&
      !(training.moe_capacity_factor > 0 && training.moe_pad_to_capacity)) {
    expert_imbalance = options.defaults.expert_imbalance;
    if (options.notes)
      k.assumptions.push_back("expert load imbalance unknown, prior " + fixed2(expert_imbalance) +
                              " (the busiest expert's routed tokens over the mean)");
  }
  if (model.sliding_window > 0 && training.seq_len > model.sliding_window && options.notes) {
    k.assumptions.push_back("attention priced over all " + std::to_string(training.seq_len) +
                            " tokens of the sequence; the model's sliding window of " +
                            std::to_string(model.sliding_window) +
                            " tokens is not modelled (it would cost less)");
  }
  TrainingSettings chip_training = training;
  // Experts padded to a capacity compute exactly that on every chip, whatever the routing;
  // capped without padding, the busiest chip carries no more than the capacity.
  const double load = models::chip_imbalance(expert_imbalance, model.experts, ep);
  const double capacity = training.moe_capacity_factor;
  chip_training.expert_imbalance = capacity <= 0                  ? load
                                   : training.moe_pad_to_capacity ? capacity
                                                                  : std::min(load, capacity);
  k.activations = models::layer_activations(model, chip_training, settings.micro_batch, tp, etp);
  if (chip.memory_usable) {
    k.memory_usable = chip.memory_usable;
  } else if (chip.memory_capacity) {
    k.memory_usable = *chip.memory_capacity * models::kUsableShareOfCapacity;
  }
  if (!chip.memory_usable && chip.memory_capacity && options.notes) {
    char share[16];
    std::snprintf(share, sizeof share, "%.2f", models::kUsableShareOfCapacity);
    k.assumptions.push_back("chip " + chip.id + ": usable memory unknown, prior " + share +
                            " of the capacity used");
  }

  if (chip.role == ChipRole::inference) {
    k.problems.push_back(chip.vendor + " " + chip.model + " is an inference-only chip");
  }
  if (model.heads % tp != 0 || (model.kv_heads % tp != 0 && tp % model.kv_heads != 0)) {
    k.problems.push_back("tp " + std::to_string(tp) + " does not divide the " +
                         std::to_string(model.heads) + " attention heads (" +
                         std::to_string(model.kv_heads) + " key/value heads)");
  }
  if (tp > island.chips_per_node && options.notes) {
    k.assumptions.push_back("island " + island.name + ": tp " + std::to_string(tp) +
                            " spans nodes; its collectives cross the network");
  }

  const auto resolved = models::resolve_rates(chip, training.dtype, options.defaults, options.notes);
  k.assumptions.insert(k.assumptions.end(), resolved.assumptions.begin(),
                       resolved.assumptions.end());
  k.problems.insert(k.problems.end(), resolved.problems.begin(), resolved.problems.end());

  models::LayerSlice slice{settings.micro_batch,          training.seq_len, tp,
                           training.sequence_parallel, training.flash_attention,
                           training.dtype};
  slice.unfused = training.unfused & unfusable_operators(model);
  slice.cross_entropy_fusion = training.cross_entropy_fusion;
  if (model.moe()) {
    slice.ep = ep;
    slice.etp = etp;
    slice.grouped_gemm = training.grouped_gemm;
    slice.expert_imbalance = chip_training.expert_imbalance;
    slice.dispatcher = training.moe_dispatcher;
    if (etp == tp && (dp % ep != 0 || model.experts % ep != 0)) {
      k.problems.push_back("ep " + std::to_string(ep) + " does not divide dp " +
                           std::to_string(dp) + " and the " + std::to_string(model.experts) +
                           " experts");
    } else if (!expert_groups_fit || model.experts % ep != 0) {
      k.problems.push_back("ep " + std::to_string(ep) + " x etp " + std::to_string(etp) +
                           " does not divide tp x dp " + std::to_string(tp * dp) + ", or ep the " +
                           std::to_string(model.experts) + " experts");
    }
    if (tp > 1 && !training.sequence_parallel) {
      k.problems.push_back("mixture-of-experts layers with tp " + std::to_string(tp) +
                           " need sequence parallelism (Megatron-Core requires it)");
    }
  } else if (ep != 1) {
    k.problems.push_back("ep " + std::to_string(ep) + " on a model without experts");
  } else if (etp != tp) {
    k.problems.push_back("etp " + std::to_string(etp) + " on a model without experts");
  }
  const auto layer = models::layer_ops(model, slice);
  // A mixture's dense layers (DeepSeek's first_k_dense_replace): their operators are the MoE
  // layer's but for a dense MLP, whose operator classes the MoE layer's checks cover.
  k.has_dense_layers = model.moe() && model.dense_layers > 0;
  const auto dense_ops =
      k.has_dense_layers ? models::layer_ops(model, slice, true) : std::vector<models::Op>{};
  const auto embedding = models::embedding_ops(model, slice);
  const auto head = models::head_ops(model, slice);
  check_coverage(chip, layer, k.problems, k.assumptions, options.notes);
  check_coverage(chip, embedding, k.embedding_problems, k.embedding_assumptions, options.notes);
  check_coverage(chip, head, k.head_problems, k.head_assumptions, options.notes);
  if (!chip.memory_capacity) {
    k.problems.push_back("memory capacity of " + chip.id +
                         " is unknown, so the fit cannot be checked");
  }

  k.links = island_links(island, chip, options, k.assumptions);
  const int nodes_spanned = ceil_div(tp * dp, island.chips_per_node);
  // Traffic between nodes under different leaves shares oversubscribed uplinks, and, when the
  // zone's spine is oversubscribed too, the spine: the job alone can fill it when its leaves'
  // uplinks together carry more than the spine does (docs/models/collectives.md#spine).
  double leaf_scale = 1.0;
  if (nodes_spanned > island.nodes_per_leaf) {
    leaf_scale = 1.0 / cluster.fabric.oversubscription;
    if (const double spine = cluster.spine_capacity(island.zone); spine > 0) {
      const int leaves = ceil_div(std::min(nodes_spanned, island.nodes), cluster.leaf_nodes(island));
      leaf_scale *= std::min(1.0, spine / (leaves * cluster.leaf_uplink_capacity(island)));
    }
  }
  k.dp_group = make_group(k.links, dp, tp, leaf_scale);
  k.tp_group = make_group(k.links, tp, 1, leaf_scale);
  // Expert parallelism (Megatron-Core's expert groups): etp consecutive ranks split each
  // expert, ep such groups etp apart hold the experts between them, and the ranks ep x etp apart
  // the same experts. With etp = tp: ep neighbouring replicas, every ep-th the same experts.
  k.etp_group = etp == tp ? k.tp_group : make_group(k.links, etp, 1, leaf_scale);
  if (expert_groups_fit && (ep > 1 || etp != tp)) {
    k.ep_group = make_group(k.links, ep, etp, leaf_scale, true);
    k.expert_dp_group = make_group(k.links, tp * dp / (ep * etp), ep * etp, leaf_scale);
  } else {
    k.expert_dp_group = k.dp_group;
  }

  if (!resolved.rates) return k;
  const models::ChipRates& rates = *resolved.rates;
  k.has_rates = true;
  k.peak_flops = rates.peak_flops;
  k.memory_bandwidth = rates.memory_bandwidth * rates.memory_efficiency;
  // Selective recompute runs its modules' forward passes again before their backward passes
  // (the core attention unless the workload names others); full recompute the whole layer's
  // (StageKernel::layer_time).
  const unsigned modules = training.recompute_modules;
  auto recomputed = [&](const models::Op& op) {
    return ((op.modules | (op.core_attention ? kRecomputeCoreAttention : 0u)) & modules) != 0;
  };
  for (const auto& op : layer) {
    const double f = models::forward_time(op, rates);
    k.layer_forward_s += f;
    k.layer_backward_s += models::backward_time(op, rates);
    if (recomputed(op)) k.layer_selective_s += f;
  }
  for (const auto& op : dense_ops) {
    const double f = models::forward_time(op, rates);
    k.dense_layer.forward_s += f;
    k.dense_layer.backward_s += models::backward_time(op, rates);
    if (recomputed(op)) k.dense_layer.selective_s += f;
  }
  // The host's time per layer and micro-batch that the kernels do not hide, where runs have
  // measured it (docs/models/in-step.md#overheads): forward and backward in the shares of the
  // layer's kernels each pass launches; a mixture's layers add their own.
  const InStepTerms& in_step = chip.efficiency.in_step;
  auto add_overhead = [](double overhead, const std::vector<models::Op>& ops, double& forward,
                         double& backward) {
    if (overhead <= 0) return;
    double launched_forward = 0, launched_backward = 0;
    for (const auto& op : ops) {
      launched_forward += op.kernels;
      launched_backward += op.backward_kernels;
    }
    const double total = launched_forward + launched_backward;
    const double forward_share = total > 0 ? launched_forward / total : 0.5;
    forward += overhead * forward_share;
    backward += overhead * (1 - forward_share);
  };
  const double layer_overhead = in_step.layer_overhead.value_or(0.0);
  add_overhead(layer_overhead + (model.moe() ? in_step.moe_layer_overhead.value_or(0.0) : 0.0),
               layer, k.layer_forward_s, k.layer_backward_s);
  add_overhead(layer_overhead, dense_ops, k.dense_layer.forward_s, k.dense_layer.backward_s);
  for (const auto& op : embedding) {
    k.embedding_forward_s += models::forward_time(op, rates);
    k.embedding_backward_s += models::backward_time(op, rates);
  }
  for (const auto& op : head) {
    k.head_forward_s += models::forward_time(op, rates);
    k.head_backward_s += models::backward_time(op, rates);
  }

  // Tensor parallelism: two all-reduces forward and two backward per layer (with sequence
  // parallelism, an all-gather before and a reduce-scatter after each block, of the same
  // volume), plus the recomputed forward's under full recompute; the embedding and the head add
  // one each way. With overlap (Transformer Engine's userbuffers, MindSpeed's MC2; it needs
  // sequence parallelism) each all-gather hides behind the column-parallel GEMM it feeds and
  // each reduce-scatter behind the row-parallel GEMM that produces it, backward as forward.
  const double e = bytes_per_element(storage_dtype(training.dtype));
  const double tokens = static_cast<double>(settings.micro_batch) * training.seq_len;
  const double activation = tokens * model.hidden * e;
  // A mixture's dispatched copies are gathered over the etp ranks that split each expert before
  // the experts and reduce-scattered after them (their etp chips' tokens, experts_per_token
  // copies each, the busiest chip's share): one pass's time, forward or backward.
  double routed_pass = 0;
  if (model.moe() && etp > 1) {
    const double gathered = etp == tp ? activation : tokens / tp * etp * model.hidden * e;
    const double routed = gathered * model.experts_per_token * slice.expert_imbalance;
    routed_pass = models::best_collective(Collective::all_gather, routed, k.etp_group).time +
                  models::best_collective(Collective::reduce_scatter, routed, k.etp_group).time;
  }
  if (tp > 1) {
    const CollectiveGroup& group = k.tp_group;
    const double all_reduce =
        models::best_collective(Collective::all_reduce, activation, group).time;
    k.boundary_tp_s = 2.0 * all_reduce;
    const std::string refused =
        training.overlap_tp_comm ? tp_overlap_refusal(chip, model, training) : std::string();
    const bool overlapped = training.overlap_tp_comm && refused.empty();
    if (!refused.empty() && options.notes)
      k.assumptions.push_back("tensor-parallel communication overlap not applied: " + refused);
    double overlap = 0;
    if (overlapped) {
      overlap = chip.efficiency.tp_comm_overlap.value_or(options.defaults.tp_comm_overlap);
      if (!chip.efficiency.tp_comm_overlap && options.notes) {
        k.assumptions.push_back("chip " + chip.id + ": tensor-parallel overlap unknown, prior " +
                                fixed2(overlap) + " of each collective hidden");
      }
    }
    auto collective = [&](Collective kind, double bytes) {
      return models::best_collective(kind, bytes, group).time;
    };
    // The exposed tensor-parallel time of one layer of `ops` (forward and backward) and of its
    // recomputed forward; `moe_mlp`: its MLP is a mixture's.
    auto tp_times = [&](const std::vector<models::Op>& ops, bool moe_mlp) {
      std::pair<double, double> out;  // layer, recomputed forward
      // Multi-head latent attention (docs/models/attention.md#tensor-parallelism): the
      // column-parallel up-projections (or Q's direct projection) take their inputs from the
      // replicated down-projections, so what is gathered over the group (reduced backward) is
      // the Q latent (or the hidden states), the KV latent and the shared rotary key, one
      // collective each; the output projection reduces the hidden states as in any layer.
      double latent_forward = 0, latent_backward = 0;
      if (model.latent_attention()) {
        const double q_in = model.q_lora_rank > 0 ? model.q_lora_rank : model.hidden;
        for (const double width : {q_in, static_cast<double>(model.kv_lora_rank),
                                   static_cast<double>(model.qk_rope_head_dim)}) {
          const double bytes = tokens * width * e;
          if (training.sequence_parallel) {
            latent_forward += collective(Collective::all_gather, bytes);
            latent_backward += collective(Collective::reduce_scatter, bytes);
          } else {
            latent_backward += collective(Collective::all_reduce, bytes);
          }
        }
      }
      if (!overlapped) {
        // Two each forward pass, two backward; a recomputed forward repeats the forward's
        // two. A mixture-of-experts layer has the attention block's; its MLP block's are
        // priced below.
        const double blocks = moe_mlp ? 1.0 : 2.0;
        if (model.latent_attention()) {
          const double out_forward = training.sequence_parallel
                                         ? collective(Collective::reduce_scatter, activation)
                                         : all_reduce;
          const double out_backward =
              training.sequence_parallel ? collective(Collective::all_gather, activation) : 0.0;
          const double mlp = (blocks - 1.0) * all_reduce;
          out.first = latent_forward + out_forward + latent_backward + out_backward + 2.0 * mlp;
          out.second = latent_forward + out_forward + mlp;
        } else {
          out.first = 2.0 * blocks * all_reduce;
          out.second = blocks * all_reduce;
        }
      } else {
        const double gather =
            models::best_collective(Collective::all_gather, activation, group).time;
        const double scatter =
            models::best_collective(Collective::reduce_scatter, activation, group).time;
        // Each linear GEMM beside its collective: forward once per forward pass (a recomputed
        // forward again); backward its input-gradient GEMM, half the backward time. Latent
        // attention's up-projections gather their own inputs; its rotary key's gather has no
        // GEMM of its own to hide behind.
        double forward_exposed = 0, backward_exposed = 0;
        for (const auto& op : ops) {
          const bool latent =
              op.name == "q_up_proj" || op.name == "q_proj" || op.name == "kv_up_proj";
          const bool column =
              op.name == "qkv_proj" || op.name == "mlp_gate_up" || op.name == "mlp_up";
          const bool row = op.name == "attention_out_proj" || op.name == "mlp_down";
          if (!column && !row && !latent) continue;  // the experts' collectives are not overlapped
          const double f = models::forward_time(op, rates);
          const double dgrad = 0.5 * models::backward_time(op, rates);
          if (latent) {
            const double bytes = tokens * op.gemm.k * e;
            forward_exposed +=
                exposed_beside(collective(Collective::all_gather, bytes), f, overlap);
            backward_exposed +=
                exposed_beside(collective(Collective::reduce_scatter, bytes), dgrad, overlap);
            continue;
          }
          forward_exposed += exposed_beside(column ? gather : scatter, f, overlap);
          backward_exposed += exposed_beside(column ? scatter : gather, dgrad, overlap);
        }
        if (model.latent_attention()) {
          const double rope = tokens * model.qk_rope_head_dim * e;
          forward_exposed += collective(Collective::all_gather, rope);
          backward_exposed += collective(Collective::reduce_scatter, rope);
        }
        out.first = forward_exposed + backward_exposed;
        out.second = forward_exposed;
      }
      if (moe_mlp) {
        // The dispatched copies' gather and reduce-scatter over the etp group (above); shared
        // experts have a dense MLP's collectives. Forward and backward.
        double pass = routed_pass;
        if (model.shared_experts > 0) pass += all_reduce;
        out.first += 2.0 * pass;
        out.second += pass;
      }
      return out;
    };
    std::tie(k.layer_tp_s, k.layer_recompute_tp_s) = tp_times(layer, model.moe());
    if (k.has_dense_layers)
      std::tie(k.dense_layer.tp_s, k.dense_layer.recompute_tp_s) = tp_times(dense_ops, false);
    if (model.mtp_layers > 0) {
      // A multi-token prediction module: its layer's collectives, its embedding lookup's and
      // output layer's (as the embedding's and the head's), and its projection's: with
      // sequence parallelism the 2h-wide input gathered and the h/t-wide output gathered back
      // to h before the layer scatters it (reduce-scatters backward); without, the output's
      // gather forward and the input gradient's all-reduce backward
      // (docs/models/moe.md#multi-token-prediction).
      const double projection = training.sequence_parallel
                                    ? 2.0 * (collective(Collective::all_gather, 2.0 * activation) +
                                             collective(Collective::all_gather, activation))
                                    : collective(Collective::all_gather, activation) +
                                          collective(Collective::all_reduce, 2.0 * activation);
      k.mtp_tp_s = model.mtp_layers * (k.layer_tp_s + projection + 2.0 * k.boundary_tp_s);
    }
  } else if (routed_pass > 0) {
    // No tensor parallelism, experts split over etp > 1 ranks: only the mixture's gathers.
    k.layer_tp_s = 2.0 * routed_pass;
    k.layer_recompute_tp_s = routed_pass;
    if (model.mtp_layers > 0 && model.mtp_moe_layer()) k.mtp_tp_s = model.mtp_layers * k.layer_tp_s;
  }
  if (model.moe() && ep > 1 && expert_groups_fit) {
    // Expert parallelism: each chip sends its tokens' copies to the chips of their experts and
    // takes the results back (dispatch and combine), forward and backward. The nccl-tests size
    // of an all-to-all is each rank's send buffer: its share of the micro-batch's tokens (the
    // sequence-parallel share with tp), experts_per_token copies, the busiest chip's load.
    // The flex dispatcher sends a token once to each chip holding any of its experts
    // (docs/models/moe.md#dispatcher).
    const double local = training.sequence_parallel ? tokens / tp : tokens;
    MoeDispatcher dispatcher = training.moe_dispatcher;
    if (dispatcher == MoeDispatcher::flex) {
      const std::string refused = flex_dispatcher_refusal(chip);
      if (!refused.empty()) {
        dispatcher = MoeDispatcher::all_to_all;
        if (options.notes)
          k.assumptions.push_back(
              "island " + island.name +
              ": the all-to-all dispatcher's copies, not the flex one's: " + refused);
      }
    }
    const double copies =
        models::dispatched_copies(model.experts, model.experts_per_token, ep, dispatcher);
    const double token_bytes = local * model.hidden * e * slice.expert_imbalance;
    const double sent = token_bytes * copies;
    // Across nodes the flex dispatcher sends a token over the network once per node and
    // forwards it inside the node (docs/models/moe.md#forwarding).
    const int nodes = k.ep_group.nodes();
    const models::FlexTraffic forwarded =
        dispatcher == MoeDispatcher::flex && nodes * k.ep_group.ranks_per_node == ep
            ? models::flex_forwarded_traffic(model.experts, model.experts_per_token, ep, nodes)
            : models::FlexTraffic{};
    double a2a = 0;
    if (forwarded.network > 0) {
      k.a2a_node_bytes = token_bytes * forwarded.node;
      k.a2a_network_bytes = token_bytes * forwarded.network;
      a2a = models::forwarded_all_to_all_time(k.a2a_node_bytes, k.a2a_network_bytes, k.ep_group);
    } else {
      a2a = models::best_collective(Collective::all_to_all, sent, k.ep_group).time;
    }
    k.a2a_bytes = sent;
    k.a2a_s = a2a;
    if (training.overlap_ep_comm) {
      k.ep_overlap = chip.efficiency.ep_comm_overlap.value_or(options.defaults.ep_comm_overlap);
      if (!chip.efficiency.ep_comm_overlap && options.notes)
        k.assumptions.push_back("chip " + chip.id + ": expert-parallel overlap unknown, prior " +
                                fixed2(k.ep_overlap) +
                                " of each all-to-all hidden behind the other micro-batch");
    }
    k.layer_a2a_s = 4.0 * a2a;
    k.layer_recompute_a2a_s = 2.0 * a2a;
    // A multi-token prediction module's layer is a mixture's layer like the last one.
    if (model.mtp_layers > 0 && model.mtp_moe_layer()) {
      k.mtp_ep_s = model.mtp_layers * k.layer_a2a_s;
      k.mtp_all_to_alls = 2 * model.mtp_layers;
    }
  }
  // A recomputed MLP or mixture repeats its block's forward collectives (half a recomputed
  // layer's) and a recomputed mixture its all-to-alls; they are counted with the recomputed
  // pass (docs/models/memory.md#recompute-modules).
  if (training.recompute == Recompute::selective) {
    if ((modules & (model.moe() ? kRecomputeMoe : kRecomputeMlp)) != 0)
      k.layer_selective_s += 0.5 * k.layer_recompute_tp_s;
    if (model.moe() && (modules & kRecomputeMoe) != 0)
      k.layer_selective_s += k.layer_recompute_a2a_s;
    if (k.has_dense_layers && (modules & kRecomputeMlp) != 0)
      k.dense_layer.selective_s += 0.5 * k.dense_layer.recompute_tp_s;
  }
  // A stage receiving a boundary without sequence parallelism gets 1/tp of the activations
  // from each sender and all-gathers them across its tensor-parallel group (Megatron's
  // scatter/gather of pipeline tensors, Narayanan et al. 2021 section 4.1).
  if (tp > 1 && !training.sequence_parallel) {
    k.boundary_gather_s =
        models::best_collective(Collective::all_gather, activation, k.tp_group).time;
  }
  return k;
}

double StageKernel::layers_time(int layers, const StageRecompute& recompute, int chunks,
                                int dense_count) const {
  const int dense = dense_count;
  const int full = fully_recomputed_layers(recompute.mode, recompute.layers, layers, chunks);
  const Recompute rest = recompute.mode == Recompute::full ? Recompute::none : recompute.mode;
  if (dense <= 0) return (layers - full) * layer_time(rest) + full * layer_time(Recompute::full);
  const int dense_full = std::min(dense, full / std::max(1, chunks));
  return (layers - dense - (full - dense_full)) * layer_time(rest) +
         (full - dense_full) * layer_time(Recompute::full) +
         (dense - dense_full) * dense_layer_time(rest) +
         dense_full * dense_layer_time(Recompute::full);
}

StageLayers stage_layers(const StageKernel& k, int num_layers, int dense,
                         const StageRecompute& recompute, int chunks,
                         std::span<const int> chunk_layers) {
  StageLayers out;
  const int full =
      chunk_layers.empty()
          ? fully_recomputed_layers(recompute.mode, recompute.layers, num_layers, chunks)
          : fully_recomputed_layers(recompute.mode, recompute.layers, chunk_layers);
  if (dense <= 0) {
    out.forward_s = num_layers * k.layer_forward_s;
    out.backward_s = num_layers * k.layer_backward_s + full * k.layer_forward_s;
    if (recompute.mode == Recompute::selective) out.backward_s += num_layers * k.layer_selective_s;
    out.tp_s = num_layers * k.layer_tp_s + full * k.layer_recompute_tp_s;
    out.ep_s = num_layers * k.layer_a2a_s + full * k.layer_recompute_a2a_s;
    if (k.a2a_bytes > 0) {
      out.ep_forward_all_to_alls = 2 * num_layers;
      out.ep_backward_all_to_alls = 2 * num_layers + 2 * full;
    }
    return out;
  }
  // The dense layers are the first of the first chunk: recomputed first.
  dense = std::min(dense, num_layers);
  const int first_chunk_full =
      chunk_layers.empty()
          ? full / std::max(1, chunks)
          : fully_recomputed_layers(recompute.mode, recompute.layers, chunk_layers.first(1));
  const int dense_full = std::min(dense, first_chunk_full);
  const int moe = num_layers - dense;
  const int moe_full = full - dense_full;
  const StageKernel::DenseLayer& d = k.dense_layer;
  out.forward_s = moe * k.layer_forward_s + dense * d.forward_s;
  out.backward_s = moe * k.layer_backward_s + dense * d.backward_s +
                   moe_full * k.layer_forward_s + dense_full * d.forward_s;
  if (recompute.mode == Recompute::selective)
    out.backward_s += moe * k.layer_selective_s + dense * d.selective_s;
  out.tp_s = moe * k.layer_tp_s + dense * d.tp_s + moe_full * k.layer_recompute_tp_s +
             dense_full * d.recompute_tp_s;
  out.ep_s = moe * k.layer_a2a_s + moe_full * k.layer_recompute_a2a_s;
  if (k.a2a_bytes > 0) {
    out.ep_forward_all_to_alls = 2 * moe;
    out.ep_backward_all_to_alls = 2 * moe + 2 * moe_full;
  }
  return out;
}

StageMicroBatch stage_micro_batch(const StageKernel& k, const StagePlace& place, int layers) {
  StageMicroBatch out;
  if (!k.has_rates) return out;
  const StageLayers own = stage_layers(k, layers, place.dense_layers, place.recompute, place.chunks,
                                       place.chunk_layers);
  out.forward_s = own.forward_s;
  out.backward_s = own.backward_s;
  out.tp_s = own.tp_s;
  out.ep_s = own.ep_s;
  out.ep_forward_all_to_alls = own.ep_forward_all_to_alls;
  out.ep_backward_all_to_alls = own.ep_backward_all_to_alls;
  if (place.first) {
    out.forward_s += k.embedding_forward_s;
    out.backward_s += k.embedding_backward_s;
    out.tp_s += k.boundary_tp_s;
  }
  if (place.last) {
    out.forward_s += k.head_forward_s;
    out.backward_s += k.head_backward_s;
    out.tp_s += k.boundary_tp_s + k.mtp_tp_s;
    out.ep_s += k.mtp_ep_s;
    out.ep_forward_all_to_alls += k.mtp_all_to_alls;
    out.ep_backward_all_to_alls += k.mtp_all_to_alls;
  }
  // The combined 1F1B schedule: the paired operations' forward all-to-alls hide behind the
  // other micro-batch's backward compute and the backward's behind the forward's, each up to
  // the kernel's share (docs/models/estimator.md#ep-overlap).
  const int all_to_alls = out.ep_forward_all_to_alls + out.ep_backward_all_to_alls;
  if (place.ep_paired > 0 && k.ep_overlap > 0 && all_to_alls > 0 && out.ep_s > 0) {
    const double forward_a2a = out.ep_s * out.ep_forward_all_to_alls / all_to_alls;
    const double backward_a2a = out.ep_s - forward_a2a;
    const double hidden = std::min(k.ep_overlap * forward_a2a, out.backward_s) +
                          std::min(k.ep_overlap * backward_a2a, out.forward_s);
    out.ep_s -= place.ep_paired * hidden;
  }
  return out;
}

StageLine stage_line(const StageKernel& k, const StagePlace& place, int from, int step) {
  const double at_from = stage_micro_batch(k, place, from).total();
  const double at_next = stage_micro_batch(k, place, from + step).total();
  StageLine line;
  line.per_layer_s = (at_next - at_from) / step;
  line.fixed_s = at_from - from * line.per_layer_s;
  return line;
}

int stage_dense_layers(const ModelShape& model, int first_layer, int num_layers,
                       int virtual_stages) {
  const int dense = model.moe() ? std::min(model.dense_layers, model.layers) : 0;
  if (dense <= 0 || num_layers <= 0) return 0;
  auto overlap = [&](int begin, int end) {
    return std::max(0, std::min(end, dense) - std::max(begin, 0));
  };
  const int v = std::max(1, virtual_stages);
  if (v == 1 || model.layers % v != 0 || first_layer % v != 0 || num_layers % v != 0)
    return overlap(first_layer, first_layer + num_layers);
  const int round = model.layers / v;  // the layers of one chunk of every stage
  const int begin = first_layer / v;
  const int count = num_layers / v;
  int out = 0;
  for (int c = 0; c < v && c * round < dense; ++c)
    out += overlap(c * round + begin, c * round + begin + count);
  return out;
}

std::vector<int> pipeline_dense_layers(const ModelShape& model,
                                       const std::vector<PlanStage>& stages, int virtual_stages) {
  const int p = static_cast<int>(stages.size());
  std::vector<int> out(stages.size(), 0);
  const bool uneven = std::any_of(stages.begin(), stages.end(),
                                  [](const PlanStage& s) { return !s.chunk_layers.empty(); });
  if (!uneven) {
    for (int s = 0; s < p; ++s) {
      const PlanStage& stage = stages[static_cast<std::size_t>(s)];
      out[static_cast<std::size_t>(s)] =
          stage_dense_layers(model, stage.first_layer, stage.num_layers, virtual_stages);
    }
    return out;
  }
  const int dense = model.moe() ? std::min(model.dense_layers, model.layers) : 0;
  const int v = std::max(1, virtual_stages);
  int next = 0;  // the first layer of the next virtual stage
  for (int c = 0; c < v && next < dense; ++c) {
    for (int s = 0; s < p && next < dense; ++s) {
      const int held = chunk_layer_count(stages[static_cast<std::size_t>(s)], c, v);
      out[static_cast<std::size_t>(s)] += std::max(0, std::min(next + held, dense) - next);
      next += held;
    }
  }
  return out;
}

StageRecompute settings_recompute(const StepSettings& settings) {
  const TrainingSettings& t = settings.training;
  return {t.recompute, t.recompute == Recompute::full ? t.recompute_layers : 0};
}

models::StageMemory slot_memory(const ModelShape& model, const StepSettings& settings,
                                const StageKernel& kernel, int num_layers, int stage_index,
                                int stages, int micro_batches) {
  return slot_memory(model, settings, kernel, num_layers, stage_index, stages, micro_batches,
                     settings_recompute(settings));
}

models::StageMemory slot_memory(const ModelShape& model, const StepSettings& settings,
                                const StageKernel& kernel, int num_layers, int stage_index,
                                int stages, int micro_batches, const StageRecompute& recompute,
                                int dense_layers, std::span<const int> chunk_layers) {
  models::StageShape shape;
  shape.num_layers = num_layers;
  shape.chunk_layers = chunk_layers;
  shape.dense_layers = dense_layers;
  shape.has_embedding = stage_index == 0;
  shape.has_head = stage_index == stages - 1;
  shape.tp = kernel.tp;
  shape.dp = kernel.dp;
  shape.ep = kernel.ep;
  shape.etp = kernel.etp;
  shape.pipeline_stages = stages;
  shape.stage_index = stage_index;
  shape.virtual_stages = settings.virtual_stages;
  shape.micro_batches = micro_batches;
  shape.micro_batch = settings.micro_batch;
  shape.recompute = recompute.mode;
  shape.recompute_layers = recompute.layers;
  shape.zero_stage = settings.training.zero_stage;
  shape.zero_shards = settings.zero_shards;
  shape.layer_activations = &kernel.activations;
  // The combined 1F1B schedule starts one forward operation more before its first backward.
  shape.extra_warmup =
      kernel.ep_overlap > 0 && ep_overlap_refusal(settings, stages).empty() ? 1 : 0;
  return models::stage_memory(model, settings.training, shape);
}

double exposed_beside(double collective_s, double gemm_s, double overlap) {
  return collective_s - std::min(overlap * collective_s, gemm_s);
}

StageSyncTimes stage_sync_times(const StageKernel& k, const TrainingSettings& training,
                                const models::StageMemory& memory) {
  StageSyncTimes out;
  // With experts split over fewer ranks than tp (etp below tp), ranks of one replica may hold
  // the same experts: their gradients are reduced even without data parallelism.
  if (k.dp <= 1 && k.expert_dp_group.ranks <= 1) return out;
  // Data-parallel gradient reduction (reduce-scatter with a sharded optimizer, then an
  // all-gather of the updated weights; all-reduce otherwise): the dense parameters over every
  // replica, the routed experts' over the ranks that hold the same experts.
  const double experts = memory.expert_parameters;
  const double dense = memory.parameters - experts;
  if (k.dp > 1)
    for (const SyncCollective& sync : dp_sync_collectives(training, dense)) {
      const double time = models::best_collective(sync.kind, sync.bytes, k.dp_group).time;
      (sync.kind == Collective::all_gather ? out.param_gather_s : out.dp_sync_s) += time;
    }
  if (experts > 0 && k.expert_dp_group.ranks > 1) {
    for (const SyncCollective& sync : dp_sync_collectives(training, experts)) {
      const double time = models::best_collective(sync.kind, sync.bytes, k.expert_dp_group).time;
      (sync.kind == Collective::all_gather ? out.param_gather_s : out.dp_sync_s) += time;
    }
  }
  if (training.zero_stage >= 3) {
    const double e = bytes_per_element(storage_dtype(training.dtype));
    out.zero3_gather_s =
        models::best_collective(Collective::all_gather, memory.parameters * e, k.dp_group).time;
  }
  return out;
}

SyncCollectives dp_sync_collectives(const TrainingSettings& training, double parameters) {
  const double e = bytes_per_element(storage_dtype(training.dtype));
  const double grad_bytes = parameters * (training.fp32_grad_accumulation ? 4.0 : e);
  SyncCollectives out;
  if (training.zero_stage >= 3) {
    out.items[out.count++] = {Collective::reduce_scatter, grad_bytes};
  } else if (training.zero_stage >= 1) {
    out.items[out.count++] = {Collective::reduce_scatter, grad_bytes};
    out.items[out.count++] = {Collective::all_gather, parameters * e};
  } else {
    out.items[out.count++] = {Collective::all_reduce, grad_bytes};
  }
  return out;
}

Boundary stage_boundary(const Cluster& cluster, const ModelShape& model,
                        const StepSettings& settings, const StageKernel& a, const StageKernel& b) {
  // Each chip of the sending stage sends its 1/tp share of the activations (the receiving
  // stage gathers); gradients come back the same way.
  Boundary out;
  const Island& ia = *a.island;
  const Island& ib = *b.island;
  const double e = bytes_per_element(storage_dtype(settings.training.dtype));
  const double tokens = static_cast<double>(settings.micro_batch) * settings.training.seq_len;
  const double per_chip = tokens * model.hidden * e / std::min(a.tp, b.tp);
  // Without sequence parallelism the receiver gathers the shares (b forward, a backward).
  const double gathers = b.boundary_gather_s + a.boundary_gather_s;
  double bandwidth = 0;
  double latency = 0;
  const bool same_island = &ia == &ib;
  if (same_island && a.tp * a.dp < ia.chips_per_node) {
    bandwidth = a.links.intra.bus_bandwidth;  // both stages share a node
    latency = a.links.intra.latency;
  } else {
    bandwidth = std::min(a.links.nic_per_chip, b.links.nic_per_chip);
    latency = std::max(a.links.inter.latency, b.links.inter.latency) +
              2.0 * cluster.fabric.switch_latency;
    const int senders = std::min(a.tp, b.tp) * a.dp;
    if (!same_island) {
      out.cross_island = true;
      if (!cluster.zones_connected(ia.zone, ib.zone)) {
        out.connected = false;
      } else if (ia.zone != ib.zone) {
        const ZoneLink* link = cluster.zone_link(ia.zone, ib.zone);
        bandwidth = std::min(bandwidth, link->bandwidth / senders);
        latency += link->latency;
      }
      bandwidth /= cluster.fabric.oversubscription;
    }
  }
  const double hop = bandwidth > 0 ? latency + per_chip / bandwidth : 0.0;
  // Forward sends activations, backward returns their gradients; interleaving crosses each
  // boundary once per model chunk.
  out.time_s = (2.0 * hop + gathers) * settings.virtual_stages;
  return out;
}

void assemble_estimate(const Cluster& cluster, const ModelShape& model,
                       const StepSettings& settings, const std::vector<StageSlot>& slots,
                       Estimate& out, double memory_headroom, bool notes,
                       const std::vector<Boundary>* boundaries,
                       const std::vector<models::StageMemory>* memories,
                       const std::vector<StageSyncTimes>* syncs) {
  const TrainingSettings& training = settings.training;
  const int micro_batch = settings.micro_batch;
  // How sure the figures are: the weakest chip's evidence and the widest bands.
  {
    bool first = true, step_known = true, memory_known = true;
    std::optional<Band> step, memory;
    double weakest_width = 0;
    for (const auto& slot : slots) {
      const ChipProfile& chip = *slot.kernel->chip;
      const EvidenceLevel level = chip.evidence_level();
      const double width = chip.evidence.step ? chip.evidence.step->high / chip.evidence.step->low
                                              : std::numeric_limits<double>::infinity();
      if (first || level < out.evidence || (level == out.evidence && width > weakest_width)) {
        out.evidence = level;
        out.weakest_chip = chip.id;
        weakest_width = width;
      }
      first = false;
      auto widen = [](std::optional<Band>& band, const std::optional<Band>& of, bool& known) {
        if (!of) {
          known = false;
        } else if (!band) {
          band = of;
        } else {
          band->low = std::min(band->low, of->low);
          band->high = std::max(band->high, of->high);
        }
      };
      widen(step, chip.evidence.step, step_known);
      widen(memory, chip.evidence.memory, memory_known);
    }
    out.step_band = step_known ? step : std::nullopt;
    out.memory_band = memory_known ? memory : std::nullopt;
  }
  const int p = static_cast<int>(slots.size());
  const int v = settings.virtual_stages;
  const int dp = slots.front().kernel->dp;
  const long long per_round = static_cast<long long>(dp) * micro_batch;
  const int m = static_cast<int>(std::max(1LL, training.global_batch / per_round));
  // Start from a clean estimate (the planner reuses one for many plans).
  out.feasible = true;
  out.reasons.clear();
  out.assumptions.clear();
  out.chips = 0;
  out.optimizer_s = 0;
  out.exposed = {};
  out.micro_batch = micro_batch;
  out.micro_batches = m;
  // Stage records are reused: the planner assembles many plans into one estimate, and their
  // names keep their buffers.
  out.stages.resize(slots.size());
  auto reject = [&](std::string reason) {
    out.feasible = false;
    out.reasons.push_back(std::move(reason));
  };
  auto assume = [&](const std::vector<std::string>& kernel_notes) {
    if (!notes) return;
    for (const auto& note : kernel_notes) {
      if (std::find(out.assumptions.begin(), out.assumptions.end(), note) ==
          out.assumptions.end())
        out.assumptions.push_back(note);
    }
  };

  // The expert-parallel overlap (Megatron-Core's combined 1F1B schedule): after one more warm-up
  // forward operation, each step runs one operation's forward pass beside another's backward
  // pass (stage_micro_batch; docs/models/estimator.md#ep-overlap).
  const std::string ep_refused = ep_overlap_refusal(settings, p);

  double peak_sum = 0;
  long long chips = 0;
  for (int i = 0; i < p; ++i) {
    const StageSlot& slot = slots[static_cast<std::size_t>(i)];
    const StageKernel& k = *slot.kernel;
    const bool first = i == 0;
    const bool last = i == p - 1;
    StageEstimate& se = out.stages[static_cast<std::size_t>(i)];
    // Reset to a fresh record; assigning keeps the names' buffers.
    static const StageEstimate fresh{};
    se = fresh;
    if (notes) {
      se.island.assign(k.island->name);
      se.chip.assign(k.chip->id);
    }
    se.first_layer = slot.first_layer;
    se.num_layers = slot.num_layers;
    se.tp = k.tp;
    se.dp = k.dp;
    chips += static_cast<long long>(k.tp) * k.dp;
    if (!k.problems.empty() || (first && !k.embedding_problems.empty()) ||
        (last && !k.head_problems.empty())) {
      const std::string where = stage_where(slot, i);
      for (const auto& problem : k.problems) reject(where + problem);
      if (first)
        for (const auto& problem : k.embedding_problems) reject(where + problem);
      if (last)
        for (const auto& problem : k.head_problems) reject(where + problem);
    }
    // A kernel's notes once, however many stages share it (the planner scores many plans).
    if (notes && !k.assumptions.empty() &&
        std::none_of(slots.begin(), slots.begin() + i,
                     [&](const StageSlot& s) { return s.kernel == &k; }))
      assume(k.assumptions);
    if (first && !k.embedding_assumptions.empty()) assume(k.embedding_assumptions);
    if (last && !k.head_assumptions.empty()) assume(k.head_assumptions);

    const StageRecompute recompute = slot_recompute(settings, slot);
    // A mixture's dense layers in this stage, each priced as what it is.
    const int dense_here = slot.chunk_layers.empty()
                               ? stage_dense_layers(model, slot.first_layer, slot.num_layers, v)
                               : slot.dense_layers;
    if (k.has_rates) {
      StagePlace place;
      place.first = first;
      place.last = last;
      place.dense_layers = dense_here;
      place.recompute = recompute;
      place.chunks = v;
      place.chunk_layers = slot.chunk_layers;
      place.ep_paired = ep_refused.empty() ? ep_overlap_paired_share(p, i, v, m) : 0.0;
      const StageMicroBatch time = stage_micro_batch(k, place, slot.num_layers);
      se.forward_s = time.forward_s;
      se.backward_s = time.backward_s;
      se.tp_comm_s = time.tp_s;
      se.ep_comm_s = time.ep_s;
      se.ep_forward_all_to_alls = time.ep_forward_all_to_alls;
      se.ep_backward_all_to_alls = time.ep_backward_all_to_alls;
      peak_sum += k.tp * k.dp * k.peak_flops;
    }

    se.memory = memories ? (*memories)[static_cast<std::size_t>(i)]
                         : slot_memory(model, settings, k, slot.num_layers, i, p, m, recompute,
                                       dense_here, slot.chunk_layers);
    if (k.memory_capacity) {
      se.memory_capacity = *k.memory_capacity;
      se.memory_usable = k.memory_usable.value_or(se.memory_capacity);
      se.fits = se.memory.total() <= se.memory_usable;
      // Tight: the measured 80% memory interval reaches past usable memory; without one, less
      // than the headroom is left free (docs/models/memory.md#headroom).
      se.tight = se.fits && (out.memory_band
                                 ? memory_tight(se, out.memory_band)
                                 : se.memory.total() > se.memory_usable * (1.0 - memory_headroom));
      if (!se.fits) {
        reject(stage_where(slot, i) + "needs " +
               gib(se.memory.total()) + " per chip (weights " + gib(se.memory.weights) +
               ", gradients " + gib(se.memory.gradients) + ", optimizer " +
               gib(se.memory.optimizer + se.memory.optimizer_step_extra()) + ", activations " +
               gib(se.memory.activations + se.memory.head) + ", buffers " +
               gib(se.memory.transient) + "), " + k.chip->id + " has " +
               gib(se.memory_capacity) + ", of which a process can use " +
               gib(se.memory_usable));
      } else if (se.tight && notes) {
        out.assumptions.push_back("stage " + std::to_string(i) + " (" + k.island->name +
                                  "): tight, " + gib(se.memory_usable - se.memory.total()) +
                                  " free of " + gib(se.memory_usable) + " usable" +
                                  (out.memory_band ? ", up to " +
                                                         gib(se.memory.total() *
                                                             out.memory_band->high) +
                                                         " by the 80% interval of its memory"
                                                   : std::string()));
      }
    }

    if (k.has_rates) {
      // Optimizer step: Adam reads gradients, master weights and both moments, writes them
      // back and writes the low-precision weights (docs/models/estimator.md#optimizer).
      // Experts' parameters are shared by the ranks ep x etp apart only (every ep-th replica
      // with etp = tp): their optimizer states shard over those, their gradients reduce among
      // them.
      const double experts = se.memory.expert_parameters;
      const double dense = se.memory.parameters - experts;
      const double expert_dp = static_cast<double>(k.expert_dp_group.ranks);
      const bool sharded = training.zero_stage >= 1;
      const bool mixed = training.dtype != DType::fp32;
      const double bytes_per_param =
          training.optimizer == Optimizer::sgd ? (mixed ? 18.0 : 12.0) : (mixed ? 34.0 : 28.0);
      // Replica groups sharding across groups: over every replica of every group.
      const double shards = settings.zero_shards > 0 ? settings.zero_shards : k.dp;
      const double expert_shards =
          settings.zero_shards > 0 ? std::max(1.0, shards / std::max(1, k.ep)) : expert_dp;
      se.optimizer_s = (dense / (sharded ? shards : 1.0) + experts / (sharded ? expert_shards : 1.0)) *
                       bytes_per_param / k.memory_bandwidth;

      if (k.dp > 1 || k.expert_dp_group.ranks > 1) {
        const StageSyncTimes times =
            syncs ? (*syncs)[static_cast<std::size_t>(i)] : stage_sync_times(k, training, se.memory);
        se.dp_sync_s = times.dp_sync_s;
        se.param_gather_s = times.param_gather_s;
        if (training.zero_stage >= 3) {
          // ZeRO-3 gathers the stage's weights before its forward and again before its
          // backward pass of every micro-batch, prefetched layer by layer behind the compute.
          se.zero3_gather_s = std::max(0.0, times.zero3_gather_s - se.forward_s) +
                              std::max(0.0, times.zero3_gather_s - se.backward_s);
        }
        if (training.zero_stage >= 2 && m > 1) {
          // Sharded gradients cannot be accumulated whole: each micro-batch's are
          // reduce-scattered as its backward makes them, hidden behind that backward with
          // overlap.grad_reduce, on the critical path without it. The last one is the step's
          // reduction (dp_sync_s); the other m - 1 are spread over the micro-batches.
          const double each = training.overlap_grad_reduce
                                  ? std::max(0.0, times.dp_sync_s - se.backward_s)
                                  : times.dp_sync_s;
          se.zero_reduce_s = each * (m - 1) / m;
        }
      }
    }
  }

  out.chips = static_cast<int>(std::min<long long>(chips, std::numeric_limits<int>::max()));

  for (int i = 0; i + 1 < p; ++i) {
    const StageKernel& a = *slots[static_cast<std::size_t>(i)].kernel;
    const StageKernel& b = *slots[static_cast<std::size_t>(i + 1)].kernel;
    const Boundary boundary = boundaries ? (*boundaries)[static_cast<std::size_t>(i)]
                                         : stage_boundary(cluster, model, settings, a, b);
    out.stages[static_cast<std::size_t>(i)].cross_island_boundary = boundary.cross_island;
    if (!boundary.connected) {
      const StageSlot& next = slots[static_cast<std::size_t>(i + 1)];
      reject((next.location && next.location->line > 0 ? to_string(*next.location) + ": " : "") +
             "stages " + std::to_string(i) + " and " + std::to_string(i + 1) + ": zones " +
             a.island->zone + " and " + b.island->zone + " have no link between them");
    }
    out.stages[static_cast<std::size_t>(i)].p2p_s += boundary.time_s;
    out.stages[static_cast<std::size_t>(i + 1)].p2p_s += boundary.time_s;
  }

  if (!ep_refused.empty() && notes &&
      std::any_of(slots.begin(), slots.end(),
                  [](const StageSlot& s) { return s.kernel->ep_overlap > 0; }))
    out.assumptions.push_back("expert-parallel all-to-all overlap not applied: " + ep_refused);

  double max_tau = 0, sum_tau = 0;
  for (auto& se : out.stages) {
    se.micro_batch_s = se.forward_s + se.backward_s + se.tp_comm_s + se.ep_comm_s + se.p2p_s +
                       se.zero3_gather_s + se.zero_reduce_s;
    max_tau = std::max(max_tau, se.micro_batch_s);
    sum_tau += se.micro_batch_s;
  }
  // 1F1B: the bottleneck stage runs m micro-batches; the others fill and drain around it.
  // Interleaving divides the fill and drain by the chunk count.
  const double pipeline = m * max_tau + (sum_tau - max_tau) / v;
  out.bubble_s = pipeline - m * max_tau;

  // Where the step's time goes, seen on the bottleneck stage.
  const auto bottleneck = std::max_element(
      out.stages.begin(), out.stages.end(),
      [](const auto& x, const auto& y) { return x.micro_batch_s < y.micro_batch_s; });
  out.compute_s = m * (bottleneck->forward_s + bottleneck->backward_s);
  out.exposed.tensor_parallel = m * bottleneck->tp_comm_s;
  out.exposed.expert_parallel = m * bottleneck->ep_comm_s;
  const double p2p = m * bottleneck->p2p_s;
  const bool cross =
      bottleneck->cross_island_boundary ||
      (bottleneck != out.stages.begin() && std::prev(bottleneck)->cross_island_boundary);
  (cross ? out.exposed.cross_island : out.exposed.pipeline) = p2p;

  // Gradient reduction starts when a stage's last backward ends; stages nearer the end of the
  // pipeline finish first and hide theirs behind the earlier stages' remaining backward
  // passes. With overlap_grad_reduce, it also overlaps the stage's own last backward pass.
  double dp_exposed = 0;
  double slack = 0;
  for (const auto& se : out.stages) {
    double hidden = slack;
    if (training.overlap_grad_reduce) hidden += se.backward_s;
    dp_exposed = std::max(dp_exposed, se.dp_sync_s - hidden);
    slack += se.backward_s / v;
  }
  // The sharded optimizer's all-gather of the updated weights follows its step. With
  // overlap_param_gather it runs during the next step's first forward pass, which each stage
  // starts after the earlier stages' first forward passes.
  double gather_exposed = 0;
  double forward_slack = 0;
  for (const auto& se : out.stages) {
    const double hidden = training.overlap_param_gather ? forward_slack + se.forward_s : 0.0;
    gather_exposed = std::max(gather_exposed, se.param_gather_s - hidden);
    forward_slack += se.forward_s / v;
  }
  const double after_pipeline = std::max(0.0, dp_exposed) + std::max(0.0, gather_exposed);
  // ZeRO's per-micro-batch gathers and reductions are inside the pipeline's time; they count
  // as exposed data-parallel time all the same.
  out.exposed.data_parallel =
      after_pipeline + m * (bottleneck->zero3_gather_s + bottleneck->zero_reduce_s);
  for (const auto& se : out.stages) out.optimizer_s = std::max(out.optimizer_s, se.optimizer_s);
  out.step_time_s = pipeline + after_pipeline + out.optimizer_s;

  // Loaders keep every figure in range; should a combination still overflow, the estimate says
  // so instead of reporting a non-finite step.
  if (!std::isfinite(out.step_time_s)) {
    reject("the step time is not a finite number (the inputs' figures overflow it)");
    out.step_time_s = 0;
  }

  const double layers_flops = models::model_layers_flops(model, 1, training.seq_len);
  const double head_flops = models::head_model_flops(model, 1, training.seq_len);
  out.model_flops_per_step = 3.0 * training.global_batch * (layers_flops + head_flops);
  if (out.step_time_s > 0) {
    out.tokens_per_s =
        static_cast<double>(training.global_batch) * training.seq_len / out.step_time_s;
    if (peak_sum > 0) out.mfu = out.model_flops_per_step / (out.step_time_s * peak_sum);
    out.bubble_fraction = out.bubble_s / out.step_time_s;
  }
}

Interval scaled_interval(double value, const Band& band) {
  return {value * band.low, value * band.high};
}

Interval rate_interval(double value, const Band& band) {
  return {value / band.high, value / band.low};
}

bool memory_tight(const StageEstimate& stage, const std::optional<Band>& memory_band) {
  if (!memory_band || stage.memory_usable <= 0) return false;
  return stage.memory.total() * memory_band->high > stage.memory_usable;
}

Estimate estimate_step(const Cluster& cluster, const Workload& workload, const Plan& plan,
                       const EstimateOptions& options) {
  Estimate out;
  if (plan.stages.empty()) {
    out.feasible = false;
    out.reasons.push_back(plan.has_replica_groups()
                              ? "the plan has replica groups on different islands: its step is "
                                "that of the groups together (sim/replica_groups)"
                              : "the plan has no stages");
    return out;
  }
  const StepSettings settings = step_settings(workload, plan);
  const TrainingSettings& training = settings.training;
  const int micro_batch = settings.micro_batch;
  const int p = static_cast<int>(plan.stages.size());
  const int dp = plan.stages.front().dp;
  std::vector<std::string> structure;  // reasons found before the assembly
  auto reject = [&](std::string reason) { structure.push_back(std::move(reason)); };

  // Structure: one data-parallel degree, a whole number of micro-batches.
  auto at = [](const SourceLocation& location) {
    return location.line > 0 ? to_string(location) + ": " : std::string();
  };
  for (const auto& stage : plan.stages) {
    if (stage.dp != dp) {
      reject(at(stage.location) + "stages have different data-parallel degrees (" +
             std::to_string(dp) + " and " +
             std::to_string(stage.dp) + "); every stage of one pipeline needs the same dp");
      break;
    }
  }
  const long long per_round = static_cast<long long>(dp) * micro_batch;  // 64 bits: no wrap
  if (training.global_batch % per_round != 0) {
    reject(at(plan.stages.front().location) + "global batch " +
           std::to_string(training.global_batch) +
           " is not a multiple of dp x micro-batch (" + std::to_string(per_round) + ")");
  }
  const int m = static_cast<int>(std::max(1LL, training.global_batch / per_round));
  if (plan.schedule == Schedule::interleaved && m % p != 0) {
    reject("the interleaved schedule needs the micro-batch count (" + std::to_string(m) +
           ") to be a multiple of the pipeline stages (" + std::to_string(p) + ")");
  }

  // Capacity of each island.
  std::map<std::string, long long> used;  // 64 bits: stages can sum past 2^31 chips
  for (const auto& stage : plan.stages)
    used[stage.island] += static_cast<long long>(stage.tp) * stage.dp;
  for (const auto& [name, chips] : used) {
    const Island& island = *cluster.find_island(name);
    if (chips > static_cast<long long>(island.chip_count())) {
      const std::string& island_name = name;  // clang 14 cannot capture a structured binding
      const auto first_there =
          std::find_if(plan.stages.begin(), plan.stages.end(),
                       [&](const PlanStage& s) { return s.island == island_name; });
      reject(at(first_there->island_location) + "island " + name + " has " + std::to_string(island.chip_count()) +
             " chips; the plan places " + std::to_string(chips) + " there");
    }
  }

  // Model chunks of the sizes a stage gives: one per chunk, adding up to its layers (the plan
  // loader checks this for plan files; plans made in code are checked here).
  const int v = plan.virtual_stages;
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const PlanStage& stage = plan.stages[i];
    if (stage.chunk_layers.empty()) continue;
    long long sum = 0;
    bool negative = false;
    for (const int layers : stage.chunk_layers) {
      sum += layers;
      negative |= layers < 0;
    }
    if (plan.schedule != Schedule::interleaved ||
        stage.chunk_layers.size() != static_cast<std::size_t>(v) || negative ||
        sum != stage.num_layers) {
      reject(at(stage.location) + "stage " + std::to_string(i) +
             ": chunk_layers needs the interleaved schedule and one count per model chunk (" +
             std::to_string(v) + "), each at least 0, adding up to the stage's " +
             std::to_string(stage.num_layers) + " layers");
      out.feasible = false;
      out.reasons = structure;
      return out;
    }
  }
  const std::vector<int> dense_layers = pipeline_dense_layers(workload.model, plan.stages, v);

  // One kernel per distinct (island, tp, dp, ep, etp), in the order stages first use them.
  std::vector<StageKernel> kernels;
  kernels.reserve(plan.stages.size());
  std::vector<StageSlot> slots;
  for (const auto& stage : plan.stages) {
    const Island& island = *cluster.find_island(stage.island);
    auto found = std::find_if(kernels.begin(), kernels.end(), [&](const StageKernel& k) {
      return k.island == &island && k.tp == stage.tp && k.dp == stage.dp && k.ep == stage.ep &&
             k.etp == expert_tp(stage);
    });
    if (found == kernels.end()) {
      kernels.push_back(make_stage_kernel(cluster, workload.model, settings, island, stage.tp,
                                          stage.dp, options, stage.ep, expert_tp(stage)));
      found = std::prev(kernels.end());
    }
    slots.push_back({&*found, stage.first_layer, stage.num_layers, &stage.location});
    if (stage.recompute)
      slots.back().recompute = StageRecompute{*stage.recompute, stage.recompute_layers.value_or(0)};
    slots.back().chunk_layers = stage.chunk_layers;
    slots.back().dense_layers = dense_layers[slots.size() - 1];
  }
  assemble_estimate(cluster, workload.model, settings, slots, out, options.memory_headroom);
  if (!structure.empty()) {
    out.feasible = false;
    out.reasons.insert(out.reasons.begin(), structure.begin(), structure.end());
  }
  return out;
}

}  // namespace hetplan::sim
