// The order in which one pipeline stage runs its forward and backward passes under Megatron-LM's
// 1F1B schedules, plain and interleaved. A pure function: no timing, no communication.
// docs/models/pipeline-schedule.md.
#pragma once

#include <vector>

#include "models/memory.hpp"

namespace hetplan::sim {

enum class Pass { forward, backward };

struct PipelineOp {
  Pass pass = Pass::forward;
  int micro_batch = 0;  // 0-based
  int chunk = 0;        // model chunk (virtual stage) on this stage, 0-based

  friend bool operator==(const PipelineOp&, const PipelineOp&) = default;
};

// The order in which pipeline stage `stage` (0-based, of `stages`) runs its forward and backward
// passes over `micro_batches` micro-batches with `chunks` model chunks per stage, as Megatron-LM
// does. Both schedules number the stage's forward ops k = 0 .. micro_batches * chunks - 1 and its
// backward ops likewise, run `w` forward ops (the warm-up), then alternate forward op k + w with
// backward op k, and end with the remaining `w` backward ops (the cool-down).
//
// chunks == 1, non-interleaved 1F1B: w = min(stages - stage - 1, micro_batches); op k is
// micro-batch k.
// chunks > 1, interleaved 1F1B (forward_backward_pipelining_with_interleaving, with its default
// micro-batch group of `stages`): w = min(2 (stages - stage - 1) + (chunks - 1) stages,
// micro_batches * chunks); with g = stages * chunks, op k is micro-batch
// (k / g) * stages + k mod stages, forward on chunk (k mod g) / stages, backward on chunk
// chunks - 1 - (k mod g) / stages.
//
// Preconditions (asserted; the caller validates input): 0 <= stage < stages, micro_batches >= 0,
// chunks >= 1, and micro_batches % stages == 0 when chunks > 1 (Megatron rejects other counts
// with the default group size).
//
// `extra_warmup`: forward ops run in the warm-up beyond those, at most all of them (Megatron-
// Core's combined 1F1B schedule runs one more, then each forward op beside the backward op
// that follows it).
std::vector<PipelineOp> pipeline_order(int stage, int stages, int micro_batches, int chunks,
                                       int extra_warmup = 0);

// The warm-up `w` of pipeline_order with the same arguments (models::pipeline_warmup, the count
// the memory model holds): its first w ops are forward ops, and steady-state forward op k + w
// is at index w + 2k, beside backward op k at w + 2k + 1 (the combined schedule's pairs, for
// k < micro_batches * chunks - w).
using models::pipeline_warmup;

// The position of (stage, chunk) in the model: chunk * stages + stage. Activations flow from
// virtual stage q to q + 1, gradients from q + 1 back to q; so the last stage's chunk c feeds
// stage 0's chunk c + 1. Virtual stage 0 holds the embedding, the last one the head.
inline int virtual_stage(int stage, int chunk, int stages) {
  return chunk * stages + stage;
}

}  // namespace hetplan::sim
