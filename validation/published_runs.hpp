// Predicts the published training runs (a folder of files in the published-runs format: a
// shared `common` configuration, per-case overrides and a `measured` figure) with the analytic
// estimator, from datasheet peaks and the chip profiles' documented efficiency priors, and
// reports the error of each prediction. Optionally the digital twin simulates the same plans
// (in its worker processes), and its error is reported beside the estimator's. docs/validation.md.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/twin/runner.hpp"
#include "validation/training_run.hpp"

namespace hetplan::validation {

struct CaseResult {
  std::string file;
  std::string id;
  // step_time_s, step_time_ms, tokens_per_s_per_chip, tokens_per_s, samples_per_s,
  // tflops_per_chip, mfu, out_of_memory (docs/validation.md)
  std::string metric;
  double measured = 0;
  double predicted = 0;
  double error = 0;                 // (predicted - measured) / measured; 0 for out_of_memory
  bool feasible = true;             // what the estimator said
  bool correct = true;              // for out_of_memory: predicted infeasible for memory
  double predicted_memory_gib = 0;  // the largest stage peak
  double measured_memory_gib = 0;   // when the source gives it, else 0
  std::vector<std::string> reasons;
  // Where the predicted step goes (seconds) and what fills the fullest stage's memory (GiB),
  // so a user can see which term a case's error comes from.
  struct Breakdown {
    double step_s = 0, compute_s = 0, bubble_s = 0, optimizer_s = 0;
    double tensor_parallel_s = 0, pipeline_s = 0, data_parallel_s = 0, expert_parallel_s = 0;
    double weights_gib = 0, gradients_gib = 0, optimizer_gib = 0, activations_gib = 0,
           head_gib = 0, transient_gib = 0;
  } breakdown;
  // With the twin, for a step-time or throughput case the estimator found feasible: the
  // simulated prediction of the same metric and its error, or why the case was not simulated.
  std::optional<double> twin_predicted;
  double twin_error = 0;
  std::string twin_not_simulated;
};

struct ValidationReport {
  std::vector<CaseResult> cases;
  double mean_absolute_error = 0;  // over cases with a numeric metric
  double worst_error = 0;          // signed error of the worst case
  std::string worst_case;
  int oom_cases = 0;
  int oom_correct = 0;
  // With the twin (ValidationOptions::twin), over the cases it simulated.
  bool twin = false;
  int twin_cases = 0;
  double twin_mean_absolute_error = 0;
  double twin_analytic_mean_absolute_error = 0;  // the estimator's, over the same cases
  double twin_worst_error = 0;                   // signed error of the twin's worst case
  std::string twin_worst_case;
  double twin_largest_gap = 0;  // twin error minus analytic error, largest in magnitude
  std::string twin_largest_gap_case;
};

// The digital twin's side of the validation: each step-time or throughput case the estimator
// finds feasible is also simulated (no jitter, seed 0), all of them in one pool of workers.
struct TwinValidation {
  sim::twin::WorkerCommand worker;  // hetplan-twin
  int parallel = 1;                 // workers at a time
};

struct ValidationOptions {
  std::optional<TwinValidation> twin;  // none: the estimator alone
};

// Throws InputError on a malformed file. A case the twin cannot simulate (its input refused,
// its worker failed) is reported in the case, not thrown.
ValidationReport validate_published_runs(const std::string& folder,
                                         const std::string& profiles_folder,
                                         const ValidationOptions& options = {});

// The cases of the published-run files in `folder` (or of the one file it names) that measured a figure (out-of-memory cases
// are left out) as training runs on their profiles from `profiles_folder`: what calibration from
// runs fits and cross-validation checks. A run's source is the folder's name and the file's
// ("published-runs/korthikanti-table5.yaml"), whatever the folder's path. Throws InputError as
// validate_published_runs does.
std::vector<TrainingRun> published_training_runs(const std::string& folder,
                                                 const std::string& profiles_folder);

std::string report_text(const ValidationReport& report);
nlohmann::ordered_json report_json(const ValidationReport& report);

}  // namespace hetplan::validation
