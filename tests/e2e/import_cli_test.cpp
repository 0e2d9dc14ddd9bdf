// `hetplan import FILE` on the real tool outputs the project keeps (tests/importers/data): what
// each file is and what it holds, the figures checked against the lines of the files by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/e2e/cli_run.hpp"

namespace {

using hetplan::e2e::CliRun;
using hetplan::e2e::hetplan;

const std::string kData = "tests/importers/data/";

nlohmann::json imported(const std::string& file) {
  const CliRun run = hetplan("import " + kData + file + " --json", " 2>&1");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  return nlohmann::json::parse(run.out);
}

TEST(ImportCli, MegatronDeepSpeedLog) {
  // Three iteration lines of 168.97, 140.37 and 141.69 s, 2048 sequences and 4,194,304 tokens
  // apart: the median after the first is (140.37 + 141.69) / 2 = 141.03 s, the tokens/s the
  // median of 4194304 / 140.37 and 4194304 / 141.69. JSON figures have six significant digits.
  const auto j = imported("megatron-deepspeed-bloom176b-a100-samplespersec-tflops-3iters.log");
  EXPECT_EQ(j["kind"], "training-log");
  EXPECT_EQ(j["framework"], "megatron-deepspeed");
  EXPECT_EQ(j["iteration_lines"], 3);
  EXPECT_NEAR(j["median_iteration_s"].get<double>(), 141.03, 1e-9);
  EXPECT_NEAR(j["median_tokens_per_s"].get<double>(),
              (4194304 / 140.37 + 4194304 / 141.69) / 2, 0.1);
  EXPECT_NEAR(j["first_loss"].get<double>(), 2.0429, 1e-5);
  EXPECT_NEAR(j["last_loss"].get<double>(), 2.000182, 1e-5);
  EXPECT_EQ(j["global_batch"], 2048);
}

TEST(ImportCli, MegatronLmLogWithItsLayout) {
  const auto j = imported("megatron-lm-gpt2-v100-32rank-tp4-pp8-2021-bigscience.out");
  EXPECT_EQ(j["framework"], "megatron-lm");
  EXPECT_EQ(j["world_size"], 32);
  EXPECT_EQ(j["tp"], 4);
  EXPECT_EQ(j["pp"], 8);
  EXPECT_EQ(j["dp"], 1);
  EXPECT_EQ(j["seq_len"], 1024);
  EXPECT_EQ(j["iteration_lines"], 20);
}

TEST(ImportCli, TracesCollectiveLogsAndNodeLists) {
  const auto trace = imported("torch-profiler-trace-a100-simple-add-rank0.json");
  EXPECT_EQ(trace["kind"], "torch-profiler-trace");
  EXPECT_EQ(trace["rank"], 0);
  EXPECT_GT(trace["top_kernels"].size(), 0u);
  const auto nccl = imported("nccl-tests-5colls-h100-4rank-1node-nccltests2.17.8.log");
  EXPECT_EQ(nccl["kind"], "collective-benchmark");
  EXPECT_EQ(nccl["sweeps"][0]["tool"], "nccl-tests");
  EXPECT_EQ(nccl["sweeps"][0]["ranks"], 4);
  const auto nodes = imported("kubectl-get-nodes-ascend-dcu-mlu.json");
  EXPECT_EQ(nodes["kind"], "kubectl-nodes");
  EXPECT_EQ(nodes["nodes"], 9);
  EXPECT_EQ(nodes["islands"].size(), 3u);
  const CliRun text = hetplan("import " + kData + "torch-profiler-trace-a100-simple-add-rank0.json");
  EXPECT_NE(text.out.find("NVIDIA A100-PG509-200 x8, rank 0"), std::string::npos) << text.out;
}

TEST(ImportCli, AnythingElseIsOneLineAndExitTwo) {
  const CliRun run = hetplan("import README.md");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out.rfind("error: README.md:1:1: expected a training log", 0), 0u) << run.out;
  EXPECT_EQ(run.out.find('\n'), run.out.size() - 1) << run.out;
  const CliRun failed = hetplan("import " + kData + "hccl-test-error-retcode7-doc-example-oam-tools.txt");
  EXPECT_EQ(failed.exit_code, 2) << failed.out;
}

}  // namespace
