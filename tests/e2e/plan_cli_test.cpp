// Runs `hetplan plan` on the bundled default scenario, as a user would, and checks the tool
// against itself: the ranking against its own order, the written plan files against
// `hetplan eval`, one run against the next. No expected figures are written down here.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/e2e/cli_run.hpp"

namespace {

using hetplan::e2e::CliRun;
using hetplan::e2e::hetplan;
using hetplan::e2e::read_text;
using hetplan::e2e::TempFolder;

std::size_t count_lines(const std::string& text) {
  std::size_t lines = 0;
  for (const char c : text) lines += c == '\n';
  return lines;
}

// Every plan --out writes, keyed by (rank, plan name): a ranked non-pool entry, or one job of
// a ranked resource pool (written with the pool's rank). Plan names alone can repeat across
// ranks (the same pipeline shape on fewer chips), so the rank is part of the key.
using PlanKey = std::pair<int, std::string>;
std::map<PlanKey, nlohmann::json> plans_to_write(const nlohmann::json& search) {
  std::map<PlanKey, nlohmann::json> plans;
  int rank = 0;
  for (const auto& entry : search.at("ranked")) {
    ++rank;
    if (entry.at("mode") == "resource-pool") {
      for (const auto& job : entry.at("jobs")) plans[{rank, job.at("name").get<std::string>()}] = job;
    } else {
      plans[{rank, entry.at("name").get<std::string>()}] = entry;
    }
  }
  // Replica groups on different islands follow, numbered on (their figures at the top level).
  if (search.contains("mixed_data_parallel")) {
    for (const auto& mixed : search.at("mixed_data_parallel").at("plans")) {
      nlohmann::json entry = mixed;
      entry["estimate"] = {{"step_time_s", mixed.at("step_time_s")},
                           {"tokens_per_s", mixed.at("tokens_per_s")}};
      entry["replica_groups_plan"] = true;
      plans[{++rank, mixed.at("plan").get<std::string>()}] = entry;
    }
  }
  return plans;
}

// "NN-<name>.yaml" -> (NN, name); rank 0 when the name has another form.
PlanKey parse_plan_file_name(const std::string& file) {
  const std::size_t dash = file.find('-');
  const std::string suffix = ".yaml";
  if (dash == std::string::npos || dash < 2 || file.size() <= dash + 1 + suffix.size() ||
      file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return {0, file};
  }
  for (std::size_t i = 0; i < dash; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(file[i]))) return {0, file};
  }
  return {std::stoi(file.substr(0, dash)),
          file.substr(dash + 1, file.size() - dash - 1 - suffix.size())};
}

TEST(PlanCli, DefaultScenarioShowsAllThreeModesAndEverySection) {
  const CliRun run = hetplan("plan");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  for (const char* mode : {"single-island", "resource-pool", "task-level"}) {
    // A row of the ranked table: the mode column, then the plan, after the rank.
    bool row = false;
    std::istringstream lines(run.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0])) &&
          line.find(std::string(" ") + mode + " ") != std::string::npos) {
        row = true;
      }
    }
    EXPECT_TRUE(row) << "no ranked row of mode " << mode << " in:\n" << run.out;
  }
  for (const char* section : {"\nthree states\n", "\nrejected candidates by pass\n", "\nwhy\n"}) {
    EXPECT_NE(run.out.find(section), std::string::npos) << section << "in:\n" << run.out;
  }
}

TEST(PlanCli, JsonRanksFeasiblePlansOfEveryModeByThroughput) {
  const CliRun run = hetplan("plan --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);  // throws, and fails the test, if not JSON
  for (const char* key :
       {"scenario", "objective", "search", "ranked", "three_states", "rejected", "explanation"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  ASSERT_EQ(j.at("objective"), "throughput");
  const auto& ranked = j.at("ranked");
  ASSERT_TRUE(ranked.is_array());
  ASSERT_FALSE(ranked.empty());

  std::set<std::string> modes;
  for (std::size_t k = 0; k < ranked.size(); ++k) {
    const auto& entry = ranked[k];
    const std::string mode = entry.at("mode");
    modes.insert(mode);
    EXPECT_GT(entry.at("tokens_per_s").get<double>(), 0.0) << "rank " << k + 1;
    if (mode == "resource-pool") {
      EXPECT_FALSE(entry.at("jobs").empty()) << "rank " << k + 1;
    } else {
      EXPECT_TRUE(entry.at("name").is_string()) << "rank " << k + 1;
      EXPECT_EQ(entry.at("estimate").at("feasible"), true) << "rank " << k + 1 << " " << entry;
    }
    if (k > 0) {
      EXPECT_GE(ranked[k - 1].at("tokens_per_s").get<double>(),
                entry.at("tokens_per_s").get<double>())
          << "rank " << k << " before rank " << k + 1;
    }
  }
  for (const char* mode : {"single-island", "resource-pool", "task-level"}) {
    EXPECT_EQ(modes.count(mode), 1u) << mode;
  }

  const auto& rejected = j.at("rejected");
  const std::vector<std::string> passes = {
      "inference-only", "software-stack",    "dtype",  "unknown-figures", "operator-coverage",
      "gang",           "structure",         "memory", "zone-reachability"};
  EXPECT_EQ(rejected.size(), passes.size()) << rejected;
  for (const auto& pass : passes) {
    ASSERT_TRUE(rejected.contains(pass)) << pass;
    EXPECT_TRUE(rejected.at(pass).at("count").is_number_unsigned()) << pass;
    EXPECT_TRUE(rejected.at(pass).at("examples").is_array()) << pass;
  }
}

TEST(PlanCli, WrittenPlansReevaluateToTheRankedFigures) {
  const TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  const CliRun run = hetplan("plan --top 5 --json --out " + folder.path(), " 2>/dev/null");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto search = nlohmann::json::parse(run.out);
  auto expected = plans_to_write(search);
  ASSERT_FALSE(expected.empty());

  std::vector<std::string> files;
  for (const auto& item : std::filesystem::directory_iterator(folder.path())) {
    files.push_back(item.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    const PlanKey key = parse_plan_file_name(file);
    const auto found = expected.find(key);
    if (found == expected.end()) {
      ADD_FAILURE() << file << " matches no ranked plan (or was written twice)";
      continue;
    }
    const nlohmann::json ranked = found->second;
    expected.erase(found);
    const std::string path = folder.path() + "/" + file;
    const std::string lead = ranked.contains("replica_groups_plan")
                                 ? "# Replica groups on different islands"
                                 : "# Rank " + std::to_string(key.first) + " ";
    EXPECT_EQ(read_text(path).rfind(lead, 0), 0u) << file;

    const CliRun eval = hetplan("eval scenarios/default.yaml --plan " + path + " --json");
    ASSERT_EQ(eval.exit_code, 0) << file << "\n" << eval.out;
    const auto estimate = nlohmann::json::parse(eval.out);
    EXPECT_EQ(estimate.at("plan"), key.second) << file;
    EXPECT_EQ(estimate.at("step_time_s"), ranked.at("estimate").at("step_time_s")) << file;
    EXPECT_EQ(estimate.at("tokens_per_s"), ranked.at("estimate").at("tokens_per_s")) << file;
    EXPECT_EQ(estimate.at("tokens_per_s"), ranked.at("tokens_per_s")) << file;
    EXPECT_EQ(estimate.at("feasible"), true) << file;
  }
  for (const auto& [key, plan] : expected) {
    ADD_FAILURE() << "no file for rank " << key.first << " plan " << key.second;
  }
}

TEST(PlanCli, SameInputsGiveByteIdenticalJsonAndText) {
  const CliRun json_a = hetplan("plan --json");
  const CliRun json_b = hetplan("plan --json");
  ASSERT_EQ(json_a.exit_code, 0) << json_a.out;
  EXPECT_EQ(json_a.out, json_b.out);
  const CliRun text_a = hetplan("plan");
  const CliRun text_b = hetplan("plan");
  ASSERT_EQ(text_a.exit_code, 0) << text_a.out;
  EXPECT_EQ(text_a.out, text_b.out);
}

// The search runs its settings side by side; what it finds, and how many plans it scored and
// pruned on the way, must not depend on how many threads did it.
TEST(PlanCli, AnyThreadCountGivesByteIdenticalJson) {
  const CliRun one = hetplan("plan --json --threads 1");
  ASSERT_EQ(one.exit_code, 0) << one.out;
  for (const char* threads : {"2", "3", "8"}) {
    const CliRun many = hetplan(std::string("plan --json --threads ") + threads);
    ASSERT_EQ(many.exit_code, 0) << many.out;
    EXPECT_EQ(one.out, many.out) << threads << " threads";
  }
}

// Same inputs, same bytes in any process: two runs whose heaps start with different bytes
// (glibc's MALLOC_PERTURB_) and lie at other addresses (address-space randomisation) write the
// same exports, every target, and print the same estimate. A figure read from memory never
// written, or an order taken from addresses, differs between them; two calls in one process
// share both, which is why this is not a unit test.
TEST(PlanCli, ExportsAndEstimatesAreTheSameBytesInAnyProcess) {
  TempFolder folder;
  auto run = [](const char* perturb, const std::string& args) {
    setenv("MALLOC_PERTURB_", perturb, 1);
    const CliRun result = hetplan(args);
    unsetenv("MALLOC_PERTURB_");
    return result;
  };
  const char* const perturbs[] = {"0", "165"};
  for (const char* target : {"volcano", "megatron", "json", "kube-scheduler", "labels"}) {
    std::map<std::string, std::string> files[2];
    for (int k = 0; k < 2; ++k) {
      const std::string out = folder.file(std::string(target) + "-" + perturbs[k]);
      const CliRun exported =
          run(perturbs[k], "export plans/default-reference.yaml --scenario scenarios/default.yaml "
                           "--allow-unvalidated --to " + std::string(target) + " --out " + out);
      ASSERT_EQ(exported.exit_code, 0) << exported.out;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(out)) {
        if (entry.is_regular_file())
          files[k][std::filesystem::relative(entry.path(), out).string()] =
              read_text(entry.path().string());
      }
    }
    EXPECT_FALSE(files[0].empty()) << target;
    EXPECT_EQ(files[0], files[1]) << target;
  }
  const CliRun a = run("0", "eval scenarios/default.yaml --json");
  const CliRun b = run("165", "eval scenarios/default.yaml --json");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_GT(a.out.size(), 1000u);
  EXPECT_EQ(a.out, b.out);
}

TEST(PlanCli, MissingScenarioIsOneErrorLineNamingTheFile) {
  const CliRun run = hetplan("plan no/such/file.yaml");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(count_lines(run.out), 1u) << run.out;
  EXPECT_EQ(run.out.rfind("error: ", 0), 0u) << run.out;
  EXPECT_NE(run.out.find("no/such/file.yaml"), std::string::npos) << run.out;
}

TEST(PlanCli, ATimeBudgetStopsTheSearchWithTheBestSoFarAndSaysSo) {
  // A budget of a millisecond runs out before the first setting is done on any machine (the
  // six-vendor search takes seconds); the plans found until then are ranked, exit 0.
  const CliRun json = hetplan("plan scenarios/six-vendors.yaml --max-seconds 0.001 --json",
                              " 2>/dev/null");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  const auto report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["search"]["stopped"], "the time budget of 0.001 s ran out");
  EXPECT_LT(report["search"]["settings"].get<int>(), report["search"]["settings_total"].get<int>());
  const CliRun text = hetplan("plan scenarios/six-vendors.yaml --max-seconds 0.001", " 2>/dev/null");
  EXPECT_NE(text.out.find("search stopped early (the time budget of 0.001 s ran out) after "),
            std::string::npos)
      << text.out;
  // A complete search says nothing of the kind.
  const CliRun complete = hetplan("plan --json", " 2>/dev/null");
  EXPECT_FALSE(nlohmann::json::parse(complete.out)["search"].contains("stopped"));
}

// A search stopped before it ranked any plan (a budget that runs out before a plan is found, as
// above; or Ctrl-C) leaves an earlier run's plans as they were instead of replacing them with an
// empty set, and says so on stderr. The model (about 1.7 quadrillion parameters) fits on none of
// the six-vendors site's 6,144 chips, so no setting can rank a plan however fast the machine
// is, and the search over that site outlasts the budget.
TEST(PlanCli, AStoppedSearchWithNoPlanLeavesTheFolderAsItWas) {
  const TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  const std::string earlier = folder.path() + "/01-earlier.yaml";
  {
    std::ofstream file(earlier, std::ios::binary);
    file << "# an earlier run's plan\n";
  }
  const TempFolder inputs;
  ASSERT_FALSE(inputs.path().empty());
  {
    std::ofstream workload(inputs.path() + "/huge.yaml", std::ios::binary);
    workload << "schema: hetplan/workload/v1\nname: huge\nmodel:\n  shape: {layers: 100000, "
                "hidden: 32768, heads: 256, vocab: 32000, activation: swiglu, ffn: 131072, "
                "norm: rmsnorm}\ntraining: {seq_len: 4096, global_batch: 512, micro_batch: 1, "
                "dtype: bf16, recompute: full}\n";
    std::ofstream scenario(inputs.path() + "/huge-scenario.yaml", std::ios::binary);
    scenario << "schema: hetplan/scenario/v1\nname: huge\ncluster: " << HETPLAN_SOURCE_DIR
             << "/topologies/six-vendors-6144.yaml\nworkload: huge.yaml\nobjective: throughput\n";
  }
  const std::string command =
      "plan " + inputs.path() + "/huge-scenario.yaml --max-seconds 0.001 --out " + folder.path();
  const CliRun json = hetplan(command + " --json", " 2>/dev/null");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  const auto report = nlohmann::json::parse(json.out);
  ASSERT_TRUE(report["ranked"].empty()) << "the budget left time to rank a plan";
  EXPECT_EQ(read_text(earlier), "# an earlier run's plan\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& item : std::filesystem::directory_iterator(folder.path())) {
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
  const CliRun said = hetplan(command, " 2>&1 >/dev/null");
  EXPECT_NE(said.out.find("the search stopped before it ranked a plan; " + folder.path() +
                          " left as it was"),
            std::string::npos)
      << said.out;
}

// The cap on a pipeline's islands reaches the search and its report; a pipeline of one island
// is no task-level plan, so 1 is refused.
TEST(PlanCli, APipelineIslandCapIsReported) {
  const CliRun json = hetplan("plan --max-pipeline-islands 2 --json", " 2>/dev/null");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  const auto report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["search"]["max_pipeline_islands"], 2);
  for (const auto& plan : report["ranked"]) {
    if (plan["mode"] == "task-level") {
      EXPECT_LE(plan["islands"].size(), 2u) << plan.dump();
    }
  }
  const CliRun text = hetplan("plan --max-pipeline-islands 2", " 2>/dev/null");
  EXPECT_NE(text.out.find("task-level pipelines span at most 2 islands"), std::string::npos)
      << text.out;
  EXPECT_EQ(hetplan("plan --max-pipeline-islands 1").exit_code, 2);
  // Without the option the report says nothing of it.
  const CliRun plain = hetplan("plan --json", " 2>/dev/null");
  EXPECT_FALSE(nlohmann::json::parse(plain.out)["search"].contains("max_pipeline_islands"));
}

TEST(PlanCli, TopZeroIsAnInputError) {
  const CliRun run = hetplan("plan --top 0");
  EXPECT_EQ(run.exit_code, 2) << run.out;
}

TEST(PlanCli, OutFolderThatCannotBeCreatedIsAnInputError) {
  for (const char* out : {"/proc/forbidden", "/dev/null/plans"}) {
    const CliRun run = hetplan(std::string("plan --out ") + out);
    EXPECT_EQ(run.exit_code, 2) << out << "\n" << run.out;
    EXPECT_EQ(count_lines(run.out), 1u) << run.out;
    EXPECT_EQ(run.out.rfind("error: ", 0), 0u) << run.out;
    EXPECT_NE(run.out.find("--out"), std::string::npos) << run.out;
    std::error_code ignored;
    EXPECT_FALSE(std::filesystem::exists(out, ignored)) << out;
  }
}

TEST(PlanCli, OutReplacesAnOlderFileOfTheSameNameWhole) {
  const CliRun listing = hetplan("plan --top 1 --json", " 2>/dev/null");
  ASSERT_EQ(listing.exit_code, 0) << listing.out;
  const auto plans = plans_to_write(nlohmann::json::parse(listing.out));
  ASSERT_FALSE(plans.empty());
  const auto& [key, ranked] = *plans.begin();
  char prefix[32];
  std::snprintf(prefix, sizeof prefix, "%02d-", key.first);

  const TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  const std::string path = folder.path() + "/" + prefix + key.second + ".yaml";
  {
    // Longer than any plan file, so a write that does not truncate leaves junk behind.
    std::ofstream junk(path, std::ios::binary);
    for (int i = 0; i < 4000; ++i) junk << "JUNK: not a plan, written before hetplan ran\n";
  }
  const CliRun run = hetplan("plan --top 1 --out " + folder.path());
  ASSERT_EQ(run.exit_code, 0) << run.out;

  const std::string text = read_text(path);
  EXPECT_EQ(text.rfind("# Rank", 0), 0u) << text.substr(0, 200);
  EXPECT_EQ(text.find("JUNK"), std::string::npos) << "older content left in " << path;
  const CliRun eval = hetplan("eval scenarios/default.yaml --plan " + path + " --json");
  ASSERT_EQ(eval.exit_code, 0) << eval.out;
  const auto estimate = nlohmann::json::parse(eval.out);
  EXPECT_EQ(estimate.at("plan"), key.second);
  EXPECT_EQ(estimate.at("step_time_s"), ranked.at("estimate").at("step_time_s"));
}

TEST(PlanCli, TimingsGoToStderrOnly) {
  const CliRun plain = hetplan("plan", " 2>/dev/null");
  const CliRun timed = hetplan("plan --timings", " 2>/dev/null");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  ASSERT_EQ(timed.exit_code, 0) << timed.out;
  EXPECT_EQ(timed.out, plain.out);
  // And the timings do exist, on stderr.
  const CliRun stderr_only = hetplan("plan --timings", " 2>&1 >/dev/null");
  ASSERT_EQ(stderr_only.exit_code, 0) << stderr_only.out;
  EXPECT_NE(stderr_only.out.find("total"), std::string::npos) << stderr_only.out;
}

}  // namespace

namespace hetplan::e2e {
namespace {

// `hetplan eval` names a stage's expert parallelism, and its expert tensor parallelism when the
// plan folds the experts over the tensor-parallel ranks (etp 1 under tp 2).
TEST(EvalCli, StagesNameTheirExpertParallelism) {
  const TempFolder folder;
  const std::string path = folder.file("folded.yaml");
  std::ofstream(path)
      << "schema: hetplan/plan/v1\n"
         "name: folded\n"
         "stages:\n"
         "  - {island: dcu-k100, first_layer: 0, num_layers: 8, tp: 2, dp: 8, ep: 4}\n"
         "  - {island: dcu-k100, first_layer: 8, num_layers: 8, tp: 2, dp: 8, ep: 8, etp: 1}\n"
         "  - {island: dcu-k100, first_layer: 16, num_layers: 8, tp: 2, dp: 8, ep: 4}\n"
         "  - {island: dcu-k100, first_layer: 24, num_layers: 8, tp: 2, dp: 8}\n";
  const CliRun run = hetplan("eval scenarios/mixtral-mixed.yaml --plan " + path);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  std::vector<std::string> stage_lines;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("0 ", 0) == 0 || line.rfind("1 ", 0) == 0 || line.rfind("2 ", 0) == 0 ||
        line.rfind("3 ", 0) == 0)
      stage_lines.push_back(line);
  ASSERT_EQ(stage_lines.size(), 4u) << run.out;
  EXPECT_NE(stage_lines[0].find("  ep 4"), std::string::npos) << stage_lines[0];
  EXPECT_EQ(stage_lines[0].find("etp"), std::string::npos) << stage_lines[0];
  EXPECT_NE(stage_lines[1].find("  ep 8, etp 1"), std::string::npos) << stage_lines[1];
  EXPECT_EQ(stage_lines[3].find("ep"), std::string::npos) << stage_lines[3];
}

}  // namespace
}  // namespace hetplan::e2e
