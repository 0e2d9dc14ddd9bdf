// The validation ladder from the command line: validate --ladder, and plans marked by it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
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

// `validate --run LOG --scenario S --plan P`: the log's measured step (the median after the
// warm-up line: 1.618 s in this Megatron-LM log of 32 ranks, tp 4, pp 8) against the estimate,
// and a scale record per island of the plan, which the ladder then reads. The layout must be
// the plan's.
TEST(ValidateRunCli, ALogAtScaleBecomesScaleRecords) {
  hetplan::e2e::TempFolder folder;
  std::string plan = "schema: hetplan/plan/v1\nname: log-layout\nschedule: 1f1b\nstages:\n";
  for (int i = 0; i < 8; ++i) {
    plan += "  - {island: " + std::string(i < 7 ? "ascend-910b" : "dcu-k100") +
            ", first_layer: " + std::to_string(10 * i) + ", num_layers: 10, tp: 4, dp: 1}\n";
  }
  std::ofstream(folder.file("plan.yaml")) << plan;
  const std::string log = "tests/importers/data/megatron-lm-gpt2-v100-32rank-tp4-pp8-2021-bigscience.out";
  const std::string records = folder.path() + "/records";
  const auto run = hetplan("validate --run " + log + " --scenario scenarios/default.yaml --plan " +
                           folder.file("plan.yaml") + " --records " + records +
                           " --date 2026-12-01 --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_NEAR(j["measured_step_s"].get<double>(), 1.618, 5e-4);
  EXPECT_EQ(j["iterations"], 17);
  const double error = (j["predicted_step_s"].get<double>() - j["measured_step_s"].get<double>()) /
                       j["measured_step_s"].get<double>();
  // The JSON rounds to six significant digits (the log is another model's: the error is large).
  EXPECT_NEAR(j["error"].get<double>(), error, 1e-5 * std::max(1.0, std::abs(error)));
  EXPECT_EQ(j["passed"].get<bool>(), std::abs(error) <= 0.15);
  ASSERT_EQ(j["records"].size(), 2u);
  const std::string ascend = hetplan::e2e::read_text(records + "/scale-2026-12-01-log-layout-ascend-910b.yaml");
  EXPECT_NE(ascend.find("chip: ascend-910b"), std::string::npos) << ascend;
  EXPECT_NE(ascend.find("{step: scale, passed: false, date: 2026-12-01"), std::string::npos) << ascend;
  EXPECT_NE(ascend.find("chips: 28}"), std::string::npos) << ascend;
  // Stages 6 and 7 cross from the 910B island to the DCU one: the run trained through that
  // boundary, and the earlier side's record says so (the later side's has no boundary entry).
  EXPECT_NE(ascend.find("  - {step: boundary, passed: true, date: 2026-12-01, evidence: "),
            std::string::npos)
      << ascend;
  EXPECT_NE(ascend.find("with: {chip: hygon-k100-ai, runtime: {name: \"DTK\", version: \"24.04\"}}"),
            std::string::npos)
      << ascend;
  EXPECT_NE(ascend.find("stages 6 and 7 of plan log-layout: 19 iterations trained through it, loss "
                        "12.106 to 7.534, every loss finite; outputs not compared with a reference"),
            std::string::npos)
      << ascend;
  const std::string dcu = hetplan::e2e::read_text(records + "/scale-2026-12-01-log-layout-dcu-k100.yaml");
  EXPECT_EQ(dcu.find("boundary"), std::string::npos) << dcu;
  const auto ladder = hetplan("validate --ladder scenarios/default.yaml --records " + records);
  EXPECT_EQ(ladder.exit_code, 0) << ladder.out;
  EXPECT_NE(ladder.out.find("ascend-910b <-> dcu-k100: passed"), std::string::npos) << ladder.out;

  // A NaN loss in the run: the boundary is recorded as not passed.
  std::string text = hetplan::e2e::read_text(std::string(HETPLAN_SOURCE_DIR) + "/" + log);
  const auto loss = text.find("lm loss: 2.648119E+01");
  ASSERT_NE(loss, std::string::npos);
  text.replace(loss, std::string("lm loss: 2.648119E+01").size(), "lm loss: nan");
  std::ofstream(folder.file("nan.log")) << text;
  const std::string nan_records = folder.path() + "/nan-records";
  const auto nan_run = hetplan("validate --run " + folder.file("nan.log") +
                               " --scenario scenarios/default.yaml --plan " +
                               folder.file("plan.yaml") + " --records " + nan_records +
                               " --date 2026-12-01");
  ASSERT_EQ(nan_run.exit_code, 0) << nan_run.out;
  const std::string nan_ascend =
      hetplan::e2e::read_text(nan_records + "/scale-2026-12-01-log-layout-ascend-910b.yaml");
  EXPECT_NE(nan_ascend.find("{step: boundary, passed: false"), std::string::npos) << nan_ascend;
  EXPECT_NE(nan_ascend.find("with a NaN or infinite loss"), std::string::npos) << nan_ascend;

  // A plan of another layout than the log's is refused.
  std::ofstream(folder.file("pp4.yaml"))
      << "schema: hetplan/plan/v1\nname: other\nstages:\n"
         "  - {island: ascend-910b, first_layer: 0, num_layers: 40, tp: 4, dp: 2}\n"
         "  - {island: ascend-910b, first_layer: 40, num_layers: 40, tp: 4, dp: 2}\n";
  const auto other = hetplan("validate --run " + log + " --scenario scenarios/default.yaml --plan " +
                             folder.file("pp4.yaml") + " --records " + records);
  EXPECT_EQ(other.exit_code, 2) << other.out;
  EXPECT_NE(other.out.find("layout: expected the plan's layout (16 chips, pp 2, dp 2)"), std::string::npos)
      << other.out;
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
    ASSERT_EQ(run.exit_code, 0) << run.out;
    const auto j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j["iterations"], c.iterations);  // the iteration lines after the first
    EXPECT_GT(j["measured_step_s"].get<double>(), 0);
    EXPECT_GT(j["predicted_step_s"].get<double>(), 0);
    ASSERT_EQ(j["records"].size(), 1u);
    const std::string record = hetplan::e2e::read_text(j["records"][0].get<std::string>());
    EXPECT_NE(record.find("{step: scale, passed: "), std::string::npos) << record;
    EXPECT_NE(record.find("chips: " + std::to_string(4 * c.pp) + "}"), std::string::npos) << record;
  }
}

}  // namespace
