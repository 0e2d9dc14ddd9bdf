// Scoring one pipeline: the exact layer split under each stage's memory cap, then the
// estimator's assembly. The search calls this for every plan it scores; the benchmark times it.
#pragma once

#include <functional>
#include <limits>
#include <unordered_map>
#include <utility>
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

// What scoring pipelines computes again and again for the same stage kernels: the boundary
// between two kernels, and a stage's memory cap (layers) at a position of a pipeline. Valid for
// one set of kernels under one step setting and micro-batch count; the search keeps one per
// setting. Its entries are pure functions of their keys, so results never depend on what was
// scored before.
class ScoreCache {
 public:
  // The boundary time between stages of kernels `a` and `b` (sim::stage_boundary).
  template <typename Compute>
  double boundary(const sim::StageKernel* a, const sim::StageKernel* b, Compute&& compute) {
    const auto [it, inserted] = boundaries_.try_emplace({a, b}, 0.0);
    if (inserted) it->second = compute();
    return it->second;
  }
  // The cap of a stage of kernel `k` at index `stage` of `stages` (-1 before it is known).
  int& cap(const sim::StageKernel* k, int stage, int stages) {
    return caps_.try_emplace({k, (static_cast<long long>(stages) << 32) | stage}, -1).first->second;
  }

 private:
  struct PairHash {
    template <typename A, typename B>
    std::size_t operator()(const std::pair<A, B>& key) const {
      const std::size_t h1 = std::hash<A>{}(key.first);
      return h1 ^ (std::hash<B>{}(key.second) + 0x9e3779b97f4a7c15ULL + (h1 << 6) + (h1 >> 2));
    }
  };
  std::unordered_map<std::pair<const sim::StageKernel*, const sim::StageKernel*>, double, PairHash>
      boundaries_;
  std::unordered_map<std::pair<const sim::StageKernel*, long long>, int, PairHash> caps_;
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
                             double cutoff_s = std::numeric_limits<double>::infinity(),
                             ScoreCache* cache = nullptr);

}  // namespace hetplan::planner
