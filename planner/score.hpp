// Scoring one pipeline: the exact layer split under each stage's memory cap, then the
// estimator's assembly. The search calls this for every plan it scores; the benchmark times it.
#pragma once

#include <limits>
#include <vector>

#include "core/cluster.hpp"
#include "core/workload.hpp"
#include "sim/estimator.hpp"

namespace hetplan::planner {

enum class ScoreStatus {
  ok,                 // `estimate` holds the plan's estimate, `slots` its layer split
  stage_too_small,    // stage `stage` cannot hold even one chunk of layers in memory
  layers_do_not_fit,  // the stages together cannot hold every layer
  cut_off,            // a bound shows the step would take at least the cutoff
};

struct PipelineScore {
  ScoreStatus status = ScoreStatus::ok;
  int stage = -1;
};

// Places the model's layers on the stages (`kernels`, first to last; each stage holds a
// multiple of the settings' virtual stages) by the exact split, and estimates the step into
// `estimate`. `slots` receives the stages with their layers. The caller has checked the
// structure: micro_batches = global batch / (dp x micro-batch), and with interleaving a
// multiple of the stage count. When a lower bound on the step time (docs/planner.md#bounds)
// reaches `cutoff_s`, it stops early with cut_off: no split of these stages is faster.
PipelineScore score_pipeline(const Cluster& cluster, const ModelShape& model,
                             const sim::StepSettings& settings, int micro_batches,
                             const std::vector<const sim::StageKernel*>& kernels,
                             std::vector<sim::StageSlot>& slots, sim::Estimate& estimate,
                             double cutoff_s = std::numeric_limits<double>::infinity());

}  // namespace hetplan::planner
