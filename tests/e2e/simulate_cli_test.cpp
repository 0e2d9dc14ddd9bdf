// Runs `hetplan simulate` on the bundled default scenario, as a user would: the JSON report and
// its fields, the same bytes from one run to the next, the trace written in one piece, and the
// errors: a missing scenario, a broken plan file and a plan that cannot run each end in one line
// and exit code 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
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

std::vector<std::string> files_in(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    names.push_back(entry.path().filename().string());
  return names;
}

TEST(SimulateCli, JsonCarriesTheStepItsBreakdownAndGoodput) {
  const CliRun run = hetplan("simulate scenarios/default.yaml --json", " 2>/dev/null");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);
  ASSERT_TRUE(j.at("step_time_s").is_number());
  ASSERT_TRUE(j.at("tokens_per_s").is_number());
  const double step = j["step_time_s"].get<double>();
  const double tokens_per_s = j["tokens_per_s"].get<double>();
  EXPECT_GT(step, 0);
  // The workload's global batch: 512 sequences of 4096 tokens.
  EXPECT_NEAR(tokens_per_s * step, 512.0 * 4096, 512.0 * 4096 * 1e-4);
  EXPECT_EQ(j.at("plan"), "default-reference");

  const auto& breakdown = j.at("breakdown");
  double parts = 0;
  for (const char* key : {"compute_s", "tensor_parallel_s", "pipeline_s", "cross_island_s",
                          "data_parallel_s", "expert_parallel_s", "bubble_s", "stragglers_s",
                          "optimizer_s"}) {
    ASSERT_TRUE(breakdown.contains(key)) << key;
    ASSERT_TRUE(breakdown[key].is_number()) << key;
    EXPECT_GE(breakdown[key].get<double>(), 0) << key;
    parts += breakdown[key].get<double>();
  }
  EXPECT_EQ(breakdown.size(), 9u) << breakdown.dump();
  // The default scenario's model has no experts.
  EXPECT_EQ(breakdown["expert_parallel_s"].get<double>(), 0);
  // The parts add up to the step (each is rounded to six significant digits).
  EXPECT_NEAR(parts, step, 1e-5 * step);

  // The default scenario has a reliability section: goodput is a number, below the throughput.
  ASSERT_TRUE(j.at("goodput_tokens_per_s").is_number()) << j["goodput_tokens_per_s"].dump();
  EXPECT_GT(j["goodput_tokens_per_s"].get<double>(), 0);
  EXPECT_LT(j["goodput_tokens_per_s"].get<double>(), tokens_per_s);

  // The analytic estimate beside it, for comparison: the same plan as `hetplan eval`.
  const CliRun eval = hetplan("eval scenarios/default.yaml --json", " 2>/dev/null");
  ASSERT_EQ(eval.exit_code, 0);
  const auto e = nlohmann::json::parse(eval.out);
  EXPECT_DOUBLE_EQ(j.at("analytic").at("step_time_s").get<double>(),
                   e.at("step_time_s").get<double>());
  ASSERT_TRUE(j.at("links").is_array());
  EXPECT_FALSE(j["links"].empty());
  EXPECT_EQ(j.at("stage_finish_s").size(), 8u);
}

TEST(SimulateCli, SameInputsGiveByteIdenticalOutput) {
  const CliRun a = hetplan("simulate scenarios/default.yaml --json --seed 3");
  const CliRun b = hetplan("simulate scenarios/default.yaml --json --seed 3");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  const CliRun text_a = hetplan("simulate scenarios/default.yaml");
  const CliRun text_b = hetplan("simulate scenarios/default.yaml");
  ASSERT_EQ(text_a.exit_code, 0) << text_a.out;
  EXPECT_EQ(text_a.out, text_b.out);
}

// A plan whose replicas fall into alike periods (docs/twin.md#folding) is simulated folded, and
// says so; with a trace asked for, every replica is simulated, to the same step and breakdown.
TEST(SimulateCli, AlikeReplicasAreFoldedToTheSameStep) {
  const std::string command =
      "simulate scenarios/six-vendors.yaml --plan tests/e2e/data/simulate/six-vendors-folded.yaml";
  const CliRun text = hetplan(command, " 2>/dev/null");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("alike replicas folded: 1536 of the 3072 ranks simulated"),
            std::string::npos)
      << text.out;
  const CliRun folded = hetplan(command + " --json", " 2>/dev/null");
  ASSERT_EQ(folded.exit_code, 0) << folded.out;
  const TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  const CliRun whole =
      hetplan(command + " --json --trace " + folder.path() + "/step.json", " 2>/dev/null");
  ASSERT_EQ(whole.exit_code, 0) << whole.out;
  const auto f = nlohmann::json::parse(folded.out);
  const auto w = nlohmann::json::parse(whole.out);
  EXPECT_EQ(f.at("ranks"), 3072);
  EXPECT_EQ(f.at("simulated_ranks"), 1536);
  EXPECT_EQ(w.at("simulated_ranks"), 3072);
  EXPECT_LT(f.at("flows").get<double>(), w.at("flows").get<double>());
  // Six significant digits in the report: the same figures.
  EXPECT_EQ(f.at("step_time_s"), w.at("step_time_s"));
  EXPECT_EQ(f.at("breakdown"), w.at("breakdown"));
  EXPECT_EQ(f.at("stage_finish_s"), w.at("stage_finish_s"));
  EXPECT_EQ(f.at("links"), w.at("links"));
}

TEST(SimulateCli, TraceIsWrittenInOnePiece) {
  const TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  const std::string trace = folder.path() + "/step.json";
  const CliRun run = hetplan("simulate scenarios/default.yaml --trace " + trace);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("trace written to " + trace), std::string::npos) << run.out;
  ASSERT_TRUE(std::filesystem::exists(trace));
  const auto j = nlohmann::json::parse(read_text(trace));
  ASSERT_TRUE(j.at("traceEvents").is_array());
  EXPECT_FALSE(j["traceEvents"].empty());
  // Nothing but the trace: no partial file left beside it.
  EXPECT_EQ(files_in(folder.path()), std::vector<std::string>{"step.json"});
}

TEST(SimulateCli, AnUnwritableTraceFailsInOneLineAndLeavesNothing) {
  const TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  const std::string trace = folder.path() + "/no/such/folder/step.json";
  const CliRun run = hetplan("simulate scenarios/default.yaml --trace " + trace);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(count_lines(run.out), 1u) << run.out;
  // Refused before the simulation, naming the path as given.
  EXPECT_EQ(run.out.rfind("error: " + trace + ": --trace: expected a file hetplan can write", 0),
            0u)
      << run.out;
  EXPECT_TRUE(files_in(folder.path()).empty());
}

TEST(SimulateCli, MissingScenarioIsAnInputError) {
  const CliRun run = hetplan("simulate no/such/scenario.yaml --json");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "error: no/such/scenario.yaml: cannot open the file for reading\n");
}

TEST(SimulateCli, BrokenPlanFileNamesItsLineAndColumn) {
  const TempFolder folder;
  ASSERT_FALSE(folder.path().empty());
  const std::string path = folder.path() + "/bad-plan.yaml";
  std::ofstream(path) << "schema: hetplan/plan/v1\nname: bad\nstages:\n  - {island: ascend-910b, "
                         "first_layer: 0, num_layers: 80, tp: zero, dp: 1}\n";
  const CliRun run = hetplan("simulate scenarios/default.yaml --plan " + path);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "error: " + path +
                         ":4:63: stages[0].tp: expected an integer from 1 to 1024, got \"zero\"\n");
}

TEST(SimulateCli, APlanThatCannotRunIsRefusedWithItsReasons) {
  const std::string plan = "tests/e2e/data/simulate/out-of-memory.yaml";
  const CliRun run = hetplan("simulate scenarios/default.yaml --json --plan " + plan);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(count_lines(run.out), 1u) << run.out;
  EXPECT_EQ(
      run.out.rfind(
          "error: " + plan +
              ":6:5: plan: expected a plan that can run, got one that cannot: stage 0 "
              "(ascend-910b): needs ",
          0),
      0u)
      << run.out;
  EXPECT_NE(run.out.find("ascend-910b has 64.0 GiB"), std::string::npos) << run.out;
  // The same plan through `hetplan eval` is a result, not an error: infeasible, with the reason.
  const CliRun eval = hetplan("eval scenarios/default.yaml --json --plan " + plan, " 2>/dev/null");
  ASSERT_EQ(eval.exit_code, 0) << eval.out;
  EXPECT_FALSE(nlohmann::json::parse(eval.out).at("feasible").get<bool>());
}

TEST(SimulateCli, CheckSaysWhatTheScenarioGivesTheTwin) {
  const CliRun run = hetplan("check scenarios/default.yaml");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("reliability figures for 3 chip types"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("simulation jitter"), std::string::npos) << run.out;
}

TEST(SimulateCli, PlanSimulatesItsBestPlansAndRanksThemAgain) {
  const CliRun run = hetplan("plan scenarios/default.yaml --simulate-top 3 --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto report = nlohmann::json::parse(run.out);
  const auto& simulated = report.at("simulated");
  ASSERT_EQ(simulated.size(), 3u);
  std::vector<std::size_t> analytic_ranks;
  double previous = INFINITY;
  for (std::size_t k = 0; k < simulated.size(); ++k) {
    const auto& entry = simulated[k];
    EXPECT_EQ(entry.at("rank").get<std::size_t>(), k + 1);
    analytic_ranks.push_back(entry.at("analytic_rank").get<std::size_t>());
    const auto& simulation = entry.at("simulation");
    // The plan simulated is the one the search ranked there, and it is one job.
    const auto& ranked = report.at("ranked").at(analytic_ranks.back() - 1);
    EXPECT_EQ(simulation.at("plan"), ranked.at("name")) << ranked.dump();
    EXPECT_NE(ranked.at("mode"), "resource-pool");
    // Ranked again by simulated goodput (the default scenario gives reliability figures).
    const double goodput = simulation.at("goodput_tokens_per_s").get<double>();
    EXPECT_LE(goodput, previous);
    previous = goodput;
  }
  std::sort(analytic_ranks.begin(), analytic_ranks.end());
  EXPECT_EQ(std::adjacent_find(analytic_ranks.begin(), analytic_ranks.end()), analytic_ranks.end());

  // The resource pool's jobs: on the default cluster they share no link that limits (each
  // island's leaves are its own, the spines are 1:1), so they are not simulated together.
  const auto& pool = report.at("three_states").at("resource_pool").at("simulated");
  EXPECT_EQ(pool.at("shares_a_limiting_link"), false) << pool.dump();

  // The best replica groups on different islands (the default cluster declares a gradient
  // path), simulated too: the slowest group on the fabric, then the exchange.
  const auto& groups = report.at("mixed_data_parallel").at("simulated");
  EXPECT_EQ(groups.at("plan"), report.at("mixed_data_parallel").at("plans").at(0).at("plan"));
  EXPECT_NEAR(groups.at("step_time_s").get<double>(),
              groups.at("slowest_group_s").get<double>() +
                  groups.at("cross_vendor_exchange_s").get<double>(),
              1e-5 * groups.at("step_time_s").get<double>());
  EXPECT_EQ(groups.at("replica_groups").size(), 2u);

  const CliRun text = hetplan("plan scenarios/default.yaml --simulate-top 2");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("simulated on the fabric (best 2 one-job plans"), std::string::npos);
  EXPECT_NE(text.out.find("on one fabric (twin)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("replica groups on the twin"), std::string::npos) << text.out;
}

// Two islands of one zone whose spine carries a quarter of what their leaves send up
// (tests/e2e/data/pool-spine): the resource pool's two jobs each run slower together than
// alone, the spine is the link they share, and the three-state table shows both figures.
TEST(SimulateCli, PoolJobsOnAnOversubscribedSpineAreSlowerTogether) {
  const std::string scenario = "tests/e2e/data/pool-spine/scenario.yaml";
  const CliRun run = hetplan("plan " + scenario + " --simulate-top 1 --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto report = nlohmann::json::parse(run.out);
  const auto& states = report.at("three_states");
  const auto& pool = states.at("resource_pool").at("simulated");
  EXPECT_EQ(pool.at("shares_a_limiting_link"), true) << pool.dump();
  ASSERT_EQ(pool.at("jobs").size(), 2u) << pool.dump();
  for (const auto& job : pool.at("jobs")) {
    EXPECT_GT(job.at("step_s_together").get<double>(), job.at("step_s_alone").get<double>())
        << job.dump();
    EXPECT_GT(job.at("slowdown").get<double>(), 1.0) << job.dump();
    EXPECT_LT(job.at("tokens_per_s_together").get<double>(),
              job.at("tokens_per_s_alone").get<double>());
  }
  EXPECT_LT(pool.at("tokens_per_s_together").get<double>(),
            pool.at("tokens_per_s_alone").get<double>());
  ASSERT_FALSE(pool.at("shared_links").empty()) << pool.dump();
  const auto& link = pool.at("shared_links")[0];
  EXPECT_EQ(link.at("kind"), "spine");
  EXPECT_EQ(link.at("name").get<std::string>().rfind("zone hall spine", 0), 0u) << link.dump();
  EXPECT_GT(link.at("job_bytes").at("npu-a").get<double>(), 0);
  EXPECT_GT(link.at("job_bytes").at("npu-b").get<double>(), 0);

  const CliRun text = hetplan("plan " + scenario + " --simulate-top 1");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  const auto states_at = text.out.find("three states");
  ASSERT_NE(states_at, std::string::npos);
  const std::string table = text.out.substr(states_at, text.out.find("rejected", states_at) - states_at);
  EXPECT_NE(table.find("tokens/s together"), std::string::npos) << table;
  EXPECT_NE(table.find("shared: zone hall spine"), std::string::npos) << table;
}

// The bundled mixture-of-experts scenario: the best one-job plan the search ranks uses expert
// parallelism, and its simulation shows the all-to-alls: in the breakdown of every stage with
// expert parallelism (and of no other), and as traffic on the fabric.
void expect_simulated_all_to_alls(const std::string& scenario) {
  const CliRun run = hetplan("plan scenarios/" + scenario + " --simulate-top 1 --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto report = nlohmann::json::parse(run.out);
  const auto& simulated = report.at("simulated");
  ASSERT_EQ(simulated.size(), 1u);
  const auto& simulation = simulated[0].at("simulation");
  const std::string name = simulation.at("plan");
  EXPECT_NE(name.find("-ep"), std::string::npos) << name;
  // The plan's stages as ranked: their expert-parallel sizes.
  const nlohmann::json* estimate = nullptr;
  for (const auto& ranked : report.at("ranked"))
    if (ranked.contains("name") && ranked.at("name") == name) estimate = &ranked.at("estimate");
  ASSERT_NE(estimate, nullptr) << name;
  const auto& stages = simulation.at("stages");
  ASSERT_EQ(stages.size(), estimate->at("stages").size());
  int with_experts = 0;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const int ep = estimate->at("stages")[i].at("ep");
    const double all_to_all = stages[i].at("breakdown").at("expert_parallel_s").get<double>();
    with_experts += ep > 1 ? 1 : 0;
    if (ep > 1)
      EXPECT_GT(all_to_all, 0) << stages[i].dump();
    else
      EXPECT_EQ(all_to_all, 0) << stages[i].dump();
  }
  EXPECT_GT(with_experts, 0);
  EXPECT_FALSE(simulation.at("links").empty());
}

TEST(SimulateCli, PlanSimulatesTheMixtureOfExpertsAllToAlls) {
  expect_simulated_all_to_alls("mixtral-mixed.yaml");
}

// DeepSeek-V2-Lite: latent attention and a dense first layer; every stage still holds MoE
// layers, so every stage shows its all-to-alls.
TEST(SimulateCli, PlanSimulatesTheDeepSeekAllToAlls) {
  expect_simulated_all_to_alls("deepseek-v2-lite-mixed.yaml");
}

}  // namespace
