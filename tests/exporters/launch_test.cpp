// Launch arguments (Megatron-LM / MindSpeed-LLM) and node labels: the default scenario's
// reference and top plans, and hand-made plans for the layer splits each framework can and
// cannot express. The files are sourced by bash to read back what a launch script would see.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "exporters/export.hpp"
#include "formats/loaders.hpp"
#include "planner/search.hpp"
#include "sim/estimator.hpp"
#include "tests/support/plans.hpp"
#include "tests/support/shell.hpp"

namespace hetplan::exporters {
namespace {

const std::string kScenarioPath = HETPLAN_SOURCE_DIR "/scenarios/default.yaml";

const Scenario& scenario() {
  static const Scenario s = formats::load_scenario(kScenarioPath);
  return s;
}

const Plan& reference() {
  return *scenario().reference_plan;
}

// The default scenario's top searched plans (searched once).
const std::vector<Plan>& top_plans() {
  static const std::vector<Plan> plans = [] {
    planner::SearchOptions options;
    options.top = 5;
    std::vector<Plan> out;
    for (const auto& ranked : planner::search_plans(scenario(), options).ranked) {
      if (!ranked.plan.stages.empty()) out.push_back(ranked.plan);
    }
    return out;
  }();
  return plans;
}

ExportInput input_for(const Plan& plan, bool validated = true) {
  ExportInput input;
  input.scenario = &scenario();
  input.plan = &plan;
  input.validation.validated = validated;
  if (!validated)
    input.validation.missing = {"island mlu370 (Neuware unknown): no single-card step"};
  return input;
}

using test::plan_on;

// A temporary file holding text (removed by the caller).
std::filesystem::path temp_file(const std::string& text) {
  static int count = 0;
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("hetplan-launch-test-" + std::to_string(::getpid()) + "-" + std::to_string(++count) + ".sh");
  std::ofstream out(path, std::ios::binary);
  out << text;
  return path;
}

// The words of a variable (an array's elements) after sourcing the file in bash (throws when
// bash fails).
std::vector<std::string> sourced(const std::string& text, const std::string& variable) {
  const std::filesystem::path path = temp_file(text);
  const std::string command =
      "bash -c '. \"$0\" && printf %s \"${" + variable + "[*]}\"' '" + path.string() + "'";
  const test::ShellRun run = test::run_shell(command);
  std::filesystem::remove(path);
  if (run.status != 0) throw std::runtime_error("bash failed on:\n" + text);
  std::istringstream words(run.output);
  std::vector<std::string> out;
  for (std::string word; words >> word;) out.push_back(word);
  return out;
}

std::string sourced_text(const std::string& text, const std::string& variable) {
  std::string out;
  for (const auto& word : sourced(text, variable)) out += (out.empty() ? "" : " ") + word;
  return out;
}

// The file's comments as one line of words, so that phrases can be found wherever lines wrap.
std::string comments(const std::string& text) {
  std::istringstream lines(text);
  std::string out;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind('#', 0) != 0) continue;
    std::istringstream words(line.substr(1));
    for (std::string word; words >> word;) out += (out.empty() ? "" : " ") + word;
  }
  return out;
}

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

// The value after a flag; empty when the flag is absent.
std::string value_of(const std::vector<std::string>& args, const std::string& flag) {
  const auto it = std::find(args.begin(), args.end(), flag);
  return it == args.end() || it + 1 == args.end() ? "" : *(it + 1);
}

std::string split_of(const Plan& plan) {
  std::string out;
  for (const auto& stage : plan.stages) {
    out += (out.empty() ? "" : ",") + std::to_string(stage.num_layers);
  }
  return out;
}

const ExportedFile& file_named(const std::vector<ExportedFile>& files, const std::string& name) {
  for (const auto& file : files) {
    if (file.name == name) return file;
  }
  throw std::runtime_error("no file " + name);
}

TEST(Launch, OneFilePerIslandOfTheReferencePlan) {
  const auto files = export_megatron(input_for(reference()));
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].name, "launch-ascend-910b.sh");
  EXPECT_EQ(files[1].name, "launch-dcu-k100.sh");
  EXPECT_EQ(files[2].name, "launch-mlu370.sh");

  struct Expected {
    std::string framework, stages, ranks, nodes;
  };
  const std::vector<Expected> expected = {{"mindspeed-llm", "0 1 2 3 4", "0-159", "20"},
                                          {"megatron-lm", "5 6", "160-223", "8"},
                                          {"megatron-lm", "7", "224-255", "4"}};
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string& text = files[i].text;
    EXPECT_EQ(sourced_text(text, "HETPLAN_FRAMEWORK"), expected[i].framework);
    EXPECT_EQ(sourced_text(text, "HETPLAN_STAGES"), expected[i].stages);
    EXPECT_EQ(sourced_text(text, "HETPLAN_RANKS"), expected[i].ranks);
    EXPECT_EQ(sourced_text(text, "HETPLAN_NODES"), expected[i].nodes);
    EXPECT_EQ(sourced_text(text, "HETPLAN_WORLD_SIZE"), "256");
    EXPECT_EQ(sourced_text(text, "HETPLAN_JOB_NODES"), "32");
    EXPECT_EQ(sourced_text(text, "HETPLAN_CHIPS_PER_NODE"), "8");
    EXPECT_EQ(sourced_text(text, "HETPLAN_LAYER_SPLIT"), "12,12,12,12,12,7,7,6");

    // The workload: LLaMA-2-70B, seq 4096, global batch 512, selective recompute, ZeRO 1,
    // sequence parallel, bf16; the plan: micro-batch 1, tp 8, 8 stages.
    const auto args = sourced(text, "HETPLAN_ARGS");
    EXPECT_EQ(value_of(args, "--tensor-model-parallel-size"), "8");
    EXPECT_EQ(value_of(args, "--pipeline-model-parallel-size"), "8");
    EXPECT_EQ(value_of(args, "--micro-batch-size"), "1");
    EXPECT_EQ(value_of(args, "--global-batch-size"), "512");
    EXPECT_EQ(value_of(args, "--seq-length"), "4096");
    EXPECT_EQ(value_of(args, "--recompute-granularity"), "selective");
    EXPECT_FALSE(has_flag(args, "--recompute-method"));
    EXPECT_TRUE(has_flag(args, "--use-distributed-optimizer"));
    EXPECT_TRUE(has_flag(args, "--sequence-parallel"));
    EXPECT_TRUE(has_flag(args, "--bf16"));
    EXPECT_FALSE(has_flag(args, "--fp16"));
    EXPECT_FALSE(has_flag(args, "--num-layers-per-virtual-pipeline-stage"));
    EXPECT_EQ(value_of(args, "--num-layers"), "80");
    EXPECT_EQ(value_of(args, "--hidden-size"), "8192");
    EXPECT_EQ(value_of(args, "--ffn-hidden-size"), "28672");
    EXPECT_EQ(value_of(args, "--num-attention-heads"), "64");
    EXPECT_TRUE(has_flag(args, "--group-query-attention"));
    EXPECT_EQ(value_of(args, "--num-query-groups"), "8");
    EXPECT_TRUE(has_flag(args, "--swiglu"));
    EXPECT_EQ(value_of(args, "--normalization"), "RMSNorm");

    // Comments: the island's stages and ranks; the pipeline crosses islands.
    EXPECT_NE(comments(text).find("The pipeline spans 3 islands (ascend-910b, dcu-k100, mlu370)"),
              std::string::npos);
    EXPECT_EQ(text.find("NOT VALIDATED"), std::string::npos);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind('#', 0) == 0) {
        EXPECT_LE(line.size(), 100u) << line;
      }
    }
  }
  EXPECT_NE(files[0].text.find("#   stage 0: layers 0-11 (12), tp 8, dp 4, ranks 0-31\n"),
            std::string::npos);
  EXPECT_NE(files[1].text.find("#   stage 6: layers 67-73 (7), tp 8, dp 4, ranks 192-223\n"),
            std::string::npos);
  EXPECT_NE(comments(files[2].text).find("Cambricon's Megatron-LM adaptation"), std::string::npos);
  EXPECT_NE(comments(files[1].text).find("Megatron-LM on ROCm"), std::string::npos);
}

TEST(Launch, MindSpeedNumLayerListIsThePlansSplit) {
  const auto files = export_megatron(input_for(reference()));
  const auto args = sourced(files[0].text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_EQ(value_of(args, "--num-layer-list"), "12,12,12,12,12,7,7,6");
  EXPECT_EQ(value_of(args, "--num-layer-list"), split_of(reference()));

  // An uneven split on Ascend alone, and an even one (no list then).
  const Plan uneven = plan_on("ascend-910b", {21, 20, 20, 19}, 8, 2);
  const auto uneven_args =
      sourced(export_megatron(input_for(uneven))[0].text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_EQ(value_of(uneven_args, "--num-layer-list"), split_of(uneven));
  const Plan even = plan_on("ascend-910b", {20, 20, 20, 20}, 8, 2);
  const auto even_args = sourced(export_megatron(input_for(even))[0].text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_FALSE(has_flag(even_args, "--num-layer-list"));
}

// The decoder layers of each virtual stage of a Megatron-Core pipeline layout, as its parser
// reads it: commas dropped, x*N unrolled to N x's, virtual stages between '|'.
std::vector<int> layout_chunks(const std::string& layout) {
  std::string plain;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const char c = layout[i];
    if (c == ',') continue;
    if (i + 1 < layout.size() && layout[i + 1] == '*') {
      std::size_t end = i + 2;
      while (end < layout.size() && std::isdigit(static_cast<unsigned char>(layout[end]))) ++end;
      plain += std::string(std::stoul(layout.substr(i + 2, end - i - 2)), c);
      i = end - 1;
      continue;
    }
    plain += c;
  }
  std::vector<int> out(1, 0);
  for (const char c : plain) {
    if (c == '|') out.push_back(0);
    if (c == 't') ++out.back();
  }
  EXPECT_EQ(plain.front(), 'E') << layout;
  EXPECT_EQ(plain.back(), 'L') << layout;
  return out;
}

// The layers per stage of a layout of `stages` stages (chunk c of stage s is c x stages + s).
std::string layout_split(const std::string& layout, std::size_t stages) {
  const std::vector<int> chunks = layout_chunks(layout);
  std::vector<int> layers(stages, 0);
  for (std::size_t i = 0; i < chunks.size(); ++i) layers[i % stages] += chunks[i];
  std::string out;
  for (const int n : layers) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

// The reference plan's split (12,12,12,12,12,7,7,6) has unequal middle stages: Megatron-LM on
// the Hygon and Cambricon islands takes it as a pipeline layout (Megatron-Core 0.13 on).
TEST(Launch, MegatronTakesTheReferenceSplitAsALayout) {
  const auto files = export_megatron(input_for(reference()));
  for (const auto* name : {"launch-dcu-k100.sh", "launch-mlu370.sh"}) {
    const std::string& text = file_named(files, name).text;
    EXPECT_EQ(text.find("cannot express"), std::string::npos) << text;
    const auto args = sourced(text, "HETPLAN_PARALLEL_ARGS");
    const std::string layout = value_of(args, "--pipeline-model-parallel-layout");
    EXPECT_EQ(layout, "E,t*12|t*12|t*12|t*12|t*12|t*7|t*7|t*6,L") << text;
    EXPECT_EQ(layout_split(layout, 8), split_of(reference()));
    EXPECT_FALSE(has_flag(args, "--decoder-first-pipeline-num-layers"));
    EXPECT_FALSE(has_flag(args, "--num-layer-list"));
    // The layout's '|' and '*' are quoted for the shell.
    EXPECT_NE(text.find("  --pipeline-model-parallel-layout 'E,t*12|"), std::string::npos) << text;
  }
}

TEST(Launch, MegatronFirstAndLastStagesApart) {
  struct Case {
    std::vector<int> layers;
    std::string first, last;
  };
  const std::vector<Case> cases = {
      {{9, 10, 10, 10, 10, 10, 10, 11}, "9", "11"},
      {{3, 11, 11, 11, 11, 11, 11, 11}, "3", ""},
      {{11, 11, 11, 11, 11, 11, 11, 3}, "", "3"},
      // Two stages: the first's count alone (naming both leaves no middle stage, which
      // Megatron-Core's split divides by).
      {{30, 50}, "30", ""},
      {{20, 30, 30}, "20", ""},
  };
  for (const Case& c : cases) {
    const Plan plan = plan_on("dcu-k100", c.layers, 8, 1);
    const std::string text = export_megatron(input_for(plan))[0].text;
    const auto args = sourced(text, "HETPLAN_PARALLEL_ARGS");
    EXPECT_EQ(value_of(args, "--decoder-first-pipeline-num-layers"), c.first) << split_of(plan);
    EXPECT_EQ(value_of(args, "--decoder-last-pipeline-num-layers"), c.last) << split_of(plan);
    EXPECT_FALSE(has_flag(args, "--pipeline-model-parallel-layout"));
    EXPECT_EQ(text.find("cannot express"), std::string::npos) << text;
  }
  // Unequal middle stages (and 80 layers no multiple of 7): the layout.
  const Plan uneven = plan_on("dcu-k100", {12, 11, 13, 11, 11, 11, 11}, 8, 1);
  const auto args = sourced(export_megatron(input_for(uneven))[0].text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_EQ(layout_split(value_of(args, "--pipeline-model-parallel-layout"), 7), split_of(uneven));
  EXPECT_FALSE(has_flag(args, "--decoder-first-pipeline-num-layers"));
}

TEST(Launch, InterleavedSchedules) {
  const Plan even = plan_on("dcu-k100", {20, 20, 20, 20}, 8, 2, 2);
  const auto args = sourced(export_megatron(input_for(even))[0].text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_EQ(value_of(args, "--num-layers-per-virtual-pipeline-stage"), "10");

  // Equal middle stages: both frameworks take the first and last stages apart, the chunks
  // counted per stage.
  for (const auto* island : {"dcu-k100", "ascend-910b"}) {
    const Plan uneven = plan_on(island, {22, 20, 20, 18}, 8, 2, 2);
    const std::string text = export_megatron(input_for(uneven))[0].text;
    const auto uneven_args = sourced(text, "HETPLAN_PARALLEL_ARGS");
    EXPECT_FALSE(has_flag(uneven_args, "--num-layers-per-virtual-pipeline-stage"));
    EXPECT_FALSE(has_flag(uneven_args, "--num-layer-list"));
    EXPECT_EQ(value_of(uneven_args, "--decoder-first-pipeline-num-layers"), "22") << text;
    EXPECT_EQ(value_of(uneven_args, "--decoder-last-pipeline-num-layers"), "18") << text;
    EXPECT_EQ(value_of(uneven_args, "--num-virtual-stages-per-pipeline-rank"), "2") << text;
    EXPECT_EQ(text.find("cannot express"), std::string::npos) << text;
  }
  // Unequal middle stages: Megatron-LM's layout; MindSpeed-LLM has no way to say it.
  const Plan odd_dcu = plan_on("dcu-k100", {22, 20, 18, 20}, 8, 2, 2);
  const auto dcu_args =
      sourced(export_megatron(input_for(odd_dcu))[0].text, "HETPLAN_PARALLEL_ARGS");
  const std::string layout = value_of(dcu_args, "--pipeline-model-parallel-layout");
  EXPECT_EQ(layout_chunks(layout), (std::vector<int>{11, 10, 9, 10, 11, 10, 9, 10}));
  EXPECT_FALSE(has_flag(dcu_args, "--num-virtual-stages-per-pipeline-rank"));
  const Plan odd_ascend = plan_on("ascend-910b", {22, 20, 18, 20}, 8, 2, 2);
  const std::string text = export_megatron(input_for(odd_ascend))[0].text;
  const auto ascend_args = sourced(text, "HETPLAN_PARALLEL_ARGS");
  for (const auto* flag : {"--num-layer-list", "--decoder-first-pipeline-num-layers",
                           "--num-layers-per-virtual-pipeline-stage",
                           "--pipeline-model-parallel-layout"})
    EXPECT_FALSE(has_flag(ascend_args, flag)) << flag;
  EXPECT_NE(comments(text).find("MindSpeed-LLM cannot express this plan's layer split"),
            std::string::npos)
      << text;
  EXPECT_NE(comments(text).find("split, stage by stage: 22,20,18,20 (2 chunks each)."),
            std::string::npos);
}

// Dense first layers on Megatron-LM are a --moe-layer-freq pattern, [0]*1+[1]*26 for
// DeepSeek-V2-Lite: a glob to the shell. It reaches the arguments as written even where a file
// matches it (the launch script's folder holding one named 01+126).
TEST(Launch, ValuesTheShellWouldExpandAreQuoted) {
  const Scenario deepseek =
      formats::load_scenario(HETPLAN_SOURCE_DIR "/scenarios/deepseek-v2-lite-mixed.yaml");
  const Plan plan = plan_on("dcu-k100", {14, 13}, 2, 8, 1, 8);
  ExportInput input;
  input.scenario = &deepseek;
  input.plan = &plan;
  input.validation.validated = true;
  const std::string text = export_megatron(input)[0].text;
  const std::filesystem::path path = temp_file(text);
  const std::filesystem::path folder = path.string() + ".d";
  std::filesystem::create_directory(folder);
  std::ofstream(folder / "01+126") << "";
  const test::ShellRun run = test::run_shell(
      "cd '" + folder.string() + "' && bash -c '. \"$0\" && printf \"%s\\n\" \"${HETPLAN_ARGS[@]}\"' '" +
      path.string() + "'");
  std::filesystem::remove_all(folder);
  std::filesystem::remove(path);
  ASSERT_EQ(run.status, 0) << text;
  std::vector<std::string> args;
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) args.push_back(line);
  EXPECT_EQ(value_of(args, "--moe-layer-freq"), "[0]*1+[1]*26") << text;
}

// Model chunks of unequal size (PlanStage::chunk_layers) as Megatron-Core's layout: the
// virtual stages in order (chunk c of stage s is c x 4 + s), the embedding before the first,
// the loss after the last. MindSpeed-LLM's Megatron-LM (core_v0.12.1) has no layout, so there
// it is a note.
TEST(Launch, ChunkLayoutsAsMegatronCoreLayouts) {
  for (const auto* island : {"dcu-k100", "ascend-910b"}) {
    Plan plan = plan_on(island, {22, 20, 20, 18}, 8, 2, 2);
    const std::vector<std::vector<int>> chunks = {{12, 10}, {10, 10}, {10, 10}, {10, 8}};
    for (std::size_t k = 0; k < 4; ++k) plan.stages[k].chunk_layers = chunks[k];
    const std::string text = export_megatron(input_for(plan))[0].text;
    const auto args = sourced(text, "HETPLAN_PARALLEL_ARGS");
    EXPECT_FALSE(has_flag(args, "--num-layers-per-virtual-pipeline-stage"));
    EXPECT_FALSE(has_flag(args, "--num-layer-list"));
    EXPECT_FALSE(has_flag(args, "--decoder-first-pipeline-num-layers"));
    if (std::string(island) == "dcu-k100") {
      const std::string layout = value_of(args, "--pipeline-model-parallel-layout");
      EXPECT_EQ(layout, "E,t*12|t*10|t*10|t*10|t*10|t*10|t*10|t*8,L") << text;
      EXPECT_EQ(layout_chunks(layout), (std::vector<int>{12, 10, 10, 10, 10, 10, 10, 8}));
    } else {
      EXPECT_FALSE(has_flag(args, "--pipeline-model-parallel-layout"));
      EXPECT_NE(comments(text).find("its model chunks differ in size"), std::string::npos) << text;
    }
  }
}

// Selective recompute by module: Megatron-Core's default (the core attention) writes no
// module list; other modules are named in their order.
TEST(Launch, RecomputeModulesAreNamed) {
  const Plan plan = plan_on("dcu-k100", {20, 20, 20, 20}, 8, 2);
  ExportInput input = input_for(plan);
  Scenario scenario = *input.scenario;
  scenario.workload.training.recompute = Recompute::selective;
  input.scenario = &scenario;
  auto args = sourced(export_megatron(input)[0].text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_EQ(value_of(args, "--recompute-granularity"), "selective");
  EXPECT_FALSE(has_flag(args, "--recompute-modules"));
  scenario.workload.training.recompute_modules = kRecomputeMlp | kRecomputeMlaUpProj;
  args = sourced(export_megatron(input)[0].text, "HETPLAN_PARALLEL_ARGS");
  const auto it = std::find(args.begin(), args.end(), "--recompute-modules");
  ASSERT_NE(it, args.end());
  ASSERT_GE(args.end() - it, 3);
  EXPECT_EQ(*(it + 1), "mla_up_proj");
  EXPECT_EQ(*(it + 2), "mlp");
}

TEST(Launch, OverridesBecomeFlags) {
  Plan plan = plan_on("dcu-k100", {20, 20, 20, 20}, 1, 2);
  plan.recompute = Recompute::full;
  plan.dtype = DType::fp16;
  plan.zero_stage = 0;
  plan.micro_batch = 2;
  const std::string text = export_megatron(input_for(plan))[0].text;
  const auto args = sourced(text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_EQ(value_of(args, "--recompute-granularity"), "full");
  EXPECT_EQ(value_of(args, "--recompute-method"), "uniform");
  EXPECT_EQ(value_of(args, "--recompute-num-layers"), "1");
  EXPECT_TRUE(has_flag(args, "--fp16"));
  EXPECT_FALSE(has_flag(args, "--bf16"));
  // The bf16 workload keeps fp32 gradients under the plan's fp16, against Megatron's fp16
  // default, so it asks for them.
  EXPECT_TRUE(has_flag(args, "--accumulate-allreduce-grads-in-fp32"));
  EXPECT_FALSE(has_flag(args, "--use-distributed-optimizer"));
  EXPECT_FALSE(has_flag(args, "--sequence-parallel"));  // tp 1: nothing to split
  EXPECT_EQ(value_of(args, "--micro-batch-size"), "2");
  EXPECT_EQ(text.find("spans"), std::string::npos);  // one island

  plan.zero_stage = 3;
  const std::string zero3 = export_megatron(input_for(plan))[0].text;
  EXPECT_TRUE(has_flag(sourced(zero3, "HETPLAN_PARALLEL_ARGS"), "--use-distributed-optimizer"));
  EXPECT_NE(comments(zero3).find("The plan uses ZeRO stage 3"), std::string::npos);
}

// Partial recompute is Megatron's block method; stages of one island that differ in their
// recompute cannot share one launch, and the file says which one it wrote.
TEST(Launch, PartialAndPerStageRecompute) {
  Plan plan = plan_on("dcu-k100", {20, 20, 20, 20}, 1, 2);
  plan.recompute = Recompute::full;
  plan.recompute_layers = 3;
  std::string text = export_megatron(input_for(plan))[0].text;
  auto args = sourced(text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_EQ(value_of(args, "--recompute-granularity"), "full");
  EXPECT_EQ(value_of(args, "--recompute-method"), "block");
  EXPECT_EQ(value_of(args, "--recompute-num-layers"), "3");
  EXPECT_EQ(comments(text).find("differ in activation recomputation"), std::string::npos);

  plan.stages[3].recompute = Recompute::none;
  text = export_megatron(input_for(plan))[0].text;
  args = sourced(text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_EQ(value_of(args, "--recompute-method"), "block");  // stage 0's
  EXPECT_NE(comments(text).find("The stages of this island differ in activation recomputation"),
            std::string::npos);

  // Every stage of the island the same: its own setting, whatever the plan's.
  for (auto& stage : plan.stages) stage.recompute = Recompute::selective;
  text = export_megatron(input_for(plan))[0].text;
  args = sourced(text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_EQ(value_of(args, "--recompute-granularity"), "selective");
  EXPECT_FALSE(has_flag(args, "--recompute-method"));
}

TEST(Launch, TopPlansSourceCleanly) {
  ASSERT_FALSE(top_plans().empty());
  for (const Plan& plan : top_plans()) {
    const auto files = export_megatron(input_for(plan));
    std::size_t stages = 0;
    for (const auto& file : files) {
      const auto args = sourced(file.text, "HETPLAN_ARGS");
      EXPECT_EQ(value_of(args, "--pipeline-model-parallel-size"),
                std::to_string(plan.stages.size()));
      stages += sourced(file.text, "HETPLAN_STAGES").size();
      const bool ascend = file.name == "launch-ascend-910b.sh";
      const bool even = std::all_of(plan.stages.begin(), plan.stages.end(), [&](const auto& s) {
        return s.num_layers == plan.stages[0].num_layers;
      });
      if (ascend && !even && plan.schedule == Schedule::one_f_one_b) {
        EXPECT_EQ(value_of(args, "--num-layer-list"), split_of(plan));
      }
    }
    EXPECT_EQ(stages, plan.stages.size());
  }
}

TEST(Labels, OneCommandPerNodeThePlanNeeds) {
  const ExportedFile file = export_labels(input_for(reference()));
  EXPECT_EQ(file.name, "labels.sh");
  EXPECT_EQ(file.text.rfind("#!/bin/sh\n", 0), 0u);
  EXPECT_NE(comments(file.text).find("does not name them"), std::string::npos);

  // ascend-910b: 5 stages x 32 chips = 20 nodes of 8; dcu-k100: 8 nodes; mlu370: 4 nodes.
  const std::vector<std::pair<std::string, int>> expected = {
      {"ascend-910b", 20}, {"dcu-k100", 8}, {"mlu370", 4}};
  std::istringstream lines(file.text);
  std::map<std::string, int> commands;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("kubectl label node ", 0) != 0) continue;
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    ASSERT_GE(w.size(), 5u);
    EXPECT_EQ(w.back(), "--overwrite");
    const std::string node = w[3];
    const std::string island = node.substr(0, node.rfind("-node-"));
    const Island* found = scenario().cluster.find_island(island);
    ASSERT_NE(found, nullptr) << line;
    std::vector<std::string> labels(w.begin() + 4, w.end() - 1);
    ++commands[island];
    char number[8];
    std::snprintf(number, sizeof number, "%02d", commands[island]);
    EXPECT_EQ(node, island + "-node-" + number);
    // The island's labels, then the node's leaf switch (16 nodes a leaf on every island) and
    // the placeholder it stands for.
    std::vector<std::string> want;
    for (const auto& [key, value] : found->labels) want.push_back(key + "=" + value);
    char leaf[16];
    std::snprintf(leaf, sizeof leaf, "%02d", (commands[island] - 1) / 16 + 1);
    want.push_back("hetplan.io/leaf=" + island + "-leaf-" + leaf);
    want.push_back("hetplan.io/node=" + node);
    EXPECT_EQ(labels, want) << line;
  }
  for (const auto& [island, nodes] : expected) EXPECT_EQ(commands[island], nodes) << island;
  EXPECT_NE(file.text.find("accelerator.vendor=huawei"), std::string::npos) << file.text;

  // The script is valid sh.
  const std::filesystem::path path = temp_file(file.text);
  EXPECT_EQ(std::system(("sh -n '" + path.string() + "'").c_str()), 0);
  std::filesystem::remove(path);
}

TEST(Gate, LaunchAndLabelsRefuseAnUnvalidatedPlan) {
  const ExportInput input = input_for(reference(), false);
  EXPECT_THROW(export_megatron(input), UnvalidatedPlan);
  EXPECT_THROW(export_labels(input), UnvalidatedPlan);
  try {
    export_labels(input);
  } catch (const UnvalidatedPlan& error) {
    EXPECT_NE(
        std::string(error.what()).find("island mlu370 (Neuware unknown): no single-card step"),
        std::string::npos);
  }
}

TEST(Gate, AllowUnvalidatedWritesAWarningAtTheTop) {
  ExportInput input = input_for(reference(), false);
  input.allow_unvalidated = true;
  const std::string banner =
      "# WARNING: NOT VALIDATED. Exported with --allow-unvalidated: the validation ladder has not\n"
      "# validated this plan. Missing:\n"
      "#   - island mlu370 (Neuware unknown): no single-card step\n";
  for (const auto& file : export_megatron(input)) {
    EXPECT_NE(file.text.find(banner), std::string::npos) << file.text;
    EXPECT_LT(file.text.find(banner), file.text.find("HETPLAN_"));
  }
  const std::string labels = export_labels(input).text;
  EXPECT_NE(labels.find(banner), std::string::npos);
  EXPECT_LT(labels.find(banner), labels.find("kubectl label node"));
}

TEST(Launch, PlanThatDoesNotFitTheScenarioIsAnInputError) {
  const Plan plan = plan_on("tpu-v5", {80}, 8, 1);
  EXPECT_THROW(export_megatron(input_for(plan)), InputError);
  EXPECT_THROW(export_labels(input_for(plan)), InputError);
}

}  // namespace
}  // namespace hetplan::exporters

namespace hetplan::exporters {
namespace {

// The workload's overlaps reach the launch arguments: --overlap-grad-reduce and
// The fused kernels the estimate priced are asked for: MindSpeed-LLM runs RMSNorm and SwiGLU as
// reference operators without --use-fused-rmsnorm and --use-fused-swiglu; Megatron-LM's
// Transformer Engine layers fuse them and have no argument to unfuse them, so a workload that
// runs them unfused gets a note there (docs/export.md).
TEST(Launch, FusedNormAndSwigluAsTheEstimatePricedThem) {
  Scenario s = scenario();
  ASSERT_EQ(s.workload.model.norm, Norm::rmsnorm);
  ASSERT_EQ(s.workload.model.activation, Activation::swiglu);
  ExportInput input = input_for(reference());
  input.scenario = &s;
  auto files = export_megatron(input);
  auto ascend = sourced(file_named(files, "launch-ascend-910b.sh").text, "HETPLAN_MODEL_ARGS");
  auto dcu = sourced(file_named(files, "launch-dcu-k100.sh").text, "HETPLAN_MODEL_ARGS");
  EXPECT_TRUE(has_flag(ascend, "--use-fused-rmsnorm"));
  EXPECT_TRUE(has_flag(ascend, "--use-fused-swiglu"));
  EXPECT_TRUE(has_flag(ascend, "--use-fused-rotary-pos-emb"));
  EXPECT_FALSE(has_flag(dcu, "--use-fused-rmsnorm"));
  EXPECT_EQ(comments(file_named(files, "launch-dcu-k100.sh").text).find("unfused"),
            std::string::npos);

  s.workload.training.unfused = kUnfusedRmsnorm | kUnfusedRope;
  files = export_megatron(input);
  ascend = sourced(file_named(files, "launch-ascend-910b.sh").text, "HETPLAN_MODEL_ARGS");
  EXPECT_FALSE(has_flag(ascend, "--use-fused-rmsnorm"));
  EXPECT_TRUE(has_flag(ascend, "--use-fused-swiglu"));
  EXPECT_FALSE(has_flag(ascend, "--use-fused-rotary-pos-emb"));
  EXPECT_NE(comments(file_named(files, "launch-dcu-k100.sh").text)
                .find("The workload runs RMSNorm, the rotary embedding unfused"),
            std::string::npos);
}

// The loss the estimate priced: Megatron's jit-fused one with --cross-entropy-loss-fusion,
// Transformer Engine's with --cross-entropy-fusion-impl te beside it; MindSpeed-LLM on Ascend
// has no Transformer Engine and gets the jit-fused one with a note (docs/models/memory.md#head).
TEST(Launch, TheLossFusionAsTheEstimatePricedIt) {
  Scenario s = scenario();
  ExportInput input = input_for(reference());
  input.scenario = &s;
  std::vector<ExportedFile> files;
  // The model arguments of the island's launch file, exported for the loss fusion given.
  auto model_args = [&](CrossEntropyFusion fusion, const std::string& island) {
    s.workload.training.cross_entropy_fusion = fusion;
    files = export_megatron(input);
    return sourced(file_named(files, "launch-" + island + ".sh").text, "HETPLAN_MODEL_ARGS");
  };
  EXPECT_FALSE(
      has_flag(model_args(CrossEntropyFusion::none, "dcu-k100"), "--cross-entropy-loss-fusion"));
  EXPECT_FALSE(
      has_flag(model_args(CrossEntropyFusion::none, "ascend-910b"), "--cross-entropy-loss-fusion"));
  auto dcu = model_args(CrossEntropyFusion::native, "dcu-k100");
  EXPECT_TRUE(has_flag(dcu, "--cross-entropy-loss-fusion"));
  EXPECT_FALSE(has_flag(dcu, "--cross-entropy-fusion-impl"));

  dcu = model_args(CrossEntropyFusion::te, "dcu-k100");
  const auto ascend = model_args(CrossEntropyFusion::te, "ascend-910b");
  EXPECT_TRUE(has_flag(dcu, "--cross-entropy-loss-fusion"));
  EXPECT_EQ(value_of(dcu, "--cross-entropy-fusion-impl"), "te");
  EXPECT_TRUE(has_flag(ascend, "--cross-entropy-loss-fusion"));
  EXPECT_FALSE(has_flag(ascend, "--cross-entropy-fusion-impl"));
  EXPECT_NE(comments(file_named(files, "launch-ascend-910b.sh").text)
                .find("Transformer Engine's fused kernel, which MindSpeed-LLM on Ascend does not "
                      "have"),
            std::string::npos);
}

// --overlap-param-gather (with the distributed optimizer) wherever dp > 1, and the
// tensor-parallel overlap as each framework names it (MC2 on Ascend), only with sequence
// parallelism.
TEST(Launch, OverlapsAsEachFrameworkNamesThem) {
  Scenario s = scenario();
  s.workload.training.overlap_grad_reduce = true;
  s.workload.training.overlap_param_gather = true;
  s.workload.training.overlap_tp_comm = true;
  s.workload.training.sequence_parallel = true;
  s.workload.training.zero_stage = 1;
  const Plan& plan = reference();
  ExportInput input = input_for(plan);
  input.scenario = &s;
  const auto files = export_megatron(input);
  const auto ascend = sourced(file_named(files, "launch-ascend-910b.sh").text, "HETPLAN_PARALLEL_ARGS");
  const auto dcu = sourced(file_named(files, "launch-dcu-k100.sh").text, "HETPLAN_PARALLEL_ARGS");
  for (const auto* args : {&ascend, &dcu}) {
    EXPECT_TRUE(has_flag(*args, "--overlap-grad-reduce"));
    EXPECT_TRUE(has_flag(*args, "--overlap-param-gather"));
  }
  EXPECT_TRUE(has_flag(ascend, "--use-ascend-mc2"));
  EXPECT_FALSE(has_flag(ascend, "--tp-comm-overlap"));
  EXPECT_TRUE(has_flag(dcu, "--tp-comm-overlap"));

  s.workload.training.sequence_parallel = false;
  const auto without_sp = export_megatron(input);
  const auto& text = file_named(without_sp, "launch-dcu-k100.sh").text;
  EXPECT_FALSE(has_flag(sourced(text, "HETPLAN_PARALLEL_ARGS"), "--tp-comm-overlap"));
  EXPECT_NE(text.find("needs sequence parallelism"), std::string::npos);

  // Megatron-LM refuses --overlap-param-gather without --overlap-grad-reduce: not written, and
  // the file says so.
  s.workload.training.overlap_grad_reduce = false;
  const auto gather_only = export_megatron(input);
  const auto& gather_text = file_named(gather_only, "launch-dcu-k100.sh").text;
  EXPECT_FALSE(has_flag(sourced(gather_text, "HETPLAN_PARALLEL_ARGS"), "--overlap-param-gather"));
  EXPECT_NE(comments(gather_text).find("only with --overlap-grad-reduce"), std::string::npos);
}

// MindSpeed's MC2 refuses mixture-of-experts models ("mc2 is not compatible with moe models"):
// an Ascend island training Mixtral gets no --use-ascend-mc2, and a comment that says why.
TEST(Launch, NoMc2ForMixtureOfExperts) {
  Scenario s =
      formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/mixtral-mixed.yaml");
  s.workload.training.overlap_tp_comm = true;
  s.workload.training.sequence_parallel = true;
  Plan plan = plan_on("ascend-910b", {16, 16}, 2, 8);
  ExportInput input = input_for(plan);
  input.scenario = &s;
  const std::string text = export_megatron(input)[0].text;
  EXPECT_FALSE(has_flag(sourced(text, "HETPLAN_PARALLEL_ARGS"), "--use-ascend-mc2"));
  EXPECT_NE(comments(text).find("does not take mixture-of-experts models"), std::string::npos);
}

}  // namespace
}  // namespace hetplan::exporters

namespace hetplan::exporters {
namespace {

// The model arguments a family needs beyond its shape: Qwen2-7B's config.json says rope_theta
// 1000000 and rms_norm_eps 1e-06, and its attention has Q, K and V biases.
TEST(Launch, RotaryBaseNormEpsilonAndQkvBiasFromTheConfig) {
  Scenario s = scenario();
  s.workload.model =
      formats::parse_hf_config(formats::read_text_file(std::string(HETPLAN_SOURCE_DIR) +
                                                       "/tests/formats/data/hf/qwen2-7b.json"),
                               "qwen2-7b.json");
  EXPECT_TRUE(s.workload.model.qkv_bias);
  EXPECT_EQ(s.workload.model.rope_theta, 1e6);
  EXPECT_EQ(s.workload.model.norm_eps, 1e-6);
  const Plan plan = plan_on("ascend-910b", {28}, 4, 1);
  ExportInput input = input_for(plan);
  input.scenario = &s;
  const auto args = sourced(export_megatron(input)[0].text, "HETPLAN_MODEL_ARGS");
  EXPECT_EQ(value_of(args, "--rotary-base"), "1000000");
  EXPECT_EQ(value_of(args, "--norm-epsilon"), "1e-06");
  EXPECT_TRUE(has_flag(args, "--add-qkv-bias"));
  EXPECT_TRUE(has_flag(args, "--disable-bias-linear"));
  // Llama-2's defaults: rotary base 10000, no QKV bias.
  const auto llama = sourced(export_megatron(input_for(reference()))[0].text, "HETPLAN_MODEL_ARGS");
  EXPECT_EQ(value_of(llama, "--rotary-base"), "10000");
  EXPECT_FALSE(has_flag(llama, "--add-qkv-bias"));
  EXPECT_FALSE(has_flag(llama, "--rotary-percent"));
}

// Qwen3-8B normalises each head's Q and K (--qk-layernorm); GLM-4-9B groups its K and V heads,
// biases Q, K and V and turns half of each head; a head width apart from hidden / heads is
// --kv-channels.
TEST(Launch, Qwen3AndGlm4FromTheirConfigs) {
  const std::string data = std::string(HETPLAN_SOURCE_DIR) + "/tests/formats/data/hf/";
  Scenario s = scenario();
  s.workload.model =
      formats::parse_hf_config(formats::read_text_file(data + "qwen3-8b.json"), "qwen3-8b.json");
  const Plan plan = plan_on("ascend-910b", {36}, 4, 1);
  ExportInput input = input_for(plan);
  input.scenario = &s;
  auto args = sourced(export_megatron(input)[0].text, "HETPLAN_MODEL_ARGS");
  EXPECT_TRUE(has_flag(args, "--qk-layernorm"));
  EXPECT_FALSE(has_flag(args, "--kv-channels"));  // 4096 / 32 is its 128
  s.workload.model.hidden = 2560;                 // Qwen3-4B's width with the same heads
  args = sourced(export_megatron(input)[0].text, "HETPLAN_MODEL_ARGS");
  EXPECT_EQ(value_of(args, "--kv-channels"), "128");

  s.workload.model = formats::parse_hf_config(formats::read_text_file(data + "glm-4-9b-chat.json"),
                                              "glm-4-9b-chat.json");
  const Plan glm = plan_on("ascend-910b", {40}, 4, 1);
  input.plan = &glm;
  args = sourced(export_megatron(input)[0].text, "HETPLAN_MODEL_ARGS");
  EXPECT_EQ(value_of(args, "--num-query-groups"), "2");
  EXPECT_TRUE(has_flag(args, "--add-qkv-bias"));
  EXPECT_EQ(value_of(args, "--rotary-percent"), "0.5");
  EXPECT_EQ(value_of(args, "--rotary-base"), "5000000");
  EXPECT_FALSE(has_flag(args, "--qk-layernorm"));
}

// A mixture of experts: Megatron-Core's arguments for the experts (their count, top-k, size)
// and for expert parallelism (the island's ep, experts split over tp, the all-to-all
// dispatcher, grouped GEMMs); an island whose stages differ in ep says which one it wrote.
TEST(Launch, MixtureOfExperts) {
  const Scenario s =
      formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/mixtral-mixed.yaml");
  Plan plan = plan_on("ascend-910b", {16, 16}, 2, 8);
  for (auto& stage : plan.stages) stage.ep = 4;
  ExportInput input = input_for(plan);
  input.scenario = &s;
  std::string text = export_megatron(input)[0].text;
  const auto model = sourced(text, "HETPLAN_MODEL_ARGS");
  EXPECT_EQ(value_of(model, "--num-experts"), "8");
  EXPECT_EQ(value_of(model, "--moe-router-topk"), "2");
  EXPECT_EQ(value_of(model, "--moe-ffn-hidden-size"), "14336");
  EXPECT_FALSE(has_flag(model, "--moe-shared-expert-intermediate-size"));
  EXPECT_FALSE(has_flag(model, "--mtp-num-layers"));
  {
    // Multi-token prediction modules (DeepSeek-V3's) are launched with the model.
    Scenario mtp = s;
    mtp.workload.model.mtp_layers = 1;
    ExportInput with_mtp = input;
    with_mtp.scenario = &mtp;
    EXPECT_EQ(value_of(sourced(export_megatron(with_mtp)[0].text, "HETPLAN_MODEL_ARGS"),
                       "--mtp-num-layers"),
              "1");
  }
  auto parallel = sourced(text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_EQ(value_of(parallel, "--expert-model-parallel-size"), "4");
  EXPECT_EQ(value_of(parallel, "--expert-tensor-parallel-size"), "2");
  EXPECT_EQ(value_of(parallel, "--moe-token-dispatcher-type"), "alltoall");
  EXPECT_TRUE(has_flag(parallel, "--moe-grouped-gemm"));
  EXPECT_EQ(comments(text).find("differ in expert parallelism"), std::string::npos);
  {
    // Experts whole on each chip (etp 1, ep 16 over tp 2 x dp 8): the launch says so.
    Plan folded = plan;
    for (auto& stage : folded.stages) {
      stage.ep = 8;
      stage.etp = 1;
    }
    ExportInput folded_input = input_for(folded);
    folded_input.scenario = &s;
    const auto args = sourced(export_megatron(folded_input)[0].text, "HETPLAN_PARALLEL_ARGS");
    EXPECT_EQ(value_of(args, "--expert-model-parallel-size"), "8");
    EXPECT_EQ(value_of(args, "--expert-tensor-parallel-size"), "1");
    EXPECT_EQ(value_of(args, "--tensor-model-parallel-size"), "2");
  }
  plan.stages[1].ep = 8;
  text = export_megatron(input)[0].text;
  EXPECT_NE(comments(text).find("The stages of this island differ in expert parallelism"),
            std::string::npos);
  // The flex dispatcher is DeepEP's, a CUDA library: on this Ascend island the all-to-all one
  // stays, and the launch file says why.
  Scenario flex = s;
  flex.workload.training.moe_dispatcher = MoeDispatcher::flex;
  input.scenario = &flex;
  text = export_megatron(input)[0].text;
  parallel = sourced(text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_EQ(value_of(parallel, "--moe-token-dispatcher-type"), "alltoall");
  EXPECT_FALSE(has_flag(parallel, "--moe-enable-deepep"));
  EXPECT_NE(comments(text).find("DeepEP and HybridEP run on NVIDIA GPUs only"), std::string::npos);
  // On an NVIDIA island it is Megatron-Core's flex dispatcher with DeepEP.
  Scenario six =
      formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/six-vendors.yaml");
  six.workload.model = s.workload.model;
  six.workload.training.moe_dispatcher = MoeDispatcher::flex;
  Plan on_h100 = plan_on("h100", {16, 16}, 2, 8);
  for (auto& stage : on_h100.stages) stage.ep = 4;
  ExportInput nvidia = input_for(on_h100);
  nvidia.scenario = &six;
  text = export_megatron(nvidia)[0].text;
  parallel = sourced(text, "HETPLAN_PARALLEL_ARGS");
  EXPECT_EQ(value_of(parallel, "--moe-token-dispatcher-type"), "flex");
  EXPECT_TRUE(has_flag(parallel, "--moe-enable-deepep"));
  EXPECT_EQ(comments(text).find("flex dispatcher"), std::string::npos);
  // A dense model gets none of them.
  const auto dense = sourced(export_megatron(input_for(reference()))[0].text, "HETPLAN_ARGS");
  EXPECT_FALSE(has_flag(dense, "--num-experts"));
  EXPECT_FALSE(has_flag(dense, "--expert-model-parallel-size"));
}

// The expert-parallel overlap: Megatron-Core's combined 1F1B schedule with delayed weight
// gradients on NVIDIA, MindSpeed's --moe-fb-overlap on Ascend; not passed where the frameworks
// refuse it (1F1B without interleaving, no expert parallelism), with the reason in the file.
TEST(Launch, ExpertParallelOverlapAsEachFrameworkNamesIt) {
  Scenario six =
      formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/six-vendors.yaml");
  const Scenario mixtral =
      formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/mixtral-mixed.yaml");
  six.workload.model = mixtral.workload.model;
  six.workload.training.overlap_ep_comm = true;
  auto parallel_of = [&](const Plan& plan, std::string* text_out = nullptr) {
    ExportInput input = input_for(plan);
    input.scenario = &six;
    const std::string text = export_megatron(input)[0].text;
    if (text_out) *text_out = text;
    return sourced(text, "HETPLAN_PARALLEL_ARGS");
  };
  const auto nvidia = parallel_of(plan_on("h100", {16, 16}, 2, 8, 2, 4));
  EXPECT_TRUE(has_flag(nvidia, "--overlap-moe-expert-parallel-comm"));
  EXPECT_TRUE(has_flag(nvidia, "--delay-wgrad-compute"));
  EXPECT_FALSE(has_flag(nvidia, "--moe-fb-overlap"));
  const auto ascend = parallel_of(plan_on("ascend-910b", {16, 16}, 2, 8, 2, 4));
  EXPECT_TRUE(has_flag(ascend, "--moe-fb-overlap"));
  EXPECT_FALSE(has_flag(ascend, "--overlap-moe-expert-parallel-comm"));
  std::string text;
  const auto one_f_one_b = parallel_of(plan_on("h100", {16, 16}, 2, 8, 1, 4), &text);
  EXPECT_FALSE(has_flag(one_f_one_b, "--overlap-moe-expert-parallel-comm"));
  EXPECT_NE(comments(text).find("not passed: with pipeline parallelism Megatron-Core runs it "
                                "only under the interleaved schedule"),
            std::string::npos);
  const auto no_ep = parallel_of(plan_on("h100", {16, 16}, 2, 8, 2, 1), &text);
  EXPECT_FALSE(has_flag(no_ep, "--overlap-moe-expert-parallel-comm"));
  EXPECT_NE(comments(text).find("this plan has none (ep 1)"), std::string::npos);
}

// GPT-NeoX names them otherwise: Pythia-160m's config.json says rotary_emb_base 10000,
// layer_norm_eps 1e-05 and rotary_pct 0.25 (a quarter of each head's dimensions rotate). GPT-2's
// layer_norm_epsilon is its norms' epsilon; its positions are learned, so no rotary base.
TEST(Launch, GptNeoXAndGpt2NameTheirRotaryAndNormFigures) {
  const std::string data = std::string(HETPLAN_SOURCE_DIR) + "/tests/formats/data/hf/";
  Scenario s = scenario();
  s.workload.model = formats::parse_hf_config(formats::read_text_file(data + "pythia-160m.json"),
                                              "pythia-160m.json");
  const Plan plan = plan_on("ascend-910b", {12}, 4, 1);
  ExportInput input = input_for(plan);
  input.scenario = &s;
  {
    Scenario other = s;
    std::string text = formats::read_text_file(data + "pythia-160m.json");
    const auto at = text.find("\"layer_norm_eps\": 1e-05");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, std::string("\"layer_norm_eps\": 1e-05").size(), "\"layer_norm_eps\": 2e-06");
    other.workload.model = formats::parse_hf_config(text, "pythia-160m.json");
    EXPECT_EQ(other.workload.model.norm_eps, 2e-6);  // read from the file, not the default
  }
  const auto args = sourced(export_megatron(input)[0].text, "HETPLAN_MODEL_ARGS");
  EXPECT_EQ(value_of(args, "--rotary-base"), "10000");
  EXPECT_EQ(value_of(args, "--norm-epsilon"), "1e-05");
  EXPECT_EQ(value_of(args, "--rotary-percent"), "0.25");
  EXPECT_EQ(value_of(args, "--position-embedding-type"), "rope");

  s.workload.model =
      formats::parse_hf_config(formats::read_text_file(data + "gpt2.json"), "gpt2.json");
  std::string text = formats::read_text_file(data + "gpt2.json");
  const auto at = text.find("\"layer_norm_epsilon\": 1e-05");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("\"layer_norm_epsilon\": 1e-05").size(), "\"layer_norm_epsilon\": 3e-06");
  s.workload.model = formats::parse_hf_config(text, "gpt2.json");
  ExportInput gpt2 = input_for(plan);
  gpt2.scenario = &s;
  const auto gpt2_args = sourced(export_megatron(gpt2)[0].text, "HETPLAN_MODEL_ARGS");
  EXPECT_EQ(value_of(gpt2_args, "--norm-epsilon"), "3e-06");
  EXPECT_EQ(value_of(gpt2_args, "--position-embedding-type"), "learned_absolute");
  EXPECT_FALSE(has_flag(gpt2_args, "--rotary-base"));
}

}  // namespace
}  // namespace hetplan::exporters

namespace hetplan::exporters {
namespace {

// labels.sh labels the nodes the cluster file names, and never writes a label of the
// kubernetes.io or k8s.io namespaces (the kubelet's and the cloud's own).
TEST(Labels, RealNodeNamesAndNoKubeletLabels) {
  Scenario s = scenario();
  for (auto& island : s.cluster.islands) {
    if (island.name != "ascend-910b") continue;
    for (int n = 0; n < island.nodes; ++n) island.node_names.push_back("npu-" + std::to_string(n));
    island.labels["topology.kubernetes.io/zone"] = "hall-a";
    island.labels["node-role.kubernetes.io/worker"] = "";
    island.labels["node.k8s.io/instance-type"] = "atlas-800t-a2";
    island.labels["cloud.example.com/rack"] = "r7";  // another domain: written
  }
  ExportInput input = input_for(reference());
  input.scenario = &s;
  const std::string text = export_labels(input).text;
  EXPECT_NE(text.find("kubectl label node npu-0 "), std::string::npos) << text;
  // A named node carries its leaf; its name already says which node of the placement it is.
  EXPECT_NE(text.find("hetplan.io/leaf=ascend-910b-leaf-01 --overwrite\n"), std::string::npos);
  EXPECT_EQ(text.find("hetplan.io/node=npu-"), std::string::npos);
  EXPECT_EQ(text.find("ascend-910b-node-01"), std::string::npos);
  EXPECT_NE(text.find("dcu-k100-node-01"), std::string::npos);  // not named: placeholders
  EXPECT_EQ(text.find("topology.kubernetes.io/zone="), std::string::npos);
  EXPECT_EQ(text.find("node-role.kubernetes.io/worker="), std::string::npos);
  EXPECT_EQ(text.find("k8s.io/"), std::string::npos) << text;
  EXPECT_NE(text.find("cloud.example.com/rack=r7"), std::string::npos) << text;
  EXPECT_NE(text.find("accelerator.model=ascend-910b"), std::string::npos);
}

}  // namespace
}  // namespace hetplan::exporters

namespace hetplan::exporters {
namespace {

// Qwen2-MoE gates its shared expert's output. MindSpeed-LLM's argument for that gate is
// --shared-expert-gate, which its argument checks refuse with gradient-accumulation fusion;
// Megatron-LM has no argument for it, and the file says so.
TEST(Launch, SharedExpertGateAsEachFrameworkNamesIt) {
  Scenario s = scenario();
  s.workload.model = formats::parse_hf_config(
      formats::read_text_file(std::string(HETPLAN_SOURCE_DIR) +
                              "/tests/formats/data/hf/qwen2-57b-a14b.json"),
      "qwen2-57b-a14b.json");
  ASSERT_TRUE(s.workload.model.shared_expert_gate);
  for (const auto* island : {"ascend-910b", "dcu-k100"}) {
    Plan plan = plan_on(island, {14, 14}, 2, 8);
    for (auto& stage : plan.stages) stage.ep = 4;
    ExportInput input = input_for(plan);
    input.scenario = &s;
    const std::string text = export_megatron(input)[0].text;
    const auto args = sourced(text, "HETPLAN_ARGS");
    EXPECT_EQ(value_of(args, "--moe-shared-expert-intermediate-size"), "20480");
    EXPECT_FALSE(has_flag(args, "--moe-shared-expert-gate"));
    const bool ascend = std::string(island) == "ascend-910b";
    EXPECT_EQ(has_flag(args, "--shared-expert-gate"), ascend) << island;
    EXPECT_EQ(has_flag(args, "--no-gradient-accumulation-fusion"), ascend) << island;
    EXPECT_EQ(comments(text).find("Megatron-LM has no argument for that gate") != std::string::npos,
              !ascend)
        << text;
  }
}

}  // namespace
}  // namespace hetplan::exporters
