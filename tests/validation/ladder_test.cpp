// Validation records and the ladder: reading records, the step each island reached, and
// whether a plan has what it needs.
#include "validation/ladder.hpp"

#include <gtest/gtest.h>

#include "formats/loaders.hpp"

namespace hetplan::validation {
namespace {

const std::string kScenario = std::string(HETPLAN_SOURCE_DIR) + "/scenarios/default.yaml";

ValidationRecord record(const std::string& text) {
  return formats::parse_validation_record("schema: hetplan/validation-record/v1\n" + text,
                                          "/records/r.yaml");
}

const std::string k910b = "chip: ascend-910b\nruntime: {name: CANN, version: \"8.0.0\"}\n";
const std::string kK100 = "chip: hygon-k100-ai\nruntime: {name: DTK, version: \"24.04\"}\n";

std::string steps(const std::string& date, bool passed = true) {
  const std::string p = passed ? "true" : "false";
  return "  - {step: single-card, passed: true, date: " + date + ", evidence: b.json}\n"
         "  - {step: collectives, passed: " + p + ", date: " + date + ", evidence: c.json}\n"
         "  - {step: checkpoint, passed: true, date: " + date + ", evidence: k.json}\n";
}

Plan two_island_plan() {
  Plan plan;
  plan.name = "p";
  plan.stages = {{"ascend-910b", 0, 40, 8, 4, {}, {}}, {"dcu-k100", 40, 40, 8, 4, {}, {}}};
  return plan;
}

TEST(ValidationRecords, AreReadWithEvidenceResolvedFromTheRecord) {
  const auto r = record(k910b + "ladder:\n" + steps("2026-11-02") +
                        "  - {step: boundary, passed: true, date: 2026-11-03, evidence: "
                        "../e/x.json, with: {chip: hygon-k100-ai, runtime: {name: DTK, version: "
                        "\"24.04\"}}}\n  - {step: scale, passed: true, date: 2026-11-04, "
                        "evidence: s.log, chips: 256}\n");
  EXPECT_EQ(r.chip, "ascend-910b");
  EXPECT_EQ(r.runtime.version, "8.0.0");
  ASSERT_EQ(r.entries.size(), 5u);
  EXPECT_EQ(r.entries[0].evidence, "/records/b.json");
  EXPECT_EQ(r.entries[3].step, LadderStep::boundary);
  EXPECT_EQ(r.entries[3].with_chip, "hygon-k100-ai");
  EXPECT_EQ(r.entries[3].evidence, "/e/x.json");
  EXPECT_EQ(r.entries[4].chips, 256);
}

void expect_error(const std::string& text, const std::string& message) {
  try {
    record(text);
    FAIL() << "no error for: " << text;
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), message);
  }
}

TEST(ValidationRecords, BadRecordsNameTheField) {
  expect_error(k910b + "ladder:\n  - {step: smoke, passed: true, date: 2026-11-02, evidence: x}\n",
               "/records/r.yaml:5:12: ladder[0].step: expected one of single-card, collectives, "
               "checkpoint, boundary, scale or gradient-exchange, got \"smoke\"");
  expect_error(k910b + "ladder:\n  - {step: scale, passed: true, date: 2/11/2026, evidence: x, chips: 8}\n",
               "/records/r.yaml:5:39: ladder[0].date: expected a date YYYY-MM-DD, got \"2/11/2026\"");
  expect_error(k910b + "ladder:\n  - {step: boundary, passed: true, date: 2026-11-02, evidence: x}\n",
               "/records/r.yaml:5:5: ladder[0].with: missing required key");
  expect_error(k910b + "ladder:\n  - {step: gradient-exchange, passed: true, date: 2026-11-02, "
                       "evidence: x}\n",
               "/records/r.yaml:5:5: ladder[0].with: missing required key");
}

TEST(Ladder, IslandsClimbStepByStepAndTheLatestEntryDecides) {
  const Scenario scenario = formats::load_scenario(kScenario);
  // The 910B passed everything on the 2nd; the K100's collectives failed on the 3rd after
  // passing on the 1st.
  const std::vector<ValidationRecord> records = {
      record(k910b + "ladder:\n" + steps("2026-11-02")),
      record(kK100 + "ladder:\n" + steps("2026-11-01") + steps("2026-11-03", false))};
  const LadderReport ladder = ladder_state(scenario.cluster, records);
  ASSERT_EQ(ladder.islands.size(), 3u);
  EXPECT_EQ(ladder.islands[0].level, 2);
  EXPECT_TRUE(ladder.islands[0].missing.empty());
  EXPECT_EQ(ladder.islands[1].level, 1);
  ASSERT_EQ(ladder.islands[1].missing.size(), 1u);
  EXPECT_EQ(ladder.islands[1].missing[0], "collectives failed on 2026-11-03");
  EXPECT_EQ(ladder.islands[2].level, 0);
  // A record for another runtime version does not count.
  const LadderReport other = ladder_state(
      scenario.cluster, {record("chip: ascend-910b\nruntime: {name: CANN, version: \"7.0\"}\n"
                                "ladder:\n" + steps("2026-11-02"))});
  EXPECT_EQ(other.islands[0].level, 0);
}

TEST(Ladder, APlanNeedsItsIslandsAtStepTwoAndItsBoundariesAtStepThree) {
  const Scenario scenario = formats::load_scenario(kScenario);
  std::vector<ValidationRecord> records = {record(k910b + "ladder:\n" + steps("2026-11-02")),
                                           record(kK100 + "ladder:\n" + steps("2026-11-02"))};
  const Plan plan = two_island_plan();
  PlanValidation v = plan_validation(ladder_state(scenario.cluster, records), plan);
  EXPECT_FALSE(v.validated);
  ASSERT_EQ(v.missing.size(), 1u);
  EXPECT_EQ(v.missing[0], "boundary ascend-910b -> dcu-k100 has not passed step 3");
  // The boundary recorded from the K100's side counts for both.
  records.push_back(record(kK100 + "ladder:\n  - {step: boundary, passed: true, date: 2026-11-05, "
                                   "evidence: x.json, with: {chip: ascend-910b.cal-1, runtime: "
                                   "{name: cann, version: \"8.0.0\"}}}\n"));
  v = plan_validation(ladder_state(scenario.cluster, records), plan);
  EXPECT_TRUE(v.validated) << (v.missing.empty() ? "" : v.missing[0]);
  // A single-island plan on the 910B alone needs nothing of the K100.
  Plan solo;
  solo.stages = {{"ascend-910b", 0, 80, 8, 4, {}, {}}};
  EXPECT_TRUE(plan_validation(ladder_state(scenario.cluster, {records[0]}), solo).validated);
  EXPECT_FALSE(plan_validation(ladder_state(scenario.cluster, {}), solo).validated);
}

const std::string kMlu = "chip: cambricon-mlu370-x8\nruntime: {name: Neuware, version: \"unknown\"}\n";

// Replica groups on the Ascend and Cambricon islands (the default cluster declares a gradient
// path between them): both islands at step 2, and the gradient exchange between them at step 3,
// recorded from either side; a pipeline boundary between them is not the exchange.
TEST(Ladder, ReplicaGroupsNeedTheirGradientExchangeAtStepThree) {
  const Scenario scenario = formats::load_scenario(kScenario);
  const Plan plan = formats::load_plan(std::string(HETPLAN_SOURCE_DIR) +
                                       "/plans/default-replica-groups.yaml");
  std::vector<ValidationRecord> records = {record(k910b + "ladder:\n" + steps("2026-11-02")),
                                           record(kMlu + "ladder:\n" + steps("2026-11-02"))};
  LadderReport ladder = ladder_state(scenario.cluster, records);
  // Only the pair with a declared path has an exchange to validate.
  ASSERT_EQ(ladder.exchanges.size(), 1u);
  EXPECT_EQ(ladder.exchanges[0].a, "ascend-910b");
  EXPECT_EQ(ladder.exchanges[0].b, "mlu370");
  PlanValidation v = plan_validation(ladder, plan);
  ASSERT_EQ(v.missing.size(), 1u) << v.missing[0];
  EXPECT_EQ(v.missing[0], "gradient exchange ascend-910b <-> mlu370 has not passed step 3");
  records.push_back(record(kMlu + "ladder:\n  - {step: boundary, passed: true, date: 2026-11-05, "
                                  "evidence: b.json, with: {chip: ascend-910b, runtime: {name: "
                                  "CANN, version: \"8.0.0\"}}}\n"));
  EXPECT_FALSE(plan_validation(ladder_state(scenario.cluster, records), plan).validated);
  records.push_back(record(kMlu + "ladder:\n  - {step: gradient-exchange, passed: true, date: "
                                  "2026-11-06, evidence: g.json, with: {chip: ascend-910b, "
                                  "runtime: {name: CANN, version: \"8.0.0\"}}}\n"));
  ladder = ladder_state(scenario.cluster, records);
  v = plan_validation(ladder, plan);
  EXPECT_TRUE(v.validated) << (v.missing.empty() ? "" : v.missing[0]);
  EXPECT_NE(ladder_text(ladder).find("gradient exchanges between replicas on two chip types"),
            std::string::npos);
  // Without the Cambricon island's own steps the plan waits on them too.
  v = plan_validation(ladder_state(scenario.cluster, {records[0], records[3]}), plan);
  EXPECT_FALSE(v.validated);
}

}  // namespace
}  // namespace hetplan::validation
