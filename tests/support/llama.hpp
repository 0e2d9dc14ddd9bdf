// LLaMA shapes for tests that build their inputs in code.
#pragma once

#include "core/workload.hpp"

namespace hetplan::test {

// Llama-2-7B (the Hugging Face config of meta-llama/Llama-2-7b-hf).
inline ModelShape llama2_7b() {
  ModelShape m;
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 32;
  m.ffn = 11008;
  m.vocab = 32000;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.linear_bias = false;
  return m;
}

// A LLaMA of about 1.3B parameters in place of `m`'s dimensions (24 layers, 2,048 hidden, 16
// heads, FFN 5,504, vocabulary 32,000), keeping its kind of layer.
inline void shrink_to_1_3b(ModelShape& m) {
  m.layers = 24;
  m.hidden = 2048;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn = 5504;
  m.vocab = 32000;
}

// A small workload: 2,048 hidden, 16 heads, SwiGLU, RMSNorm, 2,048-token sequences in bf16,
// one sequence per micro-batch.
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
