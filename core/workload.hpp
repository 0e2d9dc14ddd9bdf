// What is being trained and how: a decoder-only transformer's shape (from a Hugging Face
// config.json or written inline) and the training settings. docs/formats/workload.md.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace hetplan {

// swiglu and geglu are gated: SiLU or GELU of one half of the up projection times the other
// (Llama's, Gemma's MLP: three matrices); gelu and relu are not (two).
enum class Activation { gelu, swiglu, relu, geglu };
constexpr bool gated(Activation activation) {
  return activation == Activation::swiglu || activation == Activation::geglu;
}
// The weight matrices of one MLP (or expert): gate, up and down when gated, else up and down.
constexpr double mlp_matrices(Activation activation) {
  return gated(activation) ? 3.0 : 2.0;
}
enum class Norm { layernorm, rmsnorm };
enum class Optimizer { adam, adamw, sgd };
enum class Recompute { none, selective, full };
// How a mixture's tokens reach their experts' chips (docs/models/moe.md#dispatcher):
// Megatron-Core's all-to-all dispatcher sends one copy per routed expert; its flex dispatcher
// (DeepEP, HybridEP) one per token and destination chip; GShard's dense dispatch (DeepSpeed-MoE's
// sharded_moe.py and the MoE layers derived from it, e.g. ModelLink's legacy MoE) moves each
// expert's capacity of token slots with einsums over one-hot [tokens, experts, capacity] masks.
enum class MoeDispatcher { all_to_all, flex, gshard };

// How the loss over the vocabulary is computed (docs/models/memory.md#head): Megatron's
// vocabulary-parallel cross entropy, unfused (`none`) or jit-fused (`native`,
// --cross-entropy-loss-fusion), both on an fp32 copy of the logits; or Transformer Engine's
// fused kernel (`te`, --cross-entropy-fusion-impl te), which works in the logits' dtype and
// writes the gradient over them.
enum class CrossEntropyFusion { none, native, te };
inline constexpr std::string_view kCrossEntropyFusionNames[] = {"none", "native", "te"};

struct ModelShape {
  // llama, qwen2, qwen3, mistral, gpt2, gpt_neox, opt, baichuan, chatglm, glm4, internlm2,
  // mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3, or "custom"
  std::string model_type;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;  // == heads without grouped-query attention
  int ffn = 0;       // intermediate size
  int vocab = 0;
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  bool tied_embeddings = false;
  bool linear_bias = true;         // biases on the attention and MLP projections
  bool qkv_bias = false;           // biases on Q, K and V only (Qwen2), when linear_bias is false
  double rope_theta = 10000;       // rotary base (Llama 3: 500000, Qwen2: 1000000)
  double norm_eps = 1e-5;          // epsilon of the norms
  double rotary_percent = 1.0;     // share of each head's dimensions the rotary embedding turns
  bool dropout = false;            // dropout layers present during training (GPT-2/Megatron era)
  bool learned_positions = false;  // a learned position-embedding table (GPT-2, OPT)
  bool alibi = false;              // ALiBi attention biases instead of positions (Baichuan2-13B)
  int max_positions = 0;
  // Tokens a query attends back to when the config slides a window (Mistral-7B-v0.1: 4096);
  // 0: none. Not priced: attention runs over the whole causal sequence (an assumption line).
  int sliding_window = 0;
  int head_size = 0;               // a head's width when it is not hidden / heads (Qwen3, GLM-4)
  bool qk_norm = false;            // RMSNorm over each head of Q and of K (Qwen3)
  int extra_norms = 0;             // norms a layer has beyond its two (GLM-4's post-norms: 2)

  // Multi-head latent attention (DeepSeek-V2/V3), when kv_lora_rank > 0: Q through a rank
  // q_lora_rank (0: projected directly), K and V through kv_lora_rank, each head's Q and K of
  // qk_nope_head_dim + qk_rope_head_dim, its V of v_head_dim.
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;

  // Mixture of experts, when experts > 0 (docs/models/moe.md): each MoE layer routes every token
  // to experts_per_token of `experts` routed experts of expert_ffn, beside shared_experts always
  // used ones of shared_expert_ffn each. The first dense_layers layers keep a dense MLP of `ffn`.
  int experts = 0;
  int experts_per_token = 0;
  int expert_ffn = 0;
  int shared_experts = 0;
  int shared_expert_ffn = 0;
  bool shared_expert_gate = false;  // a sigmoid gate on the shared expert's output (Qwen2-MoE)
  bool expert_bias = false;         // a per-expert routing bias (DeepSeek-V3's correction bias)
  int dense_layers = 0;
  // Group-limited routing (DeepSeek): a token's experts come from expert_groups_per_token of
  // expert_groups groups of experts (1 and 1: any expert).
  int expert_groups = 1;
  int expert_groups_per_token = 1;
  // Multi-token prediction modules after the last layer (DeepSeek-V3's MTP), each one layer of
  // the model's kind with its own norms and projection; trained with the model.
  int mtp_layers = 0;

  int head_dim() const { return head_size > 0 ? head_size : hidden / heads; }
  // The width of Q and of the attention output: heads x head size (hidden, but for Qwen3's and
  // MLA's heads).
  double attention_width() const;
  bool latent_attention() const { return kv_lora_rank > 0; }
  bool moe() const { return experts > 0; }
  // Whether layer `index` (from 0) has a mixture-of-experts MLP.
  bool moe_layer(int index) const;
  // Whether the multi-token prediction modules' layers do: they are of the last layer's kind.
  bool mtp_moe_layer() const { return moe_layer(layers - 1); }
  int moe_layer_count() const;
  // Width of K (and of V) one chip of a tensor-parallel group of `tp` holds: its share of the
  // key/value heads, or one whole head when tp exceeds them (Megatron replicates each key/value
  // head over tp / kv_heads ranks). With latent attention: K's share, heads / tp x (nope +
  // rope); V is heads / tp x v_head_dim (docs/models/attention.md).
  double kv_width_per_chip(int tp) const;
  // Parameters a chip holds beyond layer_parameters() / tp because of that replication, or with
  // latent attention because the down-projections and their norms are whole on every rank.
  double replicated_kv_parameters(int tp) const;
  // Latent attention's down-projections of Q and of K/V with their norms (0 without it).
  double latent_down_parameters() const;
  // Parameters of one transformer layer (a dense one; layer_parameters(i) of layer i), of its
  // attention and of its MLP, of the embeddings and of the output head.
  double layer_parameters() const;
  double layer_parameters(int index) const;
  double attention_parameters() const;
  double dense_mlp_parameters() const;
  double moe_mlp_parameters() const;  // router, routed and shared experts
  double routed_expert_parameters() const;  // one mixture layer's routed experts
  double embedding_parameters() const;
  double head_parameters() const;  // 0 when tied to the input embedding
  double mtp_parameters() const;   // the multi-token prediction modules, beside the total
  double total_parameters() const;
  // Parameters one token passes through: the routed experts it is sent to, not all of them.
  double active_parameters() const;
};

// The modules selective recompute may redo, as Megatron-Core names them (--recompute-modules):
// a bit each. core_attn, mlp (a dense MLP), moe (a mixture's whole layer) and shared_experts keep
// their inputs and run their forward pass again before their backward pass; layernorm (the two
// norms' outputs), mla_up_proj (latent attention's Q, K and V) and moe_act (the experts'
// activation output) discard their outputs and compute them again.
inline constexpr unsigned kRecomputeCoreAttention = 1u << 0;
inline constexpr unsigned kRecomputeMlaUpProj = 1u << 1;
inline constexpr unsigned kRecomputeMoeAct = 1u << 2;
inline constexpr unsigned kRecomputeLayernorm = 1u << 3;
inline constexpr unsigned kRecomputeMlp = 1u << 4;
inline constexpr unsigned kRecomputeMoe = 1u << 5;
inline constexpr unsigned kRecomputeSharedExperts = 1u << 6;
// Their names, bit i for name i.
inline constexpr std::string_view kRecomputeModuleNames[] = {
    "core_attn", "mla_up_proj", "moe_act", "layernorm", "mlp", "moe", "shared_experts"};

// Operators a framework may run as PyTorch's reference operators instead of one fused kernel
// (docs/models/compute.md#unfused): RMSNorm (MindSpeed's --use-fused-rmsnorm not passed, a
// Hugging Face model's LlamaRMSNorm, Megatron's local RMSNorm) and the SwiGLU product
// (`silu(gate) * up`; MindSpeed's --use-fused-swiglu not passed) and the rotary embedding
// (`x * cos + rotate_half(x) * sin`; MindSpeed's --use-fused-rotary-pos-emb not passed). A bit
// each.
inline constexpr unsigned kUnfusedRmsnorm = 1u << 0;
inline constexpr unsigned kUnfusedSwiglu = 1u << 1;
inline constexpr unsigned kUnfusedRope = 1u << 2;
inline constexpr std::string_view kUnfusedNames[] = {"rmsnorm", "swiglu", "rope"};
// The kUnfused* operators `model` has (a LayerNorm is one native kernel either way; a model
// that learns its positions has no rotary embedding). The estimate, the memory model and the
// exports apply TrainingSettings::unfused only to these; the workload loader refuses the others.
inline unsigned unfusable_operators(const ModelShape& model) {
  return (model.norm == Norm::rmsnorm ? kUnfusedRmsnorm : 0u) |
         (model.activation == Activation::swiglu ? kUnfusedSwiglu : 0u) |
         (model.learned_positions ? 0u : kUnfusedRope);
}

struct TrainingSettings {
  int seq_len = 0;
  int global_batch = 0;  // sequences per optimizer step
  int micro_batch = 1;   // sequences per micro-batch (a plan may override)
  DType dtype = DType::bf16;
  // Gradients kept and reduced in fp32 (Megatron's main_grad); default_fp32_grad_accumulation.
  bool fp32_grad_accumulation = true;
  Optimizer optimizer = Optimizer::adam;
  int zero_stage =
      0;  // 0 none, 1 optimizer states (Megatron's distributed optimizer), 2 +grads, 3 +weights
  Recompute recompute = Recompute::none;
  // With full recompute: the layers of each model chunk of a stage recomputed, the first ones
  // (Megatron's --recompute-method block --recompute-num-layers); the others keep their
  // activations. 0: every layer (docs/models/memory.md#partial-recompute).
  int recompute_layers = 0;
  // With selective recompute: the modules recomputed (Megatron-Core's --recompute-modules, a
  // set of RecomputeModule bits); its default is the core attention
  // (docs/models/memory.md#recompute-modules).
  unsigned recompute_modules = kRecomputeCoreAttention;
  bool sequence_parallel = false;
  bool flash_attention = true;
  // Megatron-Core's overlaps (docs/models/estimator.md#overlap): the data-parallel gradient
  // reduce-scatter during the backward pass (--overlap-grad-reduce), the distributed optimizer's
  // weight all-gather during the next step's forward pass (--overlap-param-gather), and the
  // tensor-parallel collectives with the GEMMs beside them (--tp-comm-overlap; MindSpeed's MC2
  // on Ascend).
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool overlap_tp_comm = false;
  // A mixture's expert-parallel all-to-alls hidden behind another micro-batch's compute:
  // Megatron-Core's combined 1F1B schedule (--overlap-moe-expert-parallel-comm with
  // --delay-wgrad-compute; MindSpeed's --moe-fb-overlap), docs/models/estimator.md#ep-overlap.
  bool overlap_ep_comm = false;
  // Mixture of experts (docs/models/moe.md): the busiest expert's routed tokens over the mean (0:
  // the prior), and whether a chip runs its experts' GEMMs as one grouped GEMM
  // (--moe-grouped-gemm) or one after another.
  double expert_imbalance = 0;
  bool grouped_gemm = true;
  MoeDispatcher moe_dispatcher = MoeDispatcher::all_to_all;
  // Experts capped at a capacity of capacity_factor x the mean routed tokens (0: dropless), the
  // tokens above it dropped: Megatron-Core's --moe-expert-capacity-factor, and every GShard-style
  // layer. Padded to it (pad_to_capacity, Megatron-Core's --moe-pad-expert-input-to-capacity,
  // and always under GShard), each expert computes exactly its capacity whatever the routing;
  // unpadded, the busiest chip carries the lesser of its imbalance and the capacity
  // (docs/models/moe.md#capacity).
  double moe_capacity_factor = 0;
  bool moe_pad_to_capacity = true;
  // The operators run unfused (kUnfused* bits); none by default, as Megatron-Core with
  // Transformer Engine and MindSpeed-LLM's scripts run them.
  unsigned unfused = 0;
  // Megatron-LM's default: no fusion (--cross-entropy-loss-fusion is off unless passed).
  CrossEntropyFusion cross_entropy_fusion = CrossEntropyFusion::none;
};

// Megatron-LM's default for where gradients accumulate and are reduced: in fp32 for bf16 (and
// the fp8 recipe over it), forced by its argument checks because bf16 loses the sum; in the
// training dtype for fp16 (--accumulate-allreduce-grads-in-fp32 is off by default) and fp32.
// docs/models/memory.md#gradients.
inline bool default_fp32_grad_accumulation(DType dtype) {
  return storage_dtype(dtype) == DType::bf16;
}

// How many of a stage's `num_layers` layers (in `chunks` model chunks) are recomputed in full
// under `recompute_layers` per chunk: all of them with 0; at most the layers a chunk holds.
inline int fully_recomputed_layers(Recompute recompute, int recompute_layers, int num_layers,
                                   int chunks) {
  if (recompute != Recompute::full) return 0;
  if (recompute_layers <= 0 || chunks <= 0) return num_layers;
  const int per_chunk = num_layers / chunks;
  return chunks * (recompute_layers < per_chunk ? recompute_layers : per_chunk);
}
// The same for model chunks of the given sizes (a layout of unequal chunks).
inline int fully_recomputed_layers(Recompute recompute, int recompute_layers,
                                   std::span<const int> chunk_layers) {
  if (recompute != Recompute::full) return 0;
  int out = 0;
  for (const int layers : chunk_layers)
    out += recompute_layers <= 0 || layers < recompute_layers ? layers : recompute_layers;
  return out;
}

// What Megatron-Core's TransformerConfig refuses beside --overlap-moe-expert-parallel-comm
// (the combined 1F1B schedule): full recomputation, the mixture among the recomputed modules (it
// would dispatch again), and an fp32 model. The workload loader rejects these at the key; a
// plan that changes the recompute or the dtype keeps the all-to-alls exposed
// (sim::ep_overlap_refusal).
enum class EpOverlapConflict { none, full_recompute, moe_recompute, fp32 };
inline EpOverlapConflict ep_overlap_conflict(const TrainingSettings& t) {
  if (t.recompute == Recompute::full) return EpOverlapConflict::full_recompute;
  if (t.recompute == Recompute::selective && (t.recompute_modules & kRecomputeMoe) != 0)
    return EpOverlapConflict::moe_recompute;
  if (t.dtype == DType::fp32) return EpOverlapConflict::fp32;
  return EpOverlapConflict::none;
}

struct Workload {
  std::string name;
  ModelShape model;
  TrainingSettings training;
  SourceLocation location;
  std::string model_file;  // the Hugging Face config.json the model was read from, if any
};

std::string_view to_string(Activation activation);
std::string_view to_string(Norm norm);
std::string_view to_string(Optimizer optimizer);
std::string_view to_string(Recompute recompute);
std::string_view to_string(MoeDispatcher dispatcher);

}  // namespace hetplan
