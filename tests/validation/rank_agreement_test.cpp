#include "validation/rank_agreement.hpp"

#include <gtest/gtest.h>

namespace hetplan::validation {
namespace {

CaseResult result(const std::string& file, const std::string& id, double measured,
                  double predicted, const std::string& metric = "step_time_s") {
  CaseResult c;
  c.file = file;
  c.id = id;
  c.metric = metric;
  c.measured = measured;
  c.predicted = predicted;
  return c;
}

TEST(RankAgreement, CountsConcordantPairsAndTheBestPlanPerGroup) {
  ValidationReport report;
  // Step times: "b" is fastest measured, "c" predicted fastest; one pair of three disagrees.
  report.cases = {result("f", "a", 3.0, 3.1), result("f", "b", 1.0, 1.6),
                  result("f", "c", 2.0, 1.5),
                  // Throughputs in another file: perfectly ordered, higher is better.
                  result("g", "x", 10, 12, "tokens_per_s_per_chip"),
                  result("g", "y", 20, 25, "tokens_per_s_per_chip"),
                  // A lone case forms no group; an out-of-memory case is left out.
                  result("h", "z", 1, 1)};
  CaseResult oom = result("f", "oom", 0, 0, "out_of_memory");
  report.cases.push_back(oom);
  const auto groups = rank_agreement(report);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].file, "f");
  EXPECT_EQ(groups[0].cases, 3);
  EXPECT_EQ(groups[0].pairs, 3);
  EXPECT_EQ(groups[0].pairs_agreeing, 2);
  EXPECT_NEAR(groups[0].kendall_tau, 1.0 / 3.0, 1e-12);
  EXPECT_EQ(groups[0].measured_best, "b");
  EXPECT_EQ(groups[0].predicted_best, "c");
  EXPECT_FALSE(groups[0].best_agrees);
  EXPECT_EQ(groups[1].kendall_tau, 1.0);
  EXPECT_EQ(groups[1].measured_best, "y");
  EXPECT_TRUE(groups[1].best_agrees);
}

}  // namespace
}  // namespace hetplan::validation
