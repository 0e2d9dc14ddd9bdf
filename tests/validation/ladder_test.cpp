// Validation records and the ladder: reading records, the step each island reached, and
// whether a plan has what it needs.
#include "validation/ladder.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "core/sha256.hpp"
#include "formats/loaders.hpp"
#include "tests/support/temp_folder.hpp"
#include "validation/evidence.hpp"

namespace hetplan::validation {
namespace {

const std::string kScenario = std::string(HETPLAN_SOURCE_DIR) + "/scenarios/default.yaml";

ValidationRecord parsed(const std::string& text) {
  return formats::parse_validation_record("schema: hetplan/validation-record/v1\n" + text,
                                          "/records/r.yaml");
}

// A record whose evidence is taken as holding (the ladder's logic, without files); the evidence
// itself is checked in the Evidence tests below.
ValidationRecord record(const std::string& text) {
  ValidationRecord r = parsed(text);
  for (auto& entry : r.entries) entry.evidence_checked = true;
  return r;
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
  EXPECT_EQ(v.missing[0], "boundary ascend-910b -> dcu-k100 has not passed step 3: boundary has no record");
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
  EXPECT_EQ(v.missing[0],
            "gradient exchange ascend-910b <-> mlu370 has not passed step 3: gradient-exchange has "
            "no record");
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

const std::string kScale = "  - {step: scale, passed: %s, date: %s, evidence: s.log, chips: 256, "
                           "note: \"error %s\"}\n";

std::string scale(bool passed, const std::string& date, const std::string& error) {
  char text[256];
  std::snprintf(text, sizeof text, kScale.c_str(), passed ? "true" : "false", date.c_str(),
                error.c_str());
  return text;
}

// A passed run at scale is a passed rung, not something missing, and takes an island that has
// passed steps 1 and 2 to step 4.
TEST(Ladder, APassedScaleRunIsPassedAndMovesTheStep) {
  const Scenario scenario = formats::load_scenario(kScenario);
  const LadderReport ladder = ladder_state(
      scenario.cluster, {record(k910b + "ladder:\n" + steps("2026-11-02") + scale(true, "2026-11-20", "-3.1%"))});
  const IslandLadder& island = ladder.islands[0];
  EXPECT_EQ(island.level, 4);
  EXPECT_TRUE(island.missing.empty());
  EXPECT_TRUE(island.scale_failure.empty());
  EXPECT_EQ(island.scale_chips, 256);
  EXPECT_EQ(island.rung(LadderStep::scale).status, RungState::Status::passed);
  EXPECT_NE(ladder_text(ladder).find("island ascend-910b (ascend-910b, CANN 8.0.0): step 4\n"),
            std::string::npos)
      << ladder_text(ladder);
  EXPECT_NE(ladder_text(ladder).find("  4 scale                      passed on 2026-11-20 (/records/s.log), 256 chips\n"),
            std::string::npos)
      << ladder_text(ladder);
  // Without steps 1 and 2 it is still listed as passed, and the step stays where they leave it.
  const LadderReport alone = ladder_state(
      scenario.cluster, {record(k910b + "ladder:\n" + scale(true, "2026-11-20", "-3.1%"))});
  EXPECT_EQ(alone.islands[0].level, 0);
  EXPECT_EQ(alone.islands[0].rung(LadderStep::scale).status, RungState::Status::passed);
  EXPECT_EQ(alone.islands[0].missing.size(), 3u);
}

// A failed run at scale blocks every plan on its island, with its date and error, until a later
// run passes.
TEST(Ladder, AFailedScaleRunBlocksTheIslandUntilALaterRunPasses) {
  const Scenario scenario = formats::load_scenario(kScenario);
  Plan solo;
  solo.stages = {{"ascend-910b", 0, 80, 8, 4, {}, {}}};
  std::vector<ValidationRecord> records = {
      record(k910b + "ladder:\n" + steps("2026-11-02") + scale(true, "2026-11-20", "-3.1%") +
             scale(false, "2026-12-01", "-72.4%"))};
  LadderReport ladder = ladder_state(scenario.cluster, records);
  EXPECT_EQ(ladder.islands[0].level, 2);
  EXPECT_EQ(ladder.islands[0].scale_failure, "scale failed on 2026-12-01: error -72.4%");
  PlanValidation v = plan_validation(ladder, solo);
  EXPECT_FALSE(v.validated);
  ASSERT_EQ(v.missing.size(), 1u);
  EXPECT_EQ(v.missing[0], "island ascend-910b (CANN 8.0.0): scale failed on 2026-12-01: error -72.4%");
  EXPECT_NE(ladder_text(ladder).find("  4 scale                      failed on 2026-12-01: error -72.4%\n"
                                     "      it blocks the island's plans until a later run passes\n"
                                     "      hetplan validate --run LOG --plan PLAN --scenario SCENARIO\n"),
            std::string::npos)
      << ladder_text(ladder);
  // A later passing run, from another record, unblocks it.
  records.push_back(record(k910b + "ladder:\n" + scale(true, "2026-12-02", "-4.0%")));
  ladder = ladder_state(scenario.cluster, records);
  EXPECT_EQ(ladder.islands[0].level, 4);
  EXPECT_TRUE(plan_validation(ladder, solo).validated);
}

// A pass counts only with its evidence; a failure counts without (deleting a failed run's
// evidence does not bring back the pass before it).
TEST(Ladder, APassCountsOnlyWithItsEvidenceAndAFailureAlways) {
  const Scenario scenario = formats::load_scenario(kScenario);
  ValidationRecord r = record(k910b + "ladder:\n" + steps("2026-11-02") +
                              "  - {step: collectives, passed: false, date: 2026-11-05, evidence: c.json}\n");
  r.entries[1].evidence_problem = "/records/r.yaml:6:60: ladder[1].evidence: (a reason)";
  r.entries[3].evidence_problem = "/records/r.yaml:8:60: ladder[3].evidence: (another)";
  LadderReport ladder = ladder_state(scenario.cluster, {r});
  const RungState& collectives = ladder.islands[0].rung(LadderStep::collectives);
  EXPECT_EQ(collectives.status, RungState::Status::failed);
  EXPECT_EQ(collectives.date, "2026-11-05");
  EXPECT_EQ(collectives.refused, std::vector<std::string>{"/records/r.yaml:6:60: ladder[1].evidence: (a reason)"});
  // Without the failure, the pass whose evidence fails leaves the rung without a record that counts.
  r.entries.pop_back();
  ladder = ladder_state(scenario.cluster, {r});
  EXPECT_EQ(ladder.islands[0].level, 1);
  ASSERT_EQ(ladder.islands[0].missing.size(), 1u);
  EXPECT_EQ(ladder.islands[0].missing[0],
            "collectives has no record that counts (/records/r.yaml:6:60: ladder[1].evidence: (a reason))");
  // An entry nobody checked does not count either.
  EXPECT_EQ(ladder_state(scenario.cluster, {parsed(k910b + "ladder:\n" + steps("2026-11-02"))}).islands[0].level, 0);
}

// Each rung names the commands that make its record: the probe's run with the island's backend,
// then `hetplan validate`.
TEST(Ladder, EachRungNamesTheCommandsThatMakeItsRecord) {
  const Scenario scenario = formats::load_scenario(kScenario);
  const LadderReport ladder = ladder_state(scenario.cluster, {}, "--scenario s.yaml");
  const IslandLadder& dcu = ladder.islands[1];
  EXPECT_EQ(dcu.rung(LadderStep::single_card).commands,
            (std::vector<std::string>{"python3 hetplan_probe.py --backend cuda --out E.json",
                                      "hetplan validate --evidence E.json --island dcu-k100 --scenario s.yaml"}));
  EXPECT_EQ(dcu.rung(LadderStep::collectives).commands[0],
            "python3 hetplan_boundary.py --check collectives --backend cuda --ranks 8 --out E.json");
  EXPECT_EQ(dcu.rung(LadderStep::checkpoint).commands[0],
            "python3 hetplan_boundary.py --check checkpoint --backend cuda --out E.json");
  EXPECT_EQ(dcu.rung(LadderStep::scale).commands,
            std::vector<std::string>{"hetplan validate --run LOG --plan PLAN --scenario s.yaml"});
  ASSERT_EQ(ladder.exchanges.size(), 1u);
  EXPECT_EQ(ladder.exchanges[0].rung.commands,
            (std::vector<std::string>{
                "python3 hetplan_boundary.py --check gradient-exchange --first-backend npu "
                "--second-backend mlu --out E.json",
                "hetplan validate --evidence E.json --island ascend-910b --with mlu370 --scenario s.yaml"}));
}

TEST(ValidationRecords, AreWrittenAsTheyAreRead) {
  ValidationRecord r = parsed(k910b + "ladder:\n" + steps("2026-11-02"));
  LadderEntry boundary;
  boundary.step = LadderStep::boundary;
  boundary.date = "2026-11-03";
  boundary.evidence = "../e/b \"1\".json";
  boundary.sha256 = std::string(64, 'a');
  boundary.with_chip = "hygon-k100-ai";
  boundary.with_runtime = {"DTK", "24.04"};
  boundary.note = "gradient of head.weight: relative error 0.0312 > tolerance 0.02";
  r.entries.push_back(boundary);
  LadderEntry run;
  run.step = LadderStep::scale;
  run.passed = true;
  run.date = "2026-11-04";
  run.evidence = "s.log";
  run.sha256 = std::string(64, 'b');
  run.chips = 28;
  r.entries.push_back(run);
  for (auto& e : r.entries) e.evidence = std::filesystem::path(e.evidence).filename().string();
  const std::string text = formats::validation_record_yaml(r, "two\nlines");
  EXPECT_EQ(text.rfind("# two\n# lines\nschema: hetplan/validation-record/v1\n", 0), 0u) << text;
  const ValidationRecord back = formats::parse_validation_record(text, "/records/w.yaml");
  EXPECT_EQ(back.chip, r.chip);
  EXPECT_EQ(back.runtime.version, "8.0.0");
  ASSERT_EQ(back.entries.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(back.entries[i].step, r.entries[i].step);
    EXPECT_EQ(back.entries[i].passed, r.entries[i].passed);
    EXPECT_EQ(back.entries[i].date, r.entries[i].date);
    EXPECT_EQ(back.entries[i].evidence, "/records/" + r.entries[i].evidence);
    EXPECT_EQ(back.entries[i].sha256, r.entries[i].sha256);
    EXPECT_EQ(back.entries[i].note, r.entries[i].note);
  }
  EXPECT_EQ(back.entries[3].with_runtime.name, "DTK");
  EXPECT_EQ(back.entries[4].chips, 28);
  expect_error(k910b + "ladder:\n  - {step: collectives, passed: true, date: 2026-11-02, evidence: x, sha256: abc}\n",
               "/records/r.yaml:5:78: ladder[0].sha256: expected a SHA-256 of 64 lower-case hex digits, got \"abc\"");
}

// The evidence file behind each entry: there, not empty, unchanged, of the step's kind and
// saying what the entry says; else the entry's problem says where and why.
class Evidence : public ::testing::Test {
 protected:
  const std::string fixtures = std::string(HETPLAN_SOURCE_DIR) + "/tests/e2e/data/evidence/";
  test::TempFolder folder;

  std::string copy(const std::string& fixture, const std::string& name) {
    std::ifstream in(fixtures + fixture, std::ios::binary);
    std::ofstream(folder.file(name), std::ios::binary) << in.rdbuf();
    return sha256(name);
  }
  std::string sha256(const std::string& name) {
    return sha256_hex(formats::read_text_file(folder.file(name)));
  }
  // The problem of a record's only entry (empty: its evidence holds).
  std::string problem(const std::string& runtime, const std::string& entry) {
    ValidationRecord r = formats::parse_validation_record(
        "schema: hetplan/validation-record/v1\nchip: ascend-910b\nruntime: " + runtime +
            "\nladder:\n" + entry,
        folder.file("r.yaml"));
    check_evidence(r);
    EXPECT_TRUE(r.entries[0].evidence_checked);
    return r.entries[0].evidence_problem;
  }
  std::string problem(const std::string& entry) {
    return problem("{name: CANN, version: \"8.0.0\"}", entry);
  }
  std::string entry(const std::string& step, const std::string& file, const std::string& hash,
                    const std::string& passed = "true") {
    return "  - {step: " + step + ", passed: " + passed + ", date: 2026-11-02, evidence: " + file +
           (hash.empty() ? "" : ", sha256: " + hash) + "}\n";
  }
};

TEST_F(Evidence, HoldsForTheProbesOutputOfTheStep) {
  EXPECT_EQ(problem(entry("single-card", "b.json", copy("910b-bundle.json", "b.json"))), "");
  EXPECT_EQ(problem(entry("collectives", "c.json", copy("910b-collectives.json", "c.json"))), "");
  EXPECT_EQ(problem(entry("checkpoint", "k.json", copy("910b-checkpoint.json", "k.json"))), "");
  // A boundary, recorded from either side.
  const std::string hash = copy("910b-k100-boundary.json", "x.json");
  const std::string with = ", with: {chip: hygon-k100-ai, runtime: {name: DTK, version: \"24.04\"}}}\n";
  std::string boundary = entry("boundary", "x.json", hash);
  EXPECT_EQ(problem(boundary.substr(0, boundary.size() - 2) + with), "");
  const std::string from_k100 =
      "  - {step: boundary, passed: true, date: 2026-11-03, evidence: x.json, sha256: " + hash +
      ", with: {chip: ascend-910b, runtime: {name: CANN, version: \"8.0.0\"}}}\n";
  EXPECT_EQ(problem("{name: DTK, version: \"24.04\"}", from_k100), "");
  // A training log for scale.
  std::ifstream log(std::string(HETPLAN_SOURCE_DIR) +
                    "/tests/importers/data/megatron-lm-gpt2-v100-32rank-tp4-pp8-2021-bigscience.out");
  std::ofstream(folder.file("run.log")) << log.rdbuf();
  EXPECT_EQ(problem("  - {step: scale, passed: true, date: 2026-11-02, evidence: run.log, sha256: " +
                    sha256("run.log") + ", chips: 32}\n"),
            "");
}

TEST_F(Evidence, AnEmptyMissingOrChangedFileDoesNotHold) {
  const std::string r = folder.file("r.yaml");
  std::ofstream(folder.file("empty.json"));
  EXPECT_EQ(problem(entry("collectives", "empty.json", sha256("empty.json"))),
            r + ":5:67: ladder[0].evidence: expected the output of hetplan_boundary.py --check "
                "collectives (hetplan/ladder-evidence/v1), got an empty file (" + folder.file("empty.json") + ")");
  std::ofstream(folder.file("braces.json")) << "{}\n";
  EXPECT_EQ(problem(entry("single-card", "braces.json", sha256("braces.json"))),
            r + ":5:67: ladder[0].evidence: " + folder.file("braces.json") +
                ":1:1: schema: missing required key (expected \"hetplan/calibration-bundle/v1\")");
  EXPECT_EQ(problem("  - {step: scale, passed: true, date: 2026-11-02, evidence: braces.json, sha256: " +
                    sha256("braces.json") + ", chips: 8}\n"),
            r + ":5:61: ladder[0].evidence: expected a training log (Megatron-LM, MindSpeed-LLM or "
                "Megatron-DeepSpeed iteration lines), got a file of another kind (" +
                folder.file("braces.json") + ")");
  EXPECT_EQ(problem(entry("collectives", "gone.json", std::string(64, '0'))),
            r + ":5:67: ladder[0].evidence: " + folder.file("gone.json") +
                ": cannot open the file for reading");
  const std::string hash = copy("910b-collectives.json", "c.json");
  std::ofstream(folder.file("c.json"), std::ios::app) << " ";
  EXPECT_EQ(problem(entry("collectives", "c.json", hash)),
            r + ":5:67: ladder[0].evidence: expected " + folder.file("c.json") +
                " as recorded (sha256 " + hash.substr(0, 12) + "...), got a changed file (sha256 " +
                sha256("c.json").substr(0, 12) + "...)");
}

// Records written before evidence was hashed do not count, and say how to make them again.
TEST_F(Evidence, ARecordWithoutTheEvidencesHashDoesNotCount) {
  copy("910b-collectives.json", "c.json");
  EXPECT_EQ(problem(entry("collectives", "c.json", "")),
            folder.file("r.yaml") +
                ":5:5: ladder[0].sha256: expected the evidence file's SHA-256, got none: a record "
                "written before evidence was hashed does not count; make it again with hetplan "
                "validate --evidence (or --run, for scale)");
}

TEST_F(Evidence, EvidenceOfAnotherKindRuntimeOrVerdictDoesNotHold) {
  const std::string r = folder.file("r.yaml");
  const std::string c = folder.file("c.json");
  const std::string hash = copy("910b-collectives.json", "c.json");
  EXPECT_EQ(problem(entry("checkpoint", "c.json", hash)),
            r + ":5:66: ladder[0].evidence: expected the output of hetplan_boundary.py --check "
                "checkpoint, got " + c + "'s --check collectives");
  EXPECT_EQ(problem("{name: CANN, version: \"8.0.RC1\"}", entry("collectives", "c.json", hash)),
            r + ":5:67: ladder[0].evidence: expected a run on CANN 8.0.RC1 (the record's), got " + c +
                "'s on CANN 8.0.0");
  const std::string failed = copy("910b-mlu-boundary-failed.json", "f.json");
  const std::string with =
      ", with: {chip: cambricon-mlu370-x8, runtime: {name: Neuware, version: unknown}}}\n";
  std::string passed = entry("boundary", "f.json", failed);
  EXPECT_EQ(problem(passed.substr(0, passed.size() - 2) + with),
            r + ":5:30: ladder[0].passed: expected false, as " + folder.file("f.json") +
                " says the check failed, got true");
  std::string recorded_failed = entry("boundary", "f.json", failed, "false");
  EXPECT_EQ(problem(recorded_failed.substr(0, recorded_failed.size() - 2) + with), "");
}

TEST(LadderEvidence, BadEvidenceNamesTheField) {
  const std::string head = "{\"schema\": \"hetplan/ladder-evidence/v1\", ";
  const std::string host = "\"started\": \"2026-11-02T10:03:11Z\", \"host\": {\"hostname\": \"h\", \"torch\": \"2\"}, ";
  const std::string npu = "{\"backend\": \"npu\", \"device\": \"d\", \"runtime\": {\"name\": \"CANN\", \"version\": \"8.0.0\"}}";
  const std::string tail = ", \"dtype\": \"bf16\", \"notes\": []}";
  auto error_of = [](const std::string& text) {
    try {
      formats::parse_ladder_evidence(text, "e.json");
      return std::string("no error");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
  };
  EXPECT_EQ(error_of(head + "\"check\": \"smoke\", " + host + "\"backends\": [" + npu +
                     "], \"passed\": true, \"results\": []" + tail),
            "e.json:1:51: check: expected one of collectives, checkpoint, boundary or "
            "gradient-exchange, got \"smoke\"");
  EXPECT_EQ(error_of(head + "\"check\": \"boundary\", " + host + "\"backends\": [" + npu +
                     "], \"passed\": false, \"results\": []" + tail),
            "e.json:1:151: backends: expected two backends (the first side's, then the second's), "
            "got a list");
  EXPECT_EQ(error_of(head + "\"check\": \"collectives\", " + host + "\"backends\": [" + npu +
                     "], \"passed\": true, \"results\": []" + tail),
            "e.json:1:250: passed: expected false, as a result did not pass or there is none, got \"true\"");
}

}  // namespace
}  // namespace hetplan::validation
