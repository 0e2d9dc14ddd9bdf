#include "models/transformer_ops.hpp"

#include <algorithm>
#include <cmath>

namespace hetplan::models {
namespace {

Op gemm(std::string_view name, double m, double n, double k, double batch, DType dtype) {
  Op op;
  op.name = name;
  op.op_class = OpClass::gemm;
  op.gemm = {m, n, k, batch};
  op.flops = 2.0 * m * n * k * batch;
  op.bytes = (m * k + k * n + m * n) * batch * bytes_per_element(dtype);
  return op;
}

Op elementwise(std::string_view name, OpClass op_class, double bytes, int kernels = 1,
               int backward_kernels = 1) {
  Op op;
  op.name = name;
  op.op_class = op_class;
  op.bytes = bytes;
  op.flops = 0;
  op.kernels = kernels;
  op.backward_kernels = backward_kernels;
  return op;
}

// A norm over `elements` values of `e` bytes (`count` alike norms in one operator). Fused, one
// kernel reads the input and writes the output (two kernels backward: the input gradient and
// the weight gradient's reduction). Unfused RMSNorm is the reference code,
// `(x.float() * rsqrt(x.float().pow(2).mean(-1) + eps)).type_as(x) * weight`, whose operators
// each read and write the whole tensor, in fp32 between the two casts
// (docs/models/compute.md#unfused): forward 28 + 4e bytes per element in 8 kernels (6 when the
// input is already fp32), backward 76 + 8e in 14 (12).
Op norm(std::string_view name, double elements, double e, const LayerSlice& slice, int count = 1) {
  if ((slice.unfused & kUnfusedRmsnorm) == 0)
    return elementwise(name, OpClass::norm, 2.0 * elements * e, count, 2 * count);
  const bool cast = e < 4.0;
  Op op = elementwise(name, OpClass::norm, (28.0 + 4.0 * e) * elements, count * (cast ? 8 : 6),
                      count * (cast ? 14 : 12));
  op.backward_bytes_factor = (76.0 + 8.0 * e) / (28.0 + 4.0 * e);
  return op;
}

// The SwiGLU product `silu(gate) * up` over `elements` outputs of `e` bytes: one fused kernel
// (reads both halves, writes the product), or unfused a silu kernel and a multiply (5 e bytes
// per output forward in 2 kernels; backward the multiply's two gradients and silu's, 9 e in 3).
Op swiglu(std::string_view name, double elements, double e, const LayerSlice& slice) {
  if ((slice.unfused & kUnfusedSwiglu) == 0)
    return elementwise(name, OpClass::activation, 3.0 * elements * e);
  Op op = elementwise(name, OpClass::activation, 5.0 * elements * e, 2, 3);
  op.backward_bytes_factor = 9.0 / 5.0;
  return op;
}

// The rotary embedding of `elements` values of Q and K together (`tensors` tensors: Q and K,
// or latent attention's rope parts). Fused, one kernel a tensor each way reads and writes it.
// Unfused it is `x * cos + rotate_half(x) * sin` with `rotate_half(x) = cat(-x2, x1)`: forward
// the negation (e), the concatenation (2e), the two products (2e each) and the sum (3e), 10 e
// bytes an element in 5 kernels a tensor; backward each product's input gradient (2e each; cos
// and sin need none), the negation's (e), the halves' gradients joined (2e) and the two paths
// summed (3e): 10 e in 5 (docs/models/compute.md#unfused).
Op rotary(double elements, double e, int tensors, const LayerSlice& slice) {
  if ((slice.unfused & kUnfusedRope) == 0)
    return elementwise("rope", OpClass::rope, 2.0 * elements * e, tensors, tensors);
  Op op = elementwise("rope", OpClass::rope, 10.0 * elements * e, 5 * tensors, 5 * tensors);
  op.backward_bytes_factor = 1.0;
  return op;
}

// A linear layer's GEMM `x W` (m tokens, n outputs, k inputs). Under the fp8 recipe its
// operands are FP8 and its output BF16, and a cast kernel before it reads the BF16 input
// and writes the FP8 copy (and, backward, the same for the output gradient); Transformer
// Engine fuses the amax into the cast and keeps the FP8 weights of the step (cast once per
// step, not per micro-batch: not counted here).
void linear(std::vector<Op>& ops, std::string_view name, double m, double n, double k,
            DType training) {
  if (training == DType::fp8) {
    Op cast = elementwise("fp8_cast", OpClass::dropout, m * k * 3.0);
    cast.backward_bytes_factor = m * n / (m * k);  // the output gradient, 2 + 1 bytes per element
    ops.push_back(cast);
  }
  Op op = gemm(name, m, n, k, 1, storage_dtype(training));
  if (training == DType::fp8) op.bytes = m * k + k * n + m * n * 2.0;
  op.linear = true;
  ops.push_back(op);
}

// Marks the operators from `first` on as part of recompute modules `modules`.
void tag(std::vector<Op>& ops, std::size_t first, unsigned modules) {
  for (std::size_t i = first; i < ops.size(); ++i) ops[i].modules |= modules;
}

// A mixture-of-experts MLP on one chip (docs/models/moe.md#compute), for Megatron-Core's
// all-to-all dispatcher: the router scores the chip's tokens (its sequence-parallel share), the
// tokens are permuted by expert, sent to the experts' ranks and gathered over the tensor-parallel
// group (the collectives are priced by the estimator), run through the chip's experts, and
// brought back and combined with their routing weights. A token visits experts_per_token
// experts; the busiest chip gets expert_imbalance times the mean.
void moe_block(std::vector<Op>& ops, const ModelShape& model, const LayerSlice& slice) {
  const DType dtype = storage_dtype(slice.dtype);
  const double e = bytes_per_element(dtype);
  const double t = slice.tp;
  const double tokens = static_cast<double>(slice.micro_batch) * slice.seq_len;
  const double local = slice.sequence_parallel ? tokens / t : tokens;
  const double h = model.hidden;
  const double k = model.experts_per_token;
  const double experts = model.experts;
  const double local_experts = experts / slice.ep;
  const std::size_t first = ops.size();  // the mixture's operators: the moe module
  // Router: a GEMM to every expert's score (BF16 under the fp8 recipe too), then softmax (or
  // sigmoid) and top-k over the scores in fp32.
  ops.push_back(gemm("router", local, experts, h, 1, dtype));
  ops.push_back(elementwise("routing", OpClass::activation, 3.0 * local * experts * 4.0, 3, 2));
  const bool gshard = slice.dispatcher == MoeDispatcher::gshard;
  // GShard's dense dispatch: every expert has `slots / experts` places (its capacity, with
  // expert_imbalance the capacity factor) for the chip's `local` tokens.
  const double slots = local * k * slice.expert_imbalance;
  if (gshard) {
    // The gate writes the combine weights [tokens, experts, capacity] in fp32 (two top-k terms
    // and their sum) and the dispatch mask as booleans, and both are cast to the training
    // dtype for the einsums: 4 + 4 + 4 + 1 bytes written or read per element, and the two
    // casts 1 + e and 4 + e. Backward, the weights' gradient is cast back and reduced to the
    // gates: e + 4 + 4.
    const double masks = local * slots;
    Op build =
        elementwise("gshard_masks", OpClass::dropout, masks * (13.0 + (1.0 + e) + (4.0 + e)), 8, 4);
    build.backward_bytes_factor = (e + 8.0) / (18.0 + 2.0 * e);
    ops.push_back(build);
    // einsum("sec,sm->ecm"): the slots gathered from the tokens, a GEMM over the tokens; its
    // backward is the input's gradient alone (the mask has none).
    Op dispatch = gemm("gshard_dispatch", slots, h, local, 1, dtype);
    dispatch.backward_flops_factor = 1.0;
    ops.push_back(dispatch);
  } else {
    // Permutation: each token copied once per chosen expert, grouped by expert.
    ops.push_back(elementwise("permute", OpClass::dropout, 2.0 * local * k * h * e));
  }
  // The chip's experts: the copies the expert-parallel group routes to them, gathered over the
  // etp ranks that split each expert (Megatron-Core's expert tensor parallelism): etp chips'
  // own tokens (a tensor-parallel group's share without sequence parallelism), experts_per_token
  // copies each, the busiest chip's load. With etp = tp that is the micro-batch's tokens.
  const double etp = slice.expert_tp();
  const double own = slice.sequence_parallel ? local : tokens / t;
  const double assigned = (etp == t ? tokens : own * etp) * k * slice.expert_imbalance;
  const double per_expert = assigned / local_experts;
  const double f = model.expert_ffn;
  const int kernels = slice.grouped_gemm ? 1 : static_cast<int>(local_experts);
  auto experts_gemm = [&](std::string_view name, double n, double inner) {
    Op op = gemm(name, per_expert, n, inner, local_experts, storage_dtype(slice.dtype));
    if (slice.dtype == DType::fp8) {
      op.bytes = (per_expert * inner + inner * n + per_expert * n * 2.0) * local_experts;
    }
    op.linear = true;
    op.kernels = kernels;
    op.backward_kernels = 2 * kernels;
    return op;
  };
  if (slice.dtype == DType::fp8) {
    Op cast = elementwise("fp8_cast", OpClass::dropout, assigned * h * 3.0);
    cast.backward_bytes_factor = 2.0 * f / etp / h;
    ops.push_back(cast);
  }
  ops.push_back(experts_gemm("experts_gate_up", 2.0 * f / etp, h));
  ops.push_back(swiglu("experts_swiglu", assigned * f / etp, e, slice));
  ops.back().modules |= kRecomputeMoeAct;
  if (slice.dtype == DType::fp8) {
    Op cast = elementwise("fp8_cast", OpClass::dropout, assigned * f / etp * 3.0);
    cast.backward_bytes_factor = h / (f / etp);
    ops.push_back(cast);
  }
  ops.push_back(experts_gemm("experts_down", h, f / etp));
  if (gshard) {
    // einsum("sec,ecm->sm"): the slots weighed back into the tokens; backward, the gradients
    // of the experts' output and of the combine weights (both need one).
    ops.push_back(gemm("gshard_combine", local, h, slots, 1, dtype));
  } else {
    // Back to the tokens' order, weighted by their routing scores and summed.
    ops.push_back(elementwise("unpermute", OpClass::dropout, 2.0 * local * k * h * e));
  }
  // Shared experts: a dense gated MLP every token passes through.
  if (model.shared_experts > 0) {
    const std::size_t shared = ops.size();
    const double s = static_cast<double>(model.shared_experts) * model.shared_expert_ffn;
    linear(ops, "shared_gate_up", tokens, 2.0 * s / t, h, slice.dtype);
    ops.push_back(swiglu("shared_swiglu", tokens * s / t, e, slice));
    linear(ops, "shared_down", tokens, h, s / t, slice.dtype);
    tag(ops, shared, kRecomputeSharedExperts);
  }
  tag(ops, first, kRecomputeMoe);
}

// Core attention of the chip's heads / tp heads, Q and K `qk` wide per head, V and the output
// `v` wide: flash attention (causal, half the score matrix computed; `io_bytes` read and
// written: Q, K, V and the output) or the unfused scores, softmax, dropout and context.
void core_attention(std::vector<Op>& ops, const ModelShape& model, const LayerSlice& slice,
                    double qk, double v, double io_bytes) {
  const DType dtype = storage_dtype(slice.dtype);
  const double e = bytes_per_element(dtype);
  const double heads = model.heads / static_cast<double>(slice.tp);
  const double s = slice.seq_len;
  const double b = slice.micro_batch;
  if (slice.flash_attention) {
    // Causal flash attention skips the masked half of the score matrix: Q K^T (2 s^2 qk per
    // head) and P V (2 s^2 v), halved.
    Op op;
    op.name = "flash_attention";
    op.op_class = OpClass::flash_attention;
    op.flops = 0.5 * 2.0 * b * heads * s * s * (qk + v);
    op.bytes = io_bytes;
    op.gemm = {s, s, 0.5 * (qk + v), b * heads};
    op.backward_flops_factor = 2.5;  // five matrix products backward against two forward
    // FlashAttention-2's backward launches three kernels: dot(dO, O), the main one, convert dQ.
    op.backward_kernels = 3;
    op.core_attention = true;
    ops.push_back(op);
    return;
  }
  Op scores = gemm("attention_scores", s, s, qk, b * heads, dtype);
  scores.core_attention = true;
  ops.push_back(scores);
  const double score_elements = b * heads * s * s;
  // Fused scale-mask-softmax reads and writes the score matrix; dropout writes a mask and
  // its output.
  Op softmax = elementwise("softmax", OpClass::attention_unfused, 2.0 * score_elements * e);
  softmax.core_attention = true;
  ops.push_back(softmax);
  if (model.dropout) {
    Op dropout =
        elementwise("attention_dropout", OpClass::dropout, score_elements * (2.0 * e + 1.0));
    dropout.core_attention = true;
    ops.push_back(dropout);
  }
  Op context = gemm("attention_context", s, v, s, b * heads, dtype);
  context.core_attention = true;
  ops.push_back(context);
}

// Multi-head latent attention (DeepSeek-V2/V3) as Megatron-Core's MLASelfAttention runs it in
// training (docs/models/attention.md). The down-projections (TELinear, "duplicated") are whole
// on every tensor-parallel rank and run on the rank's own tokens: its sequence-parallel share,
// or every token without sequence parallelism (each rank then computes the same). The
// up-projections and the output projection are column- and row-parallel over the heads, on
// every token of the micro-batch.
void latent_attention(std::vector<Op>& ops, const ModelShape& model, const LayerSlice& slice) {
  const double e = bytes_per_element(storage_dtype(slice.dtype));
  const double t = slice.tp;
  const double tokens = static_cast<double>(slice.micro_batch) * slice.seq_len;
  const double local = slice.sequence_parallel ? tokens / t : tokens;
  const double h = model.hidden;
  const double heads = model.heads / t;
  const double nope = model.qk_nope_head_dim;
  const double rope = model.qk_rope_head_dim;
  const double qk = nope + rope;
  const double v = model.v_head_dim;
  const double q_rank = model.q_lora_rank;
  const double kv_rank = model.kv_lora_rank;
  if (q_rank > 0) {
    linear(ops, "q_down_proj", local, q_rank, h, slice.dtype);
    ops.push_back(norm("q_norm", local * q_rank, e, slice));
    const std::size_t up = ops.size();
    linear(ops, "q_up_proj", tokens, heads * qk, q_rank, slice.dtype);
    tag(ops, up, kRecomputeMlaUpProj);
  } else {
    linear(ops, "q_proj", tokens, heads * qk, h, slice.dtype);
  }
  // K and V: down to the latent and the shared rotary key, the latent's norm, up to every
  // head's no-rope key and value.
  linear(ops, "kv_down_proj", local, kv_rank + rope, h, slice.dtype);
  ops.push_back(norm("kv_norm", local * kv_rank, e, slice));
  const std::size_t up = ops.size();  // the up-projections and the rotary parts: mla_up_proj
  linear(ops, "kv_up_proj", tokens, heads * (nope + v), kv_rank, slice.dtype);
  // Rotary embedding of every head's rope part of Q and of the one shared rope key, then Q and
  // K assembled from their no-rope and rope parts (the shared key copied to every head).
  ops.push_back(rotary(tokens * (heads * rope + rope), e, 2, slice));
  ops.push_back(elementwise("qk_concat", OpClass::dropout, 2.0 * 2.0 * tokens * heads * qk * e));
  tag(ops, up, kRecomputeMlaUpProj);
  core_attention(ops, model, slice, qk, v, tokens * heads * (2.0 * qk + 2.0 * v) * e);
}

}  // namespace

double chip_imbalance(double expert, int experts, int ep) {
  if (ep <= 1 || experts <= 1) return 1.0;
  if (ep >= experts) return expert;
  return 1.0 + (expert - 1.0) * std::sqrt(static_cast<double>(ep - 1) / (experts - 1));
}

double dispatched_copies(int experts, int experts_per_token, int ep, MoeDispatcher dispatcher) {
  if (dispatcher != MoeDispatcher::flex || ep <= 1 || experts <= 0 || experts % ep != 0)
    return experts_per_token;
  // The chance that none of a token's k experts is among one chip's E / ep: the k draws
  // without replacement all fall among the other E - E / ep experts.
  const int others = experts - experts / ep;
  double none = 1.0;
  for (int i = 0; i < experts_per_token; ++i) {
    if (others - i <= 0) {
      none = 0.0;
      break;
    }
    none *= static_cast<double>(others - i) / static_cast<double>(experts - i);
  }
  return ep * (1.0 - none);
}

FlexTraffic flex_forwarded_traffic(int experts, int experts_per_token, int ep, int nodes) {
  if (nodes < 2 || ep <= nodes || ep % nodes != 0 || experts <= 0 || experts % ep != 0) return {};
  // The share of tokens that need a given node (a given chip): its experts hold one or more of
  // the token's, dispatched_copies over that many bins, divided by the bins.
  const double node_hit =
      dispatched_copies(experts, experts_per_token, nodes, MoeDispatcher::flex) / nodes;
  const double chip_hit =
      dispatched_copies(experts, experts_per_token, ep, MoeDispatcher::flex) / ep;
  const int per_node = ep / nodes;
  return {(nodes - 1) * node_hit, static_cast<double>(nodes) * (per_node - 1) * chip_hit};
}

std::vector<Op> layer_ops(const ModelShape& model, const LayerSlice& slice, bool dense_mlp) {
  const DType dtype = storage_dtype(slice.dtype);
  const double e = bytes_per_element(dtype);
  const double t = slice.tp;
  const double tokens = static_cast<double>(slice.micro_batch) * slice.seq_len;
  const double h = model.hidden;
  const double d = model.head_dim();
  const double w = model.attention_width();  // Q and the attention output: h, or heads x d
  // Width of K (and of V) on this chip: its share of the key/value heads, or one replicated
  // head when tp exceeds them.
  const double kv_chip = model.kv_width_per_chip(slice.tp);
  const double f = model.ffn;
  // Tokens this chip handles outside the tensor-parallel regions (norms, dropout, residuals).
  const double replicated_tokens = slice.sequence_parallel ? tokens / t : tokens;

  std::vector<Op> ops;
  ops.reserve(20);
  // Attention block.
  // Norms: one kernel forward, two backward (input gradient, weight-gradient reduction);
  // rotary embeddings one kernel each for Q and K.
  ops.push_back(norm("input_norm", replicated_tokens * h, e, slice));
  ops.back().modules |= kRecomputeLayernorm;
  if (model.latent_attention()) {
    latent_attention(ops, model, slice);
  } else {
    linear(ops, "qkv_proj", tokens, w / t + 2.0 * kv_chip, h, slice.dtype);
    if (model.qk_norm) {
      // Qwen3 normalises each head of Q and of K: two norms, each way.
      ops.push_back(norm("qk_norm", tokens * (w / t + kv_chip), e, slice, 2));
    }
    // Rotary embeddings of Q and K; a model that learns its positions has none (it adds a
    // position table's rows to the embedding once, on the first stage: not counted).
    if (!model.learned_positions) ops.push_back(rotary(tokens * (w / t + kv_chip), e, 2, slice));
    core_attention(ops, model, slice, d, d, tokens * (2.0 * w / t + 2.0 * kv_chip) * e);
  }
  linear(ops, "attention_out_proj", tokens, h, w / t, slice.dtype);
  // GLM-4's norms after the attention and after the MLP (counted here, both alike).
  for (int i = 0; i < model.extra_norms; ++i)
    ops.push_back(norm("post_norm", replicated_tokens * h, e, slice));
  // One kernel each way (backward, the residual's gradient is added to the branch's).
  ops.push_back(elementwise("residual_add", OpClass::dropout,
                            (model.dropout ? 4.0 * e + 1.0 : 3.0 * e) * replicated_tokens * h));
  // MLP block.
  ops.push_back(norm("post_attention_norm", replicated_tokens * h, e, slice));
  ops.back().modules |= kRecomputeLayernorm;
  const std::size_t mlp = ops.size();  // a dense MLP's operators: the mlp module
  if (model.moe() && !dense_mlp) {
    moe_block(ops, model, slice);
  } else {
    if (gated(model.activation)) {
      linear(ops, "mlp_gate_up", tokens, 2.0 * f / t, h, slice.dtype);
      if (model.activation == Activation::swiglu) {
        ops.push_back(swiglu("swiglu", tokens * f / t, e, slice));
      } else {
        ops.push_back(elementwise(to_string(model.activation), OpClass::activation,
                                  3.0 * tokens * f / t * e));
      }
    } else {
      linear(ops, "mlp_up", tokens, f / t, h, slice.dtype);
      ops.push_back(elementwise(model.activation == Activation::gelu ? "gelu" : "relu",
                                OpClass::activation, 2.0 * tokens * f / t * e));
    }
    linear(ops, "mlp_down", tokens, h, f / t, slice.dtype);
    tag(ops, mlp, kRecomputeMlp);
  }
  ops.push_back(elementwise("residual_add", OpClass::dropout,
                            (model.dropout ? 4.0 * e + 1.0 : 3.0 * e) * replicated_tokens * h));
  return ops;
}

std::vector<Op> embedding_ops(const ModelShape& model, const LayerSlice& slice) {
  const double e = bytes_per_element(storage_dtype(slice.dtype));
  const double tokens = static_cast<double>(slice.micro_batch) * slice.seq_len;
  // Gather rows of the (vocabulary-parallel) table and write the hidden states.
  Op lookup = elementwise("embedding", OpClass::embedding, 2.0 * tokens * model.hidden * e, 1, 2);
  return {lookup};
}

std::vector<Op> head_ops(const ModelShape& model, const LayerSlice& slice) {
  const DType dtype = storage_dtype(slice.dtype);  // the output layer stays BF16 under fp8
  const double e = bytes_per_element(dtype);
  const double t = slice.tp;
  const double tokens = static_cast<double>(slice.micro_batch) * slice.seq_len;
  const double replicated_tokens = slice.sequence_parallel ? tokens / t : tokens;
  std::vector<Op> ops;
  ops.push_back(norm("final_norm", replicated_tokens * model.hidden, e, slice));
  ops.push_back(gemm("logits", tokens, model.vocab / t, model.hidden, 1, dtype));
  const double logits = tokens * model.vocab / t;
  if (slice.cross_entropy_fusion == CrossEntropyFusion::te) {
    // Transformer Engine's fused loss (transformer_engine/pytorch/cross_entropy.py, Triton):
    // forward, a kernel for each row's max and sum (all-gathered across tp) and one that reads
    // the logits again and writes the gradient over them, 3 e bytes an element; backward, one
    // kernel scaling that gradient by the loss's in place, 2 e.
    ops.push_back(elementwise("cross_entropy", OpClass::cross_entropy, logits * 3.0 * e, 2, 1));
    ops.back().backward_bytes_factor = 2.0 / 3.0;
  } else {
    // Megatron's vocabulary-parallel cross entropy in fp32: cast, max, subtract, exp, sum, log
    // and the target gather forward (its max and sum are all-reduced); softmax minus one-hot
    // backward, one pass over the logits. Its jit-fused form (`native`) makes the same fp32
    // passes; its fewer launches are not counted.
    ops.push_back(
        elementwise("cross_entropy", OpClass::cross_entropy, logits * (e + 4.0 * 4.0), 6, 2));
    ops.back().backward_bytes_factor = 1.0;
  }
  // Multi-token prediction (DeepSeek-V3; Megatron-Core's MultiTokenPredictionBlock on the last
  // stage): each module looks up the next token's embedding, normalises it and the hidden
  // states, projects the two (2h) to one (h, column-parallel), runs one layer of the model's
  // last kind, and predicts through the shared output layer with a loss of its own
  // (docs/models/moe.md#multi-token-prediction).
  if (model.mtp_layers > 0) {
    const std::vector<Op> lookup = embedding_ops(model, slice);
    const std::vector<Op> layer = layer_ops(model, slice, !model.mtp_moe_layer());
    const std::vector<Op> output(ops.begin(), ops.end());
    for (int depth = 0; depth < model.mtp_layers; ++depth) {
      ops.insert(ops.end(), lookup.begin(), lookup.end());
      for (int i = 0; i < 2; ++i)
        ops.push_back(norm("mtp_norm", replicated_tokens * model.hidden, e, slice));
      linear(ops, "mtp_projection", tokens, model.hidden / t, 2.0 * model.hidden, slice.dtype);
      ops.insert(ops.end(), layer.begin(), layer.end());
      ops.insert(ops.end(), output.begin(), output.end());
    }
  }
  return ops;
}

double layer_model_flops(const ModelShape& model, int micro_batch, int seq_len, bool dense_mlp) {
  const double tokens = static_cast<double>(micro_batch) * seq_len;
  const double h = model.hidden;
  const double w = model.attention_width();
  const double kv = static_cast<double>(model.kv_heads) * model.head_dim();
  const double matrices = mlp_matrices(model.activation);
  // A mixture's MLP: the experts a token visits, the shared ones and the router.
  const double mlp =
      model.moe() && !dense_mlp
          ? model.experts_per_token * matrices * h * model.expert_ffn +
                static_cast<double>(model.shared_experts) * matrices * h *
                    model.shared_expert_ffn +
                h * model.experts
          : matrices * h * model.ffn;
  if (model.latent_attention()) {
    // Every projection once (the down-projections' replicated work is not model FLOPs); the
    // scores Q K^T of qk-wide heads and the context P V of v-wide ones, counted in full.
    const double a = model.heads;
    const double qk = model.qk_nope_head_dim + model.qk_rope_head_dim;
    const double v = model.v_head_dim;
    const double q = model.q_lora_rank > 0 ? h * model.q_lora_rank + model.q_lora_rank * a * qk
                                           : h * a * qk;
    const double kv_proj = h * (model.kv_lora_rank + model.qk_rope_head_dim) +
                           model.kv_lora_rank * a * (model.qk_nope_head_dim + v);
    const double linear = 2.0 * tokens * (q + kv_proj + a * v * h + mlp);
    const double attention = 2.0 * tokens * seq_len * a * (qk + v);
    return linear + attention;
  }
  const double linear = 2.0 * tokens * (h * (w + 2.0 * kv) + w * h + mlp);
  const double attention = 4.0 * tokens * seq_len * w;
  return linear + attention;
}

double model_layers_flops(const ModelShape& model, int micro_batch, int seq_len) {
  const double layer = layer_model_flops(model, micro_batch, seq_len);
  const int dense = model.moe() ? std::min(model.dense_layers, model.layers) : 0;
  if (dense <= 0) return model.layers * layer;
  return (model.layers - dense) * layer +
         dense * layer_model_flops(model, micro_batch, seq_len, true);
}

double head_model_flops(const ModelShape& model, int micro_batch, int seq_len) {
  const double tokens = static_cast<double>(micro_batch) * seq_len;
  const double logits = 2.0 * tokens * model.hidden * model.vocab;
  if (model.mtp_layers <= 0) return logits;
  // Each multi-token prediction module: its projection, its layer and its logits.
  const double module = 2.0 * tokens * 2.0 * model.hidden * model.hidden +
                        layer_model_flops(model, micro_batch, seq_len, !model.mtp_moe_layer()) +
                        logits;
  return logits + model.mtp_layers * module;
}

}  // namespace hetplan::models
