// hetplan export and hetplan inventory import, run as a user would.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/e2e/cli_run.hpp"

namespace {

using hetplan::e2e::hetplan;
using hetplan::e2e::read_text;
using hetplan::e2e::TempFolder;

TEST(ExportCli, RefusesAnUnvalidatedPlanAndWritesNothing) {
  TempFolder folder;
  const auto run = hetplan("export plans/default-reference.yaml --scenario scenarios/default.yaml --to volcano --out " +
                           folder.path() + "/out");
  EXPECT_EQ(run.exit_code, 3) << run.out;
  EXPECT_EQ(run.out.rfind("refused: plan \"default-reference\" is not validated", 0), 0u) << run.out;
  EXPECT_FALSE(std::filesystem::exists(folder.path() + "/out"));
}

TEST(ExportCli, ExportsEveryKindWhenAllowedAndStampsIt) {
  TempFolder folder;
  for (const char* kind : {"volcano", "json", "megatron", "labels"}) {
    const auto run = hetplan(std::string("export plans/default-reference.yaml --scenario scenarios/default.yaml --allow-unvalidated --to ") +
                             kind + " --out " + folder.path());
    ASSERT_EQ(run.exit_code, 0) << kind << ": " << run.out;
  }
  EXPECT_NE(read_text(folder.path() + "/volcano-default-reference.yaml").find("hetplan.io/unvalidated"),
            std::string::npos);
  const auto j = nlohmann::json::parse(read_text(folder.path() + "/plan.json"));
  EXPECT_FALSE(j["export"]["validation"]["validated"].get<bool>());
  EXPECT_TRUE(std::filesystem::exists(folder.path() + "/launch-ascend-910b.sh"));
  EXPECT_TRUE(std::filesystem::exists(folder.path() + "/labels.sh"));
  // The plan JSON goes back into eval unchanged, to the same figures.
  const auto from_json = hetplan("eval scenarios/default.yaml --json --plan " + folder.path() + "/plan.json");
  const auto from_yaml = hetplan("eval scenarios/default.yaml --json --plan plans/default-reference.yaml");
  ASSERT_EQ(from_json.exit_code, 0) << from_json.out;
  EXPECT_EQ(nlohmann::json::parse(from_json.out)["step_time_s"],
            nlohmann::json::parse(from_yaml.out)["step_time_s"]);
}

TEST(ExportCli, ValidatedByRecordsExportsWithoutTheFlag) {
  // The test records validate the 910B island: a plan on it alone exports.
  TempFolder folder;
  const auto plan = hetplan("plan --top 3 --records tests/e2e/data/records --out " + folder.path() + "/plans");
  ASSERT_EQ(plan.exit_code, 0) << plan.out;
  std::string solo;
  for (const auto& entry : std::filesystem::directory_iterator(folder.path() + "/plans"))
    if (entry.path().filename().string().find("solo-ascend-910b") != std::string::npos)
      solo = entry.path().string();
  ASSERT_FALSE(solo.empty());
  const auto run = hetplan("export " + solo + " --scenario scenarios/default.yaml --records tests/e2e/data/records --to json --out " +
                           folder.path());
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j = nlohmann::json::parse(read_text(folder.path() + "/plan.json"));
  EXPECT_TRUE(j["export"]["validation"]["validated"].get<bool>());
}

// The scenario is never a silent default; --resource and --image keys must name the plan's
// families, islands or rdma.
TEST(ExportCli, TheScenarioIsRequiredAndOverrideKeysAreChecked) {
  TempFolder folder;
  const auto bare = hetplan("export plans/default-reference.yaml --to volcano --out " + folder.path());
  EXPECT_EQ(bare.exit_code, 2) << bare.out;
  EXPECT_NE(bare.out.find("--scenario: expected --scenario SCENARIO: the plan does not name the "
                          "scenario it was made for"),
            std::string::npos)
      << bare.out;
  const std::string base = "export plans/default-reference.yaml --scenario scenarios/default.yaml "
                           "--allow-unvalidated --to volcano --out " + folder.path();
  const auto wrong = hetplan(base + " --resource cambricon=cambricon.com/mlu");
  EXPECT_EQ(wrong.exit_code, 2) << wrong.out;
  EXPECT_NE(wrong.out.find("expected a chip family of the plan (ascend, dcu, mlu)"),
            std::string::npos) << wrong.out;
  const auto image = hetplan(base + " --image nowhere=x");
  EXPECT_EQ(image.exit_code, 2) << image.out;
  const auto right = hetplan(base + " --resource rdma=rdma/hca_shared_devices_b --image mlu370=neuware:1 --image all:1");
  ASSERT_EQ(right.exit_code, 0) << right.out;
  const std::string job = read_text(folder.path() + "/volcano-default-reference.yaml");
  EXPECT_NE(job.find("rdma/hca_shared_devices_b"), std::string::npos);
  EXPECT_NE(job.find("image: \"neuware:1\""), std::string::npos) << job;
  EXPECT_NE(job.find("image: \"all:1\""), std::string::npos);
}

// A plan from `plan --out` names its scenario (path and SHA-256): export needs no --scenario,
// and refuses a scenario that changed since the plan was made.
TEST(ExportCli, APlanFromPlanOutNamesItsScenario) {
  TempFolder folder;
  const std::string scenario = folder.file("site.yaml");
  std::string text = read_text(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/default.yaml");
  for (const char* key : {"cluster: ../", "workload: ../", "plan: ../"}) {
    const auto at = text.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    text.replace(at + std::string(key).size() - 3, 3, std::string(HETPLAN_SOURCE_DIR) + "/");
  }
  std::ofstream(scenario) << text;
  const auto plan = hetplan("plan " + scenario + " --top 2 --out " + folder.path() + "/plans");
  ASSERT_EQ(plan.exit_code, 0) << plan.out;
  std::string made;
  for (const auto& entry : std::filesystem::directory_iterator(folder.path() + "/plans"))
    if (entry.path().filename().string().find("mix-") != std::string::npos) made = entry.path().string();
  ASSERT_FALSE(made.empty());
  EXPECT_NE(read_text(made).find("scenario: {path: \"../site.yaml\", sha256: "), std::string::npos)
      << read_text(made);
  const auto run = hetplan("export " + made + " --allow-unvalidated --to volcano --out " +
                           folder.path() + "/out");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  std::ofstream(scenario, std::ios::app) << "# edited\n";
  const auto changed = hetplan("export " + made + " --allow-unvalidated --to volcano --out " +
                               folder.path() + "/out2");
  EXPECT_EQ(changed.exit_code, 2) << changed.out;
  EXPECT_NE(changed.out.find("scenario.sha256: expected"), std::string::npos) << changed.out;
  EXPECT_FALSE(std::filesystem::exists(folder.path() + "/out2"));
}

TEST(InventoryCli, KubectlNodesBecomeAClusterThatCheckAccepts) {
  TempFolder folder;
  const std::string out = folder.path() + "/site/lab.yaml";
  const auto run = hetplan("inventory import tests/importers/data/kubectl-get-nodes-ascend-dcu-mlu.json "
                           "--name lab --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto check = hetplan("check " + out);
  ASSERT_EQ(check.exit_code, 0) << check.out;
  EXPECT_NE(check.out.find("lab: 3 islands"), std::string::npos) << check.out;
  // A relative --profiles is written relative to the cluster file, not to where it ran.
  const auto relative = hetplan("inventory import tests/importers/data/kubectl-get-nodes-ascend-dcu-mlu.json "
                                "--name lab --profiles profiles --out " + out);
  ASSERT_EQ(relative.exit_code, 0) << relative.out;
  const std::string expected =
      std::filesystem::path(HETPLAN_SOURCE_DIR "/profiles")
          .lexically_normal()
          .lexically_relative(std::filesystem::path(folder.path() + "/site").lexically_normal())
          .generic_string();
  EXPECT_NE(hetplan::e2e::read_text(out).find("profiles: [\"" + expected + "\"]"), std::string::npos)
      << expected << "\n" << hetplan::e2e::read_text(out);
  EXPECT_EQ(hetplan("check " + out).exit_code, 0);
  const auto bad = hetplan("inventory import README.md");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_EQ(bad.out.rfind("error: README.md", 0), 0u) << bad.out;
}

}  // namespace
