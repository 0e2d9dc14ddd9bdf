#include "models/transformer_ops.hpp"

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

Op elementwise(std::string_view name, OpClass op_class, double bytes) {
  Op op;
  op.name = name;
  op.op_class = op_class;
  op.bytes = bytes;
  op.flops = 0;
  return op;
}

}  // namespace

std::vector<Op> layer_ops(const ModelShape& model, const LayerSlice& slice) {
  const double e = bytes_per_element(slice.dtype);
  const double t = slice.tp;
  const double tokens = static_cast<double>(slice.micro_batch) * slice.seq_len;
  const double h = model.hidden;
  const double d = model.head_dim();
  const double heads = model.heads / t;  // attention heads on this chip
  const double kv = model.kv_heads * d;  // width of K (and of V) before sharding
  const double f = model.ffn;
  const double s = slice.seq_len;
  const double b = slice.micro_batch;
  // Tokens this chip handles outside the tensor-parallel regions (norms, dropout, residuals).
  const double replicated_tokens = slice.sequence_parallel ? tokens / t : tokens;

  std::vector<Op> ops;
  ops.reserve(16);
  // Attention block.
  ops.push_back(elementwise("input_norm", OpClass::norm, 2.0 * replicated_tokens * h * e));
  ops.push_back(gemm("qkv_proj", tokens, (h + 2.0 * kv) / t, h, 1, slice.dtype));
  ops.push_back(elementwise("rope", OpClass::rope, 2.0 * tokens * (h + kv) / t * e));
  if (slice.flash_attention) {
    // Causal flash attention skips the masked half of the score matrix.
    Op op;
    op.name = "flash_attention";
    op.op_class = OpClass::flash_attention;
    op.flops = 0.5 * 4.0 * b * heads * s * s * d;
    op.bytes = tokens * (h + 2.0 * kv + h) / t * e;
    op.gemm = {s, s, d, b * heads};
    op.backward_flops_factor = 2.5;  // five matrix products backward against two forward
    op.core_attention = true;
    ops.push_back(op);
  } else {
    Op scores = gemm("attention_scores", s, s, d, b * heads, slice.dtype);
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
    Op context = gemm("attention_context", s, d, s, b * heads, slice.dtype);
    context.core_attention = true;
    ops.push_back(context);
  }
  ops.push_back(gemm("attention_out_proj", tokens, h, h / t, 1, slice.dtype));
  ops.push_back(elementwise("residual_add", OpClass::dropout,
                            (model.dropout ? 4.0 * e + 1.0 : 3.0 * e) * replicated_tokens * h));
  // MLP block.
  ops.push_back(elementwise("post_attention_norm", OpClass::norm, 2.0 * replicated_tokens * h * e));
  if (model.activation == Activation::swiglu) {
    ops.push_back(gemm("mlp_gate_up", tokens, 2.0 * f / t, h, 1, slice.dtype));
    ops.push_back(elementwise("swiglu", OpClass::activation, 3.0 * tokens * f / t * e));
  } else {
    ops.push_back(gemm("mlp_up", tokens, f / t, h, 1, slice.dtype));
    ops.push_back(elementwise(model.activation == Activation::gelu ? "gelu" : "relu",
                              OpClass::activation, 2.0 * tokens * f / t * e));
  }
  ops.push_back(gemm("mlp_down", tokens, h, f / t, 1, slice.dtype));
  ops.push_back(elementwise("residual_add", OpClass::dropout,
                            (model.dropout ? 4.0 * e + 1.0 : 3.0 * e) * replicated_tokens * h));
  return ops;
}

std::vector<Op> embedding_ops(const ModelShape& model, const LayerSlice& slice) {
  const double e = bytes_per_element(slice.dtype);
  const double tokens = static_cast<double>(slice.micro_batch) * slice.seq_len;
  // Gather rows of the (vocabulary-parallel) table and write the hidden states.
  Op lookup = elementwise("embedding", OpClass::embedding, 2.0 * tokens * model.hidden * e);
  return {lookup};
}

std::vector<Op> head_ops(const ModelShape& model, const LayerSlice& slice) {
  const double e = bytes_per_element(slice.dtype);
  const double t = slice.tp;
  const double tokens = static_cast<double>(slice.micro_batch) * slice.seq_len;
  const double replicated_tokens = slice.sequence_parallel ? tokens / t : tokens;
  std::vector<Op> ops;
  ops.push_back(
      elementwise("final_norm", OpClass::norm, 2.0 * replicated_tokens * model.hidden * e));
  ops.push_back(gemm("logits", tokens, model.vocab / t, model.hidden, 1, slice.dtype));
  // Vocabulary-parallel cross entropy in fp32: cast, max, exp-sum and the gradient pass over
  // the logits.
  const double logits = tokens * model.vocab / t;
  ops.push_back(elementwise("cross_entropy", OpClass::cross_entropy, logits * (e + 4.0 * 4.0)));
  ops.back().backward_bytes_factor = 1.0;
  return ops;
}

double layer_model_flops(const ModelShape& model, int micro_batch, int seq_len) {
  const double tokens = static_cast<double>(micro_batch) * seq_len;
  const double h = model.hidden;
  const double kv = static_cast<double>(model.kv_heads) * model.head_dim();
  const double matrices = model.activation == Activation::swiglu ? 3.0 : 2.0;
  const double linear = 2.0 * tokens * (h * (h + 2.0 * kv) + h * h + matrices * h * model.ffn);
  const double attention = 4.0 * tokens * seq_len * h;
  return linear + attention;
}

double head_model_flops(const ModelShape& model, int micro_batch, int seq_len) {
  return 2.0 * static_cast<double>(micro_batch) * seq_len * model.hidden * model.vocab;
}

}  // namespace hetplan::models
