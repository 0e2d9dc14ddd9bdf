// What is being trained and how: a decoder-only transformer's shape (from a Hugging Face
// config.json or written inline) and the training settings. docs/formats/workload.md.
#pragma once

#include <string>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace hetplan {

enum class Activation { gelu, swiglu, relu };
enum class Norm { layernorm, rmsnorm };
enum class Optimizer { adam, adamw, sgd };
enum class Recompute { none, selective, full };

struct ModelShape {
  std::string model_type;  // llama, qwen2, mistral, gpt2, gpt_neox, opt, or "custom"
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
  int max_positions = 0;

  int head_dim() const { return hidden / heads; }
  // Width of K (and of V) one chip of a tensor-parallel group of `tp` holds: its share of the
  // key/value heads, or one whole head when tp exceeds them (Megatron replicates each key/value
  // head over tp / kv_heads ranks).
  double kv_width_per_chip(int tp) const;
  // Parameters a chip holds beyond layer_parameters() / tp because of that replication.
  double replicated_kv_parameters(int tp) const;
  // Parameters of one transformer layer, of the embeddings and of the output head.
  double layer_parameters() const;
  double embedding_parameters() const;
  double head_parameters() const;  // 0 when tied to the input embedding
  double total_parameters() const;
};

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

}  // namespace hetplan
