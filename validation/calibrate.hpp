// Calibration: fits a chip profile's compute, memory, attention and collective parameters to
// microbenchmarks (a probe's calibration bundles) by least squares, and returns a new profile
// version that says where every fitted number came from. Training-step measurements in the
// bundles are never used for fitting: they are held out for checking. docs/calibration.md.
#pragma once

#include <string>
#include <vector>

#include "core/calibration.hpp"
#include "core/chip.hpp"
#include "importers/collective_logs.hpp"

namespace hetplan::validation {

// How well a model fits its points: relative errors (model - measured) / measured.
struct FitQuality {
  std::string what;  // e.g. "gemm fp32", "memory", "all_reduce over 2 ranks"
  int points = 0;
  double rms_relative_error = 0;
  double max_relative_error = 0;
  std::vector<std::string> parameters;  // "name value", for the report
};

// GEMM time t = 2mnk / (R g(m) g(n) g(k)), g(x) = x / (x + h): the best rate R and the
// dimension h at which efficiency halves (the compute model's GEMM curve).
struct GemmFit {
  double rate = 0;  // FLOP/s
  double half_dim = 0;
  double launch_floor_s = 0;  // the fastest GEMM, when the fit set the floor-bound ones aside
  int floor_bound = 0;        // samples set aside as measuring the launch floor, not arithmetic
  FitQuality quality;
};
// Fits t = 2mnk / (rate x g(m) g(n) g(k)), g(x) = x / (x + half_dim). Where the fastest GEMMs
// all take about the same time, that time is the cost of a launch, not of the arithmetic
// (tens of microseconds on some virtualised GPUs): samples under twice the fastest are set
// aside, as long as three or more remain. A launch overlaps the kernel before it, so a call
// past that takes the kernel's time.
GemmFit fit_gemm(const std::vector<GemmSample>& samples);
// The samples fit_gemm fits the curve to: those past the launch floor.
std::vector<GemmSample> compute_bound_gemms(const std::vector<GemmSample>& samples,
                                            double* floor_s = nullptr, int* set_aside = nullptr);

// Memory-bound kernels: t = bytes / B, the achieved bandwidth B.
struct BandwidthFit {
  double bandwidth = 0;  // B/s
  FitQuality quality;
};
// Bytes an element-wise kernel reads and writes, as the compute model counts them.
double elementwise_bytes(const ElementwiseSample& sample);
BandwidthFit fit_elementwise_bandwidth(const std::vector<ElementwiseSample>& samples);
BandwidthFit fit_stream_bandwidth(const std::vector<MemorySample>& samples);

// Fused attention: rate = A s / (s + half_seq) f(d) (the compute model's attention curve, f
// its head-width factor with `half_head_dim`, models::attention_head_dim_factor); the
// efficiency-times-peak A, at the reference head width.
struct AttentionFit {
  double rate = 0;  // FLOP/s at infinite sequence length and 128-wide heads
  FitQuality quality;
};
AttentionFit fit_attention(const std::vector<AttentionSample>& samples, double half_seq,
                           double half_head_dim);

// A collective's alpha-beta model, in nccl-tests' terms (all-reduce, all-gather, reduce-scatter,
// broadcast): t = steps x latency + bytes x
// bus_factor / bus_bandwidth, with the ring's 2(n-1) steps for all-reduce and n-1 otherwise.
struct CollectiveFit {
  std::string collective;
  int ranks = 0;
  double latency = 0;        // s per step
  double bus_bandwidth = 0;  // B/s
  FitQuality quality;
};
CollectiveFit fit_collective(const std::vector<CollectiveSample>& samples);

// A bundle holding only collectives, from imported nccl-tests / rccl-tests / hccl_test sweeps
// (importers/collective_logs.hpp): the out-of-place time of every point of every sweep whose
// collective and rank count are known. `skipped` says which sweeps were left out and why.
CalibrationBundle collectives_bundle(const std::vector<importers::CollectiveSweep>& sweeps,
                                     const std::string& file);

struct Calibration {
  ChipProfile profile;  // the new version
  std::vector<FitQuality> fits;
  std::vector<std::string> notes;  // what was set how, and what could not be fitted
};

// Fits `base` to the bundles. The new profile's id is base.id + "@" + label; each fitted number
// cites a source naming the bundles, their probe version, host, runtime and time.
Calibration calibrate(const ChipProfile& base, const std::vector<CalibrationBundle>& bundles,
                      const std::string& label);

// `profile`, a new version of `base`, takes base's file comments, less those beside a number
// whose source differs between the two (a comment that explains the old figure).
void carry_comments(const ChipProfile& base, ChipProfile& profile);

// A held-out check: a measured layer or training step in a bundle against the estimator's
// prediction for it on `profile` (one chip, tp = dp = pp = 1).
struct StepCheck {
  std::string what;  // e.g. "step: 4 layers, hidden 512, micro-batch 4 x 256, fp32"
  double measured_s = 0;
  double predicted_s = 0;
  double error = 0;  // (predicted - measured) / measured
  bool feasible = true;
  std::vector<std::string> reasons;
};
std::vector<StepCheck> check_bundle(const ChipProfile& profile, const CalibrationBundle& bundle);

}  // namespace hetplan::validation
