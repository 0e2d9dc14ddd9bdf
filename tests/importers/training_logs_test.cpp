// Training-log importer on real logs (tests/importers/data, copied byte for byte from public
// repositories; see ../shared/data/tool-outputs/README.md) and on malformed variants
// (tests/importers/data/bad/training-*). Expected values are read straight from the fixture text:
// these are parser checks, not model expectations.
#include "importers/training_logs.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/formats/test_support.hpp"

namespace hetplan::importers {
namespace {

using hetplan::testing::input_error_of;

const std::string kData = std::string(HETPLAN_SOURCE_DIR) + "/tests/importers/data/";
const std::string kBad = kData + "bad/";

// 2021 Megatron-LM: argument dump, 64 ranks TP4 PP16, iterations 1..62, no TFLOP/s column.
const std::string kMegatron64 =
    kData + "megatron-lm-gpt2-64rank-tp4-pp16-2021-bigscience-ds-off.out";
// 32 ranks TP4 PP8, log interval 10, the first iterations skipped by the fp16 loss scaler.
const std::string kMegatronV100 =
    kData + "megatron-lm-gpt2-v100-32rank-tp4-pp8-2021-bigscience.out";
const std::string kMindSpeed = kData + "mindspeed-llm-fsdp2-qwen3-8b-finetune-A2-3iters.log";
const std::string kDeepSpeed =
    kData + "megatron-deepspeed-bloom176b-a100-samplespersec-tflops-3iters.log";

constexpr double kMs = 1e-3;
constexpr double kTflops = 1e12;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string log_error(const std::string& name) {
  return input_error_of([&] { (void)import_training_log(kBad + name); });
}

TEST(TrainingLogMegatron, IterationLinesOfThe64RankRun) {
  const TrainingLog log = import_training_log(kMegatron64);
  EXPECT_EQ(log.framework, "megatron-lm");
  ASSERT_EQ(log.iterations.size(), 62u);
  const Iteration& first = log.iterations.front();
  EXPECT_EQ(first.iteration, 1);
  EXPECT_EQ(first.total_iterations, 1000);
  EXPECT_EQ(first.location.file, kMegatron64);
  EXPECT_EQ(first.location.line, 853);
  EXPECT_EQ(first.location.column, 2);
  EXPECT_EQ(log.iterations.back().iteration, 62);
  // " iteration        2/    1000 | consumed samples:         2048 | elapsed time per iteration
  // (ms): 125536.8 | learning rate: 3.750E-05 | global batch size:  1024 | lm loss:
  // 1.244502E+01 | loss scale: 12.0 | grad norm: 68.180 | number of skipped iterations:   0 |"
  const Iteration& second = log.iterations[1];
  EXPECT_EQ(second.iteration, 2);
  EXPECT_DOUBLE_EQ(second.elapsed_s, 125536.8 * kMs);
  EXPECT_EQ(second.consumed_samples, 2048);
  EXPECT_DOUBLE_EQ(*second.learning_rate, 3.750e-05);
  EXPECT_EQ(second.global_batch, 1024);
  EXPECT_DOUBLE_EQ(*second.loss, 12.44502);
  EXPECT_DOUBLE_EQ(*second.loss_scale, 12.0);
  EXPECT_DOUBLE_EQ(*second.grad_norm, 68.180);
  EXPECT_EQ(second.skipped, 0);
  EXPECT_EQ(second.nan_iterations, 0);
  // This version prints neither TFLOP/s nor tokens.
  EXPECT_FALSE(second.flops_per_gpu);
  EXPECT_FALSE(second.consumed_tokens);
  EXPECT_FALSE(second.samples_per_s);
}

TEST(TrainingLogMegatron, ArgumentDumpAndParallelism) {
  const TrainingLog log = import_training_log(kMegatron64);
  // 152 "  name ..... value" lines between the "arguments" rulers.
  EXPECT_EQ(log.arguments.size(), 152u);
  EXPECT_EQ(log.arguments.at("tensor_model_parallel_size"), "4");
  EXPECT_EQ(log.arguments.at("pipeline_model_parallel_size"), "16");
  EXPECT_EQ(log.arguments.at("DDP_impl"), "local");
  EXPECT_EQ(log.arguments.at("lazy_mpu_init"), "None");
  EXPECT_EQ(log.arguments.at("split"), "949,50,1");
  EXPECT_EQ(log.arguments.at("data_path").substr(0, 12), "['/gpfswork/");
  EXPECT_EQ(log.world_size, 64);
  EXPECT_EQ(log.tp, 4);
  EXPECT_EQ(log.pp, 16);
  EXPECT_EQ(log.dp, 1);
  EXPECT_EQ(log.micro_batch, 4);
  EXPECT_EQ(log.global_batch, 1024);
  EXPECT_EQ(log.seq_len, 1024);
}

TEST(TrainingLogMegatron, TokensPerSecondDerivedFromConsumedSamplesAndSeqLength) {
  const TrainingLog log = import_training_log(kMegatron64);
  // No line before the first: nothing to derive from.
  EXPECT_FALSE(log.iterations[0].tokens_per_s);
  // Iteration 2: 2048 - 1024 samples of 1024 tokens in one iteration of 125.5368 s.
  ASSERT_TRUE(log.iterations[1].tokens_per_s);
  EXPECT_TRUE(log.iterations[1].tokens_per_s_derived);
  EXPECT_DOUBLE_EQ(*log.iterations[1].tokens_per_s, 1024.0 * 1024.0 / (125536.8 * kMs));
}

TEST(TrainingLogMegatron, SkippedIterationsAndLogInterval) {
  const TrainingLog log = import_training_log(kMegatronV100);
  EXPECT_EQ(log.framework, "megatron-lm");
  // One line every 10 iterations up to 200; "validation loss at iteration 100 |" and
  // "[Rank 18] (after 20 iterations) memory (MB) | ..." are not iteration lines.
  ASSERT_EQ(log.iterations.size(), 20u);
  EXPECT_EQ(log.iterations.front().iteration, 10);
  EXPECT_EQ(log.iterations.back().iteration, 200);
  // All ten iterations of the first interval were skipped: no loss, a huge loss scale.
  const Iteration& first = log.iterations[0];
  EXPECT_EQ(first.skipped, 10);
  EXPECT_FALSE(first.loss);
  EXPECT_FALSE(first.grad_norm);
  EXPECT_DOUBLE_EQ(*first.loss_scale, 8388608.0);
  EXPECT_DOUBLE_EQ(first.elapsed_s, 3171.3 * kMs);
  EXPECT_EQ(log.iterations[1].skipped, 8);
  EXPECT_EQ(log.iterations[2].skipped, 1);
  EXPECT_DOUBLE_EQ(*log.iterations[2].grad_norm, 67.033);
  EXPECT_EQ(log.iterations[3].skipped, 0);
  EXPECT_EQ(log.world_size, 32);
  EXPECT_EQ(log.tp, 4);
  EXPECT_EQ(log.pp, 8);
  EXPECT_EQ(log.global_batch, 4);
  // Interval of 10 iterations: (80 - 40) samples / 10 iterations x 1024 tokens / 1.5727 s.
  EXPECT_DOUBLE_EQ(*log.iterations[1].tokens_per_s, 40.0 / 10.0 * 1024.0 / (1572.7 * kMs));
}

TEST(TrainingLogMindSpeed, FsdpFinetuneLines) {
  const TrainingLog log = import_training_log(kMindSpeed);
  EXPECT_EQ(log.framework, "mindspeed-llm");
  ASSERT_EQ(log.iterations.size(), 3u);
  // "INFO [2026-06-22 19:25:37] >>  iteration        1/    2000 | consumed samples:          8 |
  // consumed tokens:        564 | elapsed time per iteration (ms): 7827.39 | learning rate:
  // 1.666667E-07 | global batch size:     8 | lm loss: 3.316887E+00 | grad norm: 70.959 |
  // max_memory_allocated(GB): 19.07 | max_memory_reserved(GB): 20.90 |"
  const Iteration& first = log.iterations[0];
  EXPECT_EQ(first.iteration, 1);
  EXPECT_EQ(first.total_iterations, 2000);
  EXPECT_EQ(first.location.line, 1);
  EXPECT_EQ(first.location.column, 32);
  EXPECT_DOUBLE_EQ(first.elapsed_s, 7827.39 * kMs);
  EXPECT_EQ(first.consumed_samples, 8);
  EXPECT_EQ(first.consumed_tokens, 564);
  EXPECT_DOUBLE_EQ(*first.learning_rate, 1.666667e-07);
  EXPECT_DOUBLE_EQ(*first.loss, 3.316887);
  EXPECT_DOUBLE_EQ(*first.grad_norm, 70.959);
  EXPECT_DOUBLE_EQ(*first.max_memory_bytes, 19.07 * kGiB);
  EXPECT_FALSE(first.loss_scale);
  EXPECT_EQ(log.iterations[2].iteration, 3);
  EXPECT_DOUBLE_EQ(log.iterations[2].elapsed_s, 981.08 * kMs);
  // No argument dump in these lines; the global batch comes from the first line.
  EXPECT_TRUE(log.arguments.empty());
  EXPECT_FALSE(log.tp);
  EXPECT_FALSE(log.world_size);
  EXPECT_EQ(log.global_batch, 8);
  // Consumed tokens grow 564 -> 1357 over iteration 2's 1.33174 s.
  EXPECT_DOUBLE_EQ(*log.iterations[1].tokens_per_s, (1357.0 - 564.0) / (1331.74 * kMs));
}

TEST(TrainingLogDeepSpeed, RankPrefixSecondsAndTflops) {
  const TrainingLog log = import_training_log(kDeepSpeed);
  EXPECT_EQ(log.framework, "megatron-deepspeed");
  ASSERT_EQ(log.iterations.size(), 3u);
  // "[default7]: iteration    94768/  115311 | consumed samples:    177927088 | consumed tokens:
  // 364394676224 | elapsed time per iteration (s): 168.97 | ... | samples per second: 12.120 |
  // TFLOPs: 123.73 |"
  const Iteration& first = log.iterations[0];
  EXPECT_EQ(first.iteration, 94768);
  EXPECT_EQ(first.total_iterations, 115311);
  EXPECT_EQ(first.location.column, 13);
  EXPECT_DOUBLE_EQ(first.elapsed_s, 168.97);
  EXPECT_EQ(first.consumed_samples, 177927088);
  EXPECT_EQ(first.consumed_tokens, 364394676224LL);
  EXPECT_DOUBLE_EQ(*first.samples_per_s, 12.120);
  EXPECT_DOUBLE_EQ(*first.flops_per_gpu, 123.73 * kTflops);
  EXPECT_DOUBLE_EQ(*first.grad_norm, 1.335);
  EXPECT_DOUBLE_EQ(*first.loss, 2.042900);
  EXPECT_EQ(first.global_batch, 2048);
  EXPECT_EQ(log.iterations[2].iteration, 94770);
  EXPECT_DOUBLE_EQ(log.iterations[2].elapsed_s, 141.69);
  // 364398870528 - 364394676224 tokens in 140.37 s.
  EXPECT_DOUBLE_EQ(*log.iterations[1].tokens_per_s, 4194304.0 / 140.37);
}

TEST(TrainingLogDeepSpeed, WindowsLineEndingsReadTheSame) {
  std::string text = read(kDeepSpeed);
  std::string crlf;
  for (char c : text) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  const TrainingLog log = parse_training_log(crlf, "crlf.log");
  ASSERT_EQ(log.iterations.size(), 3u);
  EXPECT_DOUBLE_EQ(*log.iterations[2].flops_per_gpu, 147.55 * kTflops);
}

// A log a crash cut off is often padded with NUL bytes: refused where the first one is, not
// read as the iterations before it (what the run measured up to there is the user's to cut).
TEST(TrainingLogErrors, NulBytes) {
  std::string text = read(kMegatron64);
  const auto second_line = text.find('\n') + 1;
  text.insert(second_line + 2, std::string(3, '\0'));
  EXPECT_EQ(input_error_of([&] { (void)parse_training_log(text, "cut.log"); }),
            "cut.log:2:3: expected text, got a NUL byte");
}

// Columns no fixture has, on lines written by hand after the frameworks' format strings.
TEST(TrainingLogColumns, MegatronLmThroughputPerGpu) {
  const TrainingLog log = parse_training_log(
      "[2024-06-04 10:18:42] iteration      100/  500000 | consumed samples:        51200 | "
      "elapsed time per iteration (ms): 1234.5 | throughput per GPU (TFLOP/s/GPU): 401.2 | "
      "learning rate: 1.000000E-04 | global batch size:   512 | lm loss: 2.345678E+00 | "
      "loss scale: 1.0 | grad norm: 0.456 | number of skipped iterations:   0 | number of nan "
      "iterations:   0 |\n",
      "new-megatron.log");
  EXPECT_EQ(log.framework, "megatron-lm");
  ASSERT_EQ(log.iterations.size(), 1u);
  EXPECT_EQ(log.iterations[0].location.column, 23);
  EXPECT_DOUBLE_EQ(*log.iterations[0].flops_per_gpu, 401.2 * kTflops);
  EXPECT_EQ(log.global_batch, 512);
}

TEST(TrainingLogColumns, MindSpeedTokensPerSecond) {
  const TrainingLog log = parse_training_log(
      "INFO [2026-06-22 19:25:39] >>  iteration        4/    2000 | consumed samples:         "
      "32 | consumed tokens:       2900 | elapsed time per iteration (ms): 1000.00 | tokens/s: "
      "787.00 | mfu: 12.34 | learning rate: 6.666667E-07 | global batch size:     8 | lm loss: "
      "2.500000E+00 |\n",
      "mindspeed.log");
  EXPECT_EQ(log.framework, "mindspeed-llm");
  ASSERT_EQ(log.iterations.size(), 1u);
  EXPECT_DOUBLE_EQ(*log.iterations[0].tokens_per_s, 787.0);
  EXPECT_FALSE(log.iterations[0].tokens_per_s_derived);
}

TEST(TrainingLogSummary, SkipsWarmUpLines) {
  const TrainingLog log = import_training_log(kMegatron64);
  const IterationSummary all = summarize(log, 0);
  EXPECT_EQ(all.count, 62);
  const IterationSummary summary = summarize(log);  // skip_first = 1
  EXPECT_EQ(summary.count, 61);
  // The middle of the 61 values: iteration 38's 126640.6 ms.
  EXPECT_DOUBLE_EQ(summary.median_elapsed_s, 126640.6 * kMs);
  EXPECT_FALSE(summary.median_flops_per_gpu);
  ASSERT_TRUE(summary.median_tokens_per_s);
  const IterationSummary later = summarize(log, 5);
  EXPECT_EQ(later.count, 57);
  EXPECT_DOUBLE_EQ(later.median_elapsed_s, 126693.8 * kMs);  // iteration 41
}

TEST(TrainingLogSummary, LeavesOutIntervalsWithSkippedIterations) {
  const TrainingLog log = import_training_log(kMegatronV100);
  // Iterations 10, 20 and 30 had loss-scale skips: 17 lines remain even without a warm-up cut.
  const IterationSummary summary = summarize(log, 0);
  EXPECT_EQ(summary.count, 17);
  EXPECT_DOUBLE_EQ(summary.median_elapsed_s, 1618.3 * kMs);  // iteration 180
  EXPECT_EQ(summarize(log, 1).count, 17);                    // the warm-up line was skipped anyway
  EXPECT_EQ(summarize(log, 4).count, 16);
}

TEST(TrainingLogSummary, MediansOfThroughput) {
  const IterationSummary summary = summarize(import_training_log(kDeepSpeed));
  EXPECT_EQ(summary.count, 2);
  EXPECT_DOUBLE_EQ(summary.median_elapsed_s, (140.37 + 141.69) / 2);
  EXPECT_DOUBLE_EQ(*summary.median_flops_per_gpu, (148.94 + 147.55) / 2 * kTflops);
  EXPECT_DOUBLE_EQ(*summary.median_tokens_per_s, (4194304.0 / 140.37 + 4194304.0 / 141.69) / 2);
}

TEST(TrainingLogSummary, NothingLeft) {
  const IterationSummary summary = summarize(import_training_log(kMindSpeed), 3);
  EXPECT_EQ(summary.count, 0);
  EXPECT_EQ(summary.median_elapsed_s, 0);
  EXPECT_FALSE(summary.median_flops_per_gpu);
  EXPECT_FALSE(summary.median_tokens_per_s);
}

// --- Malformed logs: one test per fixture, exact messages.

TEST(TrainingLogErrors, NoIterationLines) {
  // The setup output of kMegatron64 up to "training ...": the job died before iteration 1.
  EXPECT_EQ(log_error("training-no-iterations.log"),
            kBad +
                "training-no-iterations.log:168:1: expected Megatron-LM, MindSpeed-LLM or "
                "Megatron-DeepSpeed iteration lines (\" iteration N/ M | ... |\"), got none");
}

TEST(TrainingLogErrors, DamagedIterationHeader) {
  EXPECT_EQ(log_error("training-bad-header.log"),
            kBad +
                "training-bad-header.log:170:19: iteration: expected \"<iteration>/<total "
                "iterations>\" in whole numbers, got \"3/    1O00\"");
}

TEST(TrainingLogErrors, ElapsedTimeWithDecimalComma) {
  EXPECT_EQ(log_error("training-bad-elapsed.log"),
            kBad +
                "training-bad-elapsed.log:170:98: elapsed time per iteration (ms): expected a "
                "non-negative number, got \"123997,6\"");
}

TEST(TrainingLogErrors, LineCutBeforeTheElapsedTime) {
  EXPECT_EQ(log_error("training-truncated.log"),
            kBad +
                "training-truncated.log:174:2: elapsed time per iteration: expected an "
                "\"elapsed time per iteration (ms)\" or \"(s)\" field on the iteration line, "
                "got none");
}

TEST(TrainingLogErrors, WordInTheArgumentDump) {
  EXPECT_EQ(log_error("training-bad-argument.log"),
            kBad +
                "training-bad-argument.log:138:53: arguments.tensor_model_parallel_size: "
                "expected a positive whole number or None, got \"four\"");
}

TEST(TrainingLogErrors, WordInTheWorldSizeLine) {
  EXPECT_EQ(log_error("training-bad-world-size.log"),
            kBad +
                "training-bad-world-size.log:1:43: data-parallel-size: expected a positive "
                "whole number, got \"one\"");
}

TEST(TrainingLogErrors, FractionalSkippedCount) {
  EXPECT_EQ(log_error("training-bad-skipped.log"),
            kBad +
                "training-bad-skipped.log:3:237: number of skipped iterations: expected a "
                "whole number from 0 to 2147483647, got \"8.0\"");
}

TEST(TrainingLogErrors, DeepSpeedTflopsNotANumber) {
  EXPECT_EQ(log_error("training-deepspeed-bad-tflops.log"),
            kBad +
                "training-deepspeed-bad-tflops.log:2:368: TFLOPs: expected a non-negative "
                "number, got \"N/A\"");
}

TEST(TrainingLogErrors, MindSpeedMemoryWithUnitGluedOn) {
  EXPECT_EQ(log_error("training-mindspeed-bad-memory.log"),
            kBad +
                "training-mindspeed-bad-memory.log:3:292: max_memory_allocated(GB): expected "
                "a non-negative number, got \"19.07GB\"");
}

TEST(TrainingLogErrors, NonFiniteTimingsAreRejectedButNanLossIsKept) {
  const std::string line = " iteration 5/ 10 | elapsed time per iteration (ms): inf |";
  EXPECT_EQ(input_error_of([&] { (void)parse_training_log(line, "x.log"); }),
            "x.log:1:53: elapsed time per iteration (ms): expected a non-negative number, got "
            "\"inf\"");
  const TrainingLog log = parse_training_log(
      " iteration 5/ 10 | elapsed time per iteration (ms): 1.5 | lm loss: nan |", "x.log");
  EXPECT_TRUE(std::isnan(*log.iterations[0].loss));
}

TEST(TrainingLogErrors, MissingFile) {
  EXPECT_EQ(log_error("no-such-training.log"),
            kBad + "no-such-training.log: cannot open the file for reading");
}

TEST(TrainingLogErrors, FileOver64MiB) {
  // A sparse file: its size is checked before anything is read.
  const auto path = std::filesystem::temp_directory_path() /
                    ("hetplan-oversized-" + std::to_string(::getpid()) + ".log");
  {
    std::ofstream out(path, std::ios::binary);
    out.seekp((std::streamoff{64} << 20));
    out.put('\n');
  }
  const std::string error = input_error_of([&] { (void)import_training_log(path.string()); });
  std::filesystem::remove(path);
  EXPECT_EQ(error,
            path.string() + ": expected a training log of at most 64 MiB, got 67108865 bytes");
}

}  // namespace
}  // namespace hetplan::importers

namespace hetplan::importers {
namespace {

// What real Megatron-DeepSpeed logs print: "loss scale: -1.0" under bf16 (no dynamic scale) and
// "lm-loss" for the loss.
TEST(TrainingLogs, MegatronDeepSpeedLossScaleOfMinusOneAndLmLoss) {
  const std::string line =
      " iteration       10/    1000 | consumed samples:         1280 | elapsed time per "
      "iteration (s): 2.50 | learning rate: 1.000E-04 | global batch size:   128 | lm-loss: "
      "7.250000E+00 | loss scale: -1.0 | grad norm: 1.5 | number of skipped iterations:   0 | "
      "samples per second: 51.2 | TFLOPs: 120.5 |\n";
  const TrainingLog log = parse_training_log(line + line, "ds.log");
  ASSERT_EQ(log.iterations.size(), 2u);
  EXPECT_EQ(log.framework, "megatron-deepspeed");
  EXPECT_FALSE(log.iterations[0].loss_scale.has_value());
  ASSERT_TRUE(log.iterations[0].loss.has_value());
  EXPECT_DOUBLE_EQ(*log.iterations[0].loss, 7.25);
}

}  // namespace
}  // namespace hetplan::importers
