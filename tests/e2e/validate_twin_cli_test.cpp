// `hetplan validate --published DIR --twin` on the published runs of the shared data, as a user
// would run it: every step-time or throughput case the estimator finds feasible is also
// simulated by the twin, whose mean absolute error stays close to the estimator's; without
// --twin the report has no twin keys. Slow: the twin simulates runs of up to 3,072 GPUs (about
// 40 s on two cores).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/e2e/cli_run.hpp"

namespace {

using hetplan::e2e::CliRun;
using hetplan::e2e::hetplan;

const std::string kPublished = std::string(HETPLAN_SOURCE_DIR) + "/validation/published-runs";

TEST(ValidateTwinCli, TheTwinPredictsEveryEligibleCaseAsCloselyAsTheEstimator) {
  const CliRun run = hetplan("validate --published " + kPublished + " --twin --json", " 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);

  int eligible = 0;
  for (const auto& c : j.at("cases")) {
    const std::string id = c.at("id");
    if (c.at("metric") == "out_of_memory" || !c.at("feasible").get<bool>()) {
      EXPECT_TRUE(c.at("twin_predicted").is_null()) << id;
      continue;
    }
    ++eligible;
    ASSERT_TRUE(c.at("twin_predicted").is_number()) << id << ": " << c.at("twin_not_simulated");
    ASSERT_TRUE(c.at("twin_error").is_number()) << id;
    EXPECT_TRUE(c.at("twin_not_simulated").is_null()) << id;
    const double measured = c.at("measured"), twin = c.at("twin_predicted");
    EXPECT_GT(twin, 0) << id;
    // The JSON's figures have six significant digits: the error recomputed from them agrees to
    // about 1e-6.
    EXPECT_NEAR(c.at("twin_error").get<double>(), (twin - measured) / measured, 1e-5) << id;
  }
  EXPECT_GE(eligible, 20);
  EXPECT_EQ(j.at("twin_cases"), eligible);

  // On these homogeneous clusters without jitter the twin and the estimator should be close.
  // Observed: estimator 8.6%, twin 9.1% (the twin predicts the interleaved SC21 runs up to 4.3
  // points faster, docs/validation.md). Only the 2-point bound is a requirement.
  const double analytic = j.at("mean_absolute_error"), twin = j.at("twin_mean_absolute_error");
  EXPECT_NEAR(twin, analytic, 0.02) << "estimator " << analytic << ", twin " << twin;
}

TEST(ValidateTwinCli, WithoutTwinTheReportHasNoTwinKeys) {
  const CliRun run = hetplan("validate --published " + kPublished + " --json", " 2>&1");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);
  for (const auto& item : j.items()) EXPECT_EQ(item.key().find("twin"), std::string::npos);
  for (const auto& c : j.at("cases")) {
    for (const auto& item : c.items()) EXPECT_EQ(item.key().find("twin"), std::string::npos);
  }
  const CliRun text = hetplan("validate --published " + kPublished, " 2>&1");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_EQ(text.out.find("twin"), std::string::npos) << text.out;
}

TEST(ValidateTwinCli, TwinNeedsPublishedAndRefusesMicrobench) {
  const CliRun alone = hetplan("validate --twin");
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.out.find("--twin requires --published"), std::string::npos) << alone.out;
  const CliRun calibrated =
      hetplan("validate --published " + kPublished + " --microbench x --twin");
  EXPECT_EQ(calibrated.exit_code, 2);
  EXPECT_NE(calibrated.out.find("--microbench excludes --twin"), std::string::npos)
      << calibrated.out;
}

}  // namespace
