// Multi-head latent attention (DeepSeek-V2/V3) and a mixture's dense layers in the cost models,
// against arithmetic done by hand on a small shape (docs/models/attention.md).
#include <gtest/gtest.h>

#include <string_view>

#include "models/memory.hpp"
#include "models/transformer_ops.hpp"

namespace hetplan::models {
namespace {

// hidden 64, 4 heads, Q through a rank of 32, K and V through 16, each head's Q and K 8 + 4
// (no-rope + rope) wide, its V 8; a dense SwiGLU MLP of 128; 16-token sequences in bf16.
ModelShape small_mla() {
  ModelShape m;
  m.model_type = "deepseek_v2";
  m.layers = 4;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn = 128;
  m.vocab = 1000;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.linear_bias = false;
  m.q_lora_rank = 32;
  m.kv_lora_rank = 16;
  m.qk_nope_head_dim = 8;
  m.qk_rope_head_dim = 4;
  m.v_head_dim = 8;
  return m;
}

LayerSlice slice(int tp, bool sequence_parallel) {
  LayerSlice s;
  s.micro_batch = 1;
  s.seq_len = 16;
  s.tp = tp;
  s.sequence_parallel = sequence_parallel;
  s.flash_attention = true;
  s.dtype = DType::bf16;
  return s;
}

double flops_of(const std::vector<Op>& ops, std::string_view name) {
  double flops = 0;
  for (const auto& op : ops)
    if (op.name == name) flops += op.flops;
  return flops;
}

double total_flops(const std::vector<Op>& ops) {
  double flops = 0;
  for (const auto& op : ops) flops += op.flops;
  return flops;
}

// 16 tokens, one chip, forward FLOPs 2 m n k per GEMM:
//   q_down   16 x 32 x 64                 2 x 32,768 =  65,536
//   q_up     16 x (4 x 12) x 32           2 x 24,576 =  49,152
//   kv_down  16 x (16 + 4) x 64           2 x 20,480 =  40,960
//   kv_up    16 x (4 x (8 + 8)) x 16      2 x 16,384 =  32,768
//   flash    causal half of 2 s^2 a (qk + v) = 0.5 x 2 x 16^2 x 4 x (12 + 8) = 20,480
//   out      16 x 64 x (4 x 8)            2 x 32,768 =  65,536
//   MLP      16 x 256 x 64 + 16 x 64 x 128, doubled   = 786,432
// 1,060,864 in all; the norms, rotary embedding and copies have no FLOPs.
TEST(LatentAttention, LayerFlopsByHand) {
  const auto ops = layer_ops(small_mla(), slice(1, false));
  EXPECT_DOUBLE_EQ(flops_of(ops, "q_down_proj"), 65536);
  EXPECT_DOUBLE_EQ(flops_of(ops, "q_up_proj"), 49152);
  EXPECT_DOUBLE_EQ(flops_of(ops, "kv_down_proj"), 40960);
  EXPECT_DOUBLE_EQ(flops_of(ops, "kv_up_proj"), 32768);
  EXPECT_DOUBLE_EQ(flops_of(ops, "flash_attention"), 20480);
  EXPECT_DOUBLE_EQ(flops_of(ops, "attention_out_proj"), 65536);
  EXPECT_DOUBLE_EQ(total_flops(ops), 1060864);
  // No Q latent: one projection, 16 x 48 x 64 doubled.
  ModelShape direct = small_mla();
  direct.q_lora_rank = 0;
  const auto direct_ops = layer_ops(direct, slice(1, false));
  EXPECT_DOUBLE_EQ(flops_of(direct_ops, "q_proj"), 98304);
  EXPECT_DOUBLE_EQ(flops_of(direct_ops, "q_down_proj"), 0);
  // Model FLOPs count every GEMM once and the attention in full: 2 x 16 x (q 3,584 + kv 2,304
  // + out 2,048 + MLP 24,576) + 2 x 16 x 16 x 4 x (12 + 8) = 1,040,384 + 40,960.
  EXPECT_DOUBLE_EQ(layer_model_flops(small_mla(), 1, 16), 1081344);
}

// Megatron-Core's tensor parallelism: the down-projections are whole on every rank (each rank
// runs them on all its tokens without sequence parallelism, on its share with it); the
// up-projections, the core attention and the output projection split over the heads.
TEST(LatentAttention, TensorParallelismReplicatesTheDownProjections) {
  const auto one = layer_ops(small_mla(), slice(1, false));
  const auto two = layer_ops(small_mla(), slice(2, false));
  EXPECT_DOUBLE_EQ(flops_of(two, "q_down_proj"), flops_of(one, "q_down_proj"));
  EXPECT_DOUBLE_EQ(flops_of(two, "kv_down_proj"), flops_of(one, "kv_down_proj"));
  for (std::string_view split :
       {"q_up_proj", "kv_up_proj", "flash_attention", "attention_out_proj"})
    EXPECT_DOUBLE_EQ(flops_of(two, split), flops_of(one, split) / 2) << split;
  const auto sequence = layer_ops(small_mla(), slice(2, true));
  EXPECT_DOUBLE_EQ(flops_of(sequence, "q_down_proj"), flops_of(one, "q_down_proj") / 2);
  EXPECT_DOUBLE_EQ(flops_of(sequence, "kv_down_proj"), flops_of(one, "kv_down_proj") / 2);
  EXPECT_DOUBLE_EQ(flops_of(sequence, "q_up_proj"), flops_of(one, "q_up_proj") / 2);

  // Their weights and norms are whole on every rank too: (64 x 32 + 32) + (64 x 20 + 16) =
  // 3,376 parameters, of which a rank of tp 2 holds the half that layer_parameters() / 2 leaves
  // out.
  const ModelShape m = small_mla();
  EXPECT_DOUBLE_EQ(m.latent_down_parameters(), 3376);
  EXPECT_DOUBLE_EQ(m.replicated_kv_parameters(1), 0);
  EXPECT_DOUBLE_EQ(m.replicated_kv_parameters(2), 1688);
  EXPECT_DOUBLE_EQ(m.replicated_kv_parameters(4), 3376 * 0.75);
  EXPECT_DOUBLE_EQ(m.kv_width_per_chip(2), 2 * 12);  // K's share: 2 heads of 8 + 4
}

TrainingSettings bf16(bool sequence_parallel) {
  TrainingSettings t;
  t.seq_len = 16;
  t.global_batch = 1;
  t.micro_batch = 1;
  t.dtype = DType::bf16;
  t.flash_attention = true;
  t.sequence_parallel = sequence_parallel;
  return t;
}

// small_mla() as a mixture: 8 experts of 32, top 2, one shared expert of 32.
ModelShape small_mla_mixture() {
  ModelShape m = small_mla();
  m.experts = 8;
  m.experts_per_token = 2;
  m.expert_ffn = 32;
  m.shared_experts = 1;
  m.shared_expert_ffn = 32;
  return m;
}

// One layer's activation bytes (16 tokens, bf16, no sequence parallelism) under selective
// recompute of `modules`.
double selective_bytes(const ModelShape& m, unsigned modules) {
  TrainingSettings training = bf16(false);
  training.recompute = Recompute::selective;
  training.recompute_modules = modules;
  return layer_activation_bytes(m, training, 1, 1, Recompute::selective);
}

// Activation bytes of one layer, one micro-batch of 16 tokens, bf16 (2 bytes), no recompute:
//   both norms' inputs and their outputs (the down-projections' and the MLP's inputs):
//     16 x 64 x 4 x 2                                       =  8,192
//   the latents' norm inputs and outputs (Q 32, KV 16 wide): 16 x 48 x 2 x 2     =  3,072
//   Q and K (4 x 12 wide), V and the attention output (4 x 8):
//     16 x 4 x (12 + 12 + 8 + 8) x 2                        =  5,120
//   the SwiGLU MLP: both halves of the up projection and their product:
//     16 x 128 x 3 x 2                                      = 12,288
//   flash attention's log-sum-exp: 4 heads x 16 x 4 bytes   =    256
// 28,928 bytes; tensor and sequence parallelism of 2 halve every term.
TEST(LatentAttention, ActivationBytesByHand) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(small_mla(), bf16(false), 1, 1, Recompute::none), 28928);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(small_mla(), bf16(true), 1, 2, Recompute::none), 14464);
  // Without sequence parallelism the latents are whole on each rank, like the norms' tensors:
  // 8,192 + 3,072 + (5,120 + 12,288 + 256) / 2.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(small_mla(), bf16(false), 1, 2, Recompute::none),
                   8192 + 3072 + 17664 / 2.0);
}

// Selective recompute by module (Megatron-Core's --recompute-modules), on the layer above
// (28,928 bytes kept without recompute; flash attention, so core_attn keeps them all):
//   layernorm discards both norms' outputs:   16 x 64 x 2 x 2        = 4,096
//   mla_up_proj discards Q, K and V:          16 x 4 x (12+12+8) x 2 = 4,096
//   mlp keeps only the MLP's input:           16 x 128 x 3 x 2       = 12,288
TEST(LatentAttention, RecomputeModulesKeepLessByHand) {
  auto kept = [](unsigned modules) { return selective_bytes(small_mla(), modules); };
  EXPECT_DOUBLE_EQ(kept(kRecomputeCoreAttention), 28928);
  EXPECT_DOUBLE_EQ(kept(kRecomputeLayernorm), 28928 - 4096);
  EXPECT_DOUBLE_EQ(kept(kRecomputeMlaUpProj), 28928 - 4096);
  EXPECT_DOUBLE_EQ(kept(kRecomputeMlp), 28928 - 12288);
  EXPECT_DOUBLE_EQ(kept(kRecomputeMlaUpProj | kRecomputeMlp), 28928 - 4096 - 12288);
  // The mixture's modules do not touch a dense MLP.
  EXPECT_DOUBLE_EQ(kept(kRecomputeMoe | kRecomputeMoeAct | kRecomputeSharedExperts), 28928);
}

// The same modules on a mixture's layer (8 experts of 32, top 2, one shared expert of 32, the
// imbalance prior 1.25 with ep 1: 16 x 2 x 1.25 = 40 token copies); its MoE tensors:
//   routing scores, fp32:                     16 x 8 x 4             =    512
//   the copies (first linear input):          40 x 64 x 2            =  5,120
//   both halves of the gated projection:      40 x 32 x 2 x 2        =  5,120
//   their product (second linear input):      40 x 32 x 2            =  2,560
//   the experts' outputs for the combine:     16 x 2 x 64 x 2        =  4,096
//   the shared expert's gated MLP:            16 x 32 x 3 x 2        =  3,072
// moe keeps none of them, moe_act drops the product, shared_experts the shared MLP.
TEST(LatentAttention, MixtureRecomputeModulesByHand) {
  ModelShape m = small_mla_mixture();
  auto kept = [&](unsigned modules) { return selective_bytes(m, modules); };
  const double attention = 28928 - 12288;  // the layer above without its dense MLP
  const double moe = 512 + 5120 + 5120 + 2560 + 4096 + 3072;
  EXPECT_DOUBLE_EQ(kept(kRecomputeCoreAttention), attention + moe);
  EXPECT_DOUBLE_EQ(kept(kRecomputeMoe), attention);
  EXPECT_DOUBLE_EQ(kept(kRecomputeMoeAct), attention + moe - 2560);
  EXPECT_DOUBLE_EQ(kept(kRecomputeSharedExperts), attention + moe - 3072);
  EXPECT_DOUBLE_EQ(kept(kRecomputeMlp), attention + moe);  // no dense MLP in this layer
}

// A mixture's dense layer: the same latent attention, a dense MLP of ffn in place of the
// experts; its activations and operators are the dense layer's, not the MoE layer's.
TEST(LatentAttention, DenseLayersOfAMixtureAreDense) {
  ModelShape m = small_mla_mixture();
  m.dense_layers = 1;
  ModelShape dense = small_mla();
  EXPECT_DOUBLE_EQ(total_flops(layer_ops(m, slice(1, false), true)),
                   total_flops(layer_ops(dense, slice(1, false))));
  EXPECT_NE(total_flops(layer_ops(m, slice(1, false))),
            total_flops(layer_ops(dense, slice(1, false))));
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, bf16(false), 1, 1, Recompute::none, true), 28928);
  EXPECT_DOUBLE_EQ(model_layers_flops(m, 1, 16),
                   layer_model_flops(dense, 1, 16) + 3 * layer_model_flops(m, 1, 16));

  // A stage holding the dense layer: its parameters are the dense layer's, split over tp, and
  // its routed experts those of the other layers only.
  StageShape stage;
  stage.num_layers = 2;
  stage.tp = 1;
  StageShape with_dense = stage;
  with_dense.dense_layers = 1;
  const StageMemory moe_only = stage_memory(m, bf16(false), stage);
  const StageMemory mixed = stage_memory(m, bf16(false), with_dense);
  EXPECT_DOUBLE_EQ(mixed.parameters, m.layer_parameters() + m.layer_parameters(1));
  EXPECT_DOUBLE_EQ(moe_only.parameters, 2 * m.layer_parameters(1));
  EXPECT_DOUBLE_EQ(mixed.expert_parameters, moe_only.expert_parameters / 2);
  // Without expert parallelism the chip holds every expert: the mean load.
  const TrainingSettings chip = for_expert_parallel(bf16(false), m.experts, stage.ep);
  EXPECT_EQ(chip.expert_imbalance, 1.0);
  EXPECT_DOUBLE_EQ(mixed.activations - moe_only.activations,
                   layer_activation_bytes(m, chip, 1, 1, Recompute::none, true) -
                       layer_activation_bytes(m, chip, 1, 1, Recompute::none));
}

}  // namespace
}  // namespace hetplan::models
