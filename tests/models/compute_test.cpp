#include "models/compute.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "models/memory.hpp"
#include "models/transformer_ops.hpp"
#include "tests/support/llama.hpp"

namespace hetplan::models {
namespace {

ChipRates rates() {
  ChipRates r;
  r.peak_flops = 300e12;
  r.memory_bandwidth = 2e12;
  r.gemm_max = 0.8;
  r.gemm_half_dim = 128;
  r.attention_max = 0.6;
  r.attention_half_seq = 512;
  r.memory_efficiency = 0.5;
  return r;
}

TEST(Compute, GemmEfficiencyHalvesPerDimensionAtHalfDim) {
  EXPECT_DOUBLE_EQ(gemm_efficiency({128, 128, 128, 1}, rates()), 0.8 / 8);
  EXPECT_NEAR(gemm_efficiency({1e9, 1e9, 1e9, 1}, rates()), 0.8, 1e-6);
}

TEST(Compute, LargeGemmIsComputeBound) {
  Op op;
  op.op_class = OpClass::gemm;
  op.gemm = {8192, 8192, 8192, 1};
  op.flops = 2.0 * 8192 * 8192 * 8192;
  op.bytes = 3.0 * 8192 * 8192 * 2;
  const double g = 8192.0 / (8192 + 128);
  EXPECT_DOUBLE_EQ(forward_time(op, rates()), op.flops / (300e12 * 0.8 * g * g * g));
  EXPECT_DOUBLE_EQ(backward_time(op, rates()), 2 * forward_time(op, rates()));
}

// Fused attention's rate at a head width over its rate at 128 (docs/models/compute.md#head-width):
// d (128 + d0) / (128 (d + d0)), never above the 128-wide rate.
TEST(Compute, FusedAttentionSlowsWithNarrowHeads) {
  ChipRates r = rates();
  r.attention_half_head_dim = 20;
  Op op;
  op.op_class = OpClass::flash_attention;
  op.flops = 1e12;
  op.bytes = 0;
  auto time_at = [&](double head_dim) {
    op.gemm = {4096, 4096, head_dim, 32};
    return forward_time(op, r);
  };
  const double at_128 = 1e12 / (300e12 * 0.6 * 4096 / (4096 + 512.0));
  EXPECT_DOUBLE_EQ(time_at(128), at_128);
  // 64 wide: 64 x 148 / (128 x 84) = 0.881 of the rate.
  EXPECT_NEAR(time_at(64), at_128 * (128.0 * 84) / (64.0 * 148), 1e-12 * at_128);
  // 8 wide: 8 x 148 / (128 x 28) = 0.330.
  EXPECT_NEAR(time_at(8), at_128 * (128.0 * 28) / (8.0 * 148), 1e-12 * at_128);
  EXPECT_DOUBLE_EQ(time_at(192), at_128);  // no measurement above 128: its rate
  r.attention_half_head_dim = 0;           // no term
  EXPECT_DOUBLE_EQ(time_at(64), at_128);
}

TEST(Compute, ElementwiseIsMemoryBound) {
  Op op;
  op.op_class = OpClass::norm;
  op.bytes = 1e9;
  EXPECT_DOUBLE_EQ(forward_time(op, rates()), 1e9 / (2e12 * 0.5));
}

TEST(Compute, FallbackSlowsItsClassDown) {
  ChipRates r = rates();
  r.coverage[static_cast<std::size_t>(OpClass::norm)] = {Support::fallback, 3.0};
  Op op;
  op.op_class = OpClass::norm;
  op.bytes = 1e9;
  EXPECT_DOUBLE_EQ(forward_time(op, r), 3.0 * 1e9 / (2e12 * 0.5));
}

TEST(Compute, LayerFlopsMatchTheMegatronFormula) {
  // 24 b s h^2 (1 + s / (6 h)) for a GPT layer with a 4h MLP (Narayanan et al. 2021).
  ModelShape m;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 32;
  m.ffn = 4 * 4096;
  m.activation = Activation::gelu;
  const double b = 2, s = 2048, h = 4096;
  EXPECT_DOUBLE_EQ(layer_model_flops(m, 2, 2048), 24 * b * s * h * h * (1 + s / (6 * h)));
}

TEST(Compute, LayerOpsSplitTheGemmsByTensorParallelism) {
  ModelShape m;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn = 14336;
  m.activation = Activation::swiglu;
  LayerSlice one{1, 4096, 1, false, true, DType::bf16};
  LayerSlice eight = one;
  eight.tp = 8;
  double gemm1 = 0, gemm8 = 0;
  for (const auto& op : layer_ops(m, one))
    if (op.op_class == OpClass::gemm) gemm1 += op.flops;
  for (const auto& op : layer_ops(m, eight))
    if (op.op_class == OpClass::gemm) gemm8 += op.flops;
  EXPECT_DOUBLE_EQ(gemm1, 8 * gemm8);
  // Q, K, V, output and three MLP matrices: 2 tokens (h (h + 2 kv) + h^2 + 3 h f).
  const double tokens = 4096, h = 4096, kv = 1024, f = 14336;
  EXPECT_DOUBLE_EQ(gemm1, 2 * tokens * (h * (h + 2 * kv) + h * h + 3 * h * f));
}

TEST(Compute, UnknownPeakIsAProblemNotAGuess) {
  ChipProfile chip;
  chip.id = "x";
  chip.peak_flops[DType::bf16] = std::nullopt;
  chip.memory_bandwidth = 1e12;
  const auto resolved = resolve_rates(chip, DType::bf16);
  EXPECT_FALSE(resolved.rates);
  ASSERT_EQ(resolved.problems.size(), 1u);
  EXPECT_EQ(resolved.problems[0], "chip x has no known bf16 peak");
  const auto unsupported = resolve_rates(chip, DType::fp8);
  EXPECT_EQ(unsupported.problems[0], "chip x does not support fp8");
}

}  // namespace
}  // namespace hetplan::models

namespace hetplan::models {
namespace {

// The launch floor: a kernel takes at least kernel_floor; an operator of n kernels at least n
// floors. A 1 MB norm at 1 TB/s effective is 1 us of traffic, under a 9 us floor; backward it
// launches two kernels (input and weight gradients), 2 MB of traffic: 18 us.
TEST(Compute, SmallKernelsTakeTheLaunchFloor) {
  ChipRates r = rates();
  r.kernel_floor = 9e-6;
  Op op;
  op.op_class = OpClass::norm;
  op.bytes = 1e6;
  op.kernels = 1;
  op.backward_kernels = 2;
  EXPECT_DOUBLE_EQ(forward_time(op, r), 9e-6);
  EXPECT_DOUBLE_EQ(backward_time(op, r), 18e-6);
  // A large one is untouched: 1 GB at 1 TB/s.
  op.bytes = 1e9;
  EXPECT_DOUBLE_EQ(forward_time(op, r), 1e-3);
}

// The fp8 recipe: the linear GEMMs at the FP8 peak with FP8 operands, a cast before each; the
// attention and the other operators in BF16.
TEST(Compute, Fp8RunsOnlyTheLinearGemmsInFp8) {
  ModelShape model;
  model.hidden = 1024;
  model.heads = 8;
  model.kv_heads = 8;
  model.ffn = 4096;
  model.vocab = 1000;
  model.activation = Activation::gelu;
  LayerSlice slice{1, 1024, 1, false, true, DType::fp8};
  const auto ops = layer_ops(model, slice);
  int casts = 0, linear = 0;
  for (const auto& op : ops) {
    if (op.name == "fp8_cast") {
      ++casts;
      continue;
    }
    if (op.name == "qkv_proj") {
      // (1024 x 1024) x (1024 x 3072): FP8 operands of 1 byte, a BF16 output of 2.
      EXPECT_DOUBLE_EQ(op.bytes, 1024.0 * 1024 + 1024.0 * 3072 + 1024.0 * 3072 * 2);
      EXPECT_TRUE(op.linear);
    }
    if (op.linear) ++linear;
    if (op.name == "input_norm") {
      EXPECT_DOUBLE_EQ(op.bytes, 2.0 * 1024 * 1024 * 2);  // BF16
    }
    if (op.name == "flash_attention") {
      EXPECT_FALSE(op.linear);
    }
  }
  EXPECT_EQ(linear, 4);  // qkv, out, up, down
  EXPECT_EQ(casts, 4);
  // The first cast reads the BF16 input of the QKV projection and writes its FP8 copy.
  EXPECT_DOUBLE_EQ(ops[1].bytes, 1024.0 * 1024 * 3);

  ChipRates r = rates();
  r.linear_peak_flops = 600e12;
  Op qkv = ops[2];
  ASSERT_EQ(qkv.name, "qkv_proj");
  const double g = [](double x) { return x / (x + 128); }(1024) *
                   [](double x) { return x / (x + 128); }(3072) *
                   [](double x) { return x / (x + 128); }(1024);
  EXPECT_DOUBLE_EQ(forward_time(qkv, r), 2.0 * 1024 * 3072 * 1024 / (600e12 * 0.8 * g));

  // With the chip's FP8 GEMM efficiency (0.5 here against 0.8 for BF16) the linear GEMMs run at
  // it, backward as forward (FP8 GEMMs run in one layout); the attention is untouched.
  r.fp8_gemm_max = 0.5;
  r.gemm_backward_max = 0.6;
  const double fp8_forward = 2.0 * 1024 * 3072 * 1024 / (600e12 * 0.5 * g);
  EXPECT_DOUBLE_EQ(forward_time(qkv, r), fp8_forward);
  EXPECT_DOUBLE_EQ(backward_time(qkv, r), 2 * fp8_forward);
  for (const auto& op : ops) {
    if (op.name != "flash_attention") continue;
    ChipRates bf16 = r;
    bf16.fp8_gemm_max = 0;
    EXPECT_DOUBLE_EQ(forward_time(op, r), forward_time(op, bf16));
  }
}

// A profile's FP8 GEMM efficiency serves the fp8 recipe; without one the BF16 efficiency stands
// in for it, and the estimate says so. Other dtypes never use it.
TEST(Compute, Fp8GemmEfficiencyComesFromTheProfileOrIsAnAssumption) {
  ChipProfile chip;
  chip.id = "x";
  chip.peak_flops[DType::bf16] = 1000e12;
  chip.peak_flops[DType::fp8] = 2000e12;
  chip.memory_bandwidth = 3e12;
  chip.efficiency.gemm_max = 0.9;
  chip.efficiency.memory = 0.9;
  chip.efficiency.attention_max = 0.5;
  chip.efficiency.kernel_overhead = 5e-6;
  auto unknown = resolve_rates(chip, DType::fp8);
  ASSERT_TRUE(unknown.rates);
  EXPECT_DOUBLE_EQ(unknown.rates->fp8_gemm_max, 0.9);
  ASSERT_EQ(unknown.assumptions.size(), 1u);
  EXPECT_EQ(unknown.assumptions[0],
            "chip x: FP8 GEMM efficiency (the BF16 one) unknown, prior 0.90 used");
  chip.efficiency.gemm_fp8_max = 0.7;
  auto known = resolve_rates(chip, DType::fp8);
  ASSERT_TRUE(known.rates);
  EXPECT_DOUBLE_EQ(known.rates->fp8_gemm_max, 0.7);
  EXPECT_TRUE(known.assumptions.empty());
  EXPECT_EQ(resolve_rates(chip, DType::bf16).rates->fp8_gemm_max, 0.0);
}

}  // namespace
}  // namespace hetplan::models

namespace hetplan::models {
namespace {

// A token's copies in an expert-parallel dispatch, by hand from the binomials
// (docs/models/moe.md#dispatcher): with E experts on ep chips, k per token, a chip holding
// E / ep of them is missed by C(E - E/ep, k) of the C(E, k) routes.
TEST(Dispatch, FlexSendsOneCopyPerChipHoldingAnExpert) {
  // Mixtral's 8 experts, top 2. On 4 chips (two each) C(6,2)/C(8,2) = 15/28 of routes miss a
  // chip: 4 x 13/28 = 13/7 copies. On 2 chips C(4,2)/C(8,2) = 6/28: 2 x 22/28 = 11/7.
  EXPECT_NEAR(dispatched_copies(8, 2, 4, MoeDispatcher::flex), 13.0 / 7.0, 1e-12);
  EXPECT_NEAR(dispatched_copies(8, 2, 2, MoeDispatcher::flex), 11.0 / 7.0, 1e-12);
  // One expert per chip: every expert is its own chip, nothing to merge.
  EXPECT_NEAR(dispatched_copies(8, 2, 8, MoeDispatcher::flex), 2.0, 1e-12);
  // 16 experts, top 4, on 2 chips: C(8,4)/C(16,4) = 70/1820 = 1/26, 2 x 25/26 = 25/13.
  EXPECT_NEAR(dispatched_copies(16, 4, 2, MoeDispatcher::flex), 25.0 / 13.0, 1e-12);
  // The all-to-all dispatcher sends one copy per routed expert, and without expert
  // parallelism there is nothing to send apart.
  EXPECT_EQ(dispatched_copies(8, 2, 4, MoeDispatcher::all_to_all), 2.0);
  EXPECT_EQ(dispatched_copies(128, 8, 16, MoeDispatcher::all_to_all), 8.0);
  EXPECT_EQ(dispatched_copies(8, 2, 1, MoeDispatcher::flex), 2.0);
  // Never more copies than experts per token, nor chips.
  for (int ep : {2, 4, 8, 16, 32, 64, 128}) {
    const double copies = dispatched_copies(128, 8, ep, MoeDispatcher::flex);
    EXPECT_LE(copies, 8.0 + 1e-12) << ep;
    EXPECT_LE(copies, ep + 1e-12) << ep;
    EXPECT_GT(copies, 1.0) << ep;
  }
}

// GShard's dense dispatch (docs/models/moe.md#gshard), by hand for Mixtral's shape on one chip
// (tp 1, ep 2, 4,096 tokens, capacity factor 1.25): every expert has 4,096 x 2 x 1.25 / 8 = 1,280
// places, 10,240 slots in all; the einsums are GEMMs over them in place of the permutations, and
// the experts compute exactly their capacity whatever the imbalance.
TEST(Dispatch, GshardDispatchIsTwoEinsumsOverTheCapacity) {
  ModelShape m;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn = 14336;
  m.vocab = 32000;
  m.experts = 8;
  m.experts_per_token = 2;
  m.expert_ffn = 14336;
  LayerSlice slice{1, 4096, 1, false, true, DType::bf16};
  slice.ep = 2;
  slice.expert_imbalance = 1.25;  // the capacity factor, as the estimator sets it
  slice.dispatcher = MoeDispatcher::gshard;
  const double slots = 4096.0 * 2 * 1.25;
  const Op* dispatch = nullptr;
  const Op* combine = nullptr;
  const Op* masks = nullptr;
  const Op* gate_up = nullptr;
  const std::vector<Op> ops = layer_ops(m, slice);
  for (const Op& op : ops) {
    EXPECT_NE(op.name, "permute");
    EXPECT_NE(op.name, "unpermute");
    if (op.name == "gshard_dispatch") dispatch = &op;
    if (op.name == "gshard_combine") combine = &op;
    if (op.name == "gshard_masks") masks = &op;
    if (op.name == "experts_gate_up") gate_up = &op;
  }
  ASSERT_TRUE(dispatch && combine && masks && gate_up);
  // einsum("sec,sm->ecm"): (10,240 x 4,096) over the 4,096 tokens; backward the input's
  // gradient alone. einsum("sec,ecm->sm"): (4,096 x 4,096) over the slots; backward two GEMMs.
  EXPECT_DOUBLE_EQ(dispatch->flops, 2.0 * slots * 4096 * 4096);
  EXPECT_DOUBLE_EQ(dispatch->backward_flops_factor, 1.0);
  EXPECT_DOUBLE_EQ(combine->flops, 2.0 * 4096 * 4096 * slots);
  EXPECT_DOUBLE_EQ(combine->backward_flops_factor, 2.0);
  // The masks: 4,096 x 10,240 elements, fp32 weights built (13 bytes with the boolean mask) and
  // both cast to BF16 (1 + 2, 4 + 2); backward 2 + 4 + 4.
  EXPECT_DOUBLE_EQ(masks->bytes, 4096.0 * slots * 22.0);
  EXPECT_DOUBLE_EQ(masks->bytes * masks->backward_bytes_factor, 4096.0 * slots * 10.0);
  // The chip's 4 experts take 1,280 places from each of the 2 chips: 2,560 tokens each.
  EXPECT_DOUBLE_EQ(gate_up->gemm.m, 2560.0);
  EXPECT_DOUBLE_EQ(gate_up->gemm.batch, 4.0);
  EXPECT_EQ(dispatched_copies(8, 2, 2, MoeDispatcher::gshard), 2.0);
}

// Across nodes the flex dispatcher sends a token over the network once per other node holding
// any of its experts and forwards it inside the node (docs/models/moe.md#forwarding), by hand:
TEST(Dispatch, FlexForwardsAcrossNodes) {
  // Mixtral's 8 experts, top 2, ep 4 on 2 nodes of 2 chips: a node (4 experts) is missed by
  // C(4,2)/C(8,2) = 6/28 of the routes, a chip (2 experts) by 15/28. Network: 1 other node x
  // 22/28 = 11/14 copies a token; intra-node: 2 nodes x 1 other chip x 13/28 = 13/14.
  FlexTraffic t = flex_forwarded_traffic(8, 2, 4, 2);
  EXPECT_NEAR(t.network, 11.0 / 14.0, 1e-12);
  EXPECT_NEAR(t.node, 13.0 / 14.0, 1e-12);
  // 16 experts, top 4, ep 8 on 4 nodes of 2 chips: a node (4 experts) is missed by
  // C(12,4)/C(16,4) = 495/1820 = 99/364, a chip (2 experts) by C(14,4)/C(16,4) = 1001/1820 =
  // 11/20. Network 3 x 265/364 = 795/364; intra-node 4 x 1 x 9/20 = 9/5.
  t = flex_forwarded_traffic(16, 4, 8, 4);
  EXPECT_NEAR(t.network, 795.0 / 364.0, 1e-12);
  EXPECT_NEAR(t.node, 9.0 / 5.0, 1e-12);
  // The flat exchange would send (ep - ep/nodes) x 9/20 = 6 x 9/20 = 2.7 copies over the
  // network: forwarding sends fewer whenever a token's experts share a node.
  EXPECT_LT(t.network, 8 * (9.0 / 20.0) * 6 / 8);
  // Nothing to forward: one node, one chip per node, or a group or experts that do not split
  // evenly over the nodes.
  for (const auto& [experts, ep, nodes] :
       {std::tuple{8, 4, 1}, std::tuple{8, 4, 4}, std::tuple{8, 6, 4}, std::tuple{6, 4, 2}}) {
    t = flex_forwarded_traffic(experts, 2, ep, nodes);
    EXPECT_EQ(t.network, 0.0) << experts << " " << ep << " " << nodes;
    EXPECT_EQ(t.node, 0.0) << experts << " " << ep << " " << nodes;
  }
}

}  // namespace
}  // namespace hetplan::models

namespace hetplan::models {
namespace {

// The busiest chip's load from the busiest expert's (docs/models/moe.md#imbalance): a chip of
// experts / ep experts varies sqrt((ep - 1) / (experts - 1)) times as much as one expert.
TEST(Imbalance, AChipOfSeveralExpertsVariesLessThanOneExpert) {
  // Mixtral's 8 experts at 1.25: ep 2 (4 a chip) 1 + 0.25 sqrt(1/7), ep 4 1 + 0.25 sqrt(3/7),
  // ep 8 (one a chip) the expert's own 1.25.
  EXPECT_NEAR(chip_imbalance(1.25, 8, 2), 1.0 + 0.25 * std::sqrt(1.0 / 7.0), 1e-15);
  EXPECT_NEAR(chip_imbalance(1.25, 8, 4), 1.0 + 0.25 * std::sqrt(3.0 / 7.0), 1e-15);
  EXPECT_EQ(chip_imbalance(1.25, 8, 8), 1.25);
  // Without expert parallelism the chip holds every expert: its load is the mean.
  EXPECT_EQ(chip_imbalance(1.25, 8, 1), 1.0);
  EXPECT_EQ(chip_imbalance(3.0, 128, 1), 1.0);
  // A balanced router stays balanced everywhere.
  EXPECT_EQ(chip_imbalance(1.0, 128, 16), 1.0);
  // The workload's figure, or the prior, seen by a chip of an expert-parallel group.
  TrainingSettings t;
  EXPECT_NEAR(for_expert_parallel(t, 64, 8).expert_imbalance,
              1.0 + (kExpertImbalancePrior - 1.0) * std::sqrt(7.0 / 63.0), 1e-15);
  t.expert_imbalance = 2.0;
  EXPECT_EQ(for_expert_parallel(t, 64, 1).expert_imbalance, 1.0);
  EXPECT_EQ(for_expert_parallel(t, 64, 64).expert_imbalance, 2.0);
}

// RMSNorm and SwiGLU as PyTorch's reference operators (docs/models/compute.md#unfused), by hand
// for a Llama-2-7B layer on one chip: 1,024 tokens, hidden 4,096, FFN 11,008, BF16.
// RMSNorm forward: cast to fp32 (2 + 4 bytes an element), pow (4 + 4), mean (4), x * rsqrt
// (4 + 4), cast back (4 + 2), times the weight (2 + 2): 36 bytes in 8 kernels (with the eps
// add and the rsqrt); backward: the weight's product and its gradient's reduction (2 + 2, 2 + 2
// + 2, 2), the cast (2 + 4), the product's two gradients (4 + 4, 4 + 4 + 4, 4), the mean's
// (4), pow's (4 + 4, 4 + 4, 4 + 4 + 4), the two paths' sum (4 + 4 + 4) and the cast (4 + 2):
// 92 bytes in 14. SwiGLU: silu (2 + 2) and the product (4 + 2), 10 bytes an output; backward
// 18 in 3.
TEST(UnfusedOperators, RmsnormAndSwigluAsPyTorchsReferenceOperators) {
  ModelShape m = test::llama2_7b();
  LayerSlice slice{1, 1024, 1, false, true, DType::bf16};
  auto find = [](const std::vector<Op>& ops, std::string_view name) {
    for (const Op& op : ops)
      if (op.name == name) return op;
    ADD_FAILURE() << "no operator " << name;
    return Op{};
  };
  const double n = 1024.0 * 4096;    // a norm's elements
  const double nf = 1024.0 * 11008;  // the SwiGLU's outputs
  const auto fused = layer_ops(m, slice);
  EXPECT_DOUBLE_EQ(find(fused, "input_norm").bytes, 4.0 * n);
  EXPECT_EQ(find(fused, "input_norm").kernels, 1);
  EXPECT_DOUBLE_EQ(find(fused, "swiglu").bytes, 6.0 * nf);
  EXPECT_EQ(find(fused, "swiglu").kernels, 1);

  slice.unfused = kUnfusedRmsnorm | kUnfusedSwiglu;
  const auto unfused = layer_ops(m, slice);
  for (const char* name : {"input_norm", "post_attention_norm"}) {
    const Op norm = find(unfused, name);
    EXPECT_DOUBLE_EQ(norm.bytes, 36.0 * n);
    EXPECT_DOUBLE_EQ(norm.bytes * norm.backward_bytes_factor, 92.0 * n);
    EXPECT_EQ(norm.kernels, 8);
    EXPECT_EQ(norm.backward_kernels, 14);
  }
  const Op swiglu = find(unfused, "swiglu");
  EXPECT_DOUBLE_EQ(swiglu.bytes, 10.0 * nf);
  EXPECT_DOUBLE_EQ(swiglu.bytes * swiglu.backward_bytes_factor, 18.0 * nf);
  EXPECT_EQ(swiglu.kernels, 2);
  EXPECT_EQ(swiglu.backward_kernels, 3);
  EXPECT_DOUBLE_EQ(find(head_ops(m, slice), "final_norm").bytes, 36.0 * n);
  // The rotary embedding of Q and K (1,024 x (4,096 + 4,096) elements): fused 2 e an element,
  // one kernel a tensor each way; unfused 10 e both ways, 5 kernels a tensor.
  const double qk = 1024.0 * (4096 + 4096);
  EXPECT_DOUBLE_EQ(find(fused, "rope").bytes, 4.0 * qk);
  EXPECT_EQ(find(fused, "rope").kernels, 2);
  EXPECT_DOUBLE_EQ(find(unfused, "rope").bytes, 4.0 * qk);  // not asked for: still fused
  slice.unfused |= kUnfusedRope;
  const Op rope = find(layer_ops(m, slice), "rope");
  EXPECT_DOUBLE_EQ(rope.bytes, 20.0 * qk);
  EXPECT_DOUBLE_EQ(rope.bytes * rope.backward_bytes_factor, 20.0 * qk);
  EXPECT_EQ(rope.kernels, 10);
  EXPECT_EQ(rope.backward_kernels, 10);
  // A model that learns its positions has no rotary embedding at all.
  m.learned_positions = true;
  for (const Op& op : layer_ops(m, slice)) EXPECT_NE(op.name, "rope");
  m.learned_positions = false;

  // In fp32 the two casts go: forward 44 bytes in 6 kernels, backward 108 in 12.
  slice.dtype = DType::fp32;
  const Op fp32 = find(layer_ops(m, slice), "input_norm");
  EXPECT_DOUBLE_EQ(fp32.bytes, 44.0 * n);
  EXPECT_DOUBLE_EQ(fp32.bytes * fp32.backward_bytes_factor, 108.0 * n);
  EXPECT_EQ(fp32.kernels, 6);
  EXPECT_EQ(fp32.backward_kernels, 12);
}

// The loss over Llama-2-7B's 32,000-token vocabulary for 1,024 tokens on tp 2, BF16, by hand
// (docs/models/memory.md#head): Megatron's cross entropy reads the logits and works on an fp32
// copy, (2 + 16) bytes an element in six kernels forward and as many bytes in two backward;
// Transformer Engine's reads them twice and writes the gradient over them, 3 x 2 bytes in two
// kernels, and scales that gradient in place backward, 2 x 2 bytes in one.
TEST(CrossEntropy, TransformerEnginesKernelMakesThreePassesInTheLogitsDtype) {
  ModelShape m = test::llama2_7b();
  LayerSlice slice{1, 1024, 2, false, true, DType::bf16};
  auto loss = [&] {
    for (const Op& op : head_ops(m, slice))
      if (op.name == "cross_entropy") return op;
    ADD_FAILURE() << "no cross_entropy operator";
    return Op{};
  };
  const double logits = 1024.0 * 32000 / 2;
  Op op = loss();
  EXPECT_DOUBLE_EQ(op.bytes, 18.0 * logits);
  EXPECT_DOUBLE_EQ(op.bytes * op.backward_bytes_factor, 18.0 * logits);
  EXPECT_EQ(op.kernels, 6);
  EXPECT_EQ(op.backward_kernels, 2);
  slice.cross_entropy_fusion = CrossEntropyFusion::te;
  op = loss();
  EXPECT_DOUBLE_EQ(op.bytes, 6.0 * logits);
  EXPECT_DOUBLE_EQ(op.bytes * op.backward_bytes_factor, 4.0 * logits);
  EXPECT_EQ(op.kernels, 2);
  EXPECT_EQ(op.backward_kernels, 1);
}

// What the unfused operators keep for the backward pass: each RMSNorm the fp32 copy of its
// input and its output before the weight instead of its input (4 bytes more an element), the
// SwiGLU also silu(gate) (2 bytes an FFN element). tp 2 with sequence parallelism: the norms'
// 1,024 x 4,096 elements are split, the MLP's 1,024 x 11,008 too.
TEST(UnfusedOperators, KeepTheirIntermediateTensors) {
  ModelShape m = test::llama2_7b();
  TrainingSettings t;
  t.seq_len = 1024;
  t.dtype = DType::bf16;
  t.sequence_parallel = true;
  const double fused = layer_activation_bytes(m, t, 1, 2, Recompute::none);
  t.unfused = kUnfusedRmsnorm | kUnfusedSwiglu;
  const double unfused = layer_activation_bytes(m, t, 1, 2, Recompute::none);
  EXPECT_DOUBLE_EQ(unfused - fused, 2.0 * 4.0 * 1024 * 4096 / 2 + 2.0 * 1024 * 11008 / 2);
  // Full recompute keeps only the layer's input either way.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, t, 1, 2, Recompute::full), 1024.0 * 4096 * 2 / 2);
}

}  // namespace
}  // namespace hetplan::models
