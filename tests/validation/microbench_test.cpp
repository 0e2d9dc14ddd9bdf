// Calibration from the published microbenchmarks in ../shared/data/microbench: the CSV layer's
// errors, the readers on the real tables, the bundles, and the published runs predicted with
// profiles calibrated from those bundles alone (never from the end-to-end figures).
#include "validation/microbench.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/input_file.hpp"
#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "models/compute.hpp"

namespace hetplan::validation {
namespace {

// The project's own copies of the published tables and runs (validation/microbench,
// validation/published-runs), so that a clone without ../shared runs these tests too.
const std::string kMicrobench = std::string(HETPLAN_SOURCE_DIR) + "/validation/microbench";
const std::string kPublished = std::string(HETPLAN_SOURCE_DIR) + "/validation/published-runs";
const std::string kProfiles = std::string(HETPLAN_SOURCE_DIR) + "/profiles";


std::string error_of(const std::string& text) {
  try {
    parse_microbench_csv(text, "bench.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// ---------------------------------------------------------------------------------------------
// The CSV layer

TEST(MicrobenchCsv, CommentsHeaderQuotedFieldsAndLocations) {
  const CsvTable t = parse_microbench_csv(
      "# Source: github.com/Owner/repo commit 0123456789abcdef0123456789abcdef01234567\n"
      "\n"
      "a,b,c\n"
      "1,\"x, \"\"y\"\"\",3\n"
      "  # a comment between rows\n"
      "4,,\r\n",
      "bench.csv");
  EXPECT_EQ(t.header, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(t.header_line, 3);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].line, 4);
  EXPECT_EQ(t.text(t.rows[0], "b"), "x, \"y\"");
  EXPECT_EQ(t.rows[0].columns, (std::vector<int>{1, 3, 14}));
  EXPECT_EQ(t.number(t.rows[0], "c"), 3);
  EXPECT_EQ(t.rows[1].line, 6);
  EXPECT_EQ(t.text(t.rows[1], "c"), "");
  EXPECT_EQ(t.comments.size(), 2u);
  EXPECT_EQ(t.source(), "Owner/repo @ 0123456");
}

TEST(MicrobenchCsv, TooManyFields) {
  EXPECT_EQ(error_of("a,b\n1,2,3\n"), "bench.csv:2:5: expected 2 fields as in the header, got 3");
}

TEST(MicrobenchCsv, TooFewFields) {
  EXPECT_EQ(error_of("a,b,c\n1,2\n"), "bench.csv:2:4: expected 3 fields as in the header, got 2");
}

TEST(MicrobenchCsv, UnterminatedQuote) {
  EXPECT_EQ(error_of("a,b\n1,\"open\n"), "bench.csv:2:3: unterminated quoted field");
}

TEST(MicrobenchCsv, TextAfterAClosingQuote) {
  EXPECT_EQ(error_of("a,b\n\"x\"y,2\n"),
            "bench.csv:2:4: expected ',' after a quoted field, got 'y'");
}

TEST(MicrobenchCsv, DuplicateColumn) {
  EXPECT_EQ(error_of("# c\na,b,a\n"), "bench.csv:2:5: duplicate column name \"a\"");
}

TEST(MicrobenchCsv, EmptyColumnName) {
  EXPECT_EQ(error_of("a,,b\n"), "bench.csv:1:3: expected a column name, got an empty one");
}

TEST(MicrobenchCsv, NoHeader) {
  EXPECT_EQ(error_of("# only comments\n\n"),
            "bench.csv: expected a header line naming the columns, found none");
}

TEST(MicrobenchCsv, NotANumber) {
  const CsvTable t = parse_microbench_csv("name,value\nx, 12abc\n", "bench.csv");
  try {
    t.number(t.rows[0], "value");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "bench.csv:2:3: value: expected a number, got \" 12abc\"");
  }
}

TEST(MicrobenchCsv, MissingColumn) {
  const CsvTable t = parse_microbench_csv("# c\nname,value\nx,1\n", "bench.csv");
  try {
    t.text(t.rows[0], "tflops");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "bench.csv:2:1: expected a column named \"tflops\" in the header");
  }
}

TEST(MicrobenchCsv, MalformedShapeInAReaderNamesTheCell) {
  const std::string dir = ::testing::TempDir() + "/hetplan-microbench-bad";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/mleng_mamf_matmul.csv";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(
        "# Source: test\n"
        "dtype,accelerator,mamf_tflops,theory_tflops,efficiency,best_shape_MxNxK,torch_version,"
        "notes\n"
        "bf16,NVIDIA A100 SXM,271.2,312,86.9%,1024x10240,2.6.0,\n",
        f);
    std::fclose(f);
  }
  try {
    read_mamf_matmul(path, "NVIDIA A100 SXM");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ":3:38: best_shape_MxNxK: expected MxNxK, got \"1024x10240\"");
  }
}

// ---------------------------------------------------------------------------------------------
// Readers on the real tables

TEST(MicrobenchReaders, MamfMatmul) {
  const auto rows = read_mamf_matmul(kMicrobench + "/mleng_mamf_matmul.csv", "NVIDIA H100 SXM");
  ASSERT_EQ(rows.gemm.size(), 2u);  // bf16 and fp8
  const GemmSample& s = rows.gemm[0];
  EXPECT_EQ(s.dtype, DType::bf16);
  EXPECT_EQ(s.m, 2048);
  EXPECT_EQ(s.k, 13312);
  EXPECT_NEAR(2 * s.m * s.n * s.k / s.seconds, 794.5e12, 1e6);  // the table's 794.5 TFLOPS
  EXPECT_EQ(rows.gemm[1].dtype, DType::fp8);
  EXPECT_EQ(rows.source, "mleng_mamf_matmul.csv (stas00/ml-engineering @ 744d01e)");
}

TEST(MicrobenchReaders, MamfOptunaKeepsShapedTrials) {
  const auto rows =
      read_mamf_optuna(kMicrobench + "/mamf_gpu_benchmark_optuna.csv", "Ascend910B2C");
  ASSERT_EQ(rows.gemm.size(), 4u);
  ASSERT_EQ(rows.skipped.size(), 1u);  // the best value, printed with no shape
  EXPECT_NE(rows.skipped[0].find("mamf_gpu_benchmark_optuna.csv:15: "), std::string::npos)
      << rows.skipped[0];
  const GemmSample& s = rows.gemm[3];  // trial 1003: 14336 x 4096 x 4096, 317.3 TFLOPS
  EXPECT_EQ(s.layout, "nn");
  EXPECT_NEAR(2 * s.m * s.n * s.k / s.seconds, 317.3188600595759e12, 1e3);
}

TEST(MicrobenchReaders, AzureGuideA100) {
  const auto rows = read_azure_benchmarking_guide(
      kMicrobench + "/azure_ai_benchmarking_guide_a100_h100_h200.csv", "A100-SXM4-80GB");
  EXPECT_EQ(rows.gemm.size(), 8u);
  EXPECT_EQ(rows.memory.size(), 5u);
  EXPECT_EQ(rows.collectives.size(), 24u);  // 1K .. 8G
  EXPECT_EQ(rows.gemm[0].dtype, DType::fp16);
  // 1024^3 at 119.4 TFLOPS.
  EXPECT_NEAR(rows.gemm[0].seconds, 2.0 * 1024 * 1024 * 1024 / 119.4e12, 1e-12);
  // "132K" is 2^17 bytes; the last, "8G", is 2^33; busbw 231.58 GB/s with 2 x 7/8.
  EXPECT_EQ(rows.collectives[7].bytes, 131072);
  const CollectiveSample& last = rows.collectives.back();
  EXPECT_EQ(last.bytes, 8589934592.0);
  EXPECT_NEAR(last.bytes * 1.75 / last.seconds, 231.58e9, 1e3);
  // Triad: three arrays of 2^25 doubles at 1.7 TB/s.
  EXPECT_EQ(rows.memory[3].kernel, "triad");
  EXPECT_NEAR(rows.memory[3].bytes / rows.memory[3].seconds, 1.7e12, 1e3);
}

TEST(MicrobenchReaders, FlagPerfGemmTakesTorchKernelsByKernelTime) {
  const auto rows =
      read_flagperf_operation_gemm(kMicrobench + "/flagperf_operation_gemm.csv", "A100_40_SXM");
  // mm, addmm and linear in FP16 and BF16, torch's own kernels; FP32 / TF32 rows are left out.
  ASSERT_EQ(rows.gemm.size(), 6u);
  EXPECT_EQ(rows.gemm[0].layout, "nn");
  EXPECT_EQ(rows.gemm[0].dtype, DType::fp16);
  EXPECT_EQ(rows.gemm[0].seconds, 4268.03e-6);  // mm 8192^3 FP16 nativetorch kernel time
  EXPECT_EQ(rows.gemm[4].layout, "nt");         // linear
  EXPECT_EQ(rows.gemm[5].dtype, DType::bf16);
  EXPECT_EQ(rows.skipped.size(), 4u);  // groups: flaggems, bmm, mv, fp32 / tf32
}

TEST(MicrobenchReaders, LimulidaeCountsOutputBytesAndTakesAlgorithmBandwidth) {
  const auto rows = read_limulidae(kMicrobench + "/limulidae_910b_vs_a800.csv", "910B");
  ASSERT_EQ(rows.elementwise.size(), 2u);
  ASSERT_EQ(rows.collectives.size(), 6u);
  // torch.exp: 642 GB/s of input; read and write together twice that.
  EXPECT_NEAR(elementwise_bytes(rows.elementwise[0]) / rows.elementwise[0].seconds, 1284e9, 1e3);
  const CollectiveSample& ar8 = rows.collectives[5];
  EXPECT_EQ(ar8.collective, "all_reduce");
  EXPECT_EQ(ar8.ranks, 8);
  EXPECT_NEAR(ar8.bytes / ar8.seconds, 72e9, 1);  // algorithm bandwidth
}

TEST(MicrobenchReaders, FlashAttention2ForwardBackward) {
  const auto rows = read_flash_attention_figures(
      kMicrobench + "/flashattention_figures_a100_h100.csv", "A100 80GB SXM4");
  // 24 FlashAttention-2 bars, less one occluded and one partly occluded label.
  ASSERT_EQ(rows.attention.size(), 22u);
  const AttentionSample& s = rows.attention.back();  // causal, hd 128, 16k: 189 TFLOPS
  EXPECT_TRUE(s.causal);
  EXPECT_EQ(s.head_dim, 128);
  EXPECT_EQ(s.heads, 16);
  EXPECT_EQ(s.batch, 1);
  const double forward_flops = 0.5 * 4.0 * 1 * 16 * 16384.0 * 16384.0 * 128;
  EXPECT_NEAR(3.5 * forward_flops / (s.forward_s + s.backward_s), 189e12, 1e3);
  EXPECT_NEAR(s.backward_s / s.forward_s, 2.5, 1e-12);
}

// The head-width prior (docs/models/compute.md#head-width) is the one the bundled charts give:
// every (chip, causal, sequence) with both a 64- and a 128-wide FlashAttention-2 bar, the
// geometric mean r of the 64-wide rate over the 128-wide one, and d0 from
// (128 + d0) / (2 (64 + d0)) = r.
TEST(MicrobenchReaders, HeadWidthPriorIsTheChartsFit) {
  double log_sum = 0;
  int pairs = 0;
  for (const char* gpu : {"A100 80GB SXM4", "H100 80GB SXM5"}) {
    const auto rows =
        read_flash_attention_figures(kMicrobench + "/flashattention_figures_a100_h100.csv", gpu);
    auto rate = [](const AttentionSample& s) {
      const double flops =
          (s.causal ? 0.5 : 1.0) * 4.0 * s.batch * s.heads * double(s.seq) * s.seq * s.head_dim;
      return flops / s.forward_s;
    };
    for (const AttentionSample& narrow : rows.attention) {
      if (narrow.head_dim != 64) continue;
      for (const AttentionSample& wide : rows.attention) {
        if (wide.head_dim == 128 && wide.causal == narrow.causal && wide.seq == narrow.seq) {
          log_sum += std::log(rate(narrow) / rate(wide));
          ++pairs;
        }
      }
    }
  }
  ASSERT_EQ(pairs, 21);  // 24 pairs less three with an occluded bar
  const double r = std::exp(log_sum / pairs);
  const double d0 = 128 * (1 - r) / (2 * r - 1);
  EXPECT_NEAR(d0, models::EfficiencyDefaults{}.attention_half_head_dim, 0.5);
  EXPECT_NEAR(models::attention_head_dim_factor(64, d0), r, 1e-9);
}

TEST(MicrobenchReaders, NcclTestsTables) {
  const auto mleng = read_nccl_tests(kMicrobench + "/mleng_allreduce_curves.csv", "series",
                                     "A100_8gpu_nccltests", "all_reduce", 8, {"all_reduce"});
  ASSERT_EQ(mleng.collectives.size(), 20u);
  EXPECT_EQ(mleng.collectives[0].bytes, 32768);
  EXPECT_NEAR(mleng.collectives[0].seconds, 43.83e-6, 1e-15);
  const auto h100 = read_nccl_tests(kMicrobench + "/nccltests_h100_cluster01_xxrjun.csv", "tag",
                                    "N1_G8", "", 8, {"all_gather", "reduce_scatter"});
  ASSERT_FALSE(h100.collectives.empty());
  for (const auto& s : h100.collectives) {
    EXPECT_TRUE(s.collective == "all_gather" || s.collective == "reduce_scatter") << s.collective;
    EXPECT_EQ(s.ranks, 8);
  }
  EXPECT_FALSE(h100.skipped.empty());  // all_reduce (NVLS) and alltoall rows
}

// ---------------------------------------------------------------------------------------------
// Bundles and calibration

TEST(MicrobenchBundle, UnknownChip) {
  try {
    microbench_bundle("dir", "MI300X");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "dir: chip: expected A100, A800, H100 or 910B, got \"MI300X\"");
  }
}

TEST(MicrobenchBundle, EveryChipHasSamplesAndNamesItsSources) {
  for (const auto& chip : microbench_chips()) {
    const CalibrationBundle b = microbench_bundle(kMicrobench, chip);
    EXPECT_FALSE(b.gemm.empty()) << chip;
    EXPECT_FALSE(b.collectives.empty()) << chip;
    EXPECT_NE(b.file.find("@ "), std::string::npos) << b.file;
    for (const auto& s : b.gemm) EXPECT_GT(s.seconds, 0) << chip;
  }
  const CalibrationBundle a100 = microbench_bundle(kMicrobench, "A100");
  EXPECT_NE(
      a100.file.find(
          "azure_ai_benchmarking_guide_a100_h100_h200.csv (Azure/AI-benchmarking-guide @ 8fd0c6e)"),
      std::string::npos)
      << a100.file;
  for (const auto& s : a100.collectives) {
    EXPECT_EQ(s.collective, "all_reduce");
    EXPECT_EQ(s.ranks, 8);
  }
}

TEST(MicrobenchCalibration, A100ProfileFromItsBundle) {
  const ChipProfile base = formats::load_chip(kProfiles + "/nvidia-a100-sxm4-80gb.yaml");
  const Calibration a100 =
      calibrate_from_microbenchmarks(base, microbench_bundle(kMicrobench, "A100"), "microbench");
  const auto& e = a100.profile.efficiency;
  EXPECT_EQ(a100.profile.id, "nvidia-a100-sxm4-80gb.microbench");
  EXPECT_TRUE(e.calibrated);
  // The 16-bit GEMM curve: 11 forward samples (cuBLASLt sweep, MAMF, linear) and 5 nn ones.
  ASSERT_TRUE(e.gemm_max && e.gemm_half_dim && e.gemm_backward_max);
  EXPECT_NEAR(*e.gemm_max, 0.86, 0.01);
  EXPECT_NEAR(*e.gemm_half_dim, 173, 5);
  EXPECT_NEAR(*e.gemm_backward_max, 0.88, 0.01);
  ASSERT_TRUE(e.attention_max && e.memory && e.intra_bus_efficiency && e.intra_latency);
  // FlashAttention-2, the 12 causal bars, each over s / (s + 512) and the 64-wide ones over
  // their head-width factor 64 x 148 / (128 x 84): geometric mean 197.8 TFLOPS of 312.
  EXPECT_NEAR(*e.attention_max, 0.634, 0.01);
  EXPECT_NEAR(*e.memory, 1771.0 / 2039.0, 0.005);    // torch.exp and Sigmoid on A800
  EXPECT_NEAR(*e.intra_bus_efficiency, 0.68, 0.01);  // all-reduce curves 64 B .. 16 GiB
  EXPECT_NEAR(*e.intra_latency, 2.8e-6, 0.1e-6);
  // Each skipped table names itself once, not behind the list of every table read.
  std::size_t skipped = 0;
  for (const auto& note : a100.notes) {
    EXPECT_EQ(note.find("published microbenchmarks:"), std::string::npos) << note;
    if (note.rfind("skipped ", 0) == 0) ++skipped;
  }
  EXPECT_GT(skipped, 0u);
  // The software stays the base's; the fitted numbers cite the published sources.
  EXPECT_EQ(a100.profile.runtime.version, base.runtime.version);
  const std::string& source = a100.profile.cited_by.at("efficiency.gemm.max.value");
  EXPECT_NE(a100.profile.sources.at(source).find("Azure/AI-benchmarking-guide @ 8fd0c6e"),
            std::string::npos);
  // It writes and reads back as a profile.
  const ChipProfile again = formats::parse_chip(formats::chip_yaml(a100.profile), "a100.yaml");
  EXPECT_EQ(again.efficiency.gemm_max, e.gemm_max);
}

// The A800 cases use the A100 calibration with NVLink at 200 GB/s each way. The A800's own
// large-message all-reduce (limulidae, 8 cards) gives the same bus efficiency as A100's at
// 8 GiB (Azure, 231.58 GB/s of 300): NCCL loses the same share on both.
TEST(MicrobenchCalibration, A800AllReduceAgreesWithA100AtLargeMessages) {
  ChipProfile base = formats::load_chip(kProfiles + "/nvidia-a100-sxm4-80gb.yaml");
  base.intra_node.bandwidth = 200e9;
  const Calibration a800 =
      calibrate_from_microbenchmarks(base, microbench_bundle(kMicrobench, "A800"), "microbench");
  ASSERT_TRUE(a800.profile.efficiency.intra_bus_efficiency);
  EXPECT_NEAR(*a800.profile.efficiency.intra_bus_efficiency, 231.58 / 300, 0.02);
  // One size: the latency is not fitted.
  EXPECT_EQ(a800.profile.efficiency.intra_latency, base.efficiency.intra_latency);
}

TEST(MicrobenchCalibration, Ascend910BKeepsWhatItsBundleCannotTell) {
  const ChipProfile base = formats::load_chip(kProfiles + "/ascend-910b.yaml");
  const Calibration c =
      calibrate_from_microbenchmarks(base, microbench_bundle(kMicrobench, "910B"), "microbench");
  const auto& e = c.profile.efficiency;
  ASSERT_TRUE(e.gemm_max && e.memory && e.intra_bus_efficiency);
  EXPECT_NEAR(*e.gemm_max, 0.954, 0.005);  // four optuna trials of the 910B2C
  EXPECT_NEAR(*e.gemm_half_dim, 179, 5);
  EXPECT_NEAR(*e.memory, 1284.0 / 1600.0, 0.005);      // torch.exp and Sigmoid
  EXPECT_NEAR(*e.intra_bus_efficiency, 0.643, 0.005);  // 72 GB/s algbw x 7/4 over 196 GB/s
  EXPECT_FALSE(e.attention_max);                       // no attention measurement: the prior stays
  EXPECT_FALSE(e.intra_latency);                       // one size: the prior stays
  EXPECT_NO_THROW(formats::chip_yaml(c.profile));
}

// H100's bf16 GEMMs are three best-of-search shapes, one of them forward: too few to place a
// half-dimension, which stays the prior; its all-reduces (NVLS) are left out. Fitted at the
// prior, MAMF's 794.5 TFLOPS at 2048 x 2048 x 13312 would give the curve a maximum of
// 794.5 / (0.9412 x 0.9412 x 0.9905) / 989.5 = 0.915, and an 8192-cube GEMM 0.915 x 0.9846^3
// of the peak, 865 TFLOPS: above the fastest GEMM any of the searches found (821.2 TFLOPS, the
// optuna best of the SXM 80GB card). Both maxima stop there.
TEST(MicrobenchCalibration, H100KeepsTheHalfDimensionOneShapeCannotFix) {
  const ChipProfile base = formats::load_chip(kProfiles + "/nvidia-h100-sxm5-80gb.yaml");
  const Calibration c =
      calibrate_from_microbenchmarks(base, microbench_bundle(kMicrobench, "H100"), "microbench");
  const auto& e = c.profile.efficiency;
  EXPECT_EQ(e.gemm_half_dim, base.efficiency.gemm_half_dim);
  ASSERT_TRUE(e.gemm_max);
  EXPECT_NEAR(*e.gemm_max, 821.2 / 989.5, 0.001);
  ASSERT_TRUE(e.gemm_backward_max);
  EXPECT_NEAR(*e.gemm_backward_max, 821.2 / 989.5, 0.001);
  const auto rates = models::resolve_rates(c.profile, DType::bf16).rates;
  ASSERT_TRUE(rates);
  EXPECT_LT(models::gemm_efficiency({8192, 8192, 8192, 1}, *rates) * 989.5e12, 821.2e12);
  EXPECT_EQ(e.intra_bus_efficiency, base.efficiency.intra_bus_efficiency);
  EXPECT_NO_THROW(formats::chip_yaml(c.profile));
}

// The goal: the published runs predicted with a mean absolute error of at most 7% from
// profiles calibrated on the published microbenchmarks only (GEMM, memory, attention and
// collective tables), never from the end-to-end figures. Reached: 6.9% over 27 cases (8.6% with
// the documented priors), a thin margin: other defensible readings of the same tables give
// 6.9% to 7.3% (docs/validation.md#calibrated-from-microbenchmarks). The Ascend 910B cases stay
// near -22%: nothing in the microbenchmarks measures what they miss.
TEST(PublishedRuns, CalibratedFromMicrobenchmarks) {
  const std::string out = ::testing::TempDir() + "/hetplan-calibrated-profiles";
  const CalibratedValidation v =
      validate_published_runs_calibrated(kPublished, kProfiles, kMicrobench, out);
  ASSERT_EQ(v.calibrations.size(), 4u);
  for (const auto& c : v.calibrations) EXPECT_TRUE(c.profile.efficiency.calibrated) << c.profile.id;
  // The calibrated profiles were written and load back.
  const ChipProfile a100 = formats::load_chip(out + "/nvidia-a100-sxm4-80gb.yaml");
  EXPECT_EQ(a100.id, "nvidia-a100-sxm4-80gb.microbench");
  // The A800 from the A100's tables: the collectives' efficiency fitted on the A100's links,
  // kept on its own slower NVLink; everything else calibrated alike.
  const ChipProfile a800 = formats::load_chip(out + "/nvidia-a800-sxm4-80gb.yaml");
  EXPECT_EQ(a800.id, "nvidia-a800-sxm4-80gb.microbench");
  EXPECT_EQ(a800.intra_node.bandwidth, 200e9);
  EXPECT_EQ(a800.efficiency.intra_bus_efficiency, a100.efficiency.intra_bus_efficiency);
  EXPECT_EQ(a800.efficiency.intra_latency, a100.efficiency.intra_latency);
  EXPECT_EQ(a800.efficiency.gemm_max, a100.efficiency.gemm_max);
  ASSERT_GE(v.report.cases.size(), 20u);
  EXPECT_LE(v.report.mean_absolute_error, 0.07) << report_text(v.report);
  EXPECT_GE(v.report.oom_cases, 1);
  EXPECT_EQ(v.report.oom_correct, v.report.oom_cases) << report_text(v.report);
  for (const auto& c : v.report.cases) {
    if (c.metric != "out_of_memory") {
      EXPECT_TRUE(c.feasible) << c.id;
    }
  }
}

// FP8 runs outside the dev set (validation/published-runs-fp8, collected after the FP8 GEMM
// efficiency was taken from the microbenchmark tables), predicted from the same calibrated
// profiles: each within the fidelity issue's per-case goal of 12%. With the H100's FP8 GEMMs at
// its BF16 efficiency (0.83 of the peak, against 0.70 measured for FP8) they were 10% and 13%
// too fast.
TEST(PublishedRuns, Fp8RunsOutsideTheDevSet) {
  const std::string out = ::testing::TempDir() + "/hetplan-calibrated-profiles-fp8";
  const CalibratedValidation v = validate_published_runs_calibrated(
      std::string(HETPLAN_SOURCE_DIR) + "/validation/published-runs-fp8", kProfiles, kMicrobench,
      out);
  ASSERT_EQ(v.report.cases.size(), 2u);
  for (const auto& c : v.report.cases) {
    ASSERT_TRUE(c.feasible) << c.id;
    EXPECT_LE(std::abs(c.error), 0.12) << report_text(v.report);
  }
}

// A profile no table calibrates (here the 910B3's, ascend-910b-313t) predicts with its own
// figures under --microbench, as without it: the calibrated folder holds a copy of it.
TEST(PublishedRuns, AProfileNoTableCalibratesPredictsAsWithout) {
  const std::string folder = ::testing::TempDir() + "/hetplan-published-910b3";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  std::string text = read_input_file(
      std::string(HETPLAN_SOURCE_DIR) + "/validation/published-runs-ascend/mindspeed-llm-910b.yaml",
      std::size_t{1} << 20, "a published-run file");
  const std::string chip = "  chip: Huawei Ascend 910B in Atlas 900 A2 PODc";
  const std::size_t at = text.find(chip);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, text.find('\n', at) - at, "  chip: Ascend 910B3");
  formats::write_file_atomically(folder + "/runs.yaml", text);
  const ValidationReport plain = validate_published_runs(folder, kProfiles);
  const CalibratedValidation calibrated = validate_published_runs_calibrated(
      folder, kProfiles, kMicrobench, ::testing::TempDir() + "/hetplan-calibrated-910b3");
  ASSERT_EQ(plain.cases.size(), 4u);
  ASSERT_EQ(calibrated.report.cases.size(), 4u);
  for (std::size_t i = 0; i < plain.cases.size(); ++i) {
    EXPECT_TRUE(plain.cases[i].feasible) << plain.cases[i].id;
    EXPECT_DOUBLE_EQ(calibrated.report.cases[i].predicted, plain.cases[i].predicted)
        << plain.cases[i].id;
  }
}

}  // namespace
}  // namespace hetplan::validation
