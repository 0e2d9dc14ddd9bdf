// Calibration recovers known parameters from synthetic microbenchmarks with noise.
#include "validation/calibrate.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "importers/collective_logs.hpp"
#include "models/compute.hpp"
#include "sim/estimator.hpp"

namespace hetplan::validation {
namespace {

// Multiplicative noise of about +-`spread`, seeded.
struct Noise {
  std::mt19937 rng{20261129};
  double spread;
  explicit Noise(double s) : spread(s) {}
  double operator()() { return 1.0 + std::uniform_real_distribution<double>(-spread, spread)(rng); }
};

std::vector<GemmSample> synthetic_gemms(double rate, double half_dim, Noise& noise) {
  std::vector<GemmSample> out;
  for (double m : {64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0}) {
    for (double k : {128.0, 1024.0, 4096.0}) {
      GemmSample s;
      s.m = m;
      s.n = m;
      s.k = k;
      auto g = [&](double x) { return x / (x + half_dim); };
      s.seconds = 2 * s.m * s.n * s.k / (rate * g(s.m) * g(s.n) * g(s.k)) * noise();
      out.push_back(s);
    }
  }
  return out;
}

TEST(Calibrate, GemmCurveIsRecoveredFromNoisySamples) {
  Noise noise(0.03);
  const GemmFit fit = fit_gemm(synthetic_gemms(4.5e14, 180.0, noise));
  EXPECT_NEAR(fit.rate, 4.5e14, 0.03 * 4.5e14);
  EXPECT_NEAR(fit.half_dim, 180.0, 0.15 * 180.0);
  EXPECT_EQ(fit.quality.points, 18);
  EXPECT_LT(fit.quality.rms_relative_error, 0.03);
  EXPECT_GT(fit.quality.rms_relative_error, 0.0);
}

TEST(Calibrate, BandwidthIsRecoveredFromNoisySamples) {
  Noise noise(0.05);
  std::vector<ElementwiseSample> samples;
  for (const char* op : {"add", "gelu", "softmax", "rmsnorm"}) {
    for (double elements : {1e6, 4e6, 1.6e7}) {
      ElementwiseSample s;
      s.op = op;
      s.elements = elements;
      s.seconds = elementwise_bytes(s) / 1.2e12 * noise();
      samples.push_back(s);
    }
  }
  const BandwidthFit fit = fit_elementwise_bandwidth(samples);
  EXPECT_NEAR(fit.bandwidth, 1.2e12, 0.03 * 1.2e12);
}

TEST(Calibrate, CollectiveLatencyAndBandwidthAreRecovered) {
  Noise noise(0.04);
  std::vector<CollectiveSample> samples;
  const int ranks = 8;
  for (double bytes = 1024; bytes <= 1 << 28; bytes *= 4) {
    CollectiveSample s;
    s.collective = "all_reduce";
    s.ranks = ranks;
    s.bytes = bytes;
    s.seconds = (2.0 * (ranks - 1) * 12e-6 + 2.0 * (ranks - 1) / ranks * bytes / 180e9) * noise();
    samples.push_back(s);
  }
  const CollectiveFit fit = fit_collective(samples);
  EXPECT_NEAR(fit.latency, 12e-6, 0.1 * 12e-6);
  EXPECT_NEAR(fit.bus_bandwidth, 180e9, 0.05 * 180e9);
}

// A fused-attention sample of 2 sequences x 16 heads of 128 at `rate` FLOP/s (less at short
// sequences: s / (s + 512)), its FLOPs as the compute model counts them; `noise` scales each
// pass's time.
template <typename Scale>
AttentionSample attention_sample(int seq, bool causal, double rate, Scale&& noise) {
  AttentionSample s;
  s.batch = 2;
  s.heads = 16;
  s.seq = seq;
  s.head_dim = 128;
  s.causal = causal;
  s.kernel = "sdpa";
  const double flops = (causal ? 0.5 : 1.0) * 4.0 * 2 * 16 * double(seq) * seq * 128;
  const double at = rate * seq / (seq + 512.0);
  s.forward_s = flops / at * noise();
  s.backward_s = 2.5 * flops / at * noise();
  return s;
}

// Samples of 64- and 128-wide heads made by the model's curve with its head-width term give back
// the 128-wide rate; read as one rate, the narrow heads would pull it down.
TEST(Calibrate, FusedAttentionRateAtTheReferenceHeadWidth) {
  std::vector<AttentionSample> samples;
  for (int head_dim : {64, 128}) {
    for (int seq : {1024, 4096, 16384}) {
      AttentionSample s = attention_sample(seq, true, 5e14, [] { return 1.0; });
      const double narrow = head_dim / 128.0 * 148.0 / (head_dim + 20.0);  // the factor by hand
      s.heads = 2048 / head_dim;
      s.head_dim = head_dim;  // the same FLOPs: 16 x 128 = 32 x 64
      s.forward_s /= narrow;
      s.backward_s /= narrow;
      samples.push_back(s);
    }
  }
  EXPECT_NEAR(fit_attention(samples, 512.0, 20.0).rate, 5e14, 1e-6 * 5e14);
  EXPECT_LT(fit_attention(samples, 512.0, 0.0).rate, 0.95 * 5e14);
}

TEST(Calibrate, FusedAttentionRateIsRecovered) {
  Noise noise(0.03);
  std::vector<AttentionSample> samples;
  for (int seq : {512, 1024, 2048, 4096, 8192})
    samples.push_back(attention_sample(seq, true, 6e14, noise));
  const AttentionFit fit = fit_attention(samples, 512.0, 20.0);
  EXPECT_NEAR(fit.rate, 6e14, 0.03 * 6e14);
}

// Causal and non-causal kernels of one chip: the causal ones run slower per counted FLOP, and
// the model prices causal attention, so the rate is theirs; without causal samples, all count.
TEST(Calibrate, FusedAttentionRateFromTheCausalSamples) {
  std::vector<AttentionSample> samples;
  for (bool causal : {false, true}) {
    for (int seq : {1024, 4096, 16384})
      samples.push_back(attention_sample(seq, causal, causal ? 5e14 : 6e14, [] { return 1.0; }));
  }
  const AttentionFit causal = fit_attention(samples, 512.0, 20.0);
  EXPECT_NEAR(causal.rate, 5e14, 1e-6 * 5e14);
  EXPECT_EQ(causal.quality.points, 6);  // three samples, forward and backward
  samples.resize(3);                    // the non-causal ones alone
  EXPECT_NEAR(fit_attention(samples, 512.0, 20.0).rate, 6e14, 1e-6 * 6e14);
}

TEST(Calibrate, NewProfileVersionCitesTheBundleAndKeepsTheBase) {
  const ChipProfile base =
      formats::load_chip(std::string(HETPLAN_SOURCE_DIR) + "/profiles/nvidia-h100-sxm5-80gb.yaml");
  CalibrationBundle bundle;
  bundle.file = "h100.json";
  bundle.probe_version = "1";
  bundle.started = "2026-11-29T20:00:00Z";
  bundle.host = {"node1", "cuda", "NVIDIA H100", "2.4", "nccl", 8, 1, {"CUDA", "12.4"}};
  Noise noise(0.02);
  const double peak = *base.peak(DType::bf16);
  bundle.gemm = synthetic_gemms(0.7 * peak, 150.0, noise);
  for (auto& s : bundle.gemm) s.dtype = DType::bf16;
  bundle.operators.push_back({OpClass::dropout, Support::missing, "synthetic"});
  const Calibration result = calibrate(base, {bundle}, "cal1");
  const ChipProfile& p = result.profile;
  EXPECT_EQ(p.id, base.id + ".cal1");
  EXPECT_TRUE(p.efficiency.calibrated);
  ASSERT_TRUE(p.efficiency.gemm_max);
  EXPECT_NEAR(*p.efficiency.gemm_max, 0.7, 0.03);
  ASSERT_TRUE(p.efficiency.gemm_half_dim);
  EXPECT_NEAR(*p.efficiency.gemm_half_dim, 150.0, 25.0);
  EXPECT_EQ(*p.peak(DType::bf16), peak);  // a known peak is kept
  EXPECT_EQ(p.coverage(OpClass::dropout).support, Support::missing);
  const std::string& source = p.cited_by.at("efficiency.gemm.max.value");
  ASSERT_TRUE(p.sources.contains(source));
  EXPECT_NE(p.sources.at(source).find("h100.json (probe 1, started 2026-11-29T20:00:00Z"),
            std::string::npos);
  // What was not measured stays as it was.
  EXPECT_EQ(p.efficiency.attention_max, base.efficiency.attention_max);
  EXPECT_EQ(p.memory_capacity, base.memory_capacity);
  // It writes and reads back as a profile.
  const ChipProfile again = formats::parse_chip(formats::chip_yaml(p), "calibrated.yaml");
  EXPECT_EQ(again.id, p.id);
  EXPECT_EQ(again.efficiency.gemm_max, p.efficiency.gemm_max);
  EXPECT_EQ(again.cited_by, p.cited_by);
}

// An all-reduce across two nodes at twice what the profile's NICs carry (a switch that reduces in
// the network, or NICs the profile undercounts) is capped at 1.5 of the NICs, and a note says so.
TEST(Calibrate, ANetworkFasterThanItsNicsIsCappedWithANote) {
  const ChipProfile base =
      formats::load_chip(std::string(HETPLAN_SOURCE_DIR) + "/profiles/nvidia-h100-sxm5-80gb.yaml");
  const double per_chip = *base.nic_count * *base.nic_speed / *base.chips_per_node;  // 50 GB/s
  CalibrationBundle bundle;
  bundle.file = "two-nodes.log";
  const int ranks = 16;
  for (double bytes = 1 << 20; bytes <= 1 << 30; bytes *= 4) {
    CollectiveSample s;
    s.collective = "all_reduce";
    s.ranks = ranks;
    s.bytes = bytes;
    s.seconds = 2.0 * (ranks - 1) * 10e-6 + 2.0 * (ranks - 1) / ranks * bytes / (2.0 * per_chip);
    bundle.collectives.push_back(s);
  }
  const Calibration result = calibrate(base, {bundle}, "net");
  ASSERT_TRUE(result.profile.efficiency.network_bus_efficiency);
  EXPECT_EQ(*result.profile.efficiency.network_bus_efficiency, 1.5);
  const bool noted = std::any_of(result.notes.begin(), result.notes.end(), [](const std::string& n) {
    return n.find("network bus efficiency measured at 2") != std::string::npos &&
           n.find("capped at 1.5") != std::string::npos;
  });
  EXPECT_TRUE(noted) << ::testing::PrintToString(result.notes);
}

// A real GPU bundle whose small GEMMs all measure the launch cost (about 16 us), not the
// arithmetic. Fitted naively, the flat small points made the curve's half-dimension run to the
// edge of its range (7,813) and the rate to 62 PFLOP/s capped at the peak; the profile then
// predicted the bundle's own layers 3 to 19 times too slow. The floor-bound samples are set
// aside now.
TEST(Calibrate, GpuBundleWithALaunchFloor) {
  const CalibrationBundle bundle = formats::load_calibration_bundle(
      std::string(HETPLAN_SOURCE_DIR) + "/tests/validation/data/h200-probe-bundle.json");
  const ChipProfile base =
      formats::load_chip(std::string(HETPLAN_SOURCE_DIR) + "/profiles/nvidia-h100-sxm5-80gb.yaml");
  const Calibration calibration = calibrate(base, {bundle}, "h200");
  const ChipProfile& p = calibration.profile;
  // The bf16 GEMM curve sits below the peak, with a plausible size penalty.
  ASSERT_TRUE(p.efficiency.gemm_max && p.efficiency.gemm_half_dim);
  EXPECT_LT(*p.efficiency.gemm_max, 0.95);
  EXPECT_GT(*p.efficiency.gemm_max, 0.5);
  EXPECT_LT(*p.efficiency.gemm_half_dim, 1000.0);
  for (const auto& note : calibration.notes)
    EXPECT_EQ(note.find("faster than the profile's peak"), std::string::npos) << note;
  const auto gemm_fit = std::find_if(calibration.fits.begin(), calibration.fits.end(),
                                     [](const FitQuality& f) { return f.what.find("gemm bf16") == 0; });
  ASSERT_NE(gemm_fit, calibration.fits.end());
  EXPECT_LT(gemm_fit->rms_relative_error, 0.15);

  // The GEMMs at the floor give the stream's launch floor (about 16 us a kernel on this
  // virtualised GPU, against a 9 us prior); it becomes the profile's kernel overhead.
  ASSERT_TRUE(p.efficiency.kernel_overhead);
  EXPECT_GT(*p.efficiency.kernel_overhead, 9e-6);
  EXPECT_LT(*p.efficiency.kernel_overhead, 40e-6);
  EXPECT_EQ(p.cited_by.at("efficiency.kernel_overhead.value"), "calibration-h200");
  // Held out: the layers and the step the same run measured. Small layers stay too fast by up
  // to about 30%: the probe's layers launch more small kernels than the model counts (its
  // attention is unfused Python); none may be off by more than 40%.
  const auto checks = check_bundle(p, bundle);
  ASSERT_GE(checks.size(), 30u);
  for (const auto& check : checks) {
    EXPECT_TRUE(check.feasible) << check.what;
    EXPECT_LT(std::abs(check.error), 0.40) << check.what;
  }
}

// The text of the H200 probe bundle (tests/validation/data).
std::string h200_bundle_text() {
  std::ifstream in(std::string(HETPLAN_SOURCE_DIR) +
                   "/tests/validation/data/h200-probe-bundle.json");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The H200 probe bundle with `entries` (JSON objects, comma-separated) ahead of its layers.
std::string bundle_with_layers(const std::string& entries) {
  std::string bundle = h200_bundle_text();
  const std::string key = "\"layer\": [";
  const auto at = bundle.find(key);
  EXPECT_NE(at, std::string::npos);
  bundle.insert(at + key.size(), entries + ",");
  return bundle;
}

std::string layer_error(const std::string& entry) {
  try {
    (void)formats::parse_calibration_bundle(bundle_with_layers(entry), "bundle.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// A mixture's layer in a bundle (the probe's, without expert parallelism) is read with its
// experts and checked against the mixture's operators: with a GEMM per expert each projection
// launches one kernel per expert, with a grouped GEMM one. On shapes this small every expert
// GEMM is launch-bound (16 experts of 64 a layer: 2 x 16 x 64 x 64 FLOPs per expert, nanoseconds
// at any rate), so the two differ by exactly the launches: forward two projections x (experts -
// 1) floors, backward twice that (the input and weight gradients).
TEST(CalibrationBundle, AMixtureLayerIsPricedWithALaunchPerExpertWithoutGrouping) {
  const std::string moe =
      R"({"model": {"hidden": 64, "heads": 4, "kv_heads": 4, "activation": "swiglu", "norm": "rmsnorm",
          "experts": 16, "experts_per_token": 2, "expert_ffn": 64},
          "dtype": "bf16", "micro_batch": 1, "seq": 128, "grouped_gemm": GROUPED,
          "forward_seconds": 0.002, "backward_seconds": 0.004})";
  auto with = [&](const char* grouped) {
    std::string entry = moe;
    entry.replace(entry.find("GROUPED"), 7, grouped);
    return entry;
  };
  const CalibrationBundle bundle = formats::parse_calibration_bundle(
      bundle_with_layers(with("false") + "," + with("true")), "bundle.json");
  ASSERT_GE(bundle.layers.size(), 2u);
  EXPECT_EQ(bundle.layers[0].model.experts, 16);
  EXPECT_EQ(bundle.layers[0].model.experts_per_token, 2);
  EXPECT_EQ(bundle.layers[0].model.expert_ffn, 64);
  EXPECT_FALSE(bundle.layers[0].grouped_gemm);
  EXPECT_TRUE(bundle.layers[1].grouped_gemm);
  EXPECT_FALSE(bundle.layers[2].model.moe());

  const ChipProfile h100 =
      formats::load_chip(std::string(HETPLAN_SOURCE_DIR) + "/profiles/nvidia-h100-sxm5-80gb.yaml");
  const double floor = models::resolve_rates(h100, DType::bf16).rates->kernel_floor;
  ASSERT_GT(floor, 0.0);
  const auto checks = check_bundle(h100, bundle);
  auto find = [&](const std::string& what) {
    const auto it = std::find_if(checks.begin(), checks.end(),
                                 [&](const StepCheck& c) { return c.what == what; });
    EXPECT_NE(it, checks.end()) << what;
    return it == checks.end() ? StepCheck{} : *it;
  };
  const std::string layer = "layer: hidden 64, 16 experts of 64, 2 a token";
  const std::string shape = ", micro-batch 1 x 128, bf16";
  const StepCheck each_forward = find(layer + " (a GEMM each)" + shape + " forward");
  const StepCheck each_backward = find(layer + " (a GEMM each)" + shape + " backward");
  const StepCheck grouped_forward = find(layer + " (grouped GEMM)" + shape + " forward");
  const StepCheck grouped_backward = find(layer + " (grouped GEMM)" + shape + " backward");
  EXPECT_DOUBLE_EQ(each_forward.measured_s, 0.002);
  EXPECT_NEAR(each_forward.predicted_s - grouped_forward.predicted_s, 2 * 15 * floor, 1e-12);
  EXPECT_NEAR(each_backward.predicted_s - grouped_backward.predicted_s, 4 * 15 * floor, 1e-12);
  EXPECT_NEAR(each_forward.error, (each_forward.predicted_s - 0.002) / 0.002, 1e-12);
}

TEST(CalibrationBundle, AMixtureLayerIsCheckedFieldByField) {
  const std::string head =
      R"({"model": {"hidden": 64, "heads": 4, "kv_heads": 4, "activation": "swiglu", "norm": "rmsnorm", )";
  const std::string tail =
      R"(, "dtype": "bf16", "micro_batch": 1, "seq": 128, "forward_seconds": 0.002, "backward_seconds": 0.004})";
  // More experts a token than there are.
  EXPECT_NE(layer_error(head + R"("experts": 8, "experts_per_token": 9, "expert_ffn": 64})" + tail)
                .find("layer[0].model.experts_per_token: expected an integer from 1 to 8"),
            std::string::npos);
  // A mixture of one expert is a dense MLP.
  EXPECT_NE(layer_error(head + R"("experts": 1, "experts_per_token": 1, "expert_ffn": 64})" + tail)
                .find("layer[0].model.experts:"),
            std::string::npos);
  // A mixture needs its experts' width; a dense layer its ffn.
  EXPECT_NE(
      layer_error(head + R"("experts": 8, "experts_per_token": 2})" + tail).find("expert_ffn"),
      std::string::npos);
  EXPECT_NE(layer_error(head.substr(0, head.size() - 2) + "}" + tail)
                .find("layer[0].model.ffn: missing required key"),
            std::string::npos);
  // Grouping speaks of experts only.
  EXPECT_NE(layer_error(head + R"("ffn": 128}, "grouped_gemm": true)" + tail)
                .find("layer[0].grouped_gemm: expected only with a mixture's experts"),
            std::string::npos);
  // The experts are SwiGLU MLPs.
  std::string gelu = head + R"("experts": 8, "experts_per_token": 2, "expert_ffn": 64})" + tail;
  gelu.replace(gelu.find("swiglu"), 6, "gelu");
  EXPECT_NE(layer_error(gelu).find("expected activation swiglu for a mixture's experts"),
            std::string::npos);
  // And with all its fields, it is a layer like any other.
  EXPECT_EQ(layer_error(head + R"("experts": 8, "experts_per_token": 2, "expert_ffn": 64})" + tail),
            "no error");
}

// A time below a nanosecond (the probe floors noise there) would make a rate or an error
// infinite: it is refused at its field, like any other bad value.
TEST(CalibrationBundle, ATimeUnderANanosecondIsRefused) {
  const std::string layer =
      R"({"model": {"hidden": 64, "heads": 4, "kv_heads": 4, "ffn": 64, "activation": "swiglu",
          "norm": "rmsnorm"}, "dtype": "bf16", "micro_batch": 1, "seq": 16, "forward_seconds": TIME,
          "backward_seconds": 0.001})";
  auto with = [&](const char* time) {
    std::string entry = layer;
    entry.replace(entry.find("TIME"), 4, time);
    return layer_error(entry);
  };
  EXPECT_NE(with("1e-300").find("layer[0].forward_seconds: expected a time in seconds of at least "
                                "1e-9 (1 ns), got \"1e-300\""),
            std::string::npos);
  EXPECT_NE(with("0").find("layer[0].forward_seconds: expected a time in seconds of at least"),
            std::string::npos);
  EXPECT_EQ(with("1e-9"), "no error");
}

// A bundle with its collectives replaced by `entries` (a JSON list's elements).
CalibrationBundle bundle_with_collectives(const std::string& entries) {
  std::string text = h200_bundle_text();
  const std::string key = "\"collectives\": []";
  text.replace(text.find(key), key.size(), "\"collectives\": [" + entries + "]");
  return formats::parse_calibration_bundle(text, "bundle.json");
}

// A collective needs two ranks: one over a single rank moved nothing and is refused where it
// stands (it made calibrate divide by a bus factor of zero).
TEST(CalibrationBundle, ACollectiveOverOneRankIsRefused) {
  std::string error = "no error";
  try {
    (void)bundle_with_collectives(
        R"({"collective": "all_reduce", "ranks": 1, "bytes": 1048576, "seconds": 0.0001})");
  } catch (const InputError& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("collectives[0].ranks: expected an integer from 2 to 1048576, got \"1\""),
            std::string::npos)
      << error;
}

// Times a real link cannot reach (1 ns for megabytes) fit a bus efficiency of about 10^6: no
// profile holds that, so calibration keeps the base profile's figure and its source, says so,
// and the profile it writes reads back.
TEST(Calibrate, AFitOutsideWhatAProfileHoldsKeepsTheBaseFigure) {
  const CalibrationBundle bundle = bundle_with_collectives(
      R"({"collective": "all_reduce", "ranks": 2, "bytes": 1e6, "seconds": 1e-9},
         {"collective": "all_reduce", "ranks": 2, "bytes": 2e6, "seconds": 1e-9},
         {"collective": "all_reduce", "ranks": 2, "bytes": 4e6, "seconds": 1e-9})");
  const ChipProfile h100 =
      formats::load_chip(std::string(HETPLAN_SOURCE_DIR) + "/profiles/nvidia-h100-sxm5-80gb.yaml");
  const Calibration calibration = calibrate(h100, {bundle}, "absurd");
  const EfficiencyModel& eff = calibration.profile.efficiency;
  EXPECT_EQ(eff.intra_bus_efficiency, h100.efficiency.intra_bus_efficiency);
  EXPECT_EQ(calibration.profile.cited_by.count(
                "efficiency.intra_node_collectives.bus_efficiency.value"),
            0u);
  const bool said = std::any_of(calibration.notes.begin(), calibration.notes.end(),
                                [](const std::string& note) {
                                  return note.starts_with(
                                             "efficiency.intra_node_collectives.bus_efficiency "
                                             "fitted at ") &&
                                         note.ends_with(
                                             ", outside what a profile holds (0.01 to 1.5): kept "
                                             "the base profile's");
                                });
  EXPECT_TRUE(said);
  const ChipProfile again =
      formats::parse_chip(formats::chip_yaml(calibration.profile), "calibrated.yaml");
  EXPECT_EQ(again.efficiency.intra_bus_efficiency, h100.efficiency.intra_bus_efficiency);
}

// An all-to-all inside one node (a mixture's expert-parallel exchange) is checked as the
// estimator prices it: one exchange over the node's link, (n - 1) latencies and (n - 1) / n of a
// rank's send buffer at the link's bus bandwidth: the profile's all-to-all figures where it has
// them (efficiency.intra_node_all_to_all), else the collectives' (its intra-node bandwidth times
// the all-reduce's bus efficiency). Across nodes the probe's node cannot tell.
TEST(CalibrationBundle, AnAllToAllInsideTheNodeIsCheckedAgainstTheIntraNodeLink) {
  std::string bundle_text = h200_bundle_text();
  const std::string key = "\"collectives\": []";
  const auto at = bundle_text.find(key);
  ASSERT_NE(at, std::string::npos);
  bundle_text.replace(
      at, key.size(),
      R"("collectives": [{"collective": "all_to_all", "ranks": 8, "bytes": 67108864, "seconds": 0.0004},
                         {"collective": "all_to_all", "ranks": 16, "bytes": 67108864, "seconds": 0.004}])");
  const CalibrationBundle bundle = formats::parse_calibration_bundle(bundle_text, "bundle.json");
  ASSERT_EQ(bundle.collectives.size(), 2u);

  const ChipProfile h100 =
      formats::load_chip(std::string(HETPLAN_SOURCE_DIR) + "/profiles/nvidia-h100-sxm5-80gb.yaml");
  ASSERT_TRUE(h100.intra_node.bandwidth && h100.efficiency.intra_bus_efficiency);
  ASSERT_TRUE(h100.efficiency.intra_all_to_all_efficiency &&
              h100.efficiency.intra_all_to_all_latency);
  ASSERT_EQ(h100.chips_per_node.value_or(0), 8);
  ChipProfile plain = h100;  // without the measured all-to-all figures
  plain.efficiency.intra_all_to_all_efficiency.reset();
  plain.efficiency.intra_all_to_all_latency.reset();
  const double latency =
      h100.efficiency.intra_latency.value_or(sim::EstimateOptions{}.intra_latency_default);
  const double bus = *h100.intra_node.bandwidth * *h100.efficiency.intra_bus_efficiency;
  const double a2a_bus = *h100.intra_node.bandwidth * *h100.efficiency.intra_all_to_all_efficiency;
  const double expected_plain = 7 * latency + 7.0 / 8.0 * 67108864 / bus;
  const double expected =
      7 * *h100.efficiency.intra_all_to_all_latency + 7.0 / 8.0 * 67108864 / a2a_bus;

  const std::pair<const ChipProfile*, double> cases[] = {{&plain, expected_plain}, {&h100, expected}};
  for (const auto& [profile, predicted] : cases) {
    int all_to_alls = 0;
    for (const auto& check : check_bundle(*profile, bundle)) {
      if (check.what.rfind("all-to-all", 0) != 0) continue;
      ++all_to_alls;
      EXPECT_EQ(check.what, "all-to-all over 8 ranks, 6.711e+07 bytes");
      EXPECT_DOUBLE_EQ(check.measured_s, 0.0004);
      EXPECT_NEAR(check.predicted_s, predicted, 1e-12);
      EXPECT_NEAR(check.error, (predicted - 0.0004) / 0.0004, 1e-9);
    }
    EXPECT_EQ(all_to_alls, 1);  // the 16 ranks span two nodes of 8
  }

  // One size cannot separate a latency from a bandwidth: calibrating from the bundle leaves
  // the profile's all-to-all figures, says why, and leaves the links to the all-reduce (there
  // is none here: the profile's figures stay).
  const Calibration calibration = calibrate(h100, {bundle}, "a2a");
  EXPECT_EQ(calibration.profile.efficiency.intra_all_to_all_efficiency,
            h100.efficiency.intra_all_to_all_efficiency);
  EXPECT_EQ(calibration.profile.efficiency.intra_all_to_all_latency,
            h100.efficiency.intra_all_to_all_latency);
  EXPECT_NE(std::find(calibration.notes.begin(), calibration.notes.end(),
                      "all-to-all over 8 ranks measured at 1 size(s): three or more are needed "
                      "to fit its latency and bandwidth"),
            calibration.notes.end());
  EXPECT_EQ(calibration.profile.efficiency.intra_bus_efficiency,
            h100.efficiency.intra_bus_efficiency);
  EXPECT_EQ(calibration.profile.efficiency.network_bus_efficiency,
            h100.efficiency.network_bus_efficiency);
}

// All-to-alls over 8 ranks of one node made by the model with a latency of 6 us a step and a
// bus bandwidth of 300 GB/s, with 4% noise: calibration gives them back as the profile's
// all-to-all figures (the efficiency over the profile's intra-node link), cited to itself.
TEST(Calibrate, AllToAllFiguresAreRecoveredInsideTheNode) {
  Noise noise(0.04);
  CalibrationBundle bundle;
  bundle.file = "a2a.json";
  for (double bytes = 1 << 20; bytes <= 1 << 30; bytes *= 2)
    bundle.collectives.push_back(
        {"all_to_all", 8, bytes, (7 * 6e-6 + 7.0 / 8.0 * bytes / 300e9) * noise()});
  ChipProfile h100 =
      formats::load_chip(std::string(HETPLAN_SOURCE_DIR) + "/profiles/nvidia-h100-sxm5-80gb.yaml");
  h100.efficiency.intra_all_to_all_efficiency.reset();
  h100.efficiency.intra_all_to_all_latency.reset();
  ASSERT_TRUE(h100.intra_node.bandwidth);
  const Calibration calibration = calibrate(h100, {bundle}, "a2a");
  const EfficiencyModel& eff = calibration.profile.efficiency;
  ASSERT_TRUE(eff.intra_all_to_all_efficiency && eff.intra_all_to_all_latency);
  EXPECT_NEAR(*eff.intra_all_to_all_efficiency * *h100.intra_node.bandwidth, 300e9, 0.05 * 300e9);
  EXPECT_NEAR(*eff.intra_all_to_all_latency, 6e-6, 0.2 * 6e-6);
  EXPECT_EQ(calibration.profile.cited_by.at("efficiency.intra_node_all_to_all.bus_efficiency.value"),
            "calibration-a2a");
  // The collectives' own figures are not the exchange's.
  EXPECT_EQ(eff.intra_bus_efficiency, h100.efficiency.intra_bus_efficiency);
}

// A real all-to-all: nccl-tests 2.17.8 on 4 H100 of one node (the bundled importer fixture).
// Priced two ways, both held out (the log's own all-to-alls are never fitted here):
// - from a profile without all-to-all figures, calibrated from the same log's all-reduce: in
//   the bandwidth-bound regime (1 GiB and up) an all-to-all and an all-reduce run over the same
//   links at the same bus bandwidth (nccl-tests' bus-bandwidth convention makes them
//   comparable), so the exchange must come within 10% of every point there, the per-case goal
//   of the published runs;
// - with the bundled H100 profile's all-to-all figures, fitted to the 8-rank all-to-alls of the
//   same cluster's published runs (validation/microbench, nccltests_h100_cluster01_xxrjun.csv,
//   whose 4-rank rows this log is; the 4-rank exchange is not in the fit): within 10% there
//   too, and closer than the all-reduce's links at the sizes below 1 GiB that a mixture's layer
//   sends, where the exchange's own latency shows (docs/models/moe.md#exchange).
TEST(CalibrationBundle, ARealAllToAllIsPricedFromTheAllReducesLinksOrItsOwnFigures) {
  const std::string log =
      std::string(HETPLAN_SOURCE_DIR) +
      "/tests/importers/data/nccl-tests-5colls-h100-4rank-1node-nccltests2.17.8.log";
  const CalibrationBundle bundle = collectives_bundle(importers::import_collective_log(log), log);
  CalibrationBundle without_all_to_alls = bundle;
  std::erase_if(without_all_to_alls.collectives,
                [](const CollectiveSample& s) { return s.collective == "all_to_all"; });
  const ChipProfile h100 =
      formats::load_chip(std::string(HETPLAN_SOURCE_DIR) + "/profiles/nvidia-h100-sxm5-80gb.yaml");
  ChipProfile plain = h100;
  plain.efficiency.intra_all_to_all_efficiency.reset();
  plain.efficiency.intra_all_to_all_latency.reset();
  const Calibration calibration = calibrate(plain, {without_all_to_alls}, "nccl");
  ASSERT_FALSE(calibration.profile.efficiency.intra_all_to_all_efficiency);
  // The checks follow the bundle's all-to-all samples in order (all inside one node here).
  std::vector<double> sizes;
  for (const auto& sample : bundle.collectives)
    if (sample.collective == "all_to_all") sizes.push_back(sample.bytes);
  auto checks_of = [&](const ChipProfile& profile) {
    std::vector<StepCheck> checks;
    for (const auto& check : check_bundle(profile, bundle))
      if (check.what.rfind("all-to-all over 4 ranks", 0) == 0) checks.push_back(check);
    return checks;
  };
  const std::vector<StepCheck> from_all_reduce = checks_of(calibration.profile);
  const std::vector<StepCheck> own = checks_of(h100);
  ASSERT_EQ(from_all_reduce.size(), sizes.size());
  ASSERT_EQ(own.size(), sizes.size());
  EXPECT_GE(sizes.size(), 10u);  // every all-to-all size the log holds (32 MiB ... 16 GiB)
  int large = 0, small = 0;
  double small_error_all_reduce = 0, small_error_own = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::printf("%-45s measured %.6f s predicted %.6f s (%+.1f%%), with its own figures %.6f s "
                "(%+.1f%%)\n",
                from_all_reduce[i].what.c_str(), from_all_reduce[i].measured_s,
                from_all_reduce[i].predicted_s, 100 * from_all_reduce[i].error, own[i].predicted_s,
                100 * own[i].error);
    if (sizes[i] < 1024.0 * 1024 * 1024) {
      ++small;
      small_error_all_reduce += std::abs(from_all_reduce[i].error);
      small_error_own += std::abs(own[i].error);
      continue;
    }
    ++large;
    EXPECT_LT(std::abs(from_all_reduce[i].error), 0.10) << from_all_reduce[i].what;
    EXPECT_LT(std::abs(own[i].error), 0.10) << own[i].what;
  }
  EXPECT_GE(large, 5);
  ASSERT_GE(small, 3);
  EXPECT_LT(small_error_own, small_error_all_reduce);
}

}  // namespace
}  // namespace hetplan::validation
