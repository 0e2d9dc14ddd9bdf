#include "models/compute.hpp"

#include <algorithm>
#include <cstdio>

namespace hetplan::models {

ResolvedRates resolve_rates(const ChipProfile& chip, DType dtype,
                            const EfficiencyDefaults& defaults, bool notes) {
  ResolvedRates out;
  // Under the fp8 recipe the linear GEMMs run in FP8 and everything else in BF16: the chip
  // needs both.
  std::vector<DType> needed{dtype};
  if (storage_dtype(dtype) != dtype) needed.push_back(storage_dtype(dtype));
  for (DType d : needed) {
    if (!chip.supports(d)) {
      out.problems.push_back("chip " + chip.id + " does not support " + std::string(to_string(d)) +
                             (d != dtype ? " (the fp8 recipe keeps the rest of the model in it)" : ""));
    } else if (!chip.peak(d)) {
      out.problems.push_back("chip " + chip.id + " has no known " + std::string(to_string(d)) +
                             " peak");
    }
  }
  if (!chip.memory_bandwidth) {
    out.problems.push_back("chip " + chip.id + " has no known memory bandwidth");
  }
  if (!out.problems.empty()) return out;

  const EfficiencyModel& eff = chip.efficiency;
  auto pick = [&](const std::optional<double>& known, double fallback, std::string_view what) {
    if (known) return *known;
    if (!notes) return fallback;
    char value[32];
    std::snprintf(value, sizeof value, "%.2f", fallback);
    out.assumptions.push_back("chip " + chip.id + ": " + std::string(what) + " unknown, prior " +
                              value + " used");
    return fallback;
  };
  ChipRates rates;
  rates.peak_flops = *chip.peak(storage_dtype(dtype));
  rates.linear_peak_flops = *chip.peak(dtype);
  if (eff.kernel_overhead) {
    rates.kernel_floor = *eff.kernel_overhead;
  } else {
    const bool hip = chip.family == "dcu";
    rates.kernel_floor = hip ? defaults.kernel_floor_hip : defaults.kernel_floor_cuda;
    if (notes) {
      char value[64];
      std::snprintf(value, sizeof value, "%.1f us used (%s profiler trace)",
                    rates.kernel_floor * 1e6, hip ? "ROCm" : "CUDA");
      out.assumptions.push_back("chip " + chip.id + ": kernel launch floor unknown, prior " +
                                value);
    }
  }
  rates.memory_bandwidth = *chip.memory_bandwidth;
  rates.gemm_max = pick(eff.gemm_max, defaults.gemm_max, "GEMM efficiency");
  rates.gemm_half_dim = eff.gemm_half_dim.value_or(defaults.gemm_half_dim);
  rates.gemm_backward_max = eff.gemm_backward_max.value_or(rates.gemm_max);
  if (dtype == DType::fp8) {
    rates.fp8_gemm_max =
        pick(eff.gemm_fp8_max, rates.gemm_max, "FP8 GEMM efficiency (the BF16 one)");
  }
  rates.attention_max = eff.attention_max
                            ? *eff.attention_max
                            : pick(std::nullopt, rates.gemm_max * defaults.attention_to_gemm,
                                   "fused attention efficiency");
  rates.attention_half_seq = defaults.attention_half_seq;
  rates.attention_half_head_dim = defaults.attention_half_head_dim;
  rates.memory_efficiency = pick(eff.memory, defaults.memory, "memory efficiency");
  // What a training step loses against the microbenchmarks, where runs have measured it
  // (docs/models/in-step.md): the matrix units' rates scale, the curves' shapes do not.
  if (const auto gemm = eff.in_step.gemm) {
    rates.gemm_max *= *gemm;
    rates.gemm_backward_max *= *gemm;
    rates.fp8_gemm_max *= *gemm;
  }
  if (const auto attention = eff.in_step.attention) rates.attention_max *= *attention;
  for (int i = 0; i < kOpClassCount; ++i)
    rates.coverage[static_cast<std::size_t>(i)] = chip.coverage(static_cast<OpClass>(i));
  out.rates = rates;
  return out;
}

namespace {

// g(m) g(n) g(k), g(x) = x / (x + half_dim): the share of its maximum a GEMM of this shape gets.
double gemm_shape_factor(const GemmShape& shape, const ChipRates& rates) {
  auto g = [&](double x) { return x / (x + rates.gemm_half_dim); };
  return g(shape.m) * g(shape.n) * g(shape.k);
}

}  // namespace

double attention_head_dim_factor(double head_dim, double half_head_dim) {
  if (half_head_dim <= 0 || head_dim <= 0) return 1.0;
  const double factor = head_dim * (kAttentionReferenceHeadDim + half_head_dim) /
                        (kAttentionReferenceHeadDim * (head_dim + half_head_dim));
  return std::min(1.0, factor);
}

double gemm_efficiency(const GemmShape& shape, const ChipRates& rates) {
  return rates.gemm_max * gemm_shape_factor(shape, rates);
}

double fp8_gemm_efficiency(const GemmShape& shape, const ChipRates& rates) {
  return rates.fp8_gemm_max * gemm_shape_factor(shape, rates);
}

namespace {

double compute_rate(const Op& op, const ChipRates& rates, bool backward) {
  switch (op.op_class) {
    case OpClass::gemm: {
      if (op.linear && rates.fp8_gemm_max > 0)
        return rates.linear_peak_flops * fp8_gemm_efficiency(op.gemm, rates);
      const double peak = op.linear ? rates.linear_peak_flops : rates.peak_flops;
      const double rate = peak * gemm_efficiency(op.gemm, rates);
      // Backward GEMMs run in other layouts (g W and g^T x against the forward's x W^T); some
      // libraries run those at a different speed.
      return backward && rates.gemm_backward_max > 0 ? rate * rates.gemm_backward_max / rates.gemm_max
                                                     : rate;
    }
    case OpClass::flash_attention: {
      // The op's k is its head width (the mean of the query/key and value widths).
      const double seq = op.gemm.m;
      return rates.peak_flops * rates.attention_max * seq / (seq + rates.attention_half_seq) *
             attention_head_dim_factor(op.gemm.k, rates.attention_half_head_dim);
    }
    default:
      return rates.peak_flops * rates.gemm_max;
  }
}

double roofline(double flops, double bytes, const Op& op, const ChipRates& rates, bool backward) {
  const double compute = flops > 0 ? flops / compute_rate(op, rates, backward) : 0.0;
  const double memory = bytes / (rates.memory_bandwidth * rates.memory_efficiency);
  const double slowdown = rates.coverage[static_cast<std::size_t>(op.op_class)].slowdown;
  return std::max(compute, memory) * slowdown;
}

}  // namespace

// An operator of n kernels takes at least n launch floors (docs/models/compute.md#kernel-floor).
static double with_floor(double time, int kernels, const ChipRates& rates) {
  if (kernels <= 0) return 0.0;
  return std::max(time, kernels * rates.kernel_floor);
}

double forward_time(const Op& op, const ChipRates& rates) {
  return with_floor(roofline(op.flops, op.bytes, op, rates, false), op.kernels, rates);
}

double backward_time(const Op& op, const ChipRates& rates) {
  return with_floor(roofline(op.flops * op.backward_flops_factor,
                             op.bytes * op.backward_bytes_factor, op, rates, true),
                    op.backward_kernels, rates);
}

}  // namespace hetplan::models
