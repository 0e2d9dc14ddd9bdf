// A real training run the step model can be fitted to or checked against: the cluster,
// workload and plan it ran, what it measured, and where that was read (docs/calibration.md#runs).
// Published-run files give one a case (validation/published_runs.hpp); a training log of a
// scenario's plan gives one too (validate --run's inputs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cluster.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/workload.hpp"
#include "importers/training_logs.hpp"

namespace hetplan::validation {

struct TrainingRun {
  std::string id;      // a published case's id, or the training log's file name
  std::string source;  // the file it was read from: cross-validation leaves out a source at once
  std::string sha256;  // of that file's bytes
  SourceLocation location;  // where the run is stated (a case's line; the log's first line)
  Cluster cluster;
  Workload workload;
  Plan plan;
  // What the run measured, as its source states it: a time of the step (metric_is_time: the
  // figure is metric_scale x the step) or a rate (metric_scale / the step).
  std::string metric;
  double measured = 0;
  bool metric_is_time = true;
  double metric_scale = 1;
  std::optional<double> measured_memory_gib;  // the largest stage's, where the source gives it

  double measured_step_s() const {
    return metric_is_time ? measured / metric_scale : metric_scale / measured;
  }
  // The run's metric for a step of `step_s` seconds.
  double metric_of(double step_s) const {
    if (metric_is_time) return metric_scale * step_s;
    return step_s > 0 ? metric_scale / step_s : 0.0;
  }
  // The chip profile ids the run's plan uses (those of the islands its stages sit on).
  std::vector<std::string> chips() const;
  // The chip its first stage runs on (what groups it by silicon); empty when none is known.
  std::string first_chip() const {
    const auto all = chips();
    return all.empty() ? std::string() : all.front();
  }
};

// Throws InputError at `log_path` when the layout the log states (world size, pp, dp) is not
// `plan`'s: the log is of another run.
void check_log_layout(const importers::TrainingLog& log, const Plan& plan,
                      const std::string& log_path);

// A site's own run: the training log `log_path` (Megatron-LM, MindSpeed-LLM, ...; what
// `validate --run` reads) of `plan_path` on `scenario_path`. Its measured step is the median
// iteration after the warm-up. Throws InputError when the log has no usable iteration, when the
// plan does not fit the scenario, or when the layout the log states (world size, pp, dp) is not
// the plan's.
TrainingRun training_log_run(const std::string& log_path, const std::string& scenario_path,
                             const std::string& plan_path);

}  // namespace hetplan::validation
