#include "core/workload.hpp"

#include <algorithm>

namespace hetplan {

double ModelShape::attention_width() const {
  if (latent_attention()) return static_cast<double>(heads) * v_head_dim;
  return static_cast<double>(heads) * head_dim();
}

bool ModelShape::moe_layer(int index) const {
  return experts > 0 && index >= dense_layers;
}

int ModelShape::moe_layer_count() const {
  return experts > 0 ? std::max(0, layers - dense_layers) : 0;
}

double ModelShape::attention_parameters() const {
  const double h = hidden;
  const double a = heads;
  if (latent_attention()) {
    // Q: down to q_lora_rank, its norm, up to every head's no-rope and rope parts (or one
    // projection); K and V: down to kv_lora_rank plus the shared rope key, its norm, up to every
    // head's no-rope key and value; the output from every head's value.
    const double qk_head = qk_nope_head_dim + qk_rope_head_dim;
    const double q = q_lora_rank > 0 ? h * q_lora_rank + q_lora_rank + q_lora_rank * a * qk_head
                                     : h * a * qk_head;
    const double kv = h * (kv_lora_rank + qk_rope_head_dim) + kv_lora_rank +
                      kv_lora_rank * a * (qk_nope_head_dim + v_head_dim);
    return q + kv + a * v_head_dim * h;
  }
  const double w = attention_width();
  const double kv = static_cast<double>(kv_heads) * head_dim();
  const double projections = h * (w + 2.0 * kv) + w * h;  // Q, K, V and output
  double biases = 0.0;
  if (linear_bias) biases = (w + 2.0 * kv) + h;
  else if (qkv_bias) biases = w + 2.0 * kv;
  const double norms = qk_norm ? 2.0 * head_dim() : 0.0;
  return projections + biases + norms;
}

double ModelShape::dense_mlp_parameters() const {
  const double h = hidden;
  const double matrices = mlp_matrices(activation);
  return matrices * h * ffn + (linear_bias ? (matrices - 1.0) * ffn + h : 0.0);
}

double ModelShape::moe_mlp_parameters() const {
  const double h = hidden;
  const double router = h * experts + (expert_bias ? experts : 0.0);
  const double routed = routed_expert_parameters();
  const double shared =
      static_cast<double>(shared_experts) * mlp_matrices(activation) * h * shared_expert_ffn +
      (shared_expert_gate ? h : 0.0);
  return router + routed + shared;
}

double ModelShape::layer_parameters() const {
  const double norms = (norm == Norm::layernorm ? 2.0 : 1.0) * (2.0 + extra_norms) * hidden;
  return attention_parameters() + dense_mlp_parameters() + norms;
}

double ModelShape::layer_parameters(int index) const {
  if (!moe_layer(index)) return layer_parameters();
  return layer_parameters() - dense_mlp_parameters() + moe_mlp_parameters();
}

double ModelShape::kv_width_per_chip(int tp) const {
  // Multi-head latent attention splits every head's key over tp: nope + rope wide each.
  if (latent_attention())
    return static_cast<double>(heads) / tp * (qk_nope_head_dim + qk_rope_head_dim);
  const double d = head_dim();
  return kv_heads >= tp ? static_cast<double>(kv_heads) / tp * d : d;
}

double ModelShape::latent_down_parameters() const {
  if (!latent_attention()) return 0.0;
  const double h = hidden;
  const double q = q_lora_rank > 0 ? h * q_lora_rank + q_lora_rank : 0.0;
  return q + h * (kv_lora_rank + qk_rope_head_dim) + kv_lora_rank;
}

double ModelShape::replicated_kv_parameters(int tp) const {
  // Megatron-Core keeps MLA's down-projections and their norms whole on every tensor-parallel
  // rank (TELinear in its "duplicated" mode): each rank holds all of them, not 1 / tp.
  if (latent_attention()) return latent_down_parameters() * (1.0 - 1.0 / tp);
  const double extra_width = kv_width_per_chip(tp) - static_cast<double>(kv_heads) * head_dim() / tp;
  if (extra_width <= 0) return 0.0;
  // K and V projection weights (and biases) of the replicated heads.
  return 2.0 * extra_width * (hidden + (linear_bias ? 1.0 : 0.0));
}

double ModelShape::embedding_parameters() const {
  return static_cast<double>(vocab) * hidden +
         (learned_positions ? static_cast<double>(max_positions) * hidden : 0.0);
}

double ModelShape::head_parameters() const {
  const double final_norm = (norm == Norm::layernorm ? 2.0 : 1.0) * hidden;
  return final_norm + (tied_embeddings ? 0.0 : static_cast<double>(vocab) * hidden);
}

double ModelShape::mtp_parameters() const {
  // Each module: its layer (of the last layer's kind), the norms of the hidden state and of the
  // next token's embedding, the projection of both to one, and its final norm; it shares the
  // embedding and the output layer.
  if (mtp_layers <= 0) return 0.0;
  const double h = hidden;
  return mtp_layers * (layer_parameters(layers - 1) + 3.0 * h + 2.0 * h * h);
}

double ModelShape::total_parameters() const {
  const int moe_count = moe_layer_count();
  const double moe_extra =
      moe_count > 0 ? moe_count * (moe_mlp_parameters() - dense_mlp_parameters()) : 0.0;
  return layers * layer_parameters() + moe_extra + embedding_parameters() + head_parameters();
}

double ModelShape::routed_expert_parameters() const {
  return static_cast<double>(experts) * mlp_matrices(activation) * hidden * expert_ffn;
}

double ModelShape::active_parameters() const {
  const double idle = static_cast<double>(experts - experts_per_token) * mlp_matrices(activation) *
                      hidden * expert_ffn;
  return total_parameters() - moe_layer_count() * (experts > 0 ? idle : 0.0);
}

std::string_view to_string(Activation activation) {
  switch (activation) {
    case Activation::gelu:
      return "gelu";
    case Activation::swiglu:
      return "swiglu";
    case Activation::relu:
      return "relu";
    case Activation::geglu:
      return "geglu";
  }
  return "?";
}

std::string_view to_string(Norm norm) {
  return norm == Norm::layernorm ? "layernorm" : "rmsnorm";
}

std::string_view to_string(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::adam:
      return "adam";
    case Optimizer::adamw:
      return "adamw";
    case Optimizer::sgd:
      return "sgd";
  }
  return "?";
}

std::string_view to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

std::string_view to_string(MoeDispatcher dispatcher) {
  switch (dispatcher) {
    case MoeDispatcher::all_to_all:
      return "alltoall";
    case MoeDispatcher::flex:
      return "flex";
    case MoeDispatcher::gshard:
      return "gshard";
  }
  return "alltoall";
}

}  // namespace hetplan
