// Rank agreement: what matters for a planner is choosing the right plan. For each group of
// published cases that are alternative plans on the same hardware and model (one published-run
// file), how well the predicted order matches the measured one.
#pragma once

#include <string>
#include <vector>

#include "validation/published_runs.hpp"

namespace hetplan::validation {

struct GroupAgreement {
  std::string file;
  std::string metric;
  int cases = 0;
  double kendall_tau = 0;  // -1..1 over all pairs; ties count as neither agreeing nor not
  int pairs_agreeing = 0;
  int pairs = 0;
  bool best_agrees = false;  // the measured best case is the predicted best
  std::string measured_best, predicted_best;
};

// Groups of two or more numeric cases with the same file and metric, in file order.
std::vector<GroupAgreement> rank_agreement(const ValidationReport& report);

std::string rank_agreement_text(const std::vector<GroupAgreement>& groups);

}  // namespace hetplan::validation
