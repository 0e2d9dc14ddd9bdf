// How well calibration from runs predicts runs it has not seen: each source of runs (a
// published-run file, a training log) is left out in turn, the in-step terms of every chip are
// fitted to the runs of all the other sources, and the left-out runs are predicted with them.
// Their errors — not the fitted runs' own — are what the project quotes, and their spread is the
// band every estimate on a chip calibrated this way carries (docs/models/uncertainty.md).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/chip.hpp"
#include "validation/published_runs.hpp"
#include "validation/run_calibration.hpp"
#include "validation/training_run.hpp"

namespace hetplan::validation {

// Whether two profiles are one silicon, whose in-step terms runs on either inform: the same
// family and the same dense peak in every dtype (the A800 is the A100's die with a slower
// NVLink; their profiles differ in links only).
bool same_silicon(const ChipProfile& a, const ChipProfile& b);

// An 80% prediction interval of measured over predicted from residuals log(measured /
// predicted): their mean plus and minus Student's t quantile times their spread (times
// sqrt(1 + 1/n), for a new run). Empty with fewer than two residuals.
std::optional<Band> prediction_band(const std::vector<double>& log_residuals);

struct CrossValidatedRun {
  std::string source;
  std::string id;
  std::string chip;  // the profile id the run's first stage uses
  std::string metric;
  double measured = 0;
  double before = 0;    // predicted with the profiles as they are, no in-step terms
  double held_out = 0;  // predicted with terms fitted to every other source's runs
  double in_sample = 0;  // predicted with terms fitted to every run, its own included
  double error_before = 0, error = 0, error_in_sample = 0;  // (predicted - measured) / measured
  // The 80% band from the other sources' held-out residuals (of the chip where it has enough,
  // else of every chip), and whether the measured figure fell inside it.
  std::optional<Band> band;
  bool inside = false;
  double log_residual = 0;  // log(measured step / held-out step)
  double before_log_residual = 0;  // log(measured step / step before any in-step term)
  // log(measured / predicted peak memory of the fullest stage), where the source states it.
  std::optional<double> memory_log_residual;
};

struct ChipTerms {
  std::string chip;                 // the profile id the terms were fitted for
  std::vector<std::string> shares;  // the other profile ids of the same silicon
  RunCalibration fit;               // on every run of that silicon
  int runs = 0;
  int sources = 0;
  // The band of an estimate on this chip: its own held-out residuals where it has at least
  // kOwnBandRuns from two sources or more, else every chip's.
  std::optional<Band> band;
  bool own_band = false;
};
inline constexpr int kOwnBandRuns = 6;

struct CrossValidation {
  std::vector<CrossValidatedRun> runs;
  std::vector<ChipTerms> chips;
  std::optional<Band> pooled_band;  // of every held-out residual
  int inside = 0;                   // runs whose measured figure fell inside their band
  int banded = 0;                   // runs that had a band
  std::vector<std::string> notes;
};

// Leaves each source out in turn (runs of one source share its file). The runs' profiles are
// taken as they are less their in-step terms and evidence.
CrossValidation cross_validate(std::vector<TrainingRun> runs, const RunFitOptions& options = {});

// The held-out predictions as a validation report (each run a case, its file the source's
// name), for the rank agreement and the per-file errors.
ValidationReport held_out_report(const CrossValidation& cv);

// Mean absolute errors over the runs of one set (the folder of their source files, or every
// run): before any in-step term, held out, in sample; and the held-out bands' coverage.
struct SetSummary {
  std::string set;
  int runs = 0;
  double before = 0, held_out = 0, in_sample = 0;
  int inside = 0, banded = 0;
};
// One summary per set in the order the runs first name it, then one of every run ("all").
std::vector<SetSummary> summarize_sets(const CrossValidation& cv);

// Each run's line, then each set's summary.
std::string cross_validation_text(const CrossValidation& cv);
nlohmann::ordered_json cross_validation_json(const CrossValidation& cv);

}  // namespace hetplan::validation
