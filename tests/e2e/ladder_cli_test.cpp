// The validation ladder from the command line: validate --ladder, and plans marked by it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/e2e/cli_run.hpp"

namespace {

using hetplan::e2e::hetplan;

const std::string kRecords = "--records tests/e2e/data/records";

TEST(LadderCli, ShowsEachIslandsStepAndEachBoundary) {
  const auto run = hetplan("validate --ladder scenarios/default.yaml " + kRecords);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("ascend-910b          ascend-910b                 CANN 8.0.0              2  -"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("dcu-k100             hygon-k100-ai               DTK 24.04               0  "
                         "single-card has no record"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("ascend-910b <-> dcu-k100: passed"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("ascend-910b <-> mlu370: not validated"), std::string::npos) << run.out;
}

TEST(LadderCli, PlansAreMarkedByWhatTheyUse) {
  const auto run = hetplan("plan --json " + kRecords);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);
  bool saw_validated = false, saw_unvalidated = false;
  for (const auto& plan : j["ranked"]) {
    const bool validated = plan["validation"]["validated"];
    const auto& islands = plan["islands"];
    const bool only_910b = islands.size() == 1 && islands[0] == "ascend-910b";
    EXPECT_EQ(validated, only_910b && plan["mode"] == "single-island") << plan["islands"];
    (validated ? saw_validated : saw_unvalidated) = true;
    if (!validated) EXPECT_FALSE(plan["validation"]["missing"].empty());
  }
  EXPECT_TRUE(saw_validated);
  EXPECT_TRUE(saw_unvalidated);
}

TEST(LadderCli, WithoutRecordsNothingIsValidated) {
  const auto run = hetplan("plan --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);
  for (const auto& plan : j["ranked"]) {
    EXPECT_FALSE(plan["validation"]["validated"].get<bool>());
    EXPECT_EQ(plan["validation"]["missing"][0],
              "no validation records (scenario validation_records, or --records)");
  }
  const auto ladder = hetplan("validate --ladder scenarios/default.yaml");
  EXPECT_EQ(ladder.exit_code, 2) << ladder.out;
  EXPECT_NE(ladder.out.find("expected --records DIR or a `validation_records:` in the scenario"),
            std::string::npos)
      << ladder.out;
}

}  // namespace
