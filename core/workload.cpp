#include "core/workload.hpp"

namespace hetplan {

double ModelShape::layer_parameters() const {
  const double h = hidden;
  const double kv = static_cast<double>(kv_heads) * head_dim();
  const double attention = h * (h + 2.0 * kv) + h * h;  // Q, K, V and output projections
  const double matrices = activation == Activation::swiglu ? 3.0 : 2.0;
  const double mlp = matrices * h * ffn;
  double biases = 0.0;
  if (linear_bias) biases = (h + 2.0 * kv) + h + (matrices - 1.0) * ffn + h;
  else if (qkv_bias) biases = h + 2.0 * kv;
  const double norms = (norm == Norm::layernorm ? 2.0 : 1.0) * 2.0 * h;
  return attention + mlp + biases + norms;
}

double ModelShape::kv_width_per_chip(int tp) const {
  const double d = head_dim();
  return kv_heads >= tp ? static_cast<double>(kv_heads) / tp * d : d;
}

double ModelShape::replicated_kv_parameters(int tp) const {
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

double ModelShape::total_parameters() const {
  return layers * layer_parameters() + embedding_parameters() + head_parameters();
}

std::string_view to_string(Activation activation) {
  switch (activation) {
    case Activation::gelu:
      return "gelu";
    case Activation::swiglu:
      return "swiglu";
    case Activation::relu:
      return "relu";
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

}  // namespace hetplan
