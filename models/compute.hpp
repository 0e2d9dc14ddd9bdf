// Time of operators on a chip: a roofline (compute-bound at the dtype's dense peak times an
// efficiency, or memory-bound at the memory bandwidth times an efficiency), with GEMM efficiency
// depending on its shape, fused attention efficiency on the sequence length, and operator
// fallbacks slowing their class down. docs/models/compute.md.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/chip.hpp"
#include "models/transformer_ops.hpp"

namespace hetplan::models {

// Priors used when a chip profile leaves an efficiency unknown. Each is derived in
// docs/models/compute.md from the published microbenchmarks; using one is reported.
struct EfficiencyDefaults {
  double gemm_max = 0.85;
  double gemm_half_dim = 128;
  double attention_to_gemm = 0.70;  // fused attention efficiency / GEMM efficiency (A100, causal)
  double attention_half_seq = 512;  // sequence length at which fused attention reaches half
  // Head width at which fused attention would run at half its matrix-product rate: the work
  // per score element that does not grow with the head width (the softmax's exponential,
  // row maximum and rescaling), fitted to FlashAttention-2's head-64 against head-128 charts
  // (docs/models/compute.md#head-width).
  double attention_half_head_dim = 20;
  double memory = 0.85;
  // The shortest time a kernel takes on the stream, because the host issues kernels no faster
  // (docs/models/compute.md#kernel-floor): the fastest tenth of cudaLaunchKernel calls in the
  // A100 PyTorch profiler trace, and of hipExtModuleLaunchKernel in the MI250 ROCm trace (the
  // prior of HIP-derived stacks: Hygon DTK).
  double kernel_floor_cuda = 9e-6;
  double kernel_floor_hip = 4.7e-6;
  // Share of a tensor-parallel collective hidden by overlapped execution (docs/models/estimator.md#overlap).
  double tp_comm_overlap = 0.8;
  // Share of an expert-parallel all-to-all hidden behind another micro-batch's compute
  // (docs/models/estimator.md#ep-overlap): the communication kernels keep about a sixth of
  // the SMs (DeepEP's 20 of an H100's 132), which the compute beside them loses.
  double ep_comm_overlap = 0.8;
  // The busiest expert's routed tokens over the mean, where a workload does not say
  // (docs/models/moe.md#imbalance).
  double expert_imbalance = kExpertImbalancePrior;
};

// Everything the roofline needs about one chip for one dtype, resolved once.
struct ChipRates {
  double peak_flops = 0;         // FLOP/s, dense, the training dtype (BF16 under the fp8 recipe)
  double linear_peak_flops = 0;  // the linear layers' GEMMs (FP8 under the fp8 recipe)
  double kernel_floor = 0;       // s, the least time one kernel takes
  double memory_bandwidth = 0;  // B/s
  double gemm_max = 0;
  double gemm_half_dim = 0;
  double gemm_backward_max = 0;  // backward GEMMs; 0 (or gemm_max): as fast as forward
  // The linear layers' FP8 GEMMs under the fp8 recipe (0: not fp8). Forward and backward alike:
  // Hopper runs FP8 GEMMs only in the TN layout, so every one runs in it.
  double fp8_gemm_max = 0;
  double attention_max = 0;
  double attention_half_seq = 0;
  double attention_half_head_dim = 0;  // 0: no head-width term
  double memory_efficiency = 0;
  std::array<OpCoverage, kOpClassCount> coverage{};
};

struct ResolvedRates {
  std::optional<ChipRates> rates;        // empty when the chip cannot run this dtype at all
  std::vector<std::string> problems;     // why rates is empty
  std::vector<std::string> assumptions;  // defaults used in place of unknown figures
};

// `notes`: whether to write the assumptions (a search that scores many plans leaves them out).
ResolvedRates resolve_rates(const ChipProfile& chip, DType dtype,
                            const EfficiencyDefaults& defaults = {}, bool notes = true);

// The head width the profiles' fused-attention efficiency is measured at (their sources'
// FlashAttention-2 rows are of 128-wide heads).
inline constexpr double kAttentionReferenceHeadDim = 128;

// Fused attention's rate at head width `head_dim` over its rate at the reference width:
// d (128 + d0) / (128 (d + d0)) with d0 = `half_head_dim`, at most 1 (no chart measures a
// kernel above 128 wide, so wider heads keep the reference rate); 1 when d0 is 0.
// docs/models/compute.md#head-width.
double attention_head_dim_factor(double head_dim, double half_head_dim);

// Efficiency of a GEMM of this shape: gemm_max x g(m) g(n) g(k), g(x) = x / (x + half_dim).
double gemm_efficiency(const GemmShape& shape, const ChipRates& rates);
// An FP8 GEMM's efficiency under the fp8 recipe: the chip's curve at its FP8 maximum.
double fp8_gemm_efficiency(const GemmShape& shape, const ChipRates& rates);

double forward_time(const Op& op, const ChipRates& rates);
double backward_time(const Op& op, const ChipRates& rates);

}  // namespace hetplan::models
