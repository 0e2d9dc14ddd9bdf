// `hetplan import FILE` on the real tool outputs the project keeps (tests/importers/data): what
// each file is and what it holds, the figures checked against the lines of the files by hand.
#include <gtest/gtest.h>

#include <algorithm>
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

namespace {

using hetplan::e2e::CliRun;
using hetplan::e2e::hetplan;

// The files `hetplan import` had not been run on: the 64-rank Megatron-LM log (62 iteration
// lines, its layout in the arguments), the MindSpeed-LLM log (7827.39, 1331.74 and 981.08 ms:
// the median after the first is their mean, 1.15641 s; 19.07 GB peak allocated) and the MI250
// trace (four devices).
TEST(ImportCli, TheOtherLogsAndTrace) {
  const auto big = imported("megatron-lm-gpt2-64rank-tp4-pp16-2021-bigscience-ds-off.out");
  EXPECT_EQ(big["framework"], "megatron-lm");
  EXPECT_EQ(big["iteration_lines"], 62);
  EXPECT_EQ(big["world_size"], 64);
  EXPECT_EQ(big["tp"], 4);
  EXPECT_EQ(big["pp"], 16);
  const auto mindspeed = imported("mindspeed-llm-fsdp2-qwen3-8b-finetune-A2-3iters.log");
  EXPECT_EQ(mindspeed["framework"], "mindspeed-llm");
  EXPECT_EQ(mindspeed["iteration_lines"], 3);
  EXPECT_NEAR(mindspeed["median_iteration_s"].get<double>(), (1.33174 + 0.98108) / 2, 1e-6);
  EXPECT_NEAR(mindspeed["peak_memory_gib"].get<double>(), 19.07, 1e-9);
  const auto trace = imported("torch-profiler-trace-mi250-rocm6.2-minitoy-train.json");
  EXPECT_EQ(trace["kind"], "torch-profiler-trace");
  EXPECT_EQ(trace["devices"].size(), 4u);
}

// A run's file handed to `check` or to `validate --bundle` gets one line that says what the
// file is and which command reads it (a YAML error about its first odd line said nothing).
TEST(ImportCli, RunFilesWhereADocumentIsExpectedSayWhatTheyAre) {
  const std::string data = "tests/importers/data/";
  const std::pair<const char*, const char*> files[] = {
      {"megatron-lm-gpt2-v100-32rank-tp4-pp8-2021-bigscience.out", "this is a training log"},
      {"megatron-deepspeed-bloom176b-a100-samplespersec-tflops-3iters.log", "this is a training log"},
      {"mindspeed-llm-fsdp2-qwen3-8b-finetune-A2-3iters.log", "this is a training log"},
      {"torch-profiler-trace-a100-simple-add-rank0.json", "this is a PyTorch profiler trace"},
      {"nccl-tests-5colls-h100-4rank-1node-nccltests2.17.8.log", "this is a collective benchmark log"},
      {"synthetic-from-text-nccl-tests-alltoall-h100-2rank-2node-v3.json",
       "this is a collective benchmark log"},
      {"hccl-test-allreduce-8npu-doc-example-oam-tools.txt", "this is a collective benchmark log"},
      {"kubectl-get-nodes-ascend-dcu-mlu.json", "this is a kubectl node list"},
  };
  for (const auto& [file, kind] : files) {
    SCOPED_TRACE(file);
    const std::string path = data + file;
    const CliRun check = hetplan("check " + path, " 2>&1");
    EXPECT_EQ(check.exit_code, 2) << check.out;
    const std::string start = "error: " + path + ":1:1: expected a hetplan document (chip, "
                              "cluster, workload, scenario or plan) or a Hugging Face config; " +
                              kind;
    EXPECT_EQ(check.out.rfind(start, 0), 0u) << check.out;
    EXPECT_EQ(std::count(check.out.begin(), check.out.end(), '\n'), 1) << check.out;
    const CliRun bundle =
        hetplan("validate --bundle " + path + " --profile profiles/nvidia-h100-sxm5-80gb.yaml", " 2>&1");
    EXPECT_EQ(bundle.exit_code, 2) << bundle.out;
    EXPECT_NE(bundle.out.find(path + ":1:1: expected a calibration bundle"), std::string::npos)
        << bundle.out;
    EXPECT_NE(bundle.out.find(kind), std::string::npos) << bundle.out;
  }
  // A Hugging Face config is JSON too, and still a document check reads.
  EXPECT_EQ(hetplan("check tests/formats/data/hf/gpt2.json").exit_code, 0);
}

}  // namespace
