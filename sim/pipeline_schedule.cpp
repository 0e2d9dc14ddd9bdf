#include "sim/pipeline_schedule.hpp"

#include <algorithm>
#include <cassert>
#include <cstddef>

namespace hetplan::sim {

std::vector<PipelineOp> pipeline_order(int stage, int stages, int micro_batches, int chunks,
                                       int extra_warmup) {
  assert(stages >= 1 && stage >= 0 && stage < stages);
  assert(micro_batches >= 0 && chunks >= 1);
  assert(chunks == 1 || micro_batches % stages == 0);

  const int ops = micro_batches * chunks;  // forward ops, and as many backward ops
  const int warmup = pipeline_warmup(stage, stages, micro_batches, chunks, extra_warmup);

  // Op k in the stage's forward (or backward) sequence. With chunks == 1 this is micro-batch k,
  // chunk 0.
  const int group = stages * chunks;
  const auto op = [&](Pass pass, int k) {
    const int chunk_in_group = (k % group) / stages;
    PipelineOp result;
    result.pass = pass;
    result.micro_batch = (k / group) * stages + k % stages;
    result.chunk = pass == Pass::forward ? chunk_in_group : chunks - 1 - chunk_in_group;
    return result;
  };

  std::vector<PipelineOp> order;
  order.reserve(2 * static_cast<std::size_t>(ops));
  for (int k = 0; k < warmup; ++k) order.push_back(op(Pass::forward, k));
  for (int k = 0; k < ops - warmup; ++k) {
    order.push_back(op(Pass::forward, k + warmup));
    order.push_back(op(Pass::backward, k));
  }
  for (int k = ops - warmup; k < ops; ++k) order.push_back(op(Pass::backward, k));
  return order;
}

}  // namespace hetplan::sim
