// Activation memory against Korthikanti et al. 2022, "Reducing Activation Recomputation in
// Large Transformer Models", Table 2 (fp16, with dropout): per layer, per micro-batch,
//   no parallelism:              s b h (34 + 5 a s / h)
//   tensor parallel, no SP:      s b h (10 + 24/t + 5 a s / (h t))
//   tensor + sequence parallel:  s b h (34/t + 5 a s / (h t))
//   + selective recompute:       s b h 34 / t
//   full recompute:              2 s b h
#include "models/memory.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "models/transformer_ops.hpp"

namespace hetplan::models {
namespace {

constexpr double s = 2048, b = 4, h = 6144, a = 64, t = 8;

ModelShape gpt_22b() {
  ModelShape m;
  m.layers = 48;
  m.hidden = 6144;
  m.heads = 64;
  m.kv_heads = 64;
  m.ffn = 4 * 6144;
  m.vocab = 51200;
  m.activation = Activation::gelu;
  m.norm = Norm::layernorm;
  m.dropout = true;
  return m;
}

TrainingSettings fp16(bool sp) {
  TrainingSettings training;
  training.seq_len = 2048;
  training.global_batch = 4;
  training.micro_batch = 4;
  training.dtype = DType::fp16;
  training.flash_attention = false;
  training.sequence_parallel = sp;
  return training;
}

TEST(ActivationMemory, NoParallelism) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt_22b(), fp16(false), 4, 1, Recompute::none),
                   s * b * h * (34 + 5 * a * s / h));
}

TEST(ActivationMemory, TensorParallelWithoutSequenceParallel) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt_22b(), fp16(false), 4, 8, Recompute::none),
                   s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
}

TEST(ActivationMemory, TensorAndSequenceParallel) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt_22b(), fp16(true), 4, 8, Recompute::none),
                   s * b * h * (34 / t + 5 * a * s / (h * t)));
}

TEST(ActivationMemory, SelectiveRecomputeDropsTheScoreMatrices) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt_22b(), fp16(true), 4, 8, Recompute::selective),
                   s * b * h * 34 / t);
}

TEST(ActivationMemory, FullRecomputeKeepsTheLayerInput) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt_22b(), fp16(false), 4, 8, Recompute::full),
                   2 * s * b * h);
}

// Under the fp8 recipe the four linear layers' inputs are kept in FP8 (one byte): the QKV
// input (2 -> 1 s b h), the output projection's input (2 -> 1), the MLP input (2 -> 1) and the
// GeLU output the second MLP GEMM takes (8 -> 4): 34 - 7 = 27. Attention, norms, masks stay.
TEST(ActivationMemory, Fp8KeepsTheLinearInputsInOneByte) {
  TrainingSettings training = fp16(true);
  training.dtype = DType::fp8;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt_22b(), training, 4, 8, Recompute::none),
                   s * b * h * (27 / t + 5 * a * s / (h * t)));
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt_22b(), training, 4, 8, Recompute::selective),
                   s * b * h * 27 / t);
  // Full recompute keeps the layer input, in BF16.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt_22b(), training, 4, 8, Recompute::full),
                   2 * s * b * h / t);
}

StageShape stage(int p, int rank, int v, int m) {
  StageShape shape;
  shape.num_layers = 4;
  shape.pipeline_stages = p;
  shape.stage_index = rank;
  shape.virtual_stages = v;
  shape.micro_batches = m;
  shape.micro_batch = 1;
  return shape;
}

TEST(StageMemory, OneFOneBHoldsPipelineDepthMinusRankMicroBatches) {
  const auto model = gpt_22b();
  const auto training = fp16(false);
  const double per_layer = layer_activation_bytes(model, training, 1, 1, Recompute::none);
  EXPECT_DOUBLE_EQ(stage_memory(model, training, stage(4, 1, 1, 16)).activations,
                   3 * 4 * per_layer);
  EXPECT_DOUBLE_EQ(stage_memory(model, training, stage(4, 3, 1, 16)).activations,
                   1 * 4 * per_layer);
  // Never more micro-batches than the step has.
  EXPECT_DOUBLE_EQ(stage_memory(model, training, stage(8, 1, 1, 2)).activations, 2 * 4 * per_layer);
}

TEST(StageMemory, InterleavedWarmupFollowsMegatron) {
  const auto model = gpt_22b();
  const auto training = fp16(false);
  const double per_layer = layer_activation_bytes(model, training, 1, 1, Recompute::none);
  // p = 4, v = 2, first stage: 2 (p - 1) + (v - 1) p + 1 = 11 chunks of 4 / 2 layers.
  EXPECT_DOUBLE_EQ(stage_memory(model, training, stage(4, 0, 2, 16)).activations,
                   11 * 2 * per_layer);
}

// The whole 22B model in one stage, 8 data-parallel replicas.
StageShape whole_model_over_eight_replicas() {
  StageShape shape = stage(1, 0, 1, 1);
  shape.num_layers = 48;
  shape.has_embedding = true;
  shape.has_head = true;
  shape.dp = 8;
  return shape;
}

// The loss's bytes on the last stage, by hand (docs/models/memory.md#head): 4 sequences of
// 2048 tokens, a vocabulary of 51,200 over tp 8, fp16 logits. Megatron's loss keeps the logits,
// their fp32 copy and its gradient, (2 + 4 + 4) bytes an element, fused natively or not;
// Transformer Engine's keeps the logits alone, the gradient written over them.
TEST(StageMemory, TheLossKeepsAnFp32CopyUnlessTransformerEnginesKernelRunsIt) {
  const auto model = gpt_22b();
  TrainingSettings training = fp16(true);
  StageShape last = stage(2, 1, 1, 8);
  last.micro_batch = 4;
  last.tp = 8;
  last.has_head = true;
  const double logits = 4.0 * 2048 * 51200 / 8;
  EXPECT_DOUBLE_EQ(stage_memory(model, training, last).head, logits * 10);
  training.cross_entropy_fusion = CrossEntropyFusion::native;
  EXPECT_DOUBLE_EQ(stage_memory(model, training, last).head, logits * 10);
  training.cross_entropy_fusion = CrossEntropyFusion::te;
  EXPECT_DOUBLE_EQ(stage_memory(model, training, last).head, logits * 2);
  // A stage without the head keeps nothing for it.
  last.has_head = false;
  EXPECT_DOUBLE_EQ(stage_memory(model, training, last).head, 0);
}

// The peak of the chunks in flight, by hand: 2 stages, 2 chunks, 4 micro-batches (warm-up 4
// forward operations on stage 0, 2 on stage 1; chunk (k mod 4) / 2 forward, 1 - (k mod 4) / 2
// backward). Stage 0 with chunks of 1 and 3 layers: 1 + 1 + 3 + 3 after warm-up, 9 with the next
// forward, then it falls and climbs back to 9. Stage 1 with chunks of 3 and 1: 3 + 3, then 7, 9
// when two chunk-0 passes are in. Equal chunks give chunks_in_flight x a chunk.
TEST(StageMemory, PeakInFlightFollowsTheInterleavedOrder) {
  const double stage0[] = {1, 3};
  const double stage1[] = {3, 1};
  EXPECT_DOUBLE_EQ(peak_in_flight(2, 0, 4, stage0), 9);
  EXPECT_DOUBLE_EQ(peak_in_flight(2, 1, 4, stage1), 9);
  for (int p : {2, 4, 8}) {
    for (int v : {2, 3, 4}) {
      const std::vector<double> equal(static_cast<std::size_t>(v), 5.0);
      for (int rank = 0; rank < p; ++rank) {
        for (int m : {p, 4 * p}) {
          EXPECT_DOUBLE_EQ(peak_in_flight(p, rank, m, equal), 5.0 * chunks_in_flight(p, rank, v, m))
              << p << " " << rank << " " << v << " " << m;
        }
      }
    }
  }
}

TEST(StageMemory, ZeroStagesShardStatesGradientsAndWeights) {
  ModelShape model = gpt_22b();
  TrainingSettings training = fp16(false);
  training.fp32_grad_accumulation = true;
  StageShape shape = whole_model_over_eight_replicas();
  const double params = model.total_parameters();
  shape.zero_stage = 0;
  auto mem = stage_memory(model, training, shape);
  EXPECT_DOUBLE_EQ(mem.parameters, params);
  EXPECT_DOUBLE_EQ(mem.weights, 2 * params);
  EXPECT_DOUBLE_EQ(mem.gradients, 4 * params);
  EXPECT_DOUBLE_EQ(mem.optimizer, 12 * params);
  shape.zero_stage = 1;
  mem = stage_memory(model, training, shape);
  EXPECT_DOUBLE_EQ(mem.optimizer, 12 * params / 8);
  EXPECT_DOUBLE_EQ(mem.gradients, 4 * params);
  shape.zero_stage = 2;
  EXPECT_DOUBLE_EQ(stage_memory(model, training, shape).gradients, 4 * params / 8);
  shape.zero_stage = 3;
  EXPECT_DOUBLE_EQ(stage_memory(model, training, shape).weights,
                   2 * params / 8 + 2 * 2 * model.layer_parameters());
}

// fp16 gradients (Megatron's default for fp16): 2 bytes a parameter, and the optimizer step's
// fp32 copy of them (4 bytes, of the shard under the distributed optimizer) counts only where
// it needs more than the activations it replaces.
TEST(StageMemory, TheOptimizerStepCopiesLowPrecisionGradientsToFp32) {
  ModelShape model = gpt_22b();
  TrainingSettings training = fp16(false);
  training.fp32_grad_accumulation = false;
  StageShape shape = whole_model_over_eight_replicas();
  shape.zero_stage = 1;
  const double params = model.total_parameters();
  auto mem = stage_memory(model, training, shape);
  EXPECT_DOUBLE_EQ(mem.gradients, 2 * params);
  EXPECT_DOUBLE_EQ(mem.optimizer_step, 4 * params / 8);
  // One micro-batch of 48 layers' activations is far more than the copy: no extra.
  EXPECT_GT(mem.activations + mem.head, mem.optimizer_step);
  EXPECT_DOUBLE_EQ(mem.optimizer_step_extra(), 0.0);
  EXPECT_DOUBLE_EQ(mem.total(), mem.weights + mem.gradients + mem.optimizer + mem.activations +
                                    mem.head + mem.transient);
  // Without ZeRO the copy is the whole model's, 88 GB against the activations.
  shape.zero_stage = 0;
  mem = stage_memory(model, training, shape);
  EXPECT_DOUBLE_EQ(mem.optimizer_step, 4 * params);
  EXPECT_DOUBLE_EQ(mem.optimizer_step_extra(),
                   std::max(0.0, 4 * params - mem.activations - mem.head));
  // fp32 gradients need no copy.
  training.fp32_grad_accumulation = true;
  EXPECT_DOUBLE_EQ(stage_memory(model, training, shape).optimizer_step, 0.0);
}

}  // namespace
}  // namespace hetplan::models

namespace hetplan::models {
namespace {

// The step's transient buffers of a middle-of-the-road stage, by hand: the first of two
// pipeline stages, tp 2 with sequence parallelism, dp 2, micro-batch 1 of 2,048 tokens, hidden
// 2,048, a SwiGLU MLP of 5,632, BF16.
TEST(StageMemory, TransientBuffersOfTheStep) {
  ModelShape m;
  m.layers = 4;
  m.hidden = 2048;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn = 5632;
  m.vocab = 32000;
  m.activation = Activation::swiglu;
  TrainingSettings training;
  training.seq_len = 2048;
  training.dtype = DType::bf16;
  training.sequence_parallel = true;
  StageShape stage;
  stage.num_layers = 2;
  stage.has_embedding = true;
  stage.tp = 2;
  stage.dp = 2;
  stage.pipeline_stages = 2;
  stage.stage_index = 0;
  stage.micro_batches = 8;
  stage.micro_batch = 1;
  const StageMemory out = stage_memory(m, training, stage);
  const double MiB = 1 << 20;
  const double collective = 3 * 128 * MiB;  // tp, dp and the next stage, 128 MiB each
  const double workspace = 64 * MiB;
  const double receive = 2 * 2048.0 * 2048 * 2 / 2;  // activation and gradient, split by sp
  const double gather = 2048.0 * 2048 * 2;          // one block's input at full sequence
  const double backward = 2048.0 * (2 * 5632 / 2 + 2048) * 2;
  EXPECT_DOUBLE_EQ(out.transient, collective + workspace + receive + gather + backward);
}

// GShard's einsums keep the dispatch mask and the combine weights, [tokens, experts, capacity]
// each in the training dtype, and the experts' padded output in place of the unpermuted copies
// (docs/models/moe.md#gshard), by hand: tp 1, 2,048 tokens, 8 experts, top 2, capacity 1.5.
TEST(ActivationMemory, GshardKeepsItsMasksAndThePaddedOutput) {
  ModelShape model = gpt_22b();
  model.experts = 8;
  model.experts_per_token = 2;
  model.expert_ffn = 4096;
  TrainingSettings training = fp16(false);
  training.micro_batch = 1;
  training.expert_imbalance = 1.5;  // the chip's load: the capacity factor
  training.moe_capacity_factor = 1.5;
  const double alltoall = layer_activation_bytes(model, training, 1, 1, Recompute::none, false);
  training.moe_dispatcher = MoeDispatcher::gshard;
  const double gshard = layer_activation_bytes(model, training, 1, 1, Recompute::none, false);
  const double slots = 2048.0 * 2 * 1.5;
  EXPECT_DOUBLE_EQ(gshard - alltoall,
                   slots * 6144 * 2 + 2.0 * 2048 * slots * 2 - 2048.0 * 2 * 6144 * 2);
  // Checkpointing the mixture keeps none of it.
  training.recompute_modules = kRecomputeMoe;
  const double kept = layer_activation_bytes(model, training, 1, 1, Recompute::selective, false);
  training.moe_dispatcher = MoeDispatcher::all_to_all;
  EXPECT_DOUBLE_EQ(kept,
                   layer_activation_bytes(model, training, 1, 1, Recompute::selective, false));
}

// The planner sizes many stages of one kind with the layers' activations computed once; every
// part of every stage's memory must come out as stage_memory computes it alone, bit for bit.
TEST(StageMemory, PrecomputedLayerActivationsGiveTheSameMemory) {
  ModelShape dense = gpt_22b();
  ModelShape mixture = gpt_22b();
  mixture.experts = 8;
  mixture.experts_per_token = 2;
  mixture.expert_ffn = 4096;
  mixture.dense_layers = 3;
  int compared = 0;
  for (const ModelShape& model : {dense, mixture}) {
    for (bool sp : {false, true}) {
      for (bool flash : {false, true}) {
        TrainingSettings training = fp16(sp);
        training.flash_attention = flash;
        for (int micro_batch : {1, 2}) {
          for (int tp : {1, 4}) {
            // As the estimator builds it for its stages (ep 1 here: the mean load).
            const LayerActivations table = layer_activations(
                model, for_expert_parallel(training, model.experts, 1), micro_batch, tp);
            for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
              for (int recomputed : {0, 2}) {
                for (int v : {1, 2}) {
                  for (int rank : {0, 2, 3}) {
                    StageShape shape = stage(4, rank, v, 16);
                    shape.num_layers = 8;
                    shape.dense_layers = model.moe() && rank == 0 ? 3 : 0;
                    shape.has_embedding = rank == 0;
                    shape.has_head = rank == 3;
                    shape.tp = tp;
                    shape.micro_batch = micro_batch;
                    shape.recompute = mode;
                    shape.recompute_layers = recomputed;
                    const StageMemory alone = stage_memory(model, training, shape);
                    shape.layer_activations = &table;
                    const StageMemory shared = stage_memory(model, training, shape);
                    EXPECT_EQ(shared.activation_per_layer, alone.activation_per_layer);
                    EXPECT_EQ(shared.activations, alone.activations);
                    EXPECT_EQ(shared.total(), alone.total());
                    ++compared;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 2 * 2 * 2 * 2 * 2 * 3 * 2 * 2 * 3);
}

// A table made for another micro-batch or tensor-parallel size is not read.
TEST(StageMemory, ALayerActivationTableOfAnotherShapeIsIgnored) {
  const ModelShape model = gpt_22b();
  const TrainingSettings training = fp16(true);
  StageShape shape = stage(4, 0, 1, 16);
  shape.tp = 4;
  const StageMemory alone = stage_memory(model, training, shape);
  const LayerActivations other_tp = layer_activations(model, training, shape.micro_batch, 8);
  const LayerActivations other_batch = layer_activations(model, training, 2, 4);
  ASSERT_NE(other_tp.kept[0], alone.activation_per_layer);
  for (const LayerActivations* table : {&other_tp, &other_batch}) {
    shape.layer_activations = table;
    EXPECT_EQ(stage_memory(model, training, shape).activations, alone.activations);
  }
}

}  // namespace
}  // namespace hetplan::models
