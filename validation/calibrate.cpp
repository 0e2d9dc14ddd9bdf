#include "validation/calibrate.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "models/collectives.hpp"
#include "models/compute.hpp"
#include "models/transformer_ops.hpp"
#include "sim/estimator.hpp"

namespace hetplan::validation {
namespace {

std::string number(double value) {
  char text[48];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

FitQuality quality(std::string what, const std::vector<double>& model,
                   const std::vector<double>& measured) {
  FitQuality q;
  q.what = std::move(what);
  q.points = static_cast<int>(measured.size());
  double sum = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const double error = (model[i] - measured[i]) / measured[i];
    sum += error * error;
    q.max_relative_error = std::max(q.max_relative_error, std::abs(error));
  }
  if (!measured.empty()) q.rms_relative_error = std::sqrt(sum / static_cast<double>(measured.size()));
  return q;
}

double gemm_shape_factor(const GemmSample& s, double half_dim) {
  auto g = [&](double x) { return x / (x + half_dim); };
  return g(s.m) * g(s.n) * g(s.k);
}

// For a fixed half-dimension the best rate in log space is a mean: log R = mean(log(F / (t g))).
double gemm_rate_for(const std::vector<GemmSample>& samples, double half_dim, double* residual) {
  Eigen::VectorXd logs(static_cast<Eigen::Index>(samples.size()));
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const GemmSample& s = samples[i];
    logs[static_cast<Eigen::Index>(i)] =
        std::log(2.0 * s.m * s.n * s.k / (s.seconds * gemm_shape_factor(s, half_dim)));
  }
  const double mean = logs.mean();
  if (residual) *residual = (logs.array() - mean).square().sum();
  return std::exp(mean);
}

int ring_steps(const std::string& collective, int ranks) {
  return collective == "all_reduce" ? 2 * (ranks - 1) : ranks - 1;
}

models::Collective collective_kind(const std::string& name) {
  if (name == "all_reduce") return models::Collective::all_reduce;
  if (name == "all_gather") return models::Collective::all_gather;
  if (name == "reduce_scatter") return models::Collective::reduce_scatter;
  if (name == "all_to_all") return models::Collective::all_to_all;
  return models::Collective::broadcast;
}

}  // namespace

std::vector<GemmSample> compute_bound_gemms(const std::vector<GemmSample>& samples,
                                            double* floor_s, int* set_aside) {
  if (floor_s) *floor_s = 0;
  if (set_aside) *set_aside = 0;
  if (samples.empty()) return samples;
  double floor = samples.front().seconds;
  for (const auto& s : samples) floor = std::min(floor, s.seconds);
  // Back-to-back launches overlap the previous kernel, so a call takes about the larger of the
  // launch cost and the kernel: past twice the floor, the time is the kernel's.
  std::vector<GemmSample> kept;
  for (const auto& s : samples)
    if (s.seconds >= 2 * floor) kept.push_back(s);
  // Only when the floor is what most small samples measured: a curve whose smallest points are
  // compute-bound keeps all of them.
  const auto left_out = static_cast<int>(samples.size() - kept.size());
  if (kept.size() < 3 || left_out < 3) return samples;
  if (floor_s) *floor_s = floor;
  if (set_aside) *set_aside = left_out;
  return kept;
}

GemmFit fit_gemm(const std::vector<GemmSample>& all_samples) {
  GemmFit fit;
  if (all_samples.empty()) return fit;
  const std::vector<GemmSample> samples =
      compute_bound_gemms(all_samples, &fit.launch_floor_s, &fit.floor_bound);
  // The residual in log space is smooth and unimodal in log h in practice: a coarse scan over
  // 1..8192 then golden-section refinement.
  auto residual_at = [&](double log_h) {
    double r = 0;
    gemm_rate_for(samples, std::exp(log_h), &r);
    return r;
  };
  double best_log = 0, best = residual_at(0);
  for (double log_h = 0; log_h <= std::log(8192.0); log_h += 0.05) {
    const double r = residual_at(log_h);
    if (r < best) {
      best = r;
      best_log = log_h;
    }
  }
  double lo = best_log - 0.05, hi = best_log + 0.05;
  const double phi = (std::sqrt(5.0) - 1) / 2;
  for (int i = 0; i < 60; ++i) {
    const double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo);
    (residual_at(a) < residual_at(b) ? hi : lo) = residual_at(a) < residual_at(b) ? b : a;
  }
  fit.half_dim = std::exp((lo + hi) / 2);
  fit.rate = gemm_rate_for(samples, fit.half_dim, nullptr);
  std::vector<double> model, measured;
  for (const auto& s : samples) {
    model.push_back(2.0 * s.m * s.n * s.k / (fit.rate * gemm_shape_factor(s, fit.half_dim)));
    measured.push_back(s.seconds);
  }
  fit.quality = quality("gemm " + std::string(to_string(samples.front().dtype)), model, measured);
  fit.quality.parameters = {"rate " + number(fit.rate) + " FLOP/s", "half_dim " + number(fit.half_dim)};
  if (fit.floor_bound > 0) {
    fit.quality.parameters.push_back(std::to_string(fit.floor_bound) +
                                     " samples at the launch floor " +
                                     number(fit.launch_floor_s) + " s set aside");
  }
  return fit;
}

double elementwise_bytes(const ElementwiseSample& s) {
  // Inputs and outputs, each read or written once: binary ops read two and write one.
  const double tensors = (s.op == "add" || s.op == "mul") ? 3.0 : 2.0;
  return tensors * s.elements * bytes_per_element(s.dtype);
}

namespace {

// t = bytes / B: least squares on relative error, 1/B = sum(b/t) / sum((b/t)^2).
BandwidthFit fit_bandwidth(const std::vector<double>& bytes, const std::vector<double>& seconds,
                           std::string what) {
  BandwidthFit fit;
  if (bytes.empty()) return fit;
  Eigen::VectorXd x(static_cast<Eigen::Index>(bytes.size()));
  for (std::size_t i = 0; i < bytes.size(); ++i)
    x[static_cast<Eigen::Index>(i)] = bytes[i] / seconds[i];
  const double inverse = x.sum() / x.squaredNorm();
  fit.bandwidth = 1.0 / inverse;
  std::vector<double> model;
  for (double b : bytes) model.push_back(b / fit.bandwidth);
  fit.quality = quality(std::move(what), model, seconds);
  fit.quality.parameters = {"bandwidth " + number(fit.bandwidth) + " B/s"};
  return fit;
}

}  // namespace

BandwidthFit fit_elementwise_bandwidth(const std::vector<ElementwiseSample>& samples) {
  std::vector<double> bytes, seconds;
  for (const auto& s : samples) {
    bytes.push_back(elementwise_bytes(s));
    seconds.push_back(s.seconds);
  }
  return fit_bandwidth(bytes, seconds, "element-wise kernels");
}

BandwidthFit fit_stream_bandwidth(const std::vector<MemorySample>& samples) {
  std::vector<double> bytes, seconds;
  for (const auto& s : samples) {
    bytes.push_back(s.bytes);
    seconds.push_back(s.seconds);
  }
  return fit_bandwidth(bytes, seconds, "stream kernels");
}

AttentionFit fit_attention(const std::vector<AttentionSample>& given, double half_seq,
                           double half_head_dim) {
  AttentionFit fit;
  if (given.empty()) return fit;
  // The compute model prices causal attention (a decoder's): where the samples include causal
  // ones, the rate comes from those alone. A causal kernel does less per counted FLOP than a
  // non-causal one (uneven rows of tiles, masked diagonal tiles): FlashAttention-2 on A100 at
  // head size 128, 16k tokens, 189 against 203 TFLOP/s (docs/models/compute.md).
  const bool any_causal =
      std::any_of(given.begin(), given.end(), [](const AttentionSample& s) { return s.causal; });
  std::vector<AttentionSample> samples;
  for (const auto& s : given)
    if (s.causal || !any_causal) samples.push_back(s);
  // Forward FLOPs as the compute model counts them (causal halves the work), backward 2.5x.
  auto flops = [](const AttentionSample& s) {
    return (s.causal ? 0.5 : 1.0) * 4.0 * s.batch * s.heads * static_cast<double>(s.seq) * s.seq *
           s.head_dim;
  };
  // The curve at a sample's sequence length and head width, over its rate.
  auto shape = [&](const AttentionSample& s) {
    return s.seq / (s.seq + half_seq) *
           models::attention_head_dim_factor(s.head_dim, half_head_dim);
  };
  std::vector<double> x;
  for (const auto& s : samples) {
    x.push_back(flops(s) / (s.forward_s * shape(s)));
    x.push_back(2.5 * flops(s) / (s.backward_s * shape(s)));
  }
  // Rate in log space: the geometric mean.
  double log_sum = 0;
  for (double v : x) log_sum += std::log(v);
  fit.rate = std::exp(log_sum / static_cast<double>(x.size()));
  std::vector<double> model, measured;
  for (const auto& s : samples) {
    const double rate = fit.rate * shape(s);
    model.push_back(flops(s) / rate);
    measured.push_back(s.forward_s);
    model.push_back(2.5 * flops(s) / rate);
    measured.push_back(s.backward_s);
  }
  fit.quality = quality("fused attention " + std::string(to_string(samples.front().dtype)), model,
                        measured);
  fit.quality.parameters = {"rate " + number(fit.rate) + " FLOP/s"};
  if (any_causal && samples.size() < given.size())
    fit.quality.parameters.push_back("causal samples only (" + std::to_string(samples.size()) +
                                     " of " + std::to_string(given.size()) +
                                     "): the model prices causal attention");
  return fit;
}

CollectiveFit fit_collective(const std::vector<CollectiveSample>& samples) {
  CollectiveFit fit;
  if (samples.empty()) return fit;
  fit.collective = samples.front().collective;
  fit.ranks = samples.front().ranks;
  const int n = fit.ranks;
  const double steps = ring_steps(fit.collective, n);
  const double factor = models::bus_factor(collective_kind(fit.collective), n);
  // Relative least squares: rows (steps / t, factor bytes / t) . (latency, 1/busbw) = 1.
  const auto rows = static_cast<Eigen::Index>(samples.size());
  Eigen::MatrixXd a(rows, 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(rows);
  for (Eigen::Index i = 0; i < rows; ++i) {
    const auto& s = samples[static_cast<std::size_t>(i)];
    a(i, 0) = steps / s.seconds;
    a(i, 1) = factor * s.bytes / s.seconds;
  }
  Eigen::Vector2d x = a.colPivHouseholderQr().solve(b);
  // A negative term means the data cannot tell it apart from zero: refit without it.
  if (x[0] < 0) {
    x[0] = 0;
    x[1] = a.col(1).dot(b) / a.col(1).squaredNorm();
  } else if (x[1] <= 0) {
    x[1] = 1e-30;
    x[0] = a.col(0).dot(b) / a.col(0).squaredNorm();
  }
  fit.latency = x[0];
  fit.bus_bandwidth = 1.0 / x[1];
  std::vector<double> model, measured;
  for (const auto& s : samples) {
    model.push_back(steps * fit.latency + factor * s.bytes / fit.bus_bandwidth);
    measured.push_back(s.seconds);
  }
  fit.quality = quality(fit.collective + " over " + std::to_string(n) + " ranks", model, measured);
  fit.quality.parameters = {"latency " + number(fit.latency) + " s/step",
                            "bus bandwidth " + number(fit.bus_bandwidth) + " B/s"};
  return fit;
}

CalibrationBundle collectives_bundle(const std::vector<importers::CollectiveSweep>& sweeps,
                                     const std::string& file) {
  CalibrationBundle bundle;
  bundle.file = file;
  bundle.probe_version = "imported";
  for (const auto& sweep : sweeps) {
    if (bundle.host.device.empty() && !sweep.devices.empty()) bundle.host.device = sweep.devices.front();
    bundle.probe_version = sweep.tool + " " + sweep.version;
    // nccl-tests names its all-to-all after its binary (alltoall_perf).
    const std::string name = sweep.collective == "alltoall" ? "all_to_all" : sweep.collective;
    const bool known = name == "all_reduce" || name == "all_gather" || name == "reduce_scatter" ||
                       name == "broadcast" || name == "all_to_all";
    if (!known || sweep.ranks < 2) {
      bundle.skipped.push_back(sweep.tool + " " + (sweep.collective.empty() ? "?" : sweep.collective) +
                               " at line " + std::to_string(sweep.location.line) + ": " +
                               (known ? "the rank count is not in the log"
                                      : "not a collective the model prices"));
      continue;
    }
    for (const auto& point : sweep.points) {
      const auto seconds = point.out_of_place_time_s ? point.out_of_place_time_s : point.in_place_time_s;
      if (!seconds || *seconds <= 0 || point.bytes <= 0) continue;
      if (point.check_passed && !*point.check_passed) continue;  // wrong results are no timing
      bundle.collectives.push_back({name, sweep.ranks, point.bytes, *seconds});
    }
  }
  return bundle;
}

Calibration calibrate(const ChipProfile& base, const std::vector<CalibrationBundle>& bundles,
                      const std::string& label) {
  Calibration out;
  ChipProfile& p = out.profile;
  p = base;
  p.id = base.id + "." + label;
  p.efficiency.calibrated = true;

  // Provenance: one source for everything fitted here.
  std::string citation = "hetplan calibrate, fitted by least squares to calibration bundle(s)";
  for (const auto& bundle : bundles) {
    citation += " " + bundle.file + " (probe " + bundle.probe_version + ", started " +
                bundle.started + ", host " + bundle.host.hostname + ", " + bundle.host.device +
                ", " + bundle.host.runtime.name + " " + bundle.host.runtime.version + ", torch " +
                bundle.host.torch + ")";
  }
  const std::string source = "calibration-" + label;
  p.sources[source] = citation;
  // Each fitted number cites the calibration itself, in the {value, source} form, so that it
  // never shares a section source with the numbers it sits beside.
  auto cite = [&](const std::string& path) {
    p.cited_by.erase(path);
    p.cited_by[path + ".value"] = source;
  };
  // The software the bundle measured; what it does not say (a bundle made from an nccl-tests
  // log knows no runtime) stays the base profile's, and the notes say so.
  if (!bundles.empty()) {
    const auto& host = bundles.front().host;
    if (!host.runtime.name.empty() && !host.runtime.version.empty()) {
      p.runtime = host.runtime;
    } else {
      out.notes.push_back("runtime not in the bundle: kept the base profile's " + base.runtime.name +
                          " " + base.runtime.version);
    }
    if (!host.torch.empty()) {
      p.framework_adapter = {"PyTorch", host.torch};
    } else {
      out.notes.push_back("framework not in the bundle: kept the base profile's " +
                          base.framework_adapter.name + " " + base.framework_adapter.version);
    }
  }

  for (const auto& bundle : bundles)
    for (const auto& skipped : bundle.skipped) out.notes.push_back(bundle.file + ": skipped " + skipped);

  // Gather the samples of all bundles.
  std::map<DType, std::vector<GemmSample>> gemm;
  std::vector<MemorySample> stream;
  std::map<DType, std::vector<ElementwiseSample>> elementwise;
  std::map<DType, std::vector<AttentionSample>> fused;
  std::map<std::pair<std::string, int>, std::vector<CollectiveSample>> collectives;
  std::map<OpClass, Support> coverage;
  for (const auto& bundle : bundles) {
    for (const auto& s : bundle.gemm) gemm[s.dtype].push_back(s);
    stream.insert(stream.end(), bundle.memory.begin(), bundle.memory.end());
    for (const auto& s : bundle.elementwise) elementwise[s.dtype].push_back(s);
    for (const auto& s : bundle.attention)
      if (s.kernel == "sdpa") fused[s.dtype].push_back(s);
    for (const auto& s : bundle.collectives) collectives[{s.collective, s.ranks}].push_back(s);
    for (const auto& s : bundle.operators) {
      // The worst status any bundle saw.
      auto [it, inserted] = coverage.try_emplace(s.op, s.status);
      if (!inserted && static_cast<int>(s.status) > static_cast<int>(it->second)) it->second = s.status;
    }
  }

  // Compute. One efficiency curve serves every dtype of a chip, so it is fitted for one
  // reference dtype — the dtype of the bundles' training steps, else bf16, else the first —
  // from the forward layout (x W^T, "nt"), with the backward layouts' best rate beside it.
  // Where the profile knows a peak, efficiency is rate / peak; where it does not, the best
  // fitted rate stands in for the peak (MFU is then against the best measured rate).
  std::optional<DType> reference;
  for (const auto& bundle : bundles)
    if (!bundle.steps.empty() && gemm.contains(bundle.steps.front().dtype))
      reference = bundle.steps.front().dtype;
  if (!reference && gemm.contains(DType::bf16)) reference = DType::bf16;
  if (!reference && !gemm.empty()) reference = gemm.begin()->first;
  if (reference) {
    std::vector<GemmSample> forward, backward;
    for (const auto& s : gemm[*reference])
      (s.layout == "nn" || s.layout == "tn" ? backward : forward).push_back(s);
    if (forward.empty()) std::swap(forward, backward);
    const std::string name(to_string(*reference));
    const GemmFit fit = fit_gemm(forward);
    out.fits.push_back(fit.quality);
    out.fits.back().what += forward.size() < gemm[*reference].size() ? " forward (nt)" : "";
    double backward_rate = fit.rate;
    if (!backward.empty()) {
      GemmFit back = fit_gemm(backward);  // for its quality; the rate is refitted at h below
      const std::vector<GemmSample> backward_fitted = compute_bound_gemms(backward);
      backward_rate = gemm_rate_for(backward_fitted, fit.half_dim, nullptr);
      std::vector<double> model, measured;
      for (const auto& s : backward_fitted) {
        model.push_back(2.0 * s.m * s.n * s.k / (backward_rate * gemm_shape_factor(s, fit.half_dim)));
        measured.push_back(s.seconds);
      }
      back.quality = quality("gemm " + name + " backward (nn, tn)", model, measured);
      back.quality.parameters = {"rate " + number(backward_rate) + " FLOP/s at half_dim " +
                                 number(fit.half_dim)};
      out.fits.push_back(back.quality);
    }
    auto& peak = p.peak_flops[*reference];
    if (!peak) {
      peak = std::max(fit.rate, backward_rate);
      cite("compute.peak." + name);
      out.notes.push_back(name + " peak unknown: set to the best fitted GEMM rate " +
                          number(*peak) + " FLOP/s");
    }
    p.efficiency.gemm_max = std::min(1.0, fit.rate / *peak);
    p.efficiency.gemm_half_dim = fit.half_dim;
    cite("efficiency.gemm.max");
    cite("efficiency.gemm.half_dim");
    // Most small GEMMs measured the same back-to-back time: that is the stream's launch floor
    // (the probe runs each point's kernels back to back between two synchronisations).
    if (fit.floor_bound > 0) {
      p.efficiency.kernel_overhead = fit.launch_floor_s;
      cite("efficiency.kernel_overhead");
      out.notes.push_back("kernel launch floor: " + number(fit.launch_floor_s) + " s, from " +
                          std::to_string(fit.floor_bound) + " GEMMs that measured it");
    }
    if (!backward.empty()) {
      p.efficiency.gemm_backward_max = std::min(1.0, backward_rate / *peak);
      cite("efficiency.gemm.backward_max");
    }
    if (std::max(fit.rate, backward_rate) > *peak)
      out.notes.push_back(name + " GEMMs ran faster than the profile's peak: efficiency capped at 1");
    // Other dtypes share the curve: their own fit tells how fast, and an unknown peak is set so
    // that the shared efficiency gives that rate.
    for (auto& [dtype, samples] : gemm) {
      if (dtype == *reference) continue;
      std::vector<GemmSample> nt;
      for (const auto& s : samples)
        if (s.layout != "nn" && s.layout != "tn") nt.push_back(s);
      const GemmFit other = fit_gemm(nt.empty() ? samples : nt);
      out.fits.push_back(other.quality);
      auto& other_peak = p.peak_flops[dtype];
      if (!other_peak) {
        other_peak = other.rate / *p.efficiency.gemm_max;
        cite("compute.peak." + std::string(to_string(dtype)));
        out.notes.push_back(std::string(to_string(dtype)) + " peak unknown: set to " +
                            number(*other_peak) + " FLOP/s so that the " + name +
                            " efficiency curve gives its fitted rate");
      }
    }
  }

  // Memory: the stream kernels give the bandwidth where the profile has none; the element-wise
  // kernels give the efficiency the compute model applies to memory-bound operators.
  if (!stream.empty() && !p.memory_bandwidth) {
    const BandwidthFit fit = fit_stream_bandwidth(stream);
    out.fits.push_back(fit.quality);
    p.memory_bandwidth = fit.bandwidth;
    cite("memory.bandwidth");
    out.notes.push_back("memory bandwidth unknown: set to the stream kernels' " +
                        number(fit.bandwidth) + " B/s");
  }
  std::vector<ElementwiseSample> memory_bound;
  for (auto& [dtype, samples] : elementwise)
    memory_bound.insert(memory_bound.end(), samples.begin(), samples.end());
  if (!memory_bound.empty() && p.memory_bandwidth) {
    const BandwidthFit fit = fit_elementwise_bandwidth(memory_bound);
    out.fits.push_back(fit.quality);
    p.efficiency.memory = std::min(1.0, fit.bandwidth / *p.memory_bandwidth);
    if (fit.bandwidth > *p.memory_bandwidth)
      out.notes.push_back("element-wise kernels beat the memory bandwidth (caches): efficiency capped at 1");
    cite("efficiency.memory");
  }

  // Fused attention: efficiency against the training dtype's peak.
  for (auto& [dtype, samples] : fused) {
    const auto peak = p.peak(dtype);
    if (!peak) continue;
    const models::EfficiencyDefaults curve;
    const AttentionFit fit =
        fit_attention(samples, curve.attention_half_seq, curve.attention_half_head_dim);
    out.fits.push_back(fit.quality);
    p.efficiency.attention_max = std::min(1.0, fit.rate / *peak);
    cite("efficiency.attention.max");
  }

  // Operator coverage as measured.
  for (const auto& [op, status] : coverage) {
    const std::string path = "operators.classes." + std::string(to_string(op));
    if (status == p.default_support) {
      p.op_coverage.erase(op);
      p.cited_by.erase(path);
    } else {
      p.cited_by[path] = source;
      OpCoverage c;
      c.support = status;
      const auto known = base.op_coverage.find(op);
      c.slowdown = known != base.op_coverage.end() ? known->second.slowdown : 1.0;
      p.op_coverage[op] = c;
    }
  }

  // Collectives: the all-reduce fits of the largest group inside one node (ranks up to the
  // chips per node) and of the largest across nodes; the all-to-all fit of the largest group
  // inside one node (a mixture's expert-parallel exchange, docs/models/moe.md#exchange).
  std::optional<CollectiveFit> intra, network, intra_a2a;
  const int per_node = p.chips_per_node.value_or(1);
  for (auto& [key, samples] : collectives) {
    const CollectiveFit fit = fit_collective(samples);
    out.fits.push_back(fit.quality);
    if (key.first == "all_to_all" && fit.ranks <= per_node) {
      // A latency and a bandwidth need sizes on both sides of their crossing: three at least.
      std::set<double> sizes;
      for (const auto& sample : samples) sizes.insert(sample.bytes);
      if (sizes.size() < 3) {
        out.notes.push_back("all-to-all over " + std::to_string(fit.ranks) + " ranks measured at " +
                            std::to_string(sizes.size()) +
                            " size(s): three or more are needed to fit its latency and bandwidth");
      } else if (!intra_a2a || fit.ranks > intra_a2a->ranks) {
        intra_a2a = fit;
      }
    }
    if (key.first != "all_reduce") continue;
    auto& level = fit.ranks <= per_node ? intra : network;
    if (!level || fit.ranks > level->ranks) level = fit;
  }
  if (network) {
    if (p.nic_count && p.nic_speed) {
      const double per_chip = *p.nic_count * *p.nic_speed / per_node;
      const double measured = network->bus_bandwidth / per_chip;
      p.efficiency.network_bus_efficiency = std::min(1.5, measured);
      if (measured > 1.5) {
        out.notes.push_back("network bus efficiency measured at " + number(measured) +
                            " of the NICs (an in-network reduction, or NICs the profile "
                            "undercounts): capped at 1.5");
      }
      p.efficiency.network_latency = network->latency;
      cite("efficiency.network_collectives.bus_efficiency");
      cite("efficiency.network_collectives.latency");
    } else {
      out.notes.push_back("all-reduce across nodes measured, but the profile's NICs are unknown: "
                          "network efficiency not set");
    }
  }
  if (intra) {
    if (!p.intra_node.bandwidth) {
      p.intra_node.bandwidth = intra->bus_bandwidth;
      cite("node.intra_node.bandwidth");
      out.notes.push_back("intra-node bandwidth unknown: set to the all-reduce bus bandwidth " +
                          number(intra->bus_bandwidth) + " B/s");
    }
    p.efficiency.intra_bus_efficiency = intra->bus_bandwidth / *p.intra_node.bandwidth;
    p.efficiency.intra_latency = intra->latency;
    cite("efficiency.intra_node_collectives.bus_efficiency");
    cite("efficiency.intra_node_collectives.latency");
  }
  if (intra_a2a) {
    if (p.intra_node.bandwidth) {
      p.efficiency.intra_all_to_all_efficiency =
          std::min(1.5, intra_a2a->bus_bandwidth / *p.intra_node.bandwidth);
      p.efficiency.intra_all_to_all_latency = std::min(1.0, intra_a2a->latency);
      cite("efficiency.intra_node_all_to_all.bus_efficiency");
      cite("efficiency.intra_node_all_to_all.latency");
    } else {
      out.notes.push_back("all-to-all inside a node measured, but the profile's intra-node "
                          "bandwidth is unknown: its all-to-all efficiency not set");
    }
  }
  // A fit outside what a profile holds (docs/formats/chip.md: a near-zero or NaN time, a
  // collective that moved nothing) is no figure: the base profile's stays, and the notes say so.
  struct Range {
    const char* path;
    std::optional<double> EfficiencyModel::*field;
    double low, high;
  };
  static constexpr Range kRanges[] = {
      {"efficiency.gemm.max", &EfficiencyModel::gemm_max, 0.01, 1.0},
      {"efficiency.gemm.half_dim", &EfficiencyModel::gemm_half_dim, 0.0, 65536.0},
      {"efficiency.gemm.backward_max", &EfficiencyModel::gemm_backward_max, 0.01, 1.0},
      {"efficiency.kernel_overhead", &EfficiencyModel::kernel_overhead, 0.0, 1e-3},
      {"efficiency.memory", &EfficiencyModel::memory, 0.01, 1.0},
      {"efficiency.attention.max", &EfficiencyModel::attention_max, 0.01, 1.0},
      {"efficiency.network_collectives.bus_efficiency", &EfficiencyModel::network_bus_efficiency,
       0.01, 1.5},
      {"efficiency.network_collectives.latency", &EfficiencyModel::network_latency, 0.0, 1.0},
      {"efficiency.intra_node_collectives.bus_efficiency", &EfficiencyModel::intra_bus_efficiency,
       0.01, 1.5},
      {"efficiency.intra_node_collectives.latency", &EfficiencyModel::intra_latency, 0.0, 1.0},
      {"efficiency.intra_node_all_to_all.bus_efficiency",
       &EfficiencyModel::intra_all_to_all_efficiency, 0.01, 1.5},
      {"efficiency.intra_node_all_to_all.latency", &EfficiencyModel::intra_all_to_all_latency, 0.0,
       1.0},
  };
  for (const Range& range : kRanges) {
    std::optional<double>& value = p.efficiency.*range.field;
    if (!value || (*value >= range.low && *value <= range.high)) continue;
    out.notes.push_back(std::string(range.path) + " fitted at " + number(*value) +
                        ", outside what a profile holds (" + number(range.low) + " to " +
                        number(range.high) + "): kept the base profile's");
    value = base.efficiency.*range.field;
    p.cited_by.erase(std::string(range.path) + ".value");
    if (const auto it = base.cited_by.find(range.path); it != base.cited_by.end())
      p.cited_by[range.path] = it->second;
    if (const auto it = base.cited_by.find(std::string(range.path) + ".value");
        it != base.cited_by.end())
      p.cited_by[it->first] = it->second;
  }
  carry_comments(base, p);
  return out;
}

void carry_comments(const ChipProfile& base, ChipProfile& profile) {
  profile.comments = base.comments;
  // A number's source, in either of the forms cited_by names it.
  auto source_of = [](const ChipProfile& chip, const std::string& path) -> std::string {
    if (const auto it = chip.cited_by.find(path); it != chip.cited_by.end()) return it->second;
    if (const auto it = chip.cited_by.find(path + ".value"); it != chip.cited_by.end())
      return it->second;
    return {};
  };
  std::set<std::string> changed;
  for (const ChipProfile* chip : std::array<const ChipProfile*, 2>{&base, &profile}) {
    for (const auto& [key, source] : chip->cited_by) {
      const std::string path = key.ends_with(".value") ? key.substr(0, key.size() - 6) : key;
      if (source_of(base, path) != source_of(profile, path)) changed.insert(path);
    }
  }
  // A comment on a line that holds values speaks of them ("271.2 / 312"): it goes when one of
  // them was fitted. Comments on a section's own line stay.
  for (auto it = profile.comments.begin(); it != profile.comments.end();) {
    const std::string& at = it->first;
    const bool stale = it->second.on_values && std::any_of(changed.begin(), changed.end(),
                                                           [&](const std::string& path) {
                                                             return path == at ||
                                                                    path.starts_with(at + ".");
                                                           });
    it = stale ? profile.comments.erase(it) : std::next(it);
  }
}

namespace {

std::string describe(const ModelShape& model, int micro_batch, int seq, DType dtype) {
  return std::to_string(model.layers) + " layers, hidden " + std::to_string(model.hidden) +
         ", micro-batch " + std::to_string(micro_batch) + " x " + std::to_string(seq) + ", " +
         std::string(to_string(dtype));
}

// One chip of `profile` alone, as a cluster.
Cluster single_chip(const ChipProfile& profile) {
  Cluster cluster;
  cluster.name = "probe-host";
  cluster.chips.push_back(profile);
  Island island;
  island.name = "host";
  island.chip = 0;
  island.nodes = 1;
  island.chips_per_node = 1;
  island.nic_count = 1;
  island.nic_speed = 1e9;
  island.runtime = profile.runtime;
  island.nodes_per_leaf = 1;
  cluster.islands.push_back(island);
  return cluster;
}

Workload workload_for(const ModelShape& model, int micro_batch, int seq, DType dtype,
                      const ChipProfile& profile) {
  Workload w;
  w.name = "probe-step";
  w.model = model;
  w.training.seq_len = seq;
  w.training.global_batch = micro_batch;
  w.training.micro_batch = micro_batch;
  w.training.dtype = dtype;
  w.training.fp32_grad_accumulation = dtype != DType::fp32;
  w.training.optimizer = Optimizer::adamw;
  w.training.flash_attention =
      profile.coverage(OpClass::flash_attention).support != Support::missing;
  return w;
}

}  // namespace

std::vector<StepCheck> check_bundle(const ChipProfile& profile, const CalibrationBundle& bundle) {
  std::vector<StepCheck> out;
  const Cluster cluster = single_chip(profile);
  for (const auto& step : bundle.steps) {
    StepCheck check;
    check.what = "training step: " + describe(step.model, step.micro_batch, step.seq, step.dtype);
    check.measured_s = step.seconds;
    const Workload w = workload_for(step.model, step.micro_batch, step.seq, step.dtype, profile);
    Plan plan;
    plan.name = "probe-step";
    plan.stages.push_back({"host", 0, step.model.layers, 1, 1, {}, {}});
    const sim::Estimate e = sim::estimate_step(cluster, w, plan);
    check.predicted_s = e.step_time_s;
    check.feasible = e.feasible;
    check.reasons = e.reasons;
    check.error = (check.predicted_s - check.measured_s) / check.measured_s;
    out.push_back(std::move(check));
  }
  for (const auto& layer : bundle.layers) {
    ModelShape model = layer.model;
    model.layers = 1;
    const Workload w = workload_for(model, layer.micro_batch, layer.seq, layer.dtype, profile);
    const auto resolved = models::resolve_rates(profile, layer.dtype);
    if (!resolved.rates) continue;
    // A mixture's layer on one chip: every expert local (ep 1), so the chip takes exactly its
    // tokens' copies (imbalance 1), each expert its share of them.
    models::LayerSlice slice{layer.micro_batch,          layer.seq,  1, false,
                             w.training.flash_attention, layer.dtype};
    slice.grouped_gemm = layer.grouped_gemm;
    double forward = 0, backward = 0;
    for (const auto& op : models::layer_ops(model, slice)) {
      forward += models::forward_time(op, *resolved.rates);
      backward += models::backward_time(op, *resolved.rates);
    }
    std::string what = "layer: hidden " + std::to_string(model.hidden);
    if (model.moe()) {
      what += ", " + std::to_string(model.experts) + " experts of " +
              std::to_string(model.expert_ffn) + ", " + std::to_string(model.experts_per_token) +
              " a token" + (layer.grouped_gemm ? " (grouped GEMM)" : " (a GEMM each)");
    }
    what += ", micro-batch " + std::to_string(layer.micro_batch) + " x " +
            std::to_string(layer.seq) + ", " + std::string(to_string(layer.dtype));
    out.push_back({what + " forward", layer.forward_s, forward,
                   (forward - layer.forward_s) / layer.forward_s, true, {}});
    out.push_back({what + " backward", layer.backward_s, backward,
                   (backward - layer.backward_s) / layer.backward_s, true, {}});
  }
  // All-to-alls inside one node (a mixture's expert-parallel exchange), priced as the estimator
  // prices an expert-parallel group of one node: with the profile's all-to-all figures where it
  // has them, else the intra-node link the all-reduce calibrated (or its prior). Across nodes
  // the probe's node cannot say.
  const sim::EstimateOptions priors;
  const int per_node = profile.chips_per_node.value_or(1);
  const EfficiencyModel& eff = profile.efficiency;
  const double intra_latency = eff.intra_latency.value_or(priors.intra_latency_default);
  for (const auto& s : bundle.collectives) {
    if (s.collective != "all_to_all" || s.ranks < 2 || s.ranks > per_node) continue;
    if (!profile.intra_node.bandwidth) continue;
    models::CollectiveGroup group;
    group.ranks = s.ranks;
    group.ranks_per_node = s.ranks;
    group.intra = {*profile.intra_node.bandwidth *
                       eff.intra_all_to_all_efficiency.value_or(
                           eff.intra_bus_efficiency.value_or(priors.intra_bus_efficiency_default)),
                   eff.intra_all_to_all_efficiency
                       ? eff.intra_all_to_all_latency.value_or(intra_latency)
                       : intra_latency};
    const double predicted =
        models::best_collective(models::Collective::all_to_all, s.bytes, group).time;
    out.push_back(
        {"all-to-all over " + std::to_string(s.ranks) + " ranks, " + number(s.bytes) + " bytes",
         s.seconds,
         predicted,
         (predicted - s.seconds) / s.seconds,
         true,
         {}});
  }
  return out;
}

}  // namespace hetplan::validation
