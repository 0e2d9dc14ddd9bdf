#include "models/compute.hpp"

#include <gtest/gtest.h>

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
