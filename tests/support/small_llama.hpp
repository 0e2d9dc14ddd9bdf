// A small LLaMA-shaped workload for tests that build their inputs in code: 2,048 hidden, 16
// heads, SwiGLU, RMSNorm, 2,048-token sequences in bf16, one sequence per micro-batch.
#pragma once

#include "core/workload.hpp"

namespace hetplan::test {

inline Workload small_llama(int layers, int global_batch) {
  Workload w;
  w.name = "small";
  w.model.model_type = "llama";
  w.model.layers = layers;
  w.model.hidden = 2048;
  w.model.heads = 16;
  w.model.kv_heads = 16;
  w.model.ffn = 5632;
  w.model.vocab = 32000;
  w.model.activation = Activation::swiglu;
  w.model.norm = Norm::rmsnorm;
  w.model.linear_bias = false;
  w.training.seq_len = 2048;
  w.training.global_batch = global_batch;
  w.training.micro_batch = 1;
  w.training.dtype = DType::bf16;
  return w;
}

}  // namespace hetplan::test
