// The published-run validation with the digital twin beside the estimator, on a small fixture in
// the published-run format (tests/validation/data/published-runs-twin): the twin's figures go
// through the same metric conversion as the estimator's, a plan the twin refuses or a worker
// that cannot start is reported in its case instead of failing the validation, and without the
// twin the report is what it always was.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "validation/published_runs.hpp"

namespace hetplan::validation {
namespace {

const std::string kFixture =
    std::string(HETPLAN_SOURCE_DIR) + "/tests/validation/data/published-runs-twin";
const std::string kProfiles = std::string(HETPLAN_SOURCE_DIR) + "/profiles";

ValidationOptions with_worker(const std::string& worker) {
  ValidationOptions options;
  options.twin = TwinValidation{{worker}, 2};
  return options;
}

const CaseResult& find_case(const ValidationReport& report, const std::string& id) {
  for (const auto& c : report.cases) {
    if (c.id == id) return c;
  }
  throw std::runtime_error("no case " + id);
}

TEST(PublishedRunsTwin, SimulatesFeasibleCasesAndConvertsTheirMetricLikeTheEstimator) {
  const auto twin = validate_published_runs(kFixture, kProfiles, with_worker(HETPLAN_TWIN_WORKER));
  ASSERT_TRUE(twin.twin);
  const auto& step = find_case(twin, "small-step");
  const auto& tokens = find_case(twin, "small-tokens");
  const auto& tflops = find_case(twin, "small-tflops");
  for (const CaseResult* c : {&step, &tokens, &tflops}) {
    ASSERT_TRUE(c->twin_predicted.has_value()) << c->id << ": " << c->twin_not_simulated;
    EXPECT_GT(*c->twin_predicted, 0) << c->id;
    EXPECT_TRUE(c->twin_not_simulated.empty()) << c->id;
    EXPECT_DOUBLE_EQ(c->twin_error, (*c->twin_predicted - c->measured) / c->measured) << c->id;
  }
  // One plan, three metrics: the twin's step converts as the estimator's does, so the ratio of
  // twin to estimator is the same in each (throughput inverts it).
  const double step_ratio = *step.twin_predicted / step.predicted;
  EXPECT_NEAR(*tokens.twin_predicted / tokens.predicted, 1 / step_ratio, 1e-9);
  EXPECT_NEAR(*tflops.twin_predicted / tflops.predicted, 1 / step_ratio, 1e-9);
  // Eight A100s of one node without jitter: the twin and the estimator agree closely.
  EXPECT_NEAR(step_ratio, 1.0, 0.05);

  // Over the twin's limit of 131,072 ranks: refused before any worker, reported in the case.
  const auto& huge = find_case(twin, "too-many-ranks");
  EXPECT_TRUE(huge.feasible);
  EXPECT_FALSE(huge.twin_predicted.has_value());
  EXPECT_EQ(huge.twin_not_simulated, "the plan has 131200 ranks; the limit is 131072");
  EXPECT_NE(report_text(twin).find(
                "\n    twin: not simulated: the plan has 131200 ranks; the limit is 131072\n"),
            std::string::npos)
      << report_text(twin);

  // The out-of-memory case is not a twin case at all.
  const auto& oom = find_case(twin, "too-big");
  EXPECT_FALSE(oom.twin_predicted.has_value());
  EXPECT_TRUE(oom.twin_not_simulated.empty());

  EXPECT_EQ(twin.twin_cases, 3);
  EXPECT_NEAR(
      twin.twin_mean_absolute_error,
      (std::fabs(step.twin_error) + std::fabs(tokens.twin_error) + std::fabs(tflops.twin_error)) /
          3,
      1e-12);
  EXPECT_NEAR(twin.twin_analytic_mean_absolute_error,
              (std::fabs(step.error) + std::fabs(tokens.error) + std::fabs(tflops.error)) / 3,
              1e-12);

  const auto j = report_json(twin);
  EXPECT_TRUE(j.at("twin_mean_absolute_error").is_number());
  EXPECT_EQ(j.at("twin_cases"), 3);
  for (const auto& c : j.at("cases")) {
    ASSERT_TRUE(c.contains("twin_predicted")) << c.dump();
    ASSERT_TRUE(c.contains("twin_error")) << c.dump();
    EXPECT_EQ(c["twin_predicted"].is_number(), c["twin_error"].is_number()) << c.dump();
  }
}

TEST(PublishedRunsTwin, LeavesTheEstimatorsFiguresAsTheyAre) {
  const auto alone = validate_published_runs(kFixture, kProfiles);
  const auto twin = validate_published_runs(kFixture, kProfiles, with_worker(HETPLAN_TWIN_WORKER));
  ASSERT_EQ(alone.cases.size(), twin.cases.size());
  for (std::size_t i = 0; i < alone.cases.size(); ++i) {
    EXPECT_EQ(alone.cases[i].predicted, twin.cases[i].predicted) << alone.cases[i].id;
    EXPECT_EQ(alone.cases[i].error, twin.cases[i].error) << alone.cases[i].id;
    EXPECT_FALSE(alone.cases[i].twin_predicted.has_value());
    EXPECT_TRUE(alone.cases[i].twin_not_simulated.empty());
  }
  EXPECT_EQ(alone.mean_absolute_error, twin.mean_absolute_error);

  // Without the twin, no twin column, line or key.
  EXPECT_FALSE(alone.twin);
  EXPECT_EQ(report_text(alone).find("twin"), std::string::npos) << report_text(alone);
  EXPECT_EQ(report_text(alone).rfind(
                "file                          case               metric                 "
                "measured   predicted    error  memory pred/meas GiB\n",
                0),
            0u);
  EXPECT_EQ(report_json(alone).dump().find("twin"), std::string::npos);
}

TEST(PublishedRunsTwin, AWorkerThatCannotStartIsReportedInEachCase) {
  const auto report =
      validate_published_runs(kFixture, kProfiles, with_worker("/nonexistent/hetplan-twin"));
  const auto& step = find_case(report, "small-step");
  EXPECT_FALSE(step.twin_predicted.has_value());
  EXPECT_EQ(step.twin_not_simulated,
            "the simulation of plan small-step could not start /nonexistent/hetplan-twin: No "
            "such file or directory");
  EXPECT_EQ(report.twin_cases, 0);
  EXPECT_NE(report_text(report).find("    twin: not simulated: the simulation of plan small-step"),
            std::string::npos)
      << report_text(report);
}

}  // namespace
}  // namespace hetplan::validation
