// The validation report on the bundled dev set (validation/published-runs, a copy of the
// published runs with their sources): predictions from datasheet peaks and the profiles'
// documented priors must stay within the error budget, and the out-of-memory case must be
// predicted as not fitting. The measured figures are only read from the data files, never
// written here. Also: the case format is read strictly, as its README defines it, and
// `hetplan validate --published` finds the bundled copy from any working directory.
#include "validation/published_runs.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tests/e2e/cli_run.hpp"

namespace hetplan::validation {
namespace {

const std::string kPublished = std::string(HETPLAN_SOURCE_DIR) + "/validation/published-runs";
const std::string kProfiles = std::string(HETPLAN_SOURCE_DIR) + "/profiles";

TEST(PublishedRuns, MeanAbsoluteErrorWithinTenPercent) {
  const auto report = validate_published_runs(kPublished, kProfiles);
  ASSERT_GE(report.cases.size(), 20u);
  EXPECT_LE(report.mean_absolute_error, 0.10) << report_text(report);
  EXPECT_GE(report.oom_cases, 1);
  EXPECT_EQ(report.oom_correct, report.oom_cases) << report_text(report);
  for (const auto& c : report.cases) {
    if (c.metric != "out_of_memory") {
      EXPECT_TRUE(c.feasible) << c.id;
    }
  }
}

// Each case says where its predicted step and memory go; the parts are the estimate's.
TEST(PublishedRuns, EachCaseCarriesItsBreakdown) {
  const auto report = validate_published_runs(kPublished, kProfiles);
  for (const auto& c : report.cases) {
    const auto& b = c.breakdown;
    EXPECT_GT(b.step_s, 0) << c.id;
    // Compute, the bubble, the optimizer and the exposed communication make up the step.
    const double parts = b.compute_s + b.bubble_s + b.optimizer_s + b.tensor_parallel_s +
                         b.pipeline_s + b.data_parallel_s + b.expert_parallel_s;
    EXPECT_LE(parts, b.step_s * (1 + 1e-9)) << c.id;
    EXPECT_GT(b.compute_s, 0.5 * b.step_s) << c.id;
    const double memory = b.weights_gib + b.gradients_gib + b.optimizer_gib + b.activations_gib +
                          b.head_gib + b.transient_gib;
    EXPECT_NEAR(memory, c.predicted_memory_gib, 1e-9) << c.id;
  }
  const auto j = report_json(report);
  EXPECT_TRUE(j["cases"][0].contains("step"));
  EXPECT_TRUE(j["cases"][0]["memory_gib"].contains("activations"));
}

// A one-case published-run file; `model`, `training` and `extra` are spliced into the case.
std::string one_case(const std::string& model, const std::string& training,
                     const std::string& extra = "") {
  return "source: a test\n"
         "hardware: {chip: NVIDIA A100 80GB SXM, chips_per_node: 8}\n"
         "cases:\n"
         "  - id: c1\n"
         "    model: {" + model + "}\n"
         "    training: {" + training + "}\n"
         "    parallel: {tp: 8, pp: 1, dp: 1}\n"
         "    chips: 8\n" + extra +
         "    measured: {step_time_s: 1.0}\n";
}

const std::string kModel =
    "arch: llama, layers: 4, hidden: 1024, heads: 8, ffn: 2816, vocab: 32000, seq_len: 2048";
const std::string kTraining =
    "global_batch: 8, micro_batch: 1, dtype: bf16, recompute: none, flash_attention: true";

std::string error_of(const std::string& text) {
  test::TempFolder folder;
  std::ofstream(folder.file("runs.yaml")) << text;
  try {
    validate_published_runs(folder.path(), kProfiles);
  } catch (const InputError& e) {
    return std::string(e.what()).substr(folder.path().size() + 1);
  }
  return "no error";
}

TEST(PublishedRunsFormat, AWellFormedCaseIsPredicted) {
  EXPECT_EQ(error_of(one_case(kModel, kTraining)), "no error");
  // A case's own source, what it inferred and notes: text for the reader.
  EXPECT_EQ(
      error_of(one_case(kModel, kTraining,
                        "    source: \"a table\"\n    inferred: \"vocab\"\n    notes: \"n\"\n")),
      "no error");
}

// Every metric a source may name is predicted from the same step: the conversions by hand.
TEST(PublishedRunsFormat, EveryMetricIsPredictedFromTheSameStep) {
  test::TempFolder folder;
  auto predict = [&](const std::string& model, const std::string& training,
                     const std::string& measured) {
    std::string text = one_case(model, training);
    text.replace(text.find("{step_time_s: 1.0}"), 18, "{" + measured + "}");
    std::ofstream(folder.file("runs.yaml"), std::ios::trunc) << text;
    return validate_published_runs(folder.path(), kProfiles).cases.at(0);
  };
  const CaseResult s = predict(kModel, kTraining, "step_time_s: 1.0");
  const double step = s.predicted;
  ASSERT_GT(step, 0);
  EXPECT_DOUBLE_EQ(step, s.breakdown.step_s);
  EXPECT_DOUBLE_EQ(predict(kModel, kTraining, "step_time_ms: 1000").predicted, 1e3 * step);
  // 8 sequences of 2,048 tokens a step, on 8 chips.
  EXPECT_DOUBLE_EQ(predict(kModel, kTraining, "tokens_per_s_per_chip: 1").predicted,
                   8.0 * 2048 / step / 8);
  EXPECT_DOUBLE_EQ(predict(kModel, kTraining, "tokens_per_s: 1").predicted, 8.0 * 2048 / step);
  EXPECT_DOUBLE_EQ(predict(kModel, kTraining, "samples_per_s: 1").predicted, 8.0 / step);
  // Megatron-LM's FLOPs of this llama layer (no grouping: kv = heads, 128-wide heads): per
  // pass 4 b s l h^2 = 4 x 8 x 2048 x 4 x 1024^2, times attention (1 + 1 + 2048/1024) and the
  // gated MLP 2816/1024 x 3/2, three passes; the logits 3 x per pass x 32000 / (2 x 4 x 1024).
  const double per_pass = 4.0 * 8 * 2048 * 4 * 1024.0 * 1024;
  const double flops = 3 * per_pass * (4.0 + 2816.0 / 1024 * 1.5) + 3 * per_pass * 32000 / 8192;
  EXPECT_NEAR(predict(kModel, kTraining, "tflops_per_chip: 100").predicted,
              flops / (step * 8) / 1e12, 1e-9 * flops / (step * 8) / 1e12);
  // Utilisation: the same FLOPs over the eight chips' BF16 peak (312 TFLOPS, the datasheet's).
  EXPECT_NEAR(predict(kModel, kTraining, "mfu: 0.4").predicted, flops / (step * 8 * 312e12), 1e-9);
  // A GPT layer: Narayanan et al.'s 24 b s l h^2 (1 + s / 6h) per pass, four under full
  // recompute, and 6 b s h V for the logits.
  const std::string gpt =
      "arch: gpt, layers: 4, hidden: 1024, heads: 8, ffn: 4h, vocab: 32000, seq_len: 2048";
  const std::string full =
      "global_batch: 8, micro_batch: 1, dtype: bf16, recompute: full, flash_attention: true";
  const double gpt_step = predict(gpt, full, "step_time_s: 1").predicted;
  const double gpt_flops =
      4 * 24.0 * 8 * 2048 * 4 * 1024.0 * 1024 * (1 + 2048.0 / 6144) + 6.0 * 8 * 2048 * 1024 * 32000;
  EXPECT_NEAR(predict(gpt, full, "tflops_per_chip: 100").predicted,
              gpt_flops / (gpt_step * 8) / 1e12, 1e-9 * gpt_flops / (gpt_step * 8) / 1e12);
  // The first metric given is predicted; a utilisation is a share, not a percentage.
  EXPECT_EQ(predict(kModel, kTraining, "mfu: 0.4, samples_per_s: 2").metric, "samples_per_s");
  std::string text = one_case(kModel, kTraining);
  text.replace(text.find("{step_time_s: 1.0}"), 18, "{mfu: 45}");
  EXPECT_EQ(error_of(text),
            "runs.yaml:9:21: cases[0].measured.mfu: expected a share of the peak from 0 to 1 "
            "(mfu 0.45, not 45), got \"45\"");
  text.replace(text.find("{mfu: 45}"), 9, "{tokens_per_day: 5}");
  EXPECT_EQ(error_of(text), "runs.yaml:9:16: cases[0].measured.tokens_per_day: unknown key");
}

TEST(PublishedRunsFormat, UnknownKeysAreRejectedWithTheirLocation) {
  EXPECT_EQ(error_of(one_case(kModel + ", windows: 2", kTraining)),
            "runs.yaml:5:101: cases[0].model.windows: unknown key");
  EXPECT_EQ(error_of(one_case(kModel, kTraining + ", zero_stage: 1")),
            "runs.yaml:6:102: cases[0].training.zero_stage: unknown key");
  EXPECT_EQ(error_of(one_case(kModel, kTraining + ", overlap: {grad_reduce: true, tp: true}")),
            "runs.yaml:6:131: cases[0].training.overlap.tp: unknown key");
  EXPECT_EQ(error_of(one_case(kModel, kTraining, "    bogus: 1\n")),
            "runs.yaml:9:5: cases[0].bogus: unknown key");
}

TEST(PublishedRunsFormat, NothingIsInferred) {
  // No architecture from the MLP width, no flash attention from the architecture.
  const std::string no_arch =
      "layers: 4, hidden: 1024, heads: 8, ffn: 4h, vocab: 32000, seq_len: 2048";
  EXPECT_EQ(error_of(one_case(no_arch, kTraining)),
            "runs.yaml:4:5: cases[0].model.arch: missing required key (in the case or in common)");
  EXPECT_EQ(error_of(one_case(kModel, "global_batch: 8, dtype: bf16")),
            "runs.yaml:4:5: cases[0].training.flash_attention: missing required key (in the case "
            "or in common)");
  EXPECT_EQ(error_of(one_case("arch: bert, layers: 4", kTraining)),
            "runs.yaml:5:19: cases[0].model.arch: expected one of gpt or llama, got \"bert\"");
}

TEST(PublishedRunsFormat, ExplicitFieldsReachThePrediction) {
  // The same case with and without the distributed optimizer and its overlaps: the stated
  // fields change the prediction (ZeRO-1 shards the optimizer states: less memory).
  test::TempFolder folder;
  const std::string dp = "    parallel: {tp: 1, pp: 1, dp: 8}\n";
  auto write = [&](const std::string& training) {
    std::string text = one_case(kModel, training);
    text.replace(text.find("    parallel: {tp: 8, pp: 1, dp: 1}\n"), 36, dp);
    std::ofstream(folder.file("runs.yaml"), std::ios::trunc) << text;
    return validate_published_runs(folder.path(), kProfiles).cases.at(0);
  };
  const CaseResult plain = write(kTraining);
  const CaseResult zero = write(kTraining + ", zero: 1");
  EXPECT_LT(zero.predicted_memory_gib, plain.predicted_memory_gib);
  // The chip count must match the parallel layout.
  std::string text = one_case(kModel, kTraining);
  text.replace(text.find("chips: 8"), 8, "chips: 16");
  EXPECT_EQ(error_of(text), "runs.yaml:8:12: cases[0].chips: expected tp x pp x dp = 8 chips, got 16");
}

// A mixture whose run forced its router to balance the experts: every expert gets the mean
// load, so the busiest chip of an expert-parallel group computes less than under the imbalance
// prior; the field belongs to mixtures only.
TEST(PublishedRunsFormat, ForcedBalanceGivesTheExpertsTheMeanLoad) {
  test::TempFolder folder;
  const std::string moe = kModel + ", experts: 8, experts_per_token: 2, expert_ffn: 1024";
  auto predict = [&](const std::string& training) {
    std::string text = one_case(moe, training);
    text.replace(text.find("{tp: 8, pp: 1, dp: 1}"), 21, "{tp: 1, pp: 1, dp: 8, ep: 4}");
    text.replace(text.find("step_time_s"), 11, "tokens_per_s_per_chip");
    std::ofstream(folder.file("runs.yaml"), std::ios::trunc) << text;
    return validate_published_runs(folder.path(), kProfiles).cases.at(0).predicted;
  };
  const double prior = predict(kTraining);
  const double balanced = predict(kTraining + ", moe_force_balance: true");
  EXPECT_GT(balanced, prior);
  EXPECT_EQ(predict(kTraining + ", moe_force_balance: false"), prior);
  EXPECT_EQ(error_of(one_case(kModel, kTraining + ", moe_force_balance: true")),
            "runs.yaml:4:5: cases[0].training.moe_force_balance: expected only with model.experts "
            "(it balances a mixture's experts)");
}

// A case of kMixture over 8 chips with ep 4 (tp 1, dp 8), predicted.
const std::string kMixture = kModel + ", experts: 8, experts_per_token: 2, expert_ffn: 1024";
CaseResult predict_mixture(const std::string& training) {
  test::TempFolder folder;
  std::string text = one_case(kMixture, training);
  text.replace(text.find("{tp: 8, pp: 1, dp: 1}"), 21, "{tp: 1, pp: 1, dp: 8, ep: 4}");
  std::ofstream(folder.file("runs.yaml")) << text;
  return validate_published_runs(folder.path(), kProfiles).cases.at(0);
}

// A mixture dispatched by the flex dispatcher (DeepEP) sends fewer copies of its tokens than
// the all-to-all one, the default; the field belongs to mixtures only.
TEST(PublishedRunsFormat, FlexDispatcherSendsFewerCopies) {
  const CaseResult plain = predict_mixture(kTraining);
  const CaseResult all_to_all = predict_mixture(kTraining + ", moe_dispatcher: alltoall");
  const CaseResult flex = predict_mixture(kTraining + ", moe_dispatcher: flex");
  ASSERT_GT(plain.breakdown.expert_parallel_s, 0.0);
  EXPECT_EQ(all_to_all.predicted, plain.predicted);
  EXPECT_LT(flex.breakdown.expert_parallel_s, plain.breakdown.expert_parallel_s);
  EXPECT_LT(flex.predicted, plain.predicted);  // a step time
  EXPECT_EQ(error_of(one_case(kModel, kTraining + ", moe_dispatcher: flex")),
            "runs.yaml:4:5: cases[0].training.moe_dispatcher: expected only with model.experts "
            "(it dispatches a mixture's tokens)");
}

// A mixture dispatched by GShard's einsums (training.moe_dispatcher: gshard) with its experts
// padded to a capacity (training.moe_capacity_factor) pays the einsums beside the padded
// experts; gshard needs the capacity, and the capacity a mixture.
TEST(PublishedRunsFormat, GshardDispatcherPaysItsEinsums) {
  const CaseResult padded = predict_mixture(kTraining + ", moe_capacity_factor: 1.25");
  const CaseResult gshard =
      predict_mixture(kTraining + ", moe_dispatcher: gshard, moe_capacity_factor: 1.25");
  EXPECT_GT(gshard.predicted, padded.predicted);  // a step time
  EXPECT_EQ(error_of(one_case(kMixture, kTraining + ", moe_dispatcher: gshard")),
            "runs.yaml:6:118: cases[0].training.moe_dispatcher: expected "
            "training.moe_capacity_factor beside gshard (its dispatch masks give every expert a "
            "capacity)");
  EXPECT_EQ(error_of(one_case(kModel, kTraining + ", moe_capacity_factor: 1.25")),
            "runs.yaml:6:123: cases[0].training.moe_capacity_factor: expected only with "
            "model.experts (a mixture's key), got \"1.25\"");
}

// parallel.etp: a mixture's experts split over other than tp ranks (Megatron-Core's expert
// tensor parallelism). tp 2 x dp 4 with ep 8 only fits with each expert whole on a chip (etp 1):
// the same case without etp is refused at its ep, and an etp that does not divide tp x dp at
// its etp. A chip's experts then take only its own tokens' copies: less memory.
TEST(PublishedRunsFormat, ExpertTensorParallelismIsReadAsStated) {
  test::TempFolder folder;
  auto with = [&](const std::string& parallel) {
    std::string text = one_case(kMixture, kTraining);
    text.replace(text.find("{tp: 8, pp: 1, dp: 1}"), 21, parallel);
    return text;
  };
  std::ofstream(folder.file("runs.yaml")) << with("{tp: 2, pp: 1, dp: 4, ep: 8, etp: 1, sp: true}");
  const CaseResult folded = validate_published_runs(folder.path(), kProfiles).cases.at(0);
  EXPECT_TRUE(folded.feasible) << (folded.reasons.empty() ? "" : folded.reasons.front());
  std::ofstream(folder.file("runs.yaml"), std::ios::trunc)
      << with("{tp: 2, pp: 1, dp: 4, ep: 4, etp: 2, sp: true}");
  const CaseResult split = validate_published_runs(folder.path(), kProfiles).cases.at(0);
  EXPECT_LT(folded.predicted_memory_gib, split.predicted_memory_gib);
  EXPECT_EQ(error_of(with("{tp: 2, pp: 1, dp: 4, ep: 8}")),
            "runs.yaml:4:5: cases[0].parallel.ep: expected a divisor of dp (4) and of the "
            "experts (8), got 8");
  EXPECT_EQ(error_of(with("{tp: 2, pp: 1, dp: 4, ep: 4, etp: 3}")),
            "runs.yaml:4:5: cases[0].parallel.etp: expected a divisor of tp x dp (8), got 3");
}

// training.unfused: a run whose framework left RMSNorm and SwiGLU unfused is predicted slower;
// an operator the case's model does not have is refused at the list's element.
TEST(PublishedRunsFormat, UnfusedOperatorsCostTheirBytes) {
  auto predict = [](const std::string& text) {
    test::TempFolder folder;
    std::ofstream(folder.file("runs.yaml")) << text;
    return validate_published_runs(folder.path(), kProfiles).cases.at(0).predicted;
  };
  const double fused = predict(one_case(kModel, kTraining));
  const double unfused = predict(one_case(kModel, kTraining + ", unfused: [rmsnorm, swiglu]"));
  EXPECT_GT(unfused, fused);  // a step time
  EXPECT_EQ(error_of(one_case("arch: gpt, layers: 4, hidden: 1024, heads: 8, ffn: 4h, vocab: "
                              "32000, seq_len: 2048",
                              kTraining + ", unfused: [swiglu]")),
            "runs.yaml:6:112: cases[0].training.unfused[0]: expected swiglu only for a model "
            "whose MLP is SwiGLU");
}

// training.cross_entropy_fusion: Transformer Engine's loss keeps no fp32 copy of the logits (less
// memory on the one stage, which holds the head) and passes over them fewer times (a shorter
// step); the jit-fused one is priced as the unfused one; another name is refused at the field.
TEST(PublishedRunsFormat, TheLossFusionIsReadAsStated) {
  auto predict = [](const std::string& text) {
    test::TempFolder folder;
    std::ofstream(folder.file("runs.yaml")) << text;
    return validate_published_runs(folder.path(), kProfiles).cases.at(0);
  };
  const CaseResult none = predict(one_case(kModel, kTraining));
  const CaseResult native = predict(one_case(kModel, kTraining + ", cross_entropy_fusion: native"));
  const CaseResult te = predict(one_case(kModel, kTraining + ", cross_entropy_fusion: te"));
  EXPECT_EQ(native.predicted, none.predicted);
  EXPECT_EQ(native.predicted_memory_gib, none.predicted_memory_gib);
  EXPECT_LT(te.predicted, none.predicted);  // a step time
  EXPECT_LT(te.predicted_memory_gib, none.predicted_memory_gib);
  EXPECT_EQ(error_of(one_case(kModel, kTraining + ", cross_entropy_fusion: liger")),
            "runs.yaml:6:124: cases[0].training.cross_entropy_fusion: expected one of none, "
            "native or te, got \"liger\"");
}

// A layout of model chunks of unequal size (parallel.chunk_layers, one list per stage of vpp
// counts) reaches the plan; its shape is checked at the field. A mixture's keys need experts;
// latent attention needs all its widths.
TEST(PublishedRunsFormat, ChunkLayoutsAndModelKeysAreReadAsStated) {
  test::TempFolder folder;
  const std::string layout =
      "    parallel: {tp: 1, pp: 2, dp: 4, vpp: 2, chunk_layers: [[1, 1], [2, 0]]}\n";
  std::string text = one_case(kModel, kTraining);
  text.replace(text.find("    parallel: {tp: 8, pp: 1, dp: 1}\n"), 36, layout);
  std::ofstream(folder.file("runs.yaml"), std::ios::trunc) << text;
  const CaseResult c = validate_published_runs(folder.path(), kProfiles).cases.at(0);
  EXPECT_TRUE(c.feasible) << (c.reasons.empty() ? "" : c.reasons.front());
  EXPECT_GT(c.predicted, 0.0);

  std::string bad = text;
  bad.replace(bad.find("[[1, 1], [2, 0]]"), 16, "[[1, 1, 0], [2, 0]]");
  EXPECT_EQ(error_of(bad),
            "runs.yaml:7:59: cases[0].parallel.chunk_layers: expected one list per pipeline stage "
            "(pp 2), each of vpp (2, at least 2) model chunks' layers, got a list");
  EXPECT_EQ(error_of(one_case(kModel + ", dense_layers: 1", kTraining)),
            "runs.yaml:5:115: cases[0].model.dense_layers: expected only with model.experts (a "
            "mixture's key), got \"1\"");
  EXPECT_EQ(error_of(one_case(kModel, kTraining + ", recompute_modules: [mlp]")),
            "runs.yaml:6:121: cases[0].training.recompute_modules: expected training.recompute: "
            "selective beside it");
  EXPECT_EQ(error_of(one_case(kModel + ", kv_lora_rank: 64", kTraining)),
            "runs.yaml:4:5: cases[0].model.qk_nope_head_dim: missing required key (in the case or "
            "in common)");
}

// A case predicted on the chip `chip` (hardware.chip) and network `network`: a LLaMA-2-7B-shaped
// model with tp x pp x dp = `layout` over two nodes of eight.
CaseResult on_hardware(const std::string& chip, const std::string& layout,
                       const std::string& network = "") {
  test::TempFolder folder;
  std::ofstream(folder.file("runs.yaml"))
      << "source: a test\n"
         "hardware: {chip: \""
      << chip << "\", chips_per_node: 8"
      << (network.empty() ? "" : ", network: \"" + network + "\"") << "}\n"
      << "cases:\n"
         "  - id: c1\n"
         "    model: {arch: llama, layers: 32, hidden: 4096, heads: 32, ffn: 11008, vocab: 32000, "
         "seq_len: 4096}\n"
         "    training: {global_batch: 64, micro_batch: 1, dtype: bf16, recompute: none, "
         "flash_attention: true}\n"
         "    parallel: {"
      << layout
      << ", sp: true}\n"
         "    chips: 16\n"
         "    measured: {step_time_s: 1.0}\n";
  return validate_published_runs(folder.path(), kProfiles).cases.at(0);
}

// A part of a profiled die is predicted with the profile and what its description says differs:
// the A100 40 GB has 40 GiB of slower HBM, the A800 and H800 NVLink at 400 GB/s both ways; an
// Atlas 800T A2 server holds 910B chips, an A3 one 910C dies. Parts the profiles do not describe
// are refused at the field, with what was expected.
TEST(PublishedRunsFormat, ChipVariantsAreReadFromTheirDescription) {
  const std::string tp8 = "tp: 8, pp: 1, dp: 2";
  const std::string tp2 = "tp: 2, pp: 1, dp: 8";
  // Memory: the 40 GB part holds less and streams slower; its GEMMs are the same.
  const CaseResult a100 = on_hardware("NVIDIA A100 80GB SXM", tp2);
  const CaseResult a100_40 = on_hardware("NVIDIA A100-SXM4-40GB", tp2);
  EXPECT_TRUE(a100.feasible);
  EXPECT_GT(a100.predicted_memory_gib, 40.0);
  EXPECT_FALSE(a100_40.feasible);
  EXPECT_NE(a100_40.reasons.at(0).find("39.2 GiB"), std::string::npos) << a100_40.reasons.at(0);
  const CaseResult small = on_hardware("NVIDIA A100 80GB SXM", tp8);
  const CaseResult small_40 = on_hardware("A100 40GB", tp8);
  EXPECT_TRUE(small_40.feasible);
  EXPECT_GT(small_40.breakdown.compute_s, small.breakdown.compute_s);
  EXPECT_EQ(small_40.breakdown.tensor_parallel_s, small.breakdown.tensor_parallel_s);
  // NVLink: 200 GB/s each way instead of 300 (A100, the A800's own profile) or 450 (H100, the
  // H800 stated so); a figure in the description wins.
  const CaseResult a800 = on_hardware("NVIDIA A800-SXM4-80GB", tp8);
  EXPECT_EQ(a800.breakdown.compute_s, small.breakdown.compute_s);
  EXPECT_GT(a800.breakdown.tensor_parallel_s, 1.3 * small.breakdown.tensor_parallel_s);
  const CaseResult a800_600 = on_hardware("NVIDIA A800-SXM4-80GB (NVLink 600 GB/s)", tp8);
  EXPECT_LT(a800_600.breakdown.tensor_parallel_s, a800.breakdown.tensor_parallel_s / 1.3);
  const CaseResult h100 = on_hardware("NVIDIA H100 80GB HBM3", tp8);
  const CaseResult h800 = on_hardware("NVIDIA H800 SXM5", tp8);
  EXPECT_EQ(h800.breakdown.compute_s, h100.breakdown.compute_s);
  EXPECT_GT(h800.breakdown.tensor_parallel_s, 2.0 * h100.breakdown.tensor_parallel_s);
  // Ascend: the server's name or the chip's.
  EXPECT_EQ(on_hardware("Atlas 800T A2 (8 NPUs)", tp8).predicted,
            on_hardware("Huawei Ascend 910B", tp8).predicted);
  // The 910B3 is the 20-core 313T class: a longer step than the 376T class an unnamed 910B is
  // read as. The 910B4 has no profile (refused below).
  EXPECT_GT(on_hardware("Ascend 910B3", tp8).predicted,
            1.05 * on_hardware("Huawei Ascend 910B", tp8).predicted);
  // A 910C is read as its dies (a case's chips are its ranks): each die the 910B2's peaks and
  // HBM, sixteen to a node with 196 GB/s each way on the node's switch, so the step differs
  // from the 910B's only through the links and the uncalibrated efficiencies.
  const CaseResult a3 = on_hardware("Huawei Ascend 910C (Atlas 900 A3 SuperPoD)", tp8);
  EXPECT_TRUE(a3.feasible);
  EXPECT_EQ(a3.predicted, on_hardware("Atlas 800 A3", tp8).predicted);
  EXPECT_EQ(a3.predicted, on_hardware("Ascend910_9392", tp8).predicted);
  EXPECT_EQ(a3.predicted_memory_gib, on_hardware("Huawei Ascend 910B", tp8).predicted_memory_gib);

  auto refused = [](const std::string& chip) {
    return error_of("source: a test\nhardware: {chip: \"" + chip +
                    "\"}\ncases:\n  - id: c1\n    model: {" + kModel + "}\n    training: {" +
                    kTraining +
                    "}\n    parallel: {tp: 8, pp: 1, dp: 1}\n    chips: 8\n"
                    "    measured: {step_time_s: 1.0}\n");
  };
  EXPECT_EQ(refused("NVIDIA H100 PCIe"),
            "runs.yaml:2:18: hardware.chip: expected an H100 or H800 SXM5 part, the bundled "
            "profile's (PCIe and NVL cards have other clocks, memory and links), got \"NVIDIA "
            "H100 PCIe\"");
  EXPECT_EQ(refused("A100 PCIe 40GB"),
            "runs.yaml:2:18: hardware.chip: expected an A100 or A800 SXM4 part, the bundled "
            "profile's (a PCIe card has other clocks, power and links), got \"A100 PCIe 40GB\"");
  EXPECT_EQ(refused("NVIDIA H20"),
            "runs.yaml:2:18: hardware.chip: expected a chip hetplan has a profile for (A100, "
            "A800, H100, H800, Ascend 910, 910B or 910C), got \"NVIDIA H20\"");
  EXPECT_EQ(refused("Ascend 910B4"),
            "runs.yaml:2:18: hardware.chip: expected a 910B part with a bundled profile (the "
            "910B4's tier and its 32 GiB are not established; 910B3: ascend-910b-313t, other "
            "910B: ascend-910b), got \"Ascend 910B4\"");
}

// The network's NICs and rate in the spellings sources use; a figure in bytes is not a rate.
TEST(PublishedRunsFormat, NetworkRatesInTheirCommonSpellings) {
  const std::string layout = "tp: 1, pp: 1, dp: 16";
  const std::string chip = "NVIDIA H100 80GB HBM3";
  const double stated =
      on_hardware(chip, layout, "8x 100 Gb/s InfiniBand").breakdown.data_parallel_s;
  EXPECT_GT(stated, 0.0);
  for (const char* spelling : {"8 x 100Gbps RoCE", "8\u00d7100G RoCE v2", "8X 100 Gbit/s",
                               "8* 100 GbE", "HDR, 8x100 Gb/s per node"}) {
    EXPECT_EQ(on_hardware(chip, layout, spelling).breakdown.data_parallel_s, stated) << spelling;
  }
  const double faster = on_hardware(chip, layout, "8x 400 Gb/s NDR").breakdown.data_parallel_s;
  EXPECT_LT(faster, stated);
  // Bytes are not read, nor a rate of nothing: the profile's NICs stand, as with no network text.
  const double profile_nics = on_hardware(chip, layout).breakdown.data_parallel_s;
  EXPECT_EQ(on_hardware(chip, layout, "8x 50 GB/s").breakdown.data_parallel_s, profile_nics);
  EXPECT_EQ(on_hardware(chip, layout, "8x 0 Gb/s").breakdown.data_parallel_s, profile_nics);
  // Long descriptions are read in one pass, without recursion per character.
  const std::string gap(300000, ' ');
  EXPECT_EQ(on_hardware(chip, layout, "8x" + gap + "100 Gb/s").breakdown.data_parallel_s, stated);
  EXPECT_FALSE(on_hardware("A100" + gap + "40GB", "tp: 2, pp: 1, dp: 8").feasible);
}

TEST(PublishedRunsCli, TheBundledDevSetIsTheDefaultFromAnyFolder) {
  test::TempFolder elsewhere;
  const std::string command = "cd " + elsewhere.path() + " && " + HETPLAN_BINARY +
                              " validate --published --json 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  ASSERT_EQ(WEXITSTATUS(pclose(pipe)), 0) << out;
  const e2e::CliRun explicit_folder = e2e::hetplan("validate --published " + kPublished + " --json");
  EXPECT_EQ(out, explicit_folder.out);
  EXPECT_NE(out.find("\"fp-8b-dp8-oom\""), std::string::npos);
}

// `--microbench` calibrates into a temporary folder that goes with the command; the profiles
// are kept only in a new or empty folder named by `--calibrated-out`, and a folder holding
// anything is refused with nothing written to it.
TEST(PublishedRunsCli, CalibratedProfilesAreKeptOnlyWhereAsked) {
  test::TempFolder temporary;  // the command's temporary folder, watched
  const char* before = std::getenv("TMPDIR");
  const std::string saved = before ? before : "";
  ASSERT_EQ(setenv("TMPDIR", temporary.path().c_str(), 1), 0);
  const e2e::CliRun passing =
      e2e::hetplan("validate --published " + kPublished + " --microbench --json", " 2>&1");
  const std::string kept = temporary.file("kept");
  const e2e::CliRun keeping = e2e::hetplan("validate --published " + kPublished +
                                           " --microbench --calibrated-out " + kept + " --json");
  if (before)
    setenv("TMPDIR", saved.c_str(), 1);
  else
    unsetenv("TMPDIR");

  ASSERT_EQ(passing.exit_code, 0) << passing.out;
  EXPECT_EQ(passing.out.find("calibrated profiles written"), std::string::npos);
  ASSERT_EQ(keeping.exit_code, 0) << keeping.out;
  EXPECT_NE(keeping.out.find("calibrated profiles written to " + kept), std::string::npos);
  // Nothing is left in the temporary folder but the kept one.
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(temporary.path()))
    left.push_back(entry.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"kept"});
  const std::string a100 = kept + "/nvidia-a100-sxm4-80gb.yaml";
  const std::string written = e2e::read_text(a100);
  EXPECT_NE(written.find("calibrated: true"), std::string::npos) << written.substr(0, 400);

  // Into the same folder again: refused at the option, the profiles as they were.
  const e2e::CliRun again =
      e2e::hetplan("validate --published " + kPublished + " --microbench --calibrated-out " + kept);
  EXPECT_EQ(again.exit_code, 2) << again.out;
  EXPECT_NE(again.out.find(kept + ": --calibrated-out: expected a new or empty folder"),
            std::string::npos)
      << again.out;
  EXPECT_EQ(e2e::read_text(a100), written);
  // Without --microbench there is nothing to keep.
  const e2e::CliRun alone =
      e2e::hetplan("validate --published " + kPublished + " --calibrated-out " + kept);
  EXPECT_EQ(alone.exit_code, 2) << alone.out;
}

}  // namespace
}  // namespace hetplan::validation

namespace hetplan::validation {
namespace {

// One of the bundled check sets outside the dev set (validation/published-runs-<name>).
ValidationReport check_set(const std::string& name) {
  return validate_published_runs(
      std::string(HETPLAN_SOURCE_DIR) + "/validation/published-runs-" + name, kProfiles);
}

// The mixture-of-experts runs (validation/published-runs-moe, hetplan's extension of the case
// fields): every case reads, its experts and expert parallelism reach the estimate (expert-
// parallel cases expose all-to-all time, the others none), and the report gives each one a
// prediction or the reasons it has none. Their errors are reported in docs/validation.md; the
// goal (mean absolute error within 10%) is not met yet, so no threshold is asserted here.
TEST(PublishedRunsMoe, EveryCaseIsReadAndPredicted) {
  const auto report = check_set("moe");
  ASSERT_GE(report.cases.size(), 10u);
  int with_ep = 0;
  for (const auto& c : report.cases) {
    EXPECT_GT(c.predicted, 0.0) << c.id;
    EXPECT_TRUE(c.feasible || !c.reasons.empty()) << c.id;
    // FlagPerf's runs have ep 1 in their file; every other file's cases have ep above 1.
    if (c.file == "moe-runs-flagperf") {
      EXPECT_EQ(c.breakdown.expert_parallel_s, 0.0) << c.id;
    } else {
      EXPECT_GT(c.breakdown.expert_parallel_s, 0.0) << c.id;
      ++with_ep;
    }
  }
  EXPECT_GE(with_ep, 5);
}

// The Ascend 910B runs outside the dev set (validation/published-runs-ascend, MindSpeed-LLM's
// model table): every case reads, and every one ran, so each is predicted to fit in the 910B's
// memory; the tensor-parallel ones expose tensor-parallel time, the tp 1 one none. Their errors
// are reported in docs/validation.md#ascend-results; the per-case goal is not met (they are
// predicted 25 to 60% too fast), so no threshold is asserted here.
TEST(PublishedRunsAscend, EveryCaseIsReadAndPredictedToFit) {
  const auto report = check_set("ascend");
  ASSERT_EQ(report.cases.size(), 4u);
  for (const auto& c : report.cases) {
    EXPECT_EQ(c.metric, "tokens_per_s_per_chip") << c.id;
    EXPECT_TRUE(c.feasible) << c.id << ": " << (c.reasons.empty() ? "" : c.reasons.front());
    EXPECT_GT(c.predicted, 0.0) << c.id;
    if (c.id == "ms-llama2-7b") {
      EXPECT_EQ(c.breakdown.tensor_parallel_s, 0.0);
    } else {
      EXPECT_GT(c.breakdown.tensor_parallel_s, 0.0) << c.id;
    }
  }
}

}  // namespace
}  // namespace hetplan::validation
