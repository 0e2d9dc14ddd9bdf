// Calibration from end-to-end training runs: fits a chip profile's in-step terms
// (efficiency.in_step: what a real step loses against the microbenchmarks, docs/models/in-step.md)
// to the step times of runs on that chip, by least squares regularised toward the terms' priors,
// and refuses a fit whose runs cannot tell two terms apart. docs/calibration.md#runs.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chip.hpp"
#include "validation/training_run.hpp"

namespace hetplan::validation {

enum class InStepTerm { gemm, attention, communication, layer_overhead, moe_layer_overhead };
inline constexpr int kInStepTermCount = 5;
inline constexpr std::array<InStepTerm, kInStepTermCount> kInStepTerms{
    InStepTerm::gemm, InStepTerm::attention, InStepTerm::communication,
    InStepTerm::layer_overhead, InStepTerm::moe_layer_overhead};

std::string_view to_string(InStepTerm term);  // its key under efficiency.in_step
std::optional<InStepTerm> in_step_term_named(std::string_view name);

// A term's prior, in the fit's coordinates: the logarithm of a factor, or an overhead in
// seconds (docs/models/in-step.md#priors says where each comes from).
struct TermPrior {
  double value = 0;
  double sigma = 0;
};
TermPrior in_step_prior(InStepTerm term);

struct RunFitOptions {
  // The terms to fit; empty: every term the runs inform.
  std::vector<InStepTerm> terms;
  // Where two informed terms move every run alike: false refuses the fit (InputError naming
  // both and the run that would separate them), true keeps the less informed at its prior.
  bool keep_inseparable = false;
  // One run's spread around the model in the logarithm of its step time: what the model cannot
  // say of any run (its software release, its machine), docs/models/in-step.md#fit.
  double run_sigma = 0.05;
  // The profile ids whose runs count, all sharing the terms fitted (the profile's own id when
  // empty; calibrated versions "<id>.<label>" count as <id>).
  std::vector<std::string> chips;
  std::string label = "runs";  // the new version's id is base.id + "." + label
};

struct FittedTerm {
  InStepTerm term = InStepTerm::gemm;
  bool fitted = false;     // false: left at its prior (and unknown in the profile)
  double value = 0;        // as the profile states it: a factor, or seconds
  double sigma = 0;        // its posterior standard deviation, in the fit's coordinates
  double information = 0;  // what the runs tell of it over what its prior does
  std::string note;        // why it was not fitted
};

struct RunCheck {
  std::string id;
  std::string source;
  double measured_step_s = 0;
  double before_s = 0;  // the base profile's prediction
  double after_s = 0;   // the fitted profile's
};

struct RunCalibration {
  ChipProfile profile;  // the new version: base with efficiency.in_step and its runs
  std::vector<FittedTerm> terms;
  std::vector<RunCheck> runs;
  std::vector<std::string> notes;
};

// Whether `run` is on a chip the fit counts (options.chips, else base's id).
bool run_counts(const TrainingRun& run, const ChipProfile& base, const RunFitOptions& options);

// The step time of `run` with `terms` in place of the in-step terms of every chip `chips` names
// (the run's own terms otherwise). 0 when the estimator cannot price it.
double predicted_step(const TrainingRun& run, const InStepTerms& terms,
                      const std::vector<std::string>& chips);

// Fits `base`'s in-step terms to the runs that count (throws InputError when none does, when a
// term asked for is one no run informs, or when two terms cannot be separated and
// keep_inseparable is false). The new profile states the fitted terms, cites the runs (ids,
// files and their SHA-256) and is at evidence level runs.
RunCalibration calibrate_from_runs(const ChipProfile& base, const std::vector<TrainingRun>& runs,
                                   const RunFitOptions& options = {});

}  // namespace hetplan::validation
