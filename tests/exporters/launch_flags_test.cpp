// Every flag a launch file passes is an argument of the framework it is written for. The flags of
// Megatron-LM's and of MindSpeed-LLM's argument parsers are fixtures
// (tests/exporters/data/megatron-lm-arguments.txt, mindspeed-llm-arguments.txt; their sources in
// tests/exporters/data/README.md); the launch files are exported for plans that together make
// launch.cpp write each argument it can write: dense and mixture-of-experts models, even, uneven
// and interleaved splits, each recompute, precision and overlap, on NVIDIA, Hygon, Cambricon,
// Moore Threads and Ascend islands. The files are sourced by bash, as a launch script would.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
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

const std::string kSource = HETPLAN_SOURCE_DIR;

// The flags of a framework's argument parser: the fixture's lines that are not comments.
std::set<std::string> parser_flags(const std::string& framework_id) {
  const std::string path = kSource + "/tests/exporters/data/" + framework_id + "-arguments.txt";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no fixture " + path);
  std::set<std::string> flags;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    flags.insert(line);
  }
  return flags;
}

std::string framework_name(const std::string& framework_id) {
  return framework_id == "mindspeed-llm" ? "MindSpeed-LLM" : "Megatron-LM";
}

// The HETPLAN_* variables a launch file assigns, each with its words after sourcing the file in
// bash, an array's elements as its words (throws when bash fails).
std::map<std::string, std::vector<std::string>> sourced_variables(const std::string& text) {
  std::vector<std::string> names;
  static const std::regex assignment("^(HETPLAN_[A-Z_]+)=");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_search(line, match, assignment)) names.push_back(match[1]);
  }
  static int count = 0;
  const std::filesystem::path base =
      std::filesystem::temp_directory_path() /
      ("hetplan-launch-flags-" + std::to_string(::getpid()) + "-" + std::to_string(++count));
  const std::filesystem::path file = base.string() + ".sh";
  const std::filesystem::path reader = base.string() + "-read.sh";
  std::ofstream(file, std::ios::binary) << text;
  {
    // Each value, then the record separator (octal 036).
    std::ofstream out(reader, std::ios::binary);
    out << ". \"$1\" || exit 1\nprintf '%s\\036'";
    for (const auto& name : names) out << " \"${" << name << "[*]}\"";
    out << "\n";
  }
  const test::ShellRun run = test::run_shell("bash '" + reader.string() + "' '" + file.string() + "'");
  std::filesystem::remove(file);
  std::filesystem::remove(reader);
  if (run.status != 0) throw std::runtime_error("bash failed on:\n" + text);
  const std::string& output = run.output;

  std::map<std::string, std::vector<std::string>> out;
  std::istringstream values(output);
  for (const auto& name : names) {
    std::string value;
    std::getline(values, value, '\036');
    std::istringstream words(value);
    auto& list = out[name];
    for (std::string word; words >> word;) list.push_back(word);
  }
  return out;
}

// One export: a scenario and a plan on some of its islands.
struct Case {
  std::string label;
  Scenario scenario;
  Plan plan;
};

Scenario scenario_at(const std::string& file) {
  return formats::load_scenario(kSource + "/scenarios/" + file);
}

ModelShape hf_model(const std::string& file) {
  return formats::parse_hf_config(
      formats::read_text_file(kSource + "/tests/formats/data/hf/" + file), file);
}

using test::plan_on;

// Two stages of a model's layers (the first one the larger when they are odd).
std::vector<int> halves(int layers) {
  return {layers - layers / 2, layers / 2};
}

std::vector<Case> cases() {
  std::vector<Case> out;
  // The default scenario's reference plan: Llama-2-70B over Ascend, Hygon and Cambricon islands
  // (selective recompute, ZeRO 1, sequence parallel, an uneven split).
  {
    Scenario s = scenario_at("default.yaml");
    const Plan plan = *s.reference_plan;
    out.push_back({"default reference plan", s, plan});
  }
  // The six-vendor site's 80-layer dense workload, each plan on an NVIDIA and an Ascend island.
  const Scenario six = scenario_at("six-vendors.yaml");
  for (const std::string island : {"h100", "ascend-910b"}) {
    const auto add = [&](const std::string& what, const Scenario& s, const Plan& plan) {
      out.push_back({what + " on " + island, s, plan});
    };
    add("even split", six, plan_on(island, {20, 20, 20, 20}, 8, 2));
    add("first and last stages apart", six, plan_on(island, {9, 10, 10, 10, 10, 10, 10, 11}, 8, 1));
    add("two uneven stages", six, plan_on(island, {30, 50}, 8, 1));
    add("interleaved even split", six, plan_on(island, {20, 20, 20, 20}, 8, 2, 2));
    add("interleaved uneven split", six, plan_on(island, {22, 20, 20, 18}, 8, 2, 2));
    {
      Plan plan = plan_on(island, {22, 20, 20, 18}, 8, 2, 2);
      const std::vector<std::vector<int>> layout = {{12, 10}, {10, 10}, {10, 10}, {10, 8}};
      for (std::size_t k = 0; k < 4; ++k) plan.stages[k].chunk_layers = layout[k];
      add("model chunks of unequal size", six, plan);
    }
    {
      Plan plan = plan_on(island, {20, 20, 20, 20}, 1, 2);
      plan.recompute = Recompute::full;
      plan.dtype = DType::fp16;
      plan.zero_stage = 0;
      plan.micro_batch = 2;
      add("full recompute in fp16 with fp32 gradients", six, plan);
      plan.recompute_layers = 3;
      plan.zero_stage = 3;
      add("partial recompute under ZeRO 3", six, plan);
      plan.stages[3].recompute = Recompute::none;
      add("stages that differ in recompute", six, plan);
    }
    {
      Scenario s = six;
      s.workload.training.recompute = Recompute::selective;
      s.workload.training.recompute_modules = kRecomputeLayernorm | kRecomputeMlp;
      add("selective recompute by module", s, plan_on(island, {40, 40}, 8, 2));
    }
    {
      Scenario s = six;
      s.workload.training.fp32_grad_accumulation = false;
      add("bf16 gradients", s, plan_on(island, {40, 40}, 8, 2));
    }
    for (const CrossEntropyFusion fusion : {CrossEntropyFusion::native, CrossEntropyFusion::te}) {
      Scenario s = six;
      s.workload.training.cross_entropy_fusion = fusion;
      add("the loss fused (" + std::string(kCrossEntropyFusionNames[static_cast<int>(fusion)]) +
              ")",
          s, plan_on(island, {40, 40}, 8, 2));
    }
    for (const DType dtype : {DType::fp8, DType::fp32}) {
      Plan plan = plan_on(island, {40, 40}, 8, 2);
      plan.dtype = dtype;
      add(std::string(to_string(dtype)) + " training", six, plan);
    }
    {
      Scenario s = six;
      s.workload.training.overlap_grad_reduce = true;
      s.workload.training.overlap_param_gather = true;
      s.workload.training.overlap_tp_comm = true;
      s.workload.training.sequence_parallel = true;
      s.workload.training.zero_stage = 1;
      add("every overlap", s, plan_on(island, {40, 40}, 8, 2));
      s.workload.training.sequence_parallel = false;
      add("tensor-parallel overlap without sequence parallelism", s,
          plan_on(island, {40, 40}, 8, 2));
    }
    // Model families: their biases, norms, rotary share, head width, positions and experts.
    for (const std::string file :
         {"qwen2-7b.json", "qwen3-8b.json", "glm-4-9b-chat.json", "pythia-160m.json", "gpt2.json",
          "llama-2-7b.json", "mistral-nemo-base-2407.json", "mixtral-8x7b-v0.1.json",
          "qwen2-57b-a14b.json", "qwen3-30b-a3b.json", "deepseek-v2-lite.json", "deepseek-v3.json",
          "glm-4.5-air.json", "kimi-k2-instruct-0905.json", "gemma-2b-it.json",
          "gemma-2-9b-it.json", "gemma-3-1b.json"}) {
      Scenario s = six;
      s.workload.model = hf_model(file);
      const bool moe = s.workload.model.moe();
      add(file, s, plan_on(island, halves(s.workload.model.layers), 2, 8, 1, moe ? 4 : 1));
      if (moe) {
        Plan plan = plan_on(island, halves(s.workload.model.layers), 2, 8, 1, 4);
        plan.stages[1].ep = 2;
        s.workload.training.grouped_gemm = false;
        add(file + " with stages that differ in expert parallelism", s, plan);
        s.workload.training.moe_dispatcher = MoeDispatcher::flex;
        add(file + " with the flex dispatcher", s, plan);
      }
    }
    {
      Scenario s = six;
      s.workload.model = hf_model("mixtral-8x7b-v0.1.json");
      s.workload.training.overlap_ep_comm = true;
      add("mixtral-8x7b-v0.1.json with the expert-parallel overlap, interleaved", s,
          plan_on(island, {16, 16}, 2, 8, 2, 4));
      add("mixtral-8x7b-v0.1.json with the expert-parallel overlap under 1F1B", s,
          plan_on(island, {16, 16}, 2, 8, 1, 4));
    }
    {
      Scenario s = six;
      s.workload.model = hf_model("mixtral-8x7b-v0.1.json");
      s.workload.training.moe_capacity_factor = 1.25;
      add("mixtral-8x7b-v0.1.json with its experts padded to a capacity", s,
          plan_on(island, {16, 16}, 2, 8, 1, 4));
      s.workload.training.moe_dispatcher = MoeDispatcher::gshard;
      add("mixtral-8x7b-v0.1.json with GShard's dispatch", s,
          plan_on(island, {16, 16}, 2, 8, 1, 4));
    }
    {
      Scenario s = six;
      s.workload.model = hf_model("qwen3-8b.json");
      s.workload.model.hidden = 2560;  // Qwen3-4B's width with the same heads: --kv-channels
      add("qwen3-8b.json at Qwen3-4B's width", s, plan_on(island, {18, 18}, 4, 2));
    }
  }
  // The other Megatron-LM islands of the site: A100, Hygon, Cambricon and Moore Threads.
  for (const std::string island : {"a100", "dcu-k100", "mlu370", "mtt-s4000"}) {
    out.push_back({"even split on " + island, six, plan_on(island, {20, 20, 20, 20}, 8, 2)});
  }
  // The bundled mixture-of-experts scenarios on their Ascend and Hygon islands.
  {
    const Scenario mixtral = scenario_at("mixtral-mixed.yaml");
    out.push_back(
        {"mixtral-mixed on ascend-910b", mixtral, plan_on("ascend-910b", {16, 16}, 2, 8, 1, 4)});
    out.push_back(
        {"mixtral-mixed on dcu-k100", mixtral, plan_on("dcu-k100", {16, 16}, 2, 8, 1, 4)});
    const Scenario deepseek = scenario_at("deepseek-v2-lite-mixed.yaml");
    out.push_back({"deepseek-v2-lite-mixed on ascend-910b", deepseek,
                   plan_on("ascend-910b", {14, 13}, 2, 8, 1, 8)});
    out.push_back({"deepseek-v2-lite-mixed on dcu-k100", deepseek,
                   plan_on("dcu-k100", {14, 13}, 2, 8, 1, 8)});
  }
  return out;
}

// A flag as one launch file of one case passes it.
struct Written {
  std::string flag;
  std::string framework;  // HETPLAN_FRAMEWORK
  std::string where;      // file, case and variable
};

// Every flag of every HETPLAN_* variable of every file exported for the cases.
const std::vector<Written>& written_flags() {
  static const std::vector<Written> all = [] {
    std::vector<Written> out;
    for (const Case& c : cases()) {
      ExportInput input;
      input.scenario = &c.scenario;
      input.plan = &c.plan;
      input.validation.validated = true;
      for (const ExportedFile& file : export_megatron(input)) {
        const auto variables = sourced_variables(file.text);
        const auto framework = variables.find("HETPLAN_FRAMEWORK");
        if (framework == variables.end() || framework->second.size() != 1) {
          throw std::runtime_error(file.name + " of case \"" + c.label +
                                   "\" assigns no HETPLAN_FRAMEWORK");
        }
        for (const auto& [name, words] : variables) {
          if (name == "HETPLAN_ARGS") continue;  // the two lists below it, again
          for (const std::string& word : words) {
            if (word.rfind("--", 0) != 0) continue;
            out.push_back(
                {word, framework->second[0], file.name + " of case \"" + c.label + "\", " + name});
          }
        }
      }
    }
    return out;
  }();
  return all;
}

TEST(LaunchFlags, EveryFlagIsAnArgumentOfItsFramework) {
  std::map<std::string, std::set<std::string>> known;
  for (const std::string id : {"megatron-lm", "mindspeed-llm"}) known[id] = parser_flags(id);
  std::map<std::string, int> checked;
  for (const Written& w : written_flags()) {
    const auto framework = known.find(w.framework);
    if (framework == known.end()) {
      ADD_FAILURE() << w.where << ": framework \"" << w.framework << "\" has no flag list";
      continue;
    }
    ++checked[w.framework];
    EXPECT_TRUE(framework->second.count(w.flag))
        << w.flag << " is not an argument of " << framework_name(w.framework)
        << " (tests/exporters/data/" << w.framework << "-arguments.txt), written in " << w.where;
  }
  // Both frameworks' files were checked, many flags each.
  EXPECT_GT(checked["megatron-lm"], 500);
  EXPECT_GT(checked["mindspeed-llm"], 500);
}

// The cases make launch.cpp write each flag it has: every string literal of launch.cpp that
// starts with a flag is a flag some case's file passes.
TEST(LaunchFlags, TheCasesWriteEveryFlagOfTheExporter) {
  const std::string source = formats::read_text_file(kSource + "/exporters/launch.cpp");
  static const std::regex literal("\"(--[a-z0-9][a-z0-9-]*)[ \"]");
  std::set<std::string> in_source;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), literal);
       it != std::sregex_iterator(); ++it) {
    in_source.insert((*it)[1]);
  }
  ASSERT_GT(in_source.size(), 40u);
  std::map<std::string, std::set<std::string>> written;  // flag: frameworks
  for (const Written& w : written_flags()) written[w.flag].insert(w.framework);
  for (const std::string& flag : in_source) {
    EXPECT_TRUE(written.count(flag)) << flag << " (exporters/launch.cpp) is written by no case";
  }
  // Each framework's own way of saying a thing reaches a file of that framework.
  EXPECT_EQ(written["--num-layer-list"], std::set<std::string>{"mindspeed-llm"});
  EXPECT_EQ(written["--use-ascend-mc2"], std::set<std::string>{"mindspeed-llm"});
  EXPECT_EQ(written["--tp-comm-overlap"], std::set<std::string>{"megatron-lm"});
  // Equal middle stages: both frameworks (MindSpeed-LLM with model chunks); any other split:
  // Megatron-Core's layout, which MindSpeed-LLM's Megatron-LM (core_v0.12.1) lacks.
  EXPECT_EQ(written["--decoder-first-pipeline-num-layers"],
            (std::set<std::string>{"megatron-lm", "mindspeed-llm"}));
  EXPECT_EQ(written["--pipeline-model-parallel-layout"], std::set<std::string>{"megatron-lm"});
  EXPECT_EQ(written["--use-flash-attn"], std::set<std::string>{"mindspeed-llm"});
  EXPECT_EQ(written["--attention-backend"], std::set<std::string>{"megatron-lm"});
  // Latent attention and dense first layers, each framework in its own words.
  EXPECT_EQ(written["--multi-latent-attention"], std::set<std::string>{"megatron-lm"});
  EXPECT_EQ(written["--qk-pos-emb-head-dim"], std::set<std::string>{"megatron-lm"});
  EXPECT_EQ(written["--multi-head-latent-attention"], std::set<std::string>{"mindspeed-llm"});
  EXPECT_EQ(written["--qk-rope-head-dim"], std::set<std::string>{"mindspeed-llm"});
  EXPECT_EQ(written["--first-k-dense-replace"], std::set<std::string>{"mindspeed-llm"});
  EXPECT_EQ(written["--kv-lora-rank"], (std::set<std::string>{"megatron-lm", "mindspeed-llm"}));
}

// Whether `tool` is on the PATH.
bool installed(const std::string& tool) {
  return test::run_shell("command -v " + tool + " >/dev/null 2>&1").status == 0;
}

// bash -n and, where it is installed, shellcheck on a script; the findings, empty when none.
std::string shell_findings(const std::string& name, const std::string& text) {
  static int count = 0;
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("hetplan-shellcheck-" + std::to_string(::getpid()) + "-" + std::to_string(++count) + "-" +
       name);
  std::ofstream(path, std::ios::binary) << text;
  std::string out;
  const auto syntax = test::run_shell("bash -n '" + path.string() + "' 2>&1");
  if (syntax.status != 0) out += "bash -n: " + syntax.output;
  if (installed("shellcheck")) {
    const auto lint = test::run_shell("shellcheck '" + path.string() + "' 2>&1");
    if (lint.status != 0) out += "shellcheck:\n" + lint.output;
  }
  std::filesystem::remove(path);
  return out;
}

// Every bundled scenario's best plan: each launch file passes only flags of its framework's
// parser, names every assumption of the estimate that the framework has a flag for (fused
// attention, sequence parallelism, the distributed optimizer, the overlaps, the recompute
// granularity, the MoE dispatcher), and passes bash -n and shellcheck (when installed), as
// labels.sh does.
TEST(LaunchFlags, EveryBundledScenariosBestPlanNamesItsAssumptions) {
  std::map<std::string, std::set<std::string>> known;
  for (const std::string id : {"megatron-lm", "mindspeed-llm"}) known[id] = parser_flags(id);
  if (!installed("shellcheck")) std::fprintf(stderr, "shellcheck not installed: bash -n only\n");
  int files = 0;
  for (const std::string name :
       {"default.yaml", "six-vendors.yaml", "mixtral-mixed.yaml", "deepseek-v2-lite-mixed.yaml"}) {
    const Scenario scenario = scenario_at(name);
    planner::SearchOptions options;
    options.top = 1;
    const planner::SearchResult result = planner::search_plans(scenario, options);
    const planner::RankedPlan* best = planner::best_job(result);
    ASSERT_NE(best, nullptr) << name;
    const Plan& plan = best->plan;
    ExportInput input;
    input.scenario = &scenario;
    input.plan = &plan;
    input.validation.validated = true;
    const sim::StepSettings settings = sim::step_settings(scenario.workload, plan);
    const TrainingSettings& t = settings.training;
    for (const ExportedFile& file : export_megatron(input)) {
      ++files;
      const std::string where = name + " " + file.name;
      const auto variables = sourced_variables(file.text);
      const std::string framework = variables.at("HETPLAN_FRAMEWORK").at(0);
      const bool mindspeed = framework == "mindspeed-llm";
      const std::vector<std::string>& args = variables.at("HETPLAN_ARGS");
      const std::set<std::string> words(args.begin(), args.end());
      for (const std::string& word : args)
        if (word.rfind("--", 0) == 0)
          EXPECT_TRUE(known.at(framework).count(word)) << word << " in " << where;
      const PlanStage& stage =
          plan.stages.at(std::stoul(variables.at("HETPLAN_STAGES").at(0)));
      const auto has = [&](const std::string& flag) { return words.count(flag) > 0; };
      if (t.flash_attention) {
        if (mindspeed) {
          EXPECT_TRUE(has("--use-flash-attn")) << where;
        } else {
          EXPECT_TRUE(has("--attention-backend") && has("flash")) << where;
        }
      }
      EXPECT_EQ(has("--sequence-parallel"), t.sequence_parallel && stage.tp > 1) << where;
      EXPECT_EQ(has("--use-distributed-optimizer"), t.zero_stage >= 1) << where;
      EXPECT_EQ(has("--overlap-grad-reduce"), t.overlap_grad_reduce && stage.dp > 1) << where;
      if (t.overlap_param_gather && t.overlap_grad_reduce && t.zero_stage >= 1 && stage.dp > 1)
        EXPECT_TRUE(has("--overlap-param-gather")) << where;
      if (t.overlap_tp_comm && stage.tp > 1) {
        EXPECT_TRUE(has(mindspeed ? "--use-ascend-mc2" : "--tp-comm-overlap") ||
                    file.text.find("overlaps tensor-parallel communication, not passed") !=
                        std::string::npos)
            << where;
      }
      const Recompute recompute =
          stage.recompute ? *stage.recompute : sim::settings_recompute(settings).mode;
      EXPECT_EQ(has("--recompute-granularity"), recompute != Recompute::none) << where;
      EXPECT_EQ(has("--moe-token-dispatcher-type"), scenario.workload.model.moe()) << where;
      EXPECT_EQ(shell_findings(file.name, file.text), "") << where;
    }
    EXPECT_EQ(shell_findings("labels.sh", export_labels(input).text), "") << name;
  }
  EXPECT_GE(files, 4);
}

// The fixtures tell the frameworks apart where the exporter does: MindSpeed's MC2 and
// MindSpeed-LLM's layer list are not Megatron-LM's.
TEST(LaunchFlags, TheFrameworksDifferWhereTheExporterSaysSo) {
  const auto megatron = parser_flags("megatron-lm");
  const auto mindspeed = parser_flags("mindspeed-llm");
  for (const std::string flag : {"--use-ascend-mc2", "--num-layer-list", "--shared-expert-gate"}) {
    EXPECT_FALSE(megatron.count(flag)) << flag;
    EXPECT_TRUE(mindspeed.count(flag)) << flag;
  }
  for (const std::string flag : {"--pipeline-model-parallel-layout"}) {
    EXPECT_TRUE(megatron.count(flag)) << flag;
    EXPECT_FALSE(mindspeed.count(flag)) << flag;
  }
  for (const std::string flag : {"--use-flash-attn", "--num-virtual-stages-per-pipeline-rank",
                                 "--decoder-last-pipeline-num-layers"}) {
    EXPECT_TRUE(megatron.count(flag)) << flag;
    EXPECT_TRUE(mindspeed.count(flag)) << flag;
  }
  for (const std::string flag : {"--tensor-model-parallel-size", "--tp-comm-overlap",
                                 "--decoder-first-pipeline-num-layers", "--moe-router-topk"}) {
    EXPECT_TRUE(megatron.count(flag)) << flag;
    EXPECT_TRUE(mindspeed.count(flag)) << flag;
  }
}

}  // namespace
}  // namespace hetplan::exporters
