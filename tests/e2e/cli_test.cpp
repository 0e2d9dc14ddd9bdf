// Runs the real hetplan binary on the bundled files, as a user would.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/e2e/cli_run.hpp"

namespace {

using hetplan::e2e::CliRun;
using hetplan::e2e::hetplan;

TEST(Cli, EvalOfTheDefaultScenarioPrintsTheEstimate) {
  const CliRun run = hetplan("eval scenarios/default.yaml");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("plan default-reference: 8 stages, 256 chips"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("step time"), std::string::npos);
}

TEST(Cli, EvalJsonCarriesTheDocumentedFields) {
  const CliRun run =
      hetplan("eval scenarios/default.yaml --plan plans/default-reference.yaml --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);
  for (const char* key : {"step_time_s", "tokens_per_s", "mfu", "feasible", "reasons", "stages"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  ASSERT_EQ(j["stages"].size(), 8u);
  for (const auto& stage : j["stages"]) {
    EXPECT_GT(stage["memory_peak_bytes"].get<double>(), 1e9);
  }
  EXPECT_GT(j["step_time_s"].get<double>(), 0.0);
  EXPECT_NEAR(j["tokens_per_s"].get<double>() * j["step_time_s"].get<double>(), 512.0 * 4096,
              512.0 * 4096 * 1e-4);
}

// Replica groups on the Ascend and Cambricon islands (plans/default-replica-groups.yaml): the
// step of both groups with their shares and the exchange over the declared host-staged path.
TEST(Cli, EvalOfReplicaGroupsOnDifferentIslands) {
  const CliRun text =
      hetplan("eval scenarios/default.yaml --plan plans/default-replica-groups.yaml");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("2 replica groups on ascend-910b, mlu370, 384 chips"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("cross-vendor all-reduce over a host-staged path"), std::string::npos);
  const CliRun run =
      hetplan("eval scenarios/default.yaml --plan plans/default-replica-groups.yaml --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);
  ASSERT_TRUE(j["feasible"].get<bool>()) << run.out;
  ASSERT_EQ(j["replica_groups"].size(), 2u);
  long long samples = 0;
  for (const auto& group : j["replica_groups"]) samples += group["samples"].get<long long>();
  EXPECT_EQ(samples, 512);
  EXPECT_GT(j["cross_vendor_exchange_s"].get<double>(), 0.0);
  EXPECT_NEAR(j["tokens_per_s"].get<double>() * j["step_time_s"].get<double>(), 512.0 * 4096,
              512.0 * 4096 * 1e-4);
  EXPECT_NEAR(j["step_time_s"].get<double>(),
              j["slowest_group_s"].get<double>() + j["cross_vendor_exchange_s"].get<double>(),
              1e-4 * j["step_time_s"].get<double>());
}

TEST(Cli, CommandsOfOnePipelineRefuseReplicaGroupsInOneLine) {
  const CliRun run = hetplan(
      "export plans/default-replica-groups.yaml --scenario scenarios/default.yaml --to json "
      "--allow-unvalidated --out " + std::string(testing::TempDir()) + "/replica-groups-export");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.out.find("default-replica-groups.yaml:9:5: replica_groups: expected a plan of one "
                         "pipeline: hetplan export does not take replica groups"),
            std::string::npos)
      << run.out;
}

// The twin runs each group's pipeline with its share (the default fabric is non-blocking and
// without variability, so within the 3% of one pipeline's agreement, docs/twin.md), then adds
// the exchange over the declared path.
TEST(Cli, SimulateOfReplicaGroupsMatchesTheAnalyticStep) {
  const CliRun run =
      hetplan("simulate scenarios/default.yaml --plan plans/default-replica-groups.yaml --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);
  ASSERT_EQ(j["replica_groups"].size(), 2u);
  double slowest = 0;
  for (const auto& group : j["replica_groups"]) {
    const double analytic = group["analytic_step_time_s"].get<double>();
    const double simulated = group["simulated_step_time_s"].get<double>();
    EXPECT_NEAR(simulated, analytic, 0.03 * analytic) << group.dump();
    slowest = std::max(slowest, simulated);
  }
  EXPECT_NEAR(j["slowest_group_s"].get<double>(), slowest, 1e-5 * slowest);
  EXPECT_NEAR(j["step_time_s"].get<double>(), slowest + j["cross_vendor_exchange_s"].get<double>(),
              1e-5 * slowest);
  EXPECT_GT(j["cross_vendor_exchange_s"].get<double>(), 0.0);
  // The exchange runs as flows over the host-staged path, which nothing else loads: it takes
  // what the analytic model says, and every lane's port is busy throughout.
  EXPECT_NEAR(j["cross_vendor_exchange_s"].get<double>(), j["analytic_exchange_s"].get<double>(),
              1e-4 * j["analytic_exchange_s"].get<double>());
  EXPECT_EQ(j["gradient_exchange"], "ring");
  ASSERT_FALSE(j["exchange_links"].empty());
  EXPECT_NEAR(j["exchange_links"][0]["utilization"].get<double>(), 1.0, 1e-3);
  const CliRun traced = hetplan("simulate scenarios/default.yaml --plan "
                                "plans/default-replica-groups.yaml --trace " +
                                std::string(testing::TempDir()) + "/groups.json");
  EXPECT_EQ(traced.exit_code, 2) << traced.out;
}

// The same groups through a parameter server on the Cambricon group's nodes, as a plan may ask:
// push, then pull, one share each over the path, where the ring of two sends and receives one
// share at once; eval and the twin agree on it.
TEST(Cli, ReplicaGroupsThroughAParameterServer) {
  std::ifstream in(std::string(HETPLAN_SOURCE_DIR) + "/plans/default-replica-groups.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string key = "micro_batch: 1\n";
  text.replace(text.find(key), key.size(),
               key + "gradient_exchange: parameter-server\nparameter_server: mlu370\n");
  const std::string path = std::string(testing::TempDir()) + "/served-groups.yaml";
  std::ofstream(path) << text;
  const CliRun ring = hetplan("eval scenarios/default.yaml --plan plans/default-replica-groups.yaml --json");
  const CliRun served = hetplan("eval scenarios/default.yaml --plan " + path + " --json");
  ASSERT_EQ(ring.exit_code, 0) << ring.out;
  ASSERT_EQ(served.exit_code, 0) << served.out;
  const double ring_s = nlohmann::json::parse(ring.out)["cross_vendor_exchange_s"].get<double>();
  const double served_s = nlohmann::json::parse(served.out)["cross_vendor_exchange_s"].get<double>();
  // Latency: 30 us per message, two ring steps or one push and one pull.
  EXPECT_NEAR(served_s - 60e-6, 2 * (ring_s - 60e-6), 1e-5 * served_s);
  const CliRun simulated = hetplan("simulate scenarios/default.yaml --plan " + path + " --json");
  ASSERT_EQ(simulated.exit_code, 0) << simulated.out;
  const auto j = nlohmann::json::parse(simulated.out);
  EXPECT_EQ(j["gradient_exchange"], "parameter-server");
  EXPECT_NEAR(j["cross_vendor_exchange_s"].get<double>(), served_s, 1e-4 * served_s);
}

TEST(Cli, SameInputsGiveByteIdenticalOutput) {
  const CliRun a = hetplan("eval scenarios/default.yaml --json");
  const CliRun b = hetplan("eval scenarios/default.yaml --json");
  EXPECT_EQ(a.out, b.out);
}

TEST(Cli, CheckAcceptsEveryBundledProfileAndTopology) {
  const CliRun run = hetplan(
      "check profiles/*.yaml topologies/*.yaml scenarios/*.yaml plans/*.yaml workloads/*.yaml");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(run.out.find("error"), std::string::npos) << run.out;
}

TEST(Cli, BadInputIsOneLineAndExitCodeTwo) {
  const std::string path = std::string(testing::TempDir()) + "/bad-plan.yaml";
  std::ofstream(path) << "schema: hetplan/plan/v1\nname: bad\nstages:\n  - {island: x, "
                         "first_layer: 0, num_layers: 1, tp: zero, dp: 1}\n";
  const CliRun run = hetplan("check " + path);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "error: " + path +
                         ":4:52: stages[0].tp: expected an integer from 1 to 1024, got \"zero\"\n");
}

TEST(Cli, PlanNamingAMissingIslandIsRejectedWithItsLocation) {
  const std::string path = std::string(testing::TempDir()) + "/dangling.yaml";
  std::ofstream(path) << "schema: hetplan/plan/v1\nname: dangling\nstages:\n  - island: nowhere\n  "
                         "  first_layer: 0\n    num_layers: 80\n    tp: 8\n    dp: 1\n";
  const CliRun run = hetplan("eval scenarios/default.yaml --plan " + path);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "error: " + path +
                         ":4:13: stages[0].island: expected an island of cluster \"mixed-roce-64\" "
                         "(ascend-910b, dcu-k100, mlu370), got \"nowhere\"\n");
}

TEST(Cli, MissingFileIsAnInputError) {
  const CliRun run = hetplan("eval no/such/scenario.yaml");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "error: no/such/scenario.yaml: cannot open the file for reading\n");
}

}  // namespace
