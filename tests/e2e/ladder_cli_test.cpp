// The validation ladder from the command line: validate --ladder, and plans marked by it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/report.hpp"
#include "core/sha256.hpp"
#include "tests/e2e/cli_run.hpp"

namespace {

using hetplan::e2e::hetplan;

const std::string kRecords = "--records tests/e2e/data/records";

TEST(LadderCli, ShowsEachIslandsStepAndEachBoundary) {
  const auto run = hetplan("validate --ladder scenarios/default.yaml " + kRecords);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("island ascend-910b (ascend-910b, CANN 8.0.0): step 2\n"
                         "  1 single-card                passed on 2026-11-01 "
                         "(tests/e2e/data/evidence/910b-bundle.json)\n"
                         "  2 collectives                passed on 2026-11-02 "
                         "(tests/e2e/data/evidence/910b-collectives.json)\n"
                         "  2 checkpoint                 passed on 2026-11-02 "
                         "(tests/e2e/data/evidence/910b-checkpoint.json)\n"
                         "  4 scale                      no record\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("island dcu-k100 (hygon-k100-ai, DTK 24.04): step 0\n"
                         "  1 single-card                no record\n"),
            std::string::npos)
      << run.out;
  // Each island says what its chip's figures rest on: the 910B's runs, the K100-AI's datasheet.
  const auto evidence_of = [&](const std::string& island) {
    const auto at = run.out.find("island " + island + " (");
    const auto line = run.out.find("  profile evidence", at);
    return at == std::string::npos || line == std::string::npos
               ? std::string()
               : run.out.substr(line, run.out.find('\n', line) - line);
  };
  EXPECT_EQ(evidence_of("ascend-910b").rfind("  profile evidence             runs, 80% of runs ", 0), 0u)
      << run.out;
  EXPECT_EQ(evidence_of("dcu-k100").rfind("  profile evidence             datasheet, 80% of runs ", 0),
            0u)
      << run.out;
  EXPECT_NE(run.out.find("  ascend-910b <-> dcu-k100     passed on 2026-11-03 "
                         "(tests/e2e/data/evidence/910b-k100-boundary.json)\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("  ascend-910b <-> mlu370       no record\n"), std::string::npos) << run.out;
}

// Every rung that has not passed names the commands that make its record: the probe's run on
// the island's backend, then `hetplan validate --evidence` (or `--run` for scale), with the
// scenario and records folder the ladder was shown for.
TEST(LadderCli, EveryRungNamesTheCommandsThatMakeItsRecord) {
  const auto run = hetplan("validate --ladder scenarios/default.yaml " + kRecords);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const std::string scope = " --scenario scenarios/default.yaml --records tests/e2e/data/records\n";
  for (const std::string& expected : {
           "  1 single-card                no record\n"
           "      python3 hetplan_probe.py --backend cuda --out E.json\n"
           "      hetplan validate --evidence E.json --island dcu-k100" + scope,
           "  2 collectives                no record\n"
           "      python3 hetplan_boundary.py --check collectives --backend mlu --ranks 8 --out E.json\n"
           "      hetplan validate --evidence E.json --island mlu370" + scope,
           "  2 checkpoint                 no record\n"
           "      python3 hetplan_boundary.py --check checkpoint --backend cuda --out E.json\n"
           "      hetplan validate --evidence E.json --island dcu-k100" + scope,
           "  4 scale                      no record\n"
           "      hetplan validate --run LOG --plan PLAN" + scope,
           "  ascend-910b <-> mlu370       no record\n"
           "      python3 hetplan_boundary.py --check boundary --first-backend npu --second-backend mlu --out E.json\n"
           "      hetplan validate --evidence E.json --island ascend-910b --with mlu370" + scope,
           "gradient exchanges between replicas on two chip types (step 3)\n"
           "  ascend-910b <-> mlu370       no record\n"
           "      python3 hetplan_boundary.py --check gradient-exchange --first-backend npu --second-backend mlu --out E.json\n"
           "      hetplan validate --evidence E.json --island ascend-910b --with mlu370" + scope}) {
    EXPECT_NE(run.out.find(expected), std::string::npos) << expected << "\nin\n" << run.out;
  }
  // In JSON every rung names its commands, passed or not.
  const auto json = hetplan("validate --ladder scenarios/default.yaml --json " + kRecords);
  ASSERT_EQ(json.exit_code, 0) << json.out;
  const auto j = nlohmann::json::parse(json.out);
  for (const auto& island : j["islands"]) {
    ASSERT_EQ(island["rungs"].size(), 4u);
    for (const auto& rung : island["rungs"]) EXPECT_FALSE(rung["commands"].empty()) << rung;
  }
  for (const char* pairs : {"boundaries", "exchanges"})
    for (const auto& pair : j[pairs]) EXPECT_FALSE(pair["commands"].empty()) << pair;
  EXPECT_EQ(j["islands"][0]["rungs"][0]["status"], "passed");
  EXPECT_EQ(j["boundaries"][0]["status"], "passed");
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
    if (!validated) {
      EXPECT_FALSE(plan["validation"]["missing"].empty());
    }
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

namespace {

const std::string kLog = "tests/importers/data/megatron-lm-gpt2-v100-32rank-tp4-pp8-2021-bigscience.out";

// A plan of the log's layout (32 ranks, tp 4, pp 8): stages on `islands[i]`.
std::string log_plan(const std::string& name, const std::vector<std::string>& islands) {
  std::string plan = "schema: hetplan/plan/v1\nname: " + name + "\nschedule: 1f1b\nstages:\n";
  for (int i = 0; i < 8; ++i) {
    plan += "  - {island: " + islands[static_cast<std::size_t>(i)] + ", first_layer: " +
            std::to_string(10 * i) + ", num_layers: 10, tp: 4, dp: 1}\n";
  }
  return plan;
}

// The line of `text` that contains `marker`.
std::string line_with(const std::string& text, const std::string& marker) {
  const auto at = text.find(marker);
  if (at == std::string::npos) return "";
  const auto start = text.rfind('\n', at) + 1;
  return text.substr(start, text.find('\n', at) - start);
}

// `validate --run LOG --scenario S --plan P`: the log's measured step (the median after the
// warm-up line: 1.618 s in this Megatron-LM log of 32 ranks, tp 4, pp 8) against the estimate,
// and a scale record per island of the plan, which the ladder then reads. The layout must be
// the plan's.
TEST(ValidateRunCli, ALogAtScaleBecomesScaleRecords) {
  hetplan::e2e::TempFolder folder;
  std::vector<std::string> islands(7, "ascend-910b");
  islands.push_back("dcu-k100");
  std::ofstream(folder.file("plan.yaml")) << log_plan("log-layout", islands);
  const std::string records = folder.path() + "/records";
  const auto run = hetplan("validate --run " + kLog + " --scenario scenarios/default.yaml --plan " +
                           folder.file("plan.yaml") + " --records " + records +
                           " --date 2026-12-01 --json");
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_NEAR(j["measured_step_s"].get<double>(), 1.618, 5e-4);
  EXPECT_EQ(j["iterations"], 17);
  const double error = (j["predicted_step_s"].get<double>() - j["measured_step_s"].get<double>()) /
                       j["measured_step_s"].get<double>();
  // The JSON rounds to six significant digits (the log is another model's: the error is large).
  EXPECT_NEAR(j["error"].get<double>(), error, 1e-5 * std::max(1.0, std::abs(error)));
  EXPECT_EQ(j["passed"].get<bool>(), std::abs(error) <= 0.15);
  EXPECT_TRUE(j["finite_losses"].get<bool>());
  // A run that did not pass exits with 4 (its records say it failed).
  ASSERT_EQ(run.exit_code, j["passed"].get<bool>() ? 0 : 4) << run.out;
  ASSERT_EQ(j["records"].size(), 2u);
  const std::string ascend = hetplan::e2e::read_text(records + "/scale-2026-12-01-log-layout-ascend-910b.yaml");
  const std::string evidence = std::filesystem::absolute(std::string(HETPLAN_SOURCE_DIR) + "/" + kLog)
                                   .lexically_relative(std::filesystem::absolute(records))
                                   .generic_string();
  char error_text[32];
  std::snprintf(error_text, sizeof error_text, "%.1f", 100 * j["error"].get<double>());
  EXPECT_EQ(ascend,
            "# Written by hetplan validate --run: megatron-lm log of plan log-layout.\n"
            "schema: hetplan/validation-record/v1\n"
            "chip: ascend-910b\n"
            "runtime: {name: \"CANN\", version: \"8.0.0\"}\n"
            "ladder:\n"
            "  - step: scale\n"
            "    passed: false\n"
            "    date: 2026-12-01\n"
            "    evidence: \"" + evidence + "\"\n"
            "    sha256: " + hetplan::sha256_hex(hetplan::e2e::read_text(std::string(HETPLAN_SOURCE_DIR) + "/" + kLog)) + "\n"
            "    chips: 28\n"
            "    note: \"measured 1.618 s a step, predicted " +
                hetplan::cli::fixed(j["predicted_step_s"].get<double>(), 3) + " s: error " + error_text +
                "% (tolerance 15%); 19 losses, 12.106 to 7.534\"\n");
  // A training log is no boundary evidence: the boundary rung needs hetplan_boundary.py's
  // comparison with a reference.
  const std::string dcu = hetplan::e2e::read_text(records + "/scale-2026-12-01-log-layout-dcu-k100.yaml");
  EXPECT_NE(dcu.find("chips: 4\n"), std::string::npos) << dcu;
  EXPECT_EQ((ascend + dcu).find("boundary"), std::string::npos);

  // A NaN loss in the run: the run does not pass, whatever its step time.
  std::string text = hetplan::e2e::read_text(std::string(HETPLAN_SOURCE_DIR) + "/" + kLog);
  const auto loss = text.find("lm loss: 2.648119E+01");
  ASSERT_NE(loss, std::string::npos);
  text.replace(loss, std::string("lm loss: 2.648119E+01").size(), "lm loss: nan");
  std::ofstream(folder.file("nan.log")) << text;
  const std::string nan_records = folder.path() + "/nan-records";
  const auto nan_run = hetplan("validate --run " + folder.file("nan.log") +
                               " --scenario scenarios/default.yaml --plan " +
                               folder.file("plan.yaml") + " --records " + nan_records +
                               " --date 2026-12-01 --tolerance 10");
  EXPECT_EQ(nan_run.exit_code, 4) << nan_run.out;
  EXPECT_NE(nan_run.out.find("(tolerance 1000%), with a NaN or infinite loss: not passed\n"),
            std::string::npos)
      << nan_run.out;
  const std::string nan_ascend =
      hetplan::e2e::read_text(nan_records + "/scale-2026-12-01-log-layout-ascend-910b.yaml");
  EXPECT_NE(nan_ascend.find("    passed: false\n"), std::string::npos) << nan_ascend;
  EXPECT_NE(nan_ascend.find(", with a NaN or infinite loss\"\n"), std::string::npos) << nan_ascend;

  // A plan of another layout than the log's is refused.
  std::ofstream(folder.file("pp4.yaml"))
      << "schema: hetplan/plan/v1\nname: other\nstages:\n"
         "  - {island: ascend-910b, first_layer: 0, num_layers: 40, tp: 4, dp: 2}\n"
         "  - {island: ascend-910b, first_layer: 40, num_layers: 40, tp: 4, dp: 2}\n";
  const auto other = hetplan("validate --run " + kLog + " --scenario scenarios/default.yaml --plan " +
                             folder.file("pp4.yaml") + " --records " + records);
  EXPECT_EQ(other.exit_code, 2) << other.out;
  EXPECT_NE(other.out.find("layout: expected the plan's layout (16 chips, pp 2, dp 2)"), std::string::npos)
      << other.out;
}

// The log with every iteration's elapsed time multiplied by `factor`: the same iterations run
// that much slower. The tests make one that lands on the estimate, for a run that passes.
std::string scaled_log(double factor) {
  std::string text = hetplan::e2e::read_text(std::string(HETPLAN_SOURCE_DIR) + "/" + kLog);
  const std::string marker = "elapsed time per iteration (ms): ";
  for (auto at = text.find(marker); at != std::string::npos; at = text.find(marker, at)) {
    at += marker.size();
    const auto end = text.find(' ', at);
    char scaled[32];
    std::snprintf(scaled, sizeof scaled, "%.1f", std::stod(text.substr(at, end - at)) * factor);
    text.replace(at, end - at, scaled);
  }
  return text;
}

// The test records and their evidence, copied: a records folder of one's own.
struct RecordsCopy {
  hetplan::e2e::TempFolder folder;
  std::string records = folder.path() + "/records";
  std::string evidence = folder.path() + "/evidence";
  RecordsCopy() {
    const std::string data = std::string(HETPLAN_SOURCE_DIR) + "/tests/e2e/data/";
    std::filesystem::copy(data + "records", records);
    std::filesystem::copy(data + "evidence", evidence);
    std::ofstream(folder.file("solo.yaml")) << log_plan("solo", std::vector<std::string>(8, "ascend-910b"));
  }
  std::string plan() const { return folder.file("solo.yaml"); }
  std::string out() const { return folder.path() + "/out"; }
  // A log of the same iterations, as slow as the estimate of `run` (validate --run --json of
  // the plan) says: a run that passes.
  std::string passing_log(const nlohmann::json& run) const {
    std::ofstream(folder.file("slow.log"))
        << scaled_log(run["predicted_step_s"].get<double>() / run["measured_step_s"].get<double>());
    return folder.file("slow.log");
  }
};

// The defect: a run that did not pass printed "not passed" and exited 0, and the ladder then
// showed the scale step as merely missing. Now it exits 4, the ladder shows the failure with
// its date and error, and the gate refuses every plan on its islands until a later run passes.
TEST(ValidateRunCli, ARunThatDoesNotPassExitsFourAndBlocksTheGateUntilALaterRunPasses) {
  RecordsCopy copy;
  const std::string records = " --records " + copy.records;
  const std::string export_json = "export " + copy.plan() + " --scenario scenarios/default.yaml" +
                                  records + " --to json --out " + copy.out();
  ASSERT_EQ(hetplan(export_json).exit_code, 0);  // the 910B island is at step 2

  const auto failed = hetplan("validate --run " + kLog + " --scenario scenarios/default.yaml --plan " +
                              copy.plan() + records + " --date 2026-12-01 --json");
  EXPECT_EQ(failed.exit_code, 4) << failed.out;
  const auto j = nlohmann::json::parse(failed.out);
  ASSERT_FALSE(j["passed"].get<bool>());
  char error_text[32];
  std::snprintf(error_text, sizeof error_text, "%.1f", 100 * j["error"].get<double>());

  const auto ladder = hetplan("validate --ladder scenarios/default.yaml" + records);
  ASSERT_EQ(ladder.exit_code, 0) << ladder.out;
  EXPECT_EQ(line_with(ladder.out, "  4 scale"),
            "  4 scale                      failed on 2026-12-01: measured 1.618 s a step, predicted " +
                hetplan::cli::fixed(j["predicted_step_s"].get<double>(), 3) + " s: error " +
                error_text + "% (tolerance 15%); 19 losses, 12.106 to 7.534")
      << ladder.out;
  EXPECT_NE(ladder.out.find("      it blocks the island's plans until a later run passes\n"),
            std::string::npos)
      << ladder.out;

  const auto refused = hetplan(export_json);
  EXPECT_EQ(refused.exit_code, 3) << refused.out;
  EXPECT_NE(refused.out.find("missing: island ascend-910b (CANN 8.0.0): scale failed on 2026-12-01: "
                             "measured 1.618 s a step"),
            std::string::npos)
      << refused.out;
  const auto stamped = hetplan("export " + copy.plan() + " --scenario scenarios/default.yaml" + records +
                               " --allow-unvalidated --to volcano --out " + copy.out());
  ASSERT_EQ(stamped.exit_code, 0) << stamped.out;
  EXPECT_NE(hetplan::e2e::read_text(copy.out() + "/volcano-solo.yaml").find("hetplan.io/validated: \"false\""),
            std::string::npos);

  // A later run that passes unblocks it.
  const auto passed = hetplan("validate --run " + copy.passing_log(j) +
                              " --scenario scenarios/default.yaml --plan " + copy.plan() + records +
                              " --date 2026-12-02");
  EXPECT_EQ(passed.exit_code, 0) << passed.out;
  EXPECT_EQ(hetplan(export_json).exit_code, 0);
}

// The defect: a passed run at scale was listed under "missing" and the step number did not move.
TEST(ValidateRunCli, APassedRunIsListedAsPassedAndMovesTheStep) {
  RecordsCopy copy;
  const std::string records = " --records " + copy.records;
  // The estimate of the plan, from a run of the log as it is (which does not pass).
  const auto first = hetplan("validate --run " + kLog + " --scenario scenarios/default.yaml --plan " +
                             copy.plan() + " --json");
  ASSERT_EQ(first.exit_code, 4) << first.out;
  const auto run = hetplan("validate --run " + copy.passing_log(nlohmann::json::parse(first.out)) +
                           " --scenario scenarios/default.yaml --plan " + copy.plan() + records +
                           " --date 2026-12-02");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto ladder = hetplan("validate --ladder scenarios/default.yaml" + records);
  ASSERT_EQ(ladder.exit_code, 0) << ladder.out;
  EXPECT_NE(ladder.out.find("island ascend-910b (ascend-910b, CANN 8.0.0): step 4\n"), std::string::npos)
      << ladder.out;
  EXPECT_EQ(line_with(ladder.out, "  4 scale"),
            "  4 scale                      passed on 2026-12-02 (" + copy.folder.file("slow.log") +
                "), 32 chips")
      << ladder.out;
  const auto json = nlohmann::json::parse(hetplan("validate --ladder scenarios/default.yaml --json" + records).out);
  EXPECT_EQ(json["islands"][0]["step"], 4);
  EXPECT_TRUE(json["islands"][0]["missing"].empty());
  EXPECT_EQ(json["islands"][0]["rungs"][3]["status"], "passed");
}

// The defect: export wrote hetplan.io/validated "true" from records whose evidence files were
// literally `{}`. A record counts only with its evidence: there, not empty, unchanged since the
// record was written (its SHA-256) and of its step's kind.
TEST(ExportGate, RecordsWhoseEvidenceIsEmptyValidateNothing) {
  for (const std::string& body : {std::string("{}\n"), std::string()}) {
    SCOPED_TRACE(body.empty() ? "empty files" : "{}");
    RecordsCopy copy;
    // Every evidence file emptied, and the record's hashes made to match, as a hand-written
    // record would.
    std::string record = hetplan::e2e::read_text(copy.records + "/ascend-910b-cann-8.0.0.yaml");
    for (const auto& entry : std::filesystem::directory_iterator(copy.evidence)) {
      const std::string hash = hetplan::sha256_hex(hetplan::e2e::read_text(entry.path().string()));
      std::ofstream(entry.path()) << body;
      const auto at = record.find(hash);
      if (at != std::string::npos) record.replace(at, hash.size(), hetplan::sha256_hex(body));
    }
    std::ofstream(copy.records + "/ascend-910b-cann-8.0.0.yaml") << record;
    const std::string records = " --records " + copy.records;
    const auto stamped = hetplan("export " + copy.plan() + " --scenario scenarios/default.yaml" + records +
                                 " --allow-unvalidated --to volcano --out " + copy.out());
    ASSERT_EQ(stamped.exit_code, 0) << stamped.out;
    const std::string job = hetplan::e2e::read_text(copy.out() + "/volcano-solo.yaml");
    EXPECT_NE(job.find("hetplan.io/validated: \"false\""), std::string::npos) << job;
    EXPECT_EQ(job.find("hetplan.io/validated: \"true\""), std::string::npos) << job;
    const auto refused = hetplan("export " + copy.plan() + " --scenario scenarios/default.yaml" + records +
                                 " --to json --out " + copy.out());
    EXPECT_EQ(refused.exit_code, 3) << refused.out;
    const std::string bundle = copy.evidence + "/910b-bundle.json";
    EXPECT_NE(refused.out.find("single-card has no record that counts (" + copy.records +
                               "/ascend-910b-cann-8.0.0.yaml:8:67: ladder[0].evidence: " +
                               (body.empty() ? "expected a probe bundle (hetplan_probe.py, "
                                               "hetplan/calibration-bundle/v1), got an empty file (" +
                                                   bundle + ")"
                                             : bundle + ":1:1: schema: missing required key"
                                                        " (expected \"hetplan/calibration-bundle/v1\")")),
              std::string::npos)
        << refused.out;
  }
}

// A record whose evidence file is missing or changed does not count either.
TEST(ExportGate, RecordsWhoseEvidenceIsMissingOrChangedValidateNothing) {
  RecordsCopy copy;
  const std::string records = " --records " + copy.records;
  const std::string export_json = "export " + copy.plan() + " --scenario scenarios/default.yaml" +
                                  records + " --to json --out " + copy.out();
  ASSERT_EQ(hetplan(export_json).exit_code, 0);
  std::ofstream(copy.evidence + "/910b-checkpoint.json", std::ios::app) << "\n";
  auto refused = hetplan(export_json);
  EXPECT_EQ(refused.exit_code, 3) << refused.out;
  EXPECT_NE(refused.out.find("checkpoint has no record that counts (" + copy.records +
                             "/ascend-910b-cann-8.0.0.yaml:12:66: ladder[2].evidence: expected " +
                             copy.evidence + "/910b-checkpoint.json as recorded (sha256 7ab93d0776a1...), "
                             "got a changed file"),
            std::string::npos)
      << refused.out;
  std::filesystem::remove(copy.evidence + "/910b-checkpoint.json");
  refused = hetplan(export_json);
  EXPECT_EQ(refused.exit_code, 3) << refused.out;
  EXPECT_NE(refused.out.find("ladder[2].evidence: " + copy.evidence +
                             "/910b-checkpoint.json: cannot open the file for reading"),
            std::string::npos)
      << refused.out;
}

// The boundary probe's output (and the probe's bundle) become records: `validate --evidence`
// checks it against the island's runtime, writes the record with its evidence hashed, and exits
// 4 when the check failed. Before, users wrote these records by hand.
TEST(ValidateEvidenceCli, TheProbesOutputBecomesRecords) {
  hetplan::e2e::TempFolder folder;
  const std::string evidence = "tests/e2e/data/evidence/";
  const std::string records = folder.path() + "/records";
  const std::string scope = " --scenario scenarios/default.yaml --records " + records;
  for (const char* file : {"910b-bundle.json", "910b-collectives.json", "910b-checkpoint.json"}) {
    const auto run = hetplan("validate --evidence " + evidence + file + " --island ascend-910b" + scope);
    EXPECT_EQ(run.exit_code, 0) << run.out;
  }
  const auto boundary = hetplan("validate --evidence " + evidence + "910b-k100-boundary.json --island "
                                "ascend-910b --with dcu-k100" + scope);
  EXPECT_EQ(boundary.exit_code, 0) << boundary.out;
  EXPECT_EQ(boundary.out,
            evidence + "910b-k100-boundary.json: --check boundary on island ascend-910b and dcu-k100, "
            "passed: bf16 on test-fixture: 3 results within their tolerance (largest relative "
            "error 0.0041)\nwrote " + records + "/boundary-2026-11-03T145109Z-ascend-910b-dcu-k100.yaml\n");
  const std::string record =
      hetplan::e2e::read_text(records + "/boundary-2026-11-03T145109Z-ascend-910b-dcu-k100.yaml");
  EXPECT_NE(record.find("    passed: true\n    date: 2026-11-03\n    evidence: \"" +
                        std::filesystem::absolute(std::string(HETPLAN_SOURCE_DIR) + "/" + evidence +
                                                  "910b-k100-boundary.json")
                            .lexically_relative(std::filesystem::absolute(records))
                            .generic_string() +
                        "\"\n    sha256: fa669f01eff492ca16fe07378c3d506c589c33792ef751c304241f7e901062b8\n"
                        "    with: {chip: hygon-k100-ai, runtime: {name: \"DTK\", version: \"24.04\"}}\n"),
            std::string::npos)
      << record;
  // A failed check is recorded as failed, and exits 4.
  const auto failed = hetplan("validate --evidence " + evidence + "910b-mlu-boundary-failed.json "
                              "--island ascend-910b --with mlu370" + scope);
  EXPECT_EQ(failed.exit_code, 4) << failed.out;
  const auto ladder = hetplan("validate --ladder scenarios/default.yaml --records " + records);
  ASSERT_EQ(ladder.exit_code, 0) << ladder.out;
  EXPECT_NE(ladder.out.find("island ascend-910b (ascend-910b, CANN 8.0.0): step 2\n"), std::string::npos)
      << ladder.out;
  EXPECT_EQ(line_with(ladder.out, "  ascend-910b <-> dcu-k100"),
            "  ascend-910b <-> dcu-k100     passed on 2026-11-03 (" +
                std::filesystem::path(std::string(HETPLAN_SOURCE_DIR) + "/" + evidence + "910b-k100-boundary.json")
                    .lexically_normal()
                    .string() +
                ")");
  EXPECT_EQ(line_with(ladder.out, "  ascend-910b <-> mlu370"),
            "  ascend-910b <-> mlu370       failed on 2026-11-04: bf16 on test-fixture: gradient of "
            "head.weight: relative error 0.0312 > tolerance 0.02");
  // Same evidence, same record, byte for byte.
  const std::string before = record;
  ASSERT_EQ(hetplan("validate --evidence " + evidence + "910b-k100-boundary.json --island ascend-910b "
                    "--with dcu-k100" + scope).exit_code, 0);
  EXPECT_EQ(hetplan::e2e::read_text(records + "/boundary-2026-11-03T145109Z-ascend-910b-dcu-k100.yaml"), before);
}

// What `validate --evidence` refuses, with exit 2 and one located line, writing nothing.
TEST(ValidateEvidenceCli, RefusesEvidenceThatDoesNotFit) {
  hetplan::e2e::TempFolder folder;
  const std::string records = folder.path() + "/records";
  const std::string scope = " --scenario scenarios/default.yaml --records " + records;
  std::ofstream(folder.file("braces.json")) << "{}\n";
  std::ofstream(folder.file("empty.json"));
  const std::string evidence = "tests/e2e/data/evidence/";
  const std::pair<std::string, std::string> cases[] = {
      {"--evidence " + folder.file("braces.json") + " --island dcu-k100",
       "error: " + folder.file("braces.json") + ":1:1: schema: expected hetplan/calibration-bundle/v1 "
       "(hetplan_probe.py) or hetplan/ladder-evidence/v1 (hetplan_boundary.py), got none\n"},
      {"--evidence " + folder.file("empty.json") + " --island dcu-k100",
       "error: " + folder.file("empty.json") + ":1:1: expected the output of hetplan_probe.py "
       "(hetplan/calibration-bundle/v1) or of hetplan_boundary.py (hetplan/ladder-evidence/v1), got "
       "an empty file\n"},
      {"--evidence " + kLog + " --island dcu-k100",
       "error: " + kLog + ":1:1: expected the output of hetplan_probe.py (hetplan/calibration-bundle/v1) "
       "or of hetplan_boundary.py (hetplan/ladder-evidence/v1), got a training log (Megatron-LM, "
       "MindSpeed-LLM or Megatron-DeepSpeed iteration lines); `hetplan import` reads it and `hetplan "
       "validate --run` compares it with a plan\n"},
      {"--evidence " + evidence + "910b-k100-boundary.json --island ascend-910b",
       "error: validate: --with: expected --with ISLAND, the island of the second backend of " +
           evidence + "910b-k100-boundary.json (a boundary check is between two islands)\n"},
      {"--evidence " + evidence + "910b-collectives.json --island ascend-910b --with dcu-k100",
       "error: validate: --with: expected no --with: " + evidence +
           "910b-collectives.json is a collectives check of one island\n"},
      {"--evidence " + evidence + "910b-k100-boundary.json --island dcu-k100 --with ascend-910b",
       "error: " + evidence + "910b-k100-boundary.json:6:69: backends[0].runtime: expected island "
       "dcu-k100's runtime, DTK 24.04 (as the cluster file says), got CANN 8.0.0\n"},
      {"--evidence " + evidence + "910b-bundle.json --island mlu370",
       "error: " + evidence + "910b-bundle.json:5:68: host.runtime: expected island mlu370's runtime, "
       "Neuware unknown (as the cluster file says), got CANN 8.0.0\n"},
      {"--evidence " + evidence + "910b-bundle.json --island a100",
       "error: validate: --island: expected an island of cluster mixed-roce-64 (ascend-910b, "
       "dcu-k100, mlu370), got \"a100\"\n"},
  };
  for (const auto& [args, expected] : cases) {
    const auto run = hetplan("validate " + args + scope);
    EXPECT_EQ(run.exit_code, 2) << args;
    EXPECT_EQ(run.out, expected) << args;
  }
  EXPECT_FALSE(std::filesystem::exists(records));
}

}  // namespace

namespace {

// Every training log the project ships (the real outputs of Megatron-LM, Megatron-DeepSpeed and
// MindSpeed-LLM) validates against a plan of its layout: a measured step, an estimate and a
// scale record. Logs that state no layout take any plan.
TEST(ValidateRunCli, EveryTrainingLogValidatesAgainstAPlanOfItsLayout) {
  struct Case {
    const char* log;
    int pp;  // the log's layout (tp 4, dp 1), or the plan's where the log states none
    int iterations;
  };
  const Case cases[] = {
      {"megatron-lm-gpt2-v100-32rank-tp4-pp8-2021-bigscience.out", 8, 17},
      {"megatron-lm-gpt2-64rank-tp4-pp16-2021-bigscience-ds-off.out", 16, 61},
      {"megatron-deepspeed-bloom176b-a100-samplespersec-tflops-3iters.log", 8, 2},
      {"mindspeed-llm-fsdp2-qwen3-8b-finetune-A2-3iters.log", 8, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.log);
    hetplan::e2e::TempFolder folder;
    std::string plan = "schema: hetplan/plan/v1\nname: layout\nstages:\n";
    const int layers = 80 / c.pp;
    for (int i = 0; i < c.pp; ++i) {
      plan += "  - {island: ascend-910b, first_layer: " + std::to_string(layers * i) +
              ", num_layers: " + std::to_string(layers) + ", tp: 4, dp: 1}\n";
    }
    std::ofstream(folder.file("plan.yaml")) << plan;
    const auto run = hetplan("validate --run tests/importers/data/" + std::string(c.log) +
                             " --scenario scenarios/default.yaml --plan " + folder.file("plan.yaml") +
                             " --records " + folder.path() + "/records --date 2026-12-01 --json");
    const auto j = nlohmann::json::parse(run.out);
    ASSERT_EQ(run.exit_code, j["passed"].get<bool>() ? 0 : 4) << run.out;
    EXPECT_EQ(j["iterations"], c.iterations);  // the iteration lines after the first
    EXPECT_GT(j["measured_step_s"].get<double>(), 0);
    EXPECT_GT(j["predicted_step_s"].get<double>(), 0);
    ASSERT_EQ(j["records"].size(), 1u);
    const std::string record = hetplan::e2e::read_text(j["records"][0].get<std::string>());
    EXPECT_NE(record.find("  - step: scale\n    passed: "), std::string::npos) << record;
    EXPECT_NE(record.find("    chips: " + std::to_string(4 * c.pp) + "\n"), std::string::npos) << record;
  }
}

}  // namespace
