// Scoring one pipeline: the exact layer split under each stage's memory cap, then the
// estimator's assembly. The search calls this for every plan it scores; the benchmark times it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "core/cluster.hpp"
#include "core/workload.hpp"
#include "planner/layer_split.hpp"
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

// A lower bound on the step of any layer split of a pipeline's stages (docs/planner.md#bounds):
// the bottleneck is at least the fluid balance of the layers and at least any stage's time with
// its least layers; the stage times sum to at least their fixed parts plus every layer on the
// fastest stage. Stages are added in pipeline order, one at a time or `count` alike at once.
// A fixed part may be negative (the first stage's dense layers of a mixture, cheaper than the
// per-layer time counts them): the balance then holds that many layers' worth more.
class PipelineFloor {
 public:
  void add(double per_layer_s, double fixed_s, int least_layers, int count = 1) {
    if (count <= 0) return;
    for (int c = 0; c < count; ++c) inverse_sum_ += 1.0 / per_layer_s;
    if (fixed_s < 0) credit_layers_ += count * fixed_s / per_layer_s;
    fixed_sum_ += count * fixed_s;
    floor_tau_ = std::max(floor_tau_, fixed_s + least_layers * per_layer_s);
    fastest_ = std::min(fastest_, per_layer_s);
  }
  // The bottleneck of the fluid balance alone (no stage's least time), a level no split of
  // whole layers goes below.
  double fluid_tau(int layers) const { return (layers + credit_layers_) / inverse_sum_; }
  // `least_tau`: a bottleneck the caller knows every split reaches (whole_layer_level's).
  double value(int layers, int micro_batches, int virtual_stages, double least_tau = 0) const {
    const double tau = std::max({fluid_tau(layers), floor_tau_, least_tau});
    return (micro_batches - 1.0 / virtual_stages) * tau +
           (layers * fastest_ + fixed_sum_) / virtual_stages;
  }

 private:
  double inverse_sum_ = 0, fixed_sum_ = 0, floor_tau_ = 0;
  double credit_layers_ = 0;  // the negative fixed parts over their per-layer times
  double fastest_ = std::numeric_limits<double>::infinity();
};

// Stages alike for whole_layer_level: `count` of them, each holding at most
// min(cap, floor((tau - fixed) / per_layer)) layers under a bottleneck tau. `held` is the
// function's scratch.
struct LevelGroup {
  double per_layer = 0;
  double fixed = 0;
  int count = 0;
  int cap = std::numeric_limits<int>::max();
  int held = 0;
};

// The least bottleneck at which the groups hold `layers` whole layers (infinity where their
// caps cannot): a stage holds a whole number of layers, so with few layers per stage this lies
// well above the fluid balance (five layers per stage: up to a fifth above). `below` is a level
// known not to exceed it (the fluid balance); each group starts one layer under what `below`
// allows it, whatever the rounding, and the level then rises to the next layer of whichever
// group it costs least until every layer is held: a few steps per group. A lower bound on every
// split, so the bounds built on it prune nothing a split could reach (docs/planner.md#bounds).
double whole_layer_level(std::span<LevelGroup> groups, long layers, double below);

// A table of values by a 64-bit key, open addressing, at most half full: a hit allocates
// nothing. `clear` forgets every entry and keeps the buffers.
template <typename Value>
class KeyedTable {
 public:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  // The value of `key`, computed by `compute` the first time (`key` must not be kEmpty).
  template <typename Compute>
  Value get(std::uint64_t key, Compute&& compute) {
    if (2 * (used_.size() + 1) > keys_.size()) grow();
    const std::size_t mask = keys_.size() - 1;
    std::size_t slot = mix(key) & mask;
    while (keys_[slot] != kEmpty) {
      if (keys_[slot] == key) return values_[slot];
      slot = (slot + 1) & mask;
    }
    keys_[slot] = key;
    values_[slot] = compute();
    used_.push_back(slot);
    return values_[slot];
  }
  void clear() {
    for (std::size_t slot : used_) keys_[slot] = kEmpty;
    used_.clear();
  }

 private:
  static std::size_t mix(std::uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return static_cast<std::size_t>(key);
  }
  void grow() {
    std::vector<std::uint64_t> keys(std::max<std::size_t>(256, 2 * keys_.size()), kEmpty);
    std::vector<Value> values(keys.size());
    const std::size_t mask = keys.size() - 1;
    for (std::size_t& used : used_) {
      std::size_t slot = mix(keys_[used]) & mask;
      while (keys[slot] != kEmpty) slot = (slot + 1) & mask;
      keys[slot] = keys_[used];
      values[slot] = values_[used];
      used = slot;
    }
    keys_ = std::move(keys);
    values_ = std::move(values);
  }
  std::vector<std::uint64_t> keys_;
  std::vector<Value> values_;
  std::vector<std::size_t> used_;
};

// What scoring pipelines computes again and again for the same stage kernels: the boundary
// between two kernels, a stage's time as a line in its layers, its memory and its memory cap
// (layers) at a position of a pipeline. Valid for
// the kernels it was made for (one contiguous array) under one step setting and micro-batch
// count; the search keeps one per setting. Its entries are pure functions of their keys, so
// results never depend on what was scored before. Kernels outside the array are not cached.
class ScoreCache {
 public:
  explicit ScoreCache(std::span<const sim::StageKernel> kernels) { reset(kernels); }

  // Forgets every entry and serves `kernels` from now on, keeping the buffers.
  void reset(std::span<const sim::StageKernel> kernels) {
    kernels_ = kernels;
    boundaries_.resize(kernels.size() * kernels.size());
    known_.assign(kernels.size() * kernels.size(), 0);
    caps_.resize(kernels.size());
    for (auto& caps : caps_) caps.clear();
    memories_.clear();
    lines_.clear();
  }

  // The boundary between stages of kernels `a` and `b` (sim::stage_boundary, which `compute`
  // calls).
  template <typename Compute>
  sim::Boundary boundary(const sim::StageKernel* a, const sim::StageKernel* b, Compute&& compute) {
    const std::size_t i = index(a), j = index(b);
    if (i == kNone || j == kNone) return compute();
    const std::size_t k = i * kernels_.size() + j;
    if (!known_[k]) {
      boundaries_[k] = compute();
      known_[k] = 1;
    }
    return boundaries_[k];
  }
  // score_pipeline's buffers, kept between the plans it scores: scoring allocates nothing once
  // they have grown to the longest pipeline.
  SplitProblem problem;
  SplitWorkspace work;
  Split split;
  std::vector<sim::Boundary> pipeline_boundaries;  // of the pipeline being scored
  std::vector<models::StageMemory> pipeline_memories;  // of the pipeline being scored
  std::vector<sim::StageSyncTimes> pipeline_syncs;     // of the pipeline being scored

  // A stage's memory and its data-parallel synchronisation (a function of its parameters).
  struct SlotCost {
    models::StageMemory memory;
    sim::StageSyncTimes sync;
  };

  // The memory and synchronisation of a stage of kernel `k` holding `layers` at a place of a
  // pipeline (sim::slot_memory and sim::stage_sync_times, which `compute` calls), the place
  // named by two numbers that together fix what the memory reads of it (score_pipeline: its
  // chunks in flight and whether it is first or last): pipelines of the same kernels share many
  // a stage's place and layers. An open-addressing table, so that a hit allocates nothing.
  template <typename Compute>
  SlotCost slot_cost(const sim::StageKernel* k, int stage, int stages, int layers,
                     Compute&& compute) {
    const std::size_t i = index(k);
    constexpr int kField = 1 << 16;
    if (i == kNone || i >= kField || stage >= kField || stages >= kField || layers >= kField)
      return compute();
    const std::uint64_t key =
        (static_cast<std::uint64_t>(i) << 48) | (static_cast<std::uint64_t>(stage) << 32) |
        (static_cast<std::uint64_t>(stages) << 16) | static_cast<std::uint64_t>(layers);
    return memories_.get(key, compute);
  }

  // The straight line of a stage's time in its layers (sim::stage_line, which `compute` calls)
  // for kernel `k` at a place named by `place` (a few flags) and, where the place's share of
  // paired operations depends on it, the stage's index `stage` of `stages`.
  template <typename Compute>
  sim::StageLine line(const sim::StageKernel* k, int place, int stage, int stages,
                      Compute&& compute) {
    const std::size_t i = index(k);
    constexpr int kField = 1 << 16;
    if (i == kNone || i >= kField || place >= kField || stage >= kField || stages >= kField)
      return compute();
    const std::uint64_t key =
        (static_cast<std::uint64_t>(i) << 48) | (static_cast<std::uint64_t>(place) << 32) |
        (static_cast<std::uint64_t>(stage) << 16) | static_cast<std::uint64_t>(stages);
    return lines_.get(key, compute);
  }

  // The cap of a stage of kernel `k` at index `stage` of `stages`: -1 before it is known, and
  // nullptr for a kernel outside the array.
  int* cap(const sim::StageKernel* k, int stage, int stages) {
    const std::size_t i = index(k);
    if (i == kNone) return nullptr;
    // Pipelines of p stages take the p slots after those of shorter ones.
    const std::size_t slot =
        static_cast<std::size_t>(stages) * static_cast<std::size_t>(stages - 1) / 2 +
        static_cast<std::size_t>(stage);
    std::vector<int>& caps = caps_[i];
    if (slot >= caps.size()) caps.resize(slot + static_cast<std::size_t>(stages) + 1, -1);
    return &caps[slot];
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t index(const sim::StageKernel* k) const {
    if (kernels_.empty() || k < kernels_.data() || k >= kernels_.data() + kernels_.size())
      return kNone;
    return static_cast<std::size_t>(k - kernels_.data());
  }
  std::span<const sim::StageKernel> kernels_;
  std::vector<sim::Boundary> boundaries_;  // [a][b]
  std::vector<char> known_;                // [a][b]: computed
  std::vector<std::vector<int>> caps_;  // per kernel, by pipeline length and stage
  // slot_cost's entries, keyed by kernel, place and layers in 16 bits each, and line's.
  KeyedTable<SlotCost> memories_;
  KeyedTable<sim::StageLine> lines_;
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
