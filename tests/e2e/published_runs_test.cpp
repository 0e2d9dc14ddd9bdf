// The validation report on the published runs: predictions from datasheet peaks and the
// profiles' documented priors must stay within the error budget, and the out-of-memory case
// must be predicted as not fitting. The measured figures are only read from the shared data,
// never written here.
#include "validation/published_runs.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace hetplan::validation {
namespace {

const std::string kPublished = std::string(HETPLAN_SHARED_DIR) + "/data/published-runs";

TEST(PublishedRuns, MeanAbsoluteErrorWithinTenPercent) {
  if (!std::filesystem::exists(kPublished)) GTEST_SKIP() << "no shared data at " << kPublished;
  const auto report =
      validate_published_runs(kPublished, std::string(HETPLAN_SOURCE_DIR) + "/profiles");
  ASSERT_GE(report.cases.size(), 20u);
  EXPECT_LE(report.mean_absolute_error, 0.10) << report_text(report);
  EXPECT_GE(report.oom_cases, 1);
  EXPECT_EQ(report.oom_correct, report.oom_cases) << report_text(report);
  for (const auto& c : report.cases) {
    if (c.metric != "out_of_memory") EXPECT_TRUE(c.feasible) << c.id;
  }
}

}  // namespace
}  // namespace hetplan::validation
