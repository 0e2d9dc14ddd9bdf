// Predicts the published training runs (a folder of files in the published-runs format: a
// shared `common` configuration, per-case overrides and a `measured` figure) with the analytic
// estimator, from datasheet peaks and the chip profiles' documented efficiency priors, and
// reports the error of each prediction. docs/validation.md.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hetplan::validation {

struct CaseResult {
  std::string file;
  std::string id;
  std::string metric;  // step_time_s, tokens_per_s_per_chip, tflops_per_chip, out_of_memory
  double measured = 0;
  double predicted = 0;
  double error = 0;                 // (predicted - measured) / measured; 0 for out_of_memory
  bool feasible = true;             // what the estimator said
  bool correct = true;              // for out_of_memory: predicted infeasible for memory
  double predicted_memory_gib = 0;  // the largest stage peak
  double measured_memory_gib = 0;   // when the source gives it, else 0
  std::vector<std::string> reasons;
};

struct ValidationReport {
  std::vector<CaseResult> cases;
  double mean_absolute_error = 0;  // over cases with a numeric metric
  double worst_error = 0;          // signed error of the worst case
  std::string worst_case;
  int oom_cases = 0;
  int oom_correct = 0;
};

// Throws InputError on a malformed file.
ValidationReport validate_published_runs(const std::string& folder,
                                         const std::string& profiles_folder);

std::string report_text(const ValidationReport& report);
nlohmann::ordered_json report_json(const ValidationReport& report);

}  // namespace hetplan::validation
