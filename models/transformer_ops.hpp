// The operators of one decoder layer, of the embedding and of the output head, for one
// micro-batch on one chip, with their forward FLOPs, forward memory traffic and GEMM shapes,
// split by tensor and sequence parallelism. docs/models/compute.md gives every formula.
#pragma once

#include <string_view>
#include <vector>

#include "core/chip.hpp"
#include "core/plan.hpp"
#include "core/workload.hpp"

namespace hetplan::models {

struct GemmShape {
  double m = 0;
  double n = 0;
  double k = 0;
  double batch = 1;
};

struct Op {
  std::string_view name;
  OpClass op_class = OpClass::gemm;
  double flops = 0;                    // forward FLOPs executed on one chip
  double bytes = 0;                    // forward bytes read and written on one chip
  GemmShape gemm;                      // for gemm-like operators
  double backward_flops_factor = 2.0;  // backward FLOPs = factor x forward FLOPs
  double backward_bytes_factor = 2.0;
  bool core_attention = false;  // part of the core attention that selective recompute redoes
  // The recompute modules (TrainingSettings::recompute_modules bits) whose recomputation runs
  // this operator's forward pass again.
  unsigned modules = 0;
  bool linear = false;          // a linear layer's GEMM: FP8 under the fp8 recipe
  int kernels = 1;              // kernels the forward pass launches
  int backward_kernels = 2;     // kernels the backward pass launches
};

// The busiest expert's routed tokens over the mean when a workload does not say: the capacity
// factor of 1.25 Switch Transformer trained with (Fedus et al. 2022), the share above an even
// load that its experts were given room for (docs/models/moe.md#imbalance).
inline constexpr double kExpertImbalancePrior = 1.25;
inline double expert_imbalance(const TrainingSettings& training) {
  return training.expert_imbalance > 0 ? training.expert_imbalance : kExpertImbalancePrior;
}
// The busiest chip's routed tokens over the mean, for a chip holding experts / ep of the
// `experts` when the busiest expert's are `expert` times the mean: a chip's load varies less
// than one expert's, as the spread of a sum of experts / ep random shares relative to its mean
// does, sqrt((ep - 1) / (experts - 1)) times an expert's (docs/models/moe.md#imbalance). 1
// without expert parallelism (the chip holds every expert), `expert` with one expert a chip.
double chip_imbalance(double expert, int experts, int ep);
// The settings as a chip of `ep` expert-parallel ranks sees them: its busiest chip's imbalance.
inline TrainingSettings for_expert_parallel(TrainingSettings training, int experts, int ep) {
  training.expert_imbalance = chip_imbalance(expert_imbalance(training), experts, ep);
  return training;
}

// The copies of one token an expert-parallel dispatch sends (docs/models/moe.md#dispatcher):
// `experts_per_token` with the all-to-all dispatcher, one per routed expert; with the flex
// dispatcher (DeepEP, HybridEP) one per chip of the `ep` holding any of its experts, expected
// over routes that pick `experts_per_token` distinct experts uniformly (a balanced router):
// ep (1 - C(E - E/ep, k) / C(E, k)). Counts the copy to the token's own chip, as the
// all-to-all's send buffer does.
double dispatched_copies(int experts, int experts_per_token, int ep, MoeDispatcher dispatcher);

// The flex dispatcher's traffic when its expert-parallel group spans `nodes` nodes of `ep /
// nodes` chips each (DeepEP's internode kernels, docs/models/moe.md#forwarding): a token
// crosses the network once for each other node holding any of its experts, to the chip of its
// sender's index there, which forwards it over the intra-node link to the chips of its node
// that hold any of its experts; the combine returns the same way. Expected copies per token a
// chip sends, over routes that pick the experts uniformly:
//   network = (nodes - 1) (1 - C(E - E/nodes, k) / C(E, k)),
//   node    = nodes (ep / nodes - 1) (1 - C(E - E/ep, k) / C(E, k))
// (its own tokens to the other chips of its node, and the tokens it forwards for the other
// nodes). Both 0 when there is nothing to forward or the group does not split evenly (fewer
// than two nodes, one chip a node, ep not a multiple of nodes, the experts not a multiple of
// ep): the dispatch is then one flat exchange.
struct FlexTraffic {
  double network = 0;
  double node = 0;
};
FlexTraffic flex_forwarded_traffic(int experts, int experts_per_token, int ep, int nodes);

// How one chip sees a layer: micro-batch, sequence, tensor parallel degree and options.
struct LayerSlice {
  int micro_batch = 1;
  int seq_len = 1;
  int tp = 1;
  bool sequence_parallel = false;
  bool flash_attention = true;
  DType dtype = DType::bf16;  // the training dtype (fp8: FP8 linear GEMMs over BF16)
  // Mixture-of-experts layers (docs/models/moe.md): experts spread over `ep` ranks, each
  // expert's GEMMs split over `etp` ranks (Megatron-Core's expert tensor parallelism; 0: as
  // tp), the busiest rank's tokens `expert_imbalance` times the mean, the local experts' GEMMs
  // in one grouped kernel or one kernel each.
  int ep = 1;
  int etp = 0;
  int expert_tp() const { return hetplan::expert_tp(etp, tp); }
  double expert_imbalance = 1.0;
  bool grouped_gemm = true;
  // gshard: einsums over dispatch and combine masks in place of the permutations, each expert
  // padded to its capacity (expert_imbalance is then the capacity factor).
  MoeDispatcher dispatcher = MoeDispatcher::all_to_all;
  // Operators run as PyTorch's reference operators (TrainingSettings::unfused bits, only those
  // the model has: unfusable_operators).
  unsigned unfused = 0;
  CrossEntropyFusion cross_entropy_fusion = CrossEntropyFusion::none;
};

// The operators of one layer: a dense layer, or with `model.moe()` a mixture-of-experts one
// (router, permutation, the local experts, shared experts, unpermutation in place of the MLP),
// unless `dense_mlp` asks for one of its first `dense_layers` layers, whose MLP is dense (of
// `ffn`). Attention is multi-head latent attention when `model.latent_attention()`
// (docs/models/attention.md).
std::vector<Op> layer_ops(const ModelShape& model, const LayerSlice& slice,
                          bool dense_mlp = false);
std::vector<Op> embedding_ops(const ModelShape& model, const LayerSlice& slice);
std::vector<Op> head_ops(const ModelShape& model, const LayerSlice& slice);

// Model FLOPs of one layer's forward pass for a whole micro-batch, summed over the tensor
// parallel group (no recompute; causal attention counted in full, as Megatron and PaLM do).
// `dense_mlp`: a mixture-of-experts model's dense layer.
double layer_model_flops(const ModelShape& model, int micro_batch, int seq_len,
                         bool dense_mlp = false);
// Model FLOPs of every layer's forward pass: the dense layers before a mixture's MoE ones
// counted as what they are.
double model_layers_flops(const ModelShape& model, int micro_batch, int seq_len);
double head_model_flops(const ModelShape& model, int micro_batch, int seq_len);

}  // namespace hetplan::models
