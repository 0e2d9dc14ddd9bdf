// Absolute step times of small plans, computed by hand from the documented formulas
// (docs/models/compute.md, estimator.md, collectives.md) with round figures, not taken from
// the code's output: the kernel floor, tensor- and data-parallel overlap, FP8 and partial
// recompute. A synthetic chip keeps the arithmetic short: GEMMs at their peak (a vanishing
// half-dimension), memory traffic at 1 TB/s, collectives at 100 GB/s with 1 ms a step, so
// that latency and the 10 us kernel floor decide the small cases.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/estimator.hpp"

namespace hetplan::sim {
namespace {

constexpr double kFloor = 10e-6;     // s, one kernel at least
constexpr double kAlpha = 1e-3;      // s, one collective step inside a node
constexpr double kLink = 100e9;      // B/s, intra-node bus bandwidth (efficiency 1)
constexpr double kMemory = 1e12;     // B/s, achieved memory bandwidth
constexpr double kPeak = 100e12;     // BF16 FLOP/s
constexpr double kPeakFp8 = 200e12;  // FP8 FLOP/s

ChipProfile unit_chip(double floor) {
  ChipProfile chip;
  chip.id = "unit";
  chip.vendor = "test";
  chip.family = "unit";
  chip.peak_flops[DType::bf16] = kPeak;
  chip.peak_flops[DType::fp8] = kPeakFp8;
  chip.memory_capacity = 1e12;
  chip.memory_usable = 1e12;
  chip.memory_bandwidth = kMemory;
  chip.chips_per_node = 8;
  chip.intra_node.kind = IntraNodeKind::nvswitch;
  chip.intra_node.topology = IntraNodeTopology::switched;
  chip.intra_node.group_size = 8;
  chip.intra_node.bandwidth = kLink;
  chip.nic_count = 8;
  chip.nic_speed = 25e9;
  EfficiencyModel& e = chip.efficiency;
  e.gemm_max = 1.0;
  e.gemm_half_dim = 1e-9;  // g(x) = x / (x + 1e-9): 1 within 1e-10 for these shapes
  e.attention_max = 0.5;
  e.memory = 1.0;
  e.intra_bus_efficiency = 1.0;
  e.intra_latency = kAlpha;
  e.network_bus_efficiency = 1.0;
  e.network_latency = kAlpha;
  e.kernel_overhead = floor;
  e.tp_comm_overlap = 0.8;
  return chip;
}

Cluster one_node(double floor = kFloor) {
  Cluster c;
  c.name = "hand";
  c.fabric.zones = {"a"};
  c.fabric.leaf_uplink_speed = 50e9;
  c.chips.push_back(unit_chip(floor));
  Island i;
  i.name = "n";
  i.chip = 0;
  i.nodes = 1;
  i.chips_per_node = 8;
  i.nic_count = 8;
  i.nic_speed = 25e9;
  i.zone = "a";
  i.nodes_per_leaf = 1;
  c.islands.push_back(i);
  return c;
}

// Two LLaMA-style layers of hidden 64, 4 heads, SwiGLU of 256, vocabulary 128, 16 tokens a
// sequence: every operator is far below the 10 us floor on this chip.
Workload tiny(int global_batch) {
  Workload w;
  w.name = "tiny";
  ModelShape& m = w.model;
  m.model_type = "llama";
  m.layers = 2;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn = 256;
  m.vocab = 128;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.linear_bias = false;
  w.training.seq_len = 16;
  w.training.global_batch = global_batch;
  w.training.micro_batch = 1;
  w.training.dtype = DType::bf16;
  w.training.flash_attention = true;
  return w;
}

// The tiny model with a mixture of 4 experts of 128, 2 per token, evenly loaded.
Workload tiny_moe(int global_batch) {
  Workload w = tiny(global_batch);
  w.model.experts = 4;
  w.model.experts_per_token = 2;
  w.model.expert_ffn = 128;
  w.training.expert_imbalance = 1.0;
  return w;
}

// One all-to-all of the tiny mixture over ep 4 (the all-to-all dispatcher, even load): each
// chip's send buffer is its 16 tokens' 2 copies of 64 BF16 values (4 KiB), 3 steps of 1 ms and
// 3/4 of the buffer at 100 GB/s.
constexpr double kTinyAllToAllEp4 = 3 * kAlpha + 0.75 * (16 * 2 * 64 * 2) / kLink;

Plan one_stage(int tp, int dp, int layers = 2, int ep = 1) {
  Plan plan;
  plan.name = "hand";
  PlanStage s;
  s.island = "n";
  s.first_layer = 0;
  s.num_layers = layers;
  s.tp = tp;
  s.dp = dp;
  s.ep = ep;
  plan.stages.push_back(s);
  return plan;
}

// Parameters of the tiny model, by hand: a layer has Q, K, V and output projections (4 x 64 x
// 64), the gated MLP (3 x 64 x 256) and two RMSNorm weights (2 x 64); the embedding 128 x 64;
// the head its final norm (64) and the untied output layer (128 x 64).
constexpr double kLayerParams = 4 * 64 * 64 + 3 * 64 * 256 + 2 * 64;  // 65,664
constexpr double kEmbeddingParams = 128 * 64;
constexpr double kHeadParams = 64 + 128 * 64;

// Kernels of one micro-batch (docs/models/compute.md#kernel-floor): a layer launches 12
// forward (norm, QKV, rotary x2, flash attention, output projection, residual, norm, gate-up,
// SwiGLU, down, residual) and 20 backward (GEMMs and norms two each, rotary two, flash
// attention three, the element-wise ones one each); the embedding 1 + 2; the head's final norm
// 1 + 2, logits GEMM 1 + 2 and cross entropy 6 + 2.
constexpr int kLayerKernels = 12 + 20;
constexpr int kEmbeddingKernels = 1 + 2;
constexpr int kHeadKernels = (1 + 2) + (1 + 2) + (6 + 2);

// Adam in mixed precision touches 34 bytes a parameter at the achieved memory bandwidth.
double adam(double parameters) {
  return 34.0 * parameters / kMemory;
}

// Every operator at the floor: a step is the kernels of its micro-batches times the floor, plus
// the optimizer (memory-bound, no floor of its own).
TEST(StepByHand, EveryKernelAtTheLaunchFloor) {
  const int m = 4;
  const Estimate e = estimate_step(one_node(), tiny(m), one_stage(1, 1));
  ASSERT_TRUE(e.feasible) << e.reasons.front();
  const double params = 2 * kLayerParams + kEmbeddingParams + kHeadParams;
  EXPECT_DOUBLE_EQ(e.stages[0].memory.parameters, params);
  const double per_micro_batch = (2 * kLayerKernels + kEmbeddingKernels + kHeadKernels) * kFloor;
  EXPECT_NEAR(e.step_time_s, m * per_micro_batch + adam(params), 1e-12);
  EXPECT_NEAR(e.step_time_s, 4 * 81 * 10e-6 + 34 * 147776 / 1e12, 1e-12);  // 3.245 ms
}

// Tensor parallelism over two chips with sequence parallelism. Without overlap a layer waits
// for four all-reduces of its activations (16 tokens x 64 x 2 bytes = 2 KiB): ring on two
// ranks, 2 steps of 1 ms and 2 x 1/2 x 2 KiB at 100 GB/s. With overlap each of the eight
// all-gathers and reduce-scatters (1 step, 1/2 x 2 KiB) hides 0.8 of itself, at most the GEMM
// beside it: a forward GEMM, or half of a backward GEMM's two kernels, one floor.
TEST(StepByHand, TensorParallelCollectivesBesideTheirGemms) {
  const int m = 4;
  Workload w = tiny(m);
  w.training.sequence_parallel = true;
  const double activation = 16 * 64 * 2;
  const double all_reduce = 2 * kAlpha + activation / kLink;
  const double gather = kAlpha + 0.5 * activation / kLink;  // and reduce-scatter
  const double params = (2 * kLayerParams + kEmbeddingParams + kHeadParams) / 2;
  const double compute = (2 * kLayerKernels + kEmbeddingKernels + kHeadKernels) * kFloor;
  // The embedding and the head keep one exposed all-reduce each way.
  const double boundary = 2 * 2 * all_reduce;

  const Estimate plain = estimate_step(one_node(), w, one_stage(2, 1));
  ASSERT_TRUE(plain.feasible) << plain.reasons.front();
  EXPECT_NEAR(plain.step_time_s, m * (compute + 2 * 4 * all_reduce + boundary) + adam(params),
              1e-12);

  w.training.overlap_tp_comm = true;
  const Estimate overlapped = estimate_step(one_node(), w, one_stage(2, 1));
  ASSERT_TRUE(overlapped.feasible);
  const double exposed = gather - std::min(0.8 * gather, kFloor);
  EXPECT_NEAR(overlapped.step_time_s, m * (compute + 2 * 8 * exposed + boundary) + adam(params),
              1e-12);
}

// Data parallelism over two chips: one fp32 all-reduce of the gradients (4 bytes a parameter:
// 2 steps of 1 ms and 2 x 1/2 x 4 P at 100 GB/s) after the last backward pass. With
// overlap.grad_reduce it runs beside that backward pass (20 + 20 + 2 + 10 kernels).
TEST(StepByHand, GradientReductionBesideTheLastBackwardPass) {
  const int m = 4;
  Workload w = tiny(2 * m);
  const double params = 2 * kLayerParams + kEmbeddingParams + kHeadParams;
  const double reduce = 2 * kAlpha + 4 * params / kLink;
  const double per_micro_batch = (2 * kLayerKernels + kEmbeddingKernels + kHeadKernels) * kFloor;
  const double backward = (2 * 20 + 2 + (2 + 2 + 2)) * kFloor;

  const Estimate plain = estimate_step(one_node(), w, one_stage(1, 2));
  ASSERT_TRUE(plain.feasible) << plain.reasons.front();
  EXPECT_NEAR(plain.stages[0].backward_s, backward, 1e-15);
  EXPECT_NEAR(plain.step_time_s, m * per_micro_batch + reduce + adam(params), 1e-12);

  w.training.overlap_grad_reduce = true;
  const Estimate overlapped = estimate_step(one_node(), w, one_stage(1, 2));
  EXPECT_NEAR(overlapped.step_time_s, m * per_micro_batch + reduce - backward + adam(params),
              1e-12);
}

// Partial recompute, Megatron's block method: one of the stage's four layers is recomputed
// (its forward's 12 kernels again before its backward) and keeps only its input (16 x 64 x 2
// bytes); the three others keep all they save: the norms' inputs and outputs (4 T h e), Q, K,
// V and the attention output (T 4h e), the gated MLP's two halves and product (3 T f e) and
// flash attention's log-sum-exp (4 heads x 16 x 4 bytes) = 41,216 bytes. The recomputed layer
// holds that much again for a moment, and the embedding's output (T h e) waits too.
TEST(StepByHand, PartialRecomputeOfTheFirstLayerOfEachChunk) {
  const int m = 4;
  Workload w = tiny(m);
  w.model.layers = 4;
  w.training.recompute = Recompute::full;
  w.training.recompute_layers = 1;
  const Estimate e = estimate_step(one_node(), w, one_stage(1, 1, 4));
  ASSERT_TRUE(e.feasible) << e.reasons.front();
  const double params = 4 * kLayerParams + kEmbeddingParams + kHeadParams;
  const double per_micro_batch =
      (4 * kLayerKernels + 12 + kEmbeddingKernels + kHeadKernels) * kFloor;
  EXPECT_NEAR(e.step_time_s, m * per_micro_batch + adam(params), 1e-12);
  const double T = 16, h = 64, f = 256, bytes = 2;
  const double kept = 4 * T * h * bytes + T * 4 * h * bytes + 3 * T * f * bytes + 4 * T * 4;
  EXPECT_DOUBLE_EQ(kept, 41216);
  EXPECT_DOUBLE_EQ(e.stages[0].memory.activations, T * h * bytes + 3 * kept + kept + T * h * bytes);

  // The same plan with every layer recomputed: four layers' forward kernels again, and only
  // inputs kept.
  w.training.recompute_layers = 0;
  const Estimate all = estimate_step(one_node(), w, one_stage(1, 1, 4));
  EXPECT_NEAR(all.step_time_s, e.step_time_s + m * 3 * 12 * kFloor, 1e-12);
  EXPECT_DOUBLE_EQ(all.stages[0].memory.activations, 4 * T * h * bytes + kept + T * h * bytes);

  // A stage of the plan may set its own: none here is the plain step.
  Plan plan = one_stage(1, 1, 4);
  plan.stages[0].recompute = Recompute::none;
  const Estimate none = estimate_step(one_node(), w, plan);
  EXPECT_NEAR(none.step_time_s, e.step_time_s - m * 12 * kFloor, 1e-12);
  EXPECT_DOUBLE_EQ(none.stages[0].memory.activations, 4 * kept + T * h * bytes);
}

// A mixture of experts on four chips of one node, dp 4 and ep 4: two layers of 4 experts (2
// per token, 3 x 64 x 128 each) on the tiny model, tokens spread evenly (imbalance 1). Every
// operator at the floor: a layer launches 18 kernels forward (the attention block's 8: norm,
// QKV, rotary x2, flash attention, output projection, residual, norm; the router, softmax and
// top-k (3), permutation, the grouped gate-up GEMM, SwiGLU, the grouped down GEMM, the
// unpermutation; the residual) and 26 backward. Each layer sends its tokens' copies to the
// experts' chips and back, forward and backward: four all-to-alls of 16 tokens x 2 copies x
// 64 x 2 bytes, 3 steps of 1 ms and 3/4 of the buffer at 100 GB/s. After the step the dense
// parameters' fp32 gradients are all-reduced over the 4 replicas (a tree: 2 log2 4 steps and
// 2 x 3/4 of the buffer); each chip holds a quarter of the
// experts, which no other chip shares (dp / ep = 1): nothing to reduce for them.
TEST(StepByHand, ExpertParallelAllToAll) {
  const int m = 2;
  const Workload w = tiny_moe(4 * m);
  const Estimate e = estimate_step(one_node(), w, one_stage(1, 4, 2, 4));
  ASSERT_TRUE(e.feasible) << e.reasons.front();

  const double a2a = kTinyAllToAllEp4;
  EXPECT_NEAR(e.stages[0].ep_comm_s, 2 * 4 * a2a, 1e-15);
  const double layer_dense = 4 * 64 * 64 + 64 * 4 + 2 * 64;  // attention, router, norms
  const double layer_experts = 4 * 3 * 64 * 128 / 4.0;       // a quarter of the experts
  const double dense = 2 * layer_dense + kEmbeddingParams + kHeadParams;
  EXPECT_DOUBLE_EQ(e.stages[0].memory.expert_parameters, 2 * layer_experts);
  EXPECT_DOUBLE_EQ(e.stages[0].memory.parameters, dense + 2 * layer_experts);
  // Four ranks in a node: the double binary tree's 2 log2(4) steps beat the ring's 6.
  const double reduce = 2 * 2 * kAlpha + 1.5 * 4 * dense / kLink;
  const double per_micro_batch =
      (2 * (18 + 26) + kEmbeddingKernels + kHeadKernels) * kFloor + 2 * 4 * a2a;
  EXPECT_NEAR(e.step_time_s, m * per_micro_batch + reduce + adam(dense + 2 * layer_experts),
              1e-12);
  EXPECT_NEAR(e.exposed.expert_parallel, m * 2 * 4 * a2a, 1e-12);
  // Saved for the backward pass, per layer: the norms' inputs and outputs (4 T h e), Q, K, V
  // and the attention output (4 T h e), the log-sum-exp (4 heads x 16 x 4 bytes), the routing
  // scores (16 tokens x 4 experts x 4 bytes), the experts' 32 token copies with both halves of
  // the gated projection and the product (32 x (64 + 3 x 128) x 2), their outputs for the
  // combine (16 x 2 x 64 x 2); and the embedding's output.
  const double per_layer =
      4 * 16 * 64 * 2 + 4 * 16 * 64 * 2 + 4 * 16 * 4 + 16 * 4 * 4 + 32 * (64 + 3 * 128) * 2 +
      16 * 2 * 64 * 2;
  EXPECT_DOUBLE_EQ(e.stages[0].memory.activations, 2 * per_layer + 16 * 64 * 2);
}

// The flex dispatcher (DeepEP) sends a token once to each chip holding any of its experts
// (docs/models/moe.md#dispatcher). Four experts on ep 2 (two per chip), two per token: of the
// C(4, 2) = 6 pairs a token can pick, one misses a given chip's two experts, so a token reaches
// 2 (1 - 1/6) = 5/3 chips on average, where the all-to-all dispatcher sends 2 copies. A chip of
// another vendor cannot run DeepEP: its stage keeps the all-to-all dispatcher's copies, and the
// estimate says so.
TEST(StepByHand, FlexDispatcherSendsOneCopyPerChip) {
  Workload w = tiny_moe(8);
  Plan plan = one_stage(1, 4, 2, 2);
  Cluster nvidia = one_node();
  nvidia.chips[0].family = "nvidia";
  // Two ranks: one step, half of the send buffer leaves the chip.
  const auto a2a = [](double copies) { return kAlpha + 0.5 * (16 * copies * 64 * 2) / kLink; };

  const Estimate all_to_all = estimate_step(nvidia, w, plan);
  ASSERT_TRUE(all_to_all.feasible) << all_to_all.reasons.front();
  EXPECT_NEAR(all_to_all.stages[0].ep_comm_s, 2 * 4 * a2a(2.0), 1e-15);

  w.training.moe_dispatcher = MoeDispatcher::flex;
  const Estimate flex = estimate_step(nvidia, w, plan);
  ASSERT_TRUE(flex.feasible) << flex.reasons.front();
  EXPECT_NEAR(flex.stages[0].ep_comm_s, 2 * 4 * a2a(5.0 / 3.0), 1e-15);
  for (const std::string& note : flex.assumptions)
    EXPECT_EQ(note.find("flex"), std::string::npos) << note;

  const Estimate other = estimate_step(one_node(), w, plan);
  ASSERT_TRUE(other.feasible) << other.reasons.front();
  EXPECT_NEAR(other.stages[0].ep_comm_s, 2 * 4 * a2a(2.0), 1e-15);
  bool said = false;
  for (const std::string& note : other.assumptions)
    said |= note.find("DeepEP and HybridEP run on NVIDIA GPUs only") != std::string::npos;
  EXPECT_TRUE(said);
}

// Across nodes the flex dispatcher sends a token over the network once per node holding any of
// its experts and forwards it inside the node (docs/models/moe.md#forwarding). The tiny mixture
// (4 experts, 2 per token, one per chip) on ep 4 over 2 nodes of 2 chips, each chip with one
// 25 GB/s NIC: a node (2 experts) is missed by C(2,2)/C(4,2) = 1/6 of the routes, so a token
// crosses the network 5/6 times; a chip is missed by C(3,2)/C(4,2) = 1/2, so each chip sends
// 2 nodes x 1 other chip x 1/2 = 1 copy a token over the intra-node link (its own and the ones
// it forwards). Per all-to-all: 3 steps of 1 ms, then the slower of 16 tokens x 64 x 2 bytes x 1
// at 100 GB/s and x 5/6 at 25 GB/s. The all-to-all dispatcher sends both copies: half of its
// 2 copies a token over the network.
TEST(StepByHand, FlexDispatcherForwardsAcrossNodes) {
  Workload w = tiny_moe(8);
  Plan plan = one_stage(1, 4, 2, 4);
  Cluster two = one_node();
  two.chips[0].family = "nvidia";
  Island& island = two.islands[0];
  island.nodes = 2;
  island.chips_per_node = 2;
  island.nic_count = 2;
  island.nodes_per_leaf = 2;
  const double token_bytes = 16 * 64 * 2;

  const Estimate all_to_all = estimate_step(two, w, plan);
  ASSERT_TRUE(all_to_all.feasible) << all_to_all.reasons.front();
  const double flat =
      3 * kAlpha + std::max(0.25 * 2 * token_bytes / kLink, 0.5 * 2 * token_bytes / 25e9);
  EXPECT_NEAR(all_to_all.stages[0].ep_comm_s, 2 * 4 * flat, 1e-15);

  w.training.moe_dispatcher = MoeDispatcher::flex;
  const Estimate flex = estimate_step(two, w, plan);
  ASSERT_TRUE(flex.feasible) << flex.reasons.front();
  const double forwarded =
      3 * kAlpha + std::max(token_bytes / kLink, 5.0 / 6.0 * token_bytes / 25e9);
  EXPECT_NEAR(flex.stages[0].ep_comm_s, 2 * 4 * forwarded, 1e-15);
  EXPECT_LT(forwarded, flat);
}

// FP8 on a layer large enough for the roofline: 2,048 tokens, hidden 1,024 (8 heads), SwiGLU
// of 4,096, one layer, no floor (a chip whose floor is 1 ps). Forward, by operator (time =
// FLOPs / rate or bytes / 1 TB/s):
//   BF16 linear GEMMs: QKV 2 T h 3h, output 2 T h h, gate-up 2 T h 2f, down 2 T f h at 100 TF/s;
//   under FP8 the same at 200 TF/s, each after a cast reading BF16 and writing FP8 (3 bytes an
//   element of its input), and backward twice the GEMM and a cast of the output gradient;
//   flash attention (causal) 0.5 x 4 T s h at 0.5 x s / (s + 512) of the BF16 peak, backward
//   2.5 times;
//   memory-bound, backward twice: the norms 2 T h e each, rotary 2 T 2h e, the residuals 3 T h e
//   each, SwiGLU 3 T f e.
TEST(StepByHand, Fp8GemmsOverBf16) {
  Workload w = tiny(1);
  ModelShape& model = w.model;
  model.layers = 1;
  model.hidden = 1024;
  model.heads = 8;
  model.kv_heads = 8;
  model.ffn = 4096;
  w.training.seq_len = 2048;
  const double T = 2048, h = 1024, f = 4096, e = 2;
  const double linear_flops =
      2 * T * h * (3 * h) + 2 * T * h * h + 2 * T * h * (2 * f) + 2 * T * f * h;
  const double attention = 0.5 * 4 * T * T * h / (kPeak * 0.5 * T / (T + 512));
  const double memory_bound =
      (2 * (2 * T * h * e) + 2 * T * 2 * h * e + 2 * (3 * T * h * e) + 3 * T * f * e) / kMemory;
  // The head: its norm (2 T h e), the logits GEMM (2 T 128 h, compute-bound: its 5 MB of
  // operands take 5.0 us against 5.4 us of FLOPs) and the fp32 cross entropy (T 128 (e + 16)
  // bytes, its backward one pass), all BF16 under FP8 too; the embedding 2 T h e, backward
  // twice.
  const double norm = 2 * T * h * e / kMemory;
  const double logits = 2 * T * 128 * h / kPeak;
  const double loss = T * 128 * (e + 16) / kMemory;
  const double head = 3 * norm + 3 * logits + 2 * loss;
  const double embedding = 3 * (2 * T * h * e / kMemory);
  const double params = (4 * h * h + 3 * h * f + 2 * h) + 128 * h + (h + 128 * h);
  const double no_floor = 1e-12;

  const Estimate bf16 = estimate_step(one_node(no_floor), w, one_stage(1, 1, 1));
  ASSERT_TRUE(bf16.feasible) << bf16.reasons.front();
  const double bf16_layer = 3 * linear_flops / kPeak + 3.5 * attention + 3 * memory_bound;
  EXPECT_NEAR(bf16.step_time_s, bf16_layer + head + embedding + adam(params),
              1e-9 * bf16.step_time_s);

  w.training.dtype = DType::fp8;
  const Estimate fp8 = estimate_step(one_node(no_floor), w, one_stage(1, 1, 1));
  ASSERT_TRUE(fp8.feasible) << fp8.reasons.front();
  // Casts: forward the inputs of QKV, output, gate-up (T h each) and down (T f); backward the
  // output gradients (T 3h, T h, T 2f, T h).
  const double casts = 3 * (T * h + T * h + T * h + T * f) / kMemory +
                       3 * (T * 3 * h + T * h + T * 2 * f + T * h) / kMemory;
  const double fp8_layer = 3 * linear_flops / kPeakFp8 + casts + 3.5 * attention + 3 * memory_bound;
  EXPECT_NEAR(fp8.step_time_s, fp8_layer + head + embedding + adam(params), 1e-9 * fp8.step_time_s);
}

// A multi-token prediction module (DeepSeek-V3's; docs/models/moe.md#multi-token-prediction)
// on the last stage, by hand. Its kernels at the floor: the next token's embedding lookup
// (1 + 2), two norms (1 + 2 each), the projection of 2h to h (1 + 2), one layer of the model's
// kind (12 + 20) and the output layer with its loss again (14): 58 a micro-batch. Its
// parameters: a layer, the projection (2 x 64 x 64) and three norms (3 x 64). Its loss keeps a
// second copy of the logits (16 x 128 in BF16, FP32 and the FP32 gradient).
TEST(StepByHand, MultiTokenPredictionOnTheLastStage) {
  const int m = 4;
  Workload w = tiny(m);
  const Estimate plain = estimate_step(one_node(), w, one_stage(1, 1));
  w.model.mtp_layers = 1;
  const Estimate e = estimate_step(one_node(), w, one_stage(1, 1));
  ASSERT_TRUE(e.feasible) << e.reasons.front();
  const double module_params = kLayerParams + 2 * 64 * 64 + 3 * 64;  // 74,048
  const double params = 2 * kLayerParams + kEmbeddingParams + kHeadParams + module_params;
  EXPECT_DOUBLE_EQ(e.stages[0].memory.parameters, params);
  const int module_kernels = 3 + 2 * 3 + 3 + kLayerKernels + kHeadKernels;
  const double per_micro_batch =
      (2 * kLayerKernels + kEmbeddingKernels + kHeadKernels + module_kernels) * kFloor;
  EXPECT_NEAR(e.step_time_s, m * per_micro_batch + adam(params), 1e-12);
  EXPECT_NEAR(e.step_time_s, 4 * 139 * 10e-6 + 34 * 221824 / 1e12, 1e-12);  // 5.567 ms
  EXPECT_DOUBLE_EQ(e.stages[0].memory.head, 2 * 16 * 128 * (2 + 4 + 4.0));
  EXPECT_DOUBLE_EQ(plain.stages[0].memory.head, 16 * 128 * (2 + 4 + 4.0));

  // Tensor parallelism over two chips with sequence parallelism: the module adds its layer's
  // four all-reduces (2 KiB each: 2 steps of 1 ms and 2 KiB at 100 GB/s), its embedding's and
  // output layer's two each, and its projection's gathers forward and reduce-scatters backward
  // of the 2h-wide input (4 KiB: one step and 2 KiB) and of the h-wide output (one step and
  // 1 KiB).
  w.training.sequence_parallel = true;
  w.model.mtp_layers = 0;
  const Estimate tp_plain = estimate_step(one_node(), w, one_stage(2, 1));
  w.model.mtp_layers = 1;
  const Estimate tp = estimate_step(one_node(), w, one_stage(2, 1));
  ASSERT_TRUE(tp.feasible && tp_plain.feasible);
  const double all_reduce = 2 * kAlpha + 2048 / kLink;
  const double projection = 2 * ((kAlpha + 2048 / kLink) + (kAlpha + 1024 / kLink));
  EXPECT_NEAR(tp.stages[0].tp_comm_s - tp_plain.stages[0].tp_comm_s,
              4 * all_reduce + 4 * all_reduce + projection, 1e-15);
}

// The module's layer of a mixture is a mixture's layer: its dispatch and combine, forward and
// backward, go with the last stage's all-to-alls (the twin carries them as flows).
TEST(StepByHand, MultiTokenPredictionLayerOfAMixture) {
  const int m = 2;
  Workload w = tiny_moe(4 * m);
  w.model.mtp_layers = 1;
  const Estimate e = estimate_step(one_node(), w, one_stage(1, 4, 2, 4));
  ASSERT_TRUE(e.feasible) << e.reasons.front();
  const double a2a = kTinyAllToAllEp4;
  EXPECT_NEAR(e.stages[0].ep_comm_s, 3 * 4 * a2a, 1e-15);
  EXPECT_EQ(e.stages[0].ep_forward_all_to_alls, 3 * 2);
  EXPECT_EQ(e.stages[0].ep_backward_all_to_alls, 3 * 2);
  const double layer_experts = 4 * 3 * 64 * 128 / 4.0;  // a quarter of the experts
  EXPECT_DOUBLE_EQ(e.stages[0].memory.expert_parameters, 3 * layer_experts);
}

}  // namespace
}  // namespace hetplan::sim
