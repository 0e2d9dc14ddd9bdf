#include "planner/score.hpp"

#include <algorithm>
#include <cmath>

#include "core/framework.hpp"
#include "models/memory.hpp"
#include "planner/layer_split.hpp"

namespace hetplan::planner {

double whole_layer_level(std::span<LevelGroup> groups, long layers, double below) {
  long held = 0;
  double level = -std::numeric_limits<double>::infinity();
  for (auto& g : groups) {
    // Layers a stage of the group holds at `below` (none when that is not a number).
    const double allowed = (below - g.fixed) / g.per_layer;
    const int at_below = allowed >= 1 ? static_cast<int>(std::min(std::floor(allowed), 1e9)) : 0;
    g.held = std::max(0, std::min(g.cap, at_below) - 1);
    held += static_cast<long>(g.count) * g.held;
    if (g.held > 0) level = std::max(level, g.fixed + g.held * g.per_layer);
  }
  while (held < layers) {
    LevelGroup* next = nullptr;
    double cheapest = std::numeric_limits<double>::infinity();
    for (auto& g : groups) {
      const double cost = g.fixed + (g.held + 1) * g.per_layer;
      if (g.held < g.cap && cost < cheapest) {
        cheapest = cost;
        next = &g;
      }
    }
    if (!next) return std::numeric_limits<double>::infinity();
    ++next->held;
    held += next->count;
    level = std::max(level, cheapest);
  }
  return level;
}

PipelineScore score_pipeline(const Cluster& cluster, const ModelShape& model,
                             const sim::StepSettings& settings, int micro_batches,
                             const std::vector<const sim::StageKernel*>& kernels,
                             std::vector<sim::StageSlot>& slots, sim::Estimate& estimate,
                             double cutoff_s, ScoreCache* cache) {
  const int v = settings.virtual_stages;
  const int m = micro_batches;
  const int p = static_cast<int>(kernels.size());
  const int layers = model.layers;
  SplitProblem local_problem;
  SplitProblem& problem = cache ? cache->problem : local_problem;
  problem.layers = layers;
  problem.granularity = v;
  problem.micro_batches = m;
  problem.virtual_stages = v;
  problem.stages.assign(static_cast<std::size_t>(p), SplitStage{});
  std::vector<sim::Boundary> local_boundaries;
  std::vector<sim::Boundary>& boundaries = cache ? cache->pipeline_boundaries : local_boundaries;
  boundaries.clear();
  // Under partial recompute (N layers of each chunk recomputed) a stage holds at least N v
  // layers; those cost a fixed extra, the others the time of a layer that keeps its activations.
  const sim::StageRecompute recompute = sim::settings_recompute(settings);
  const Recompute marginal = sim::marginal_recompute(settings);
  const int least = marginal != recompute.mode ? recompute.layers * v : 0;
  // A mixture's dense layers are its first ones (docs/planner.md#dense-layers): the first
  // stage holds them all, in its first chunk, so their difference from the MoE layer's time
  // is a fixed part of its time, and every stage's time, and the split, stay exact.
  const int dense = model.moe() ? std::min(model.dense_layers, layers) : 0;
  // Under the combined 1F1B schedule a stage's paired operations hide up to the kernel's share
  // of their all-to-alls; the share depends on the stage's place (docs/planner.md#ep-overlap).
  const bool ep_overlapped =
      settings.training.overlap_ep_comm && sim::ep_overlap_refusal(settings, p).empty();
  for (int j = 0; j < p; ++j) {
    const sim::StageKernel& k = *kernels[static_cast<std::size_t>(j)];
    SplitStage& s = problem.stages[static_cast<std::size_t>(j)];
    // Each stage's time is the step model's (sim::stage_micro_batch), as the line through the
    // least layers it holds and one more chunk of them (exact from there on).
    sim::StagePlace place;
    place.first = j == 0;
    place.last = j == p - 1;
    place.dense_layers = j == 0 ? dense : 0;
    place.recompute = recompute;
    place.chunks = v;
    const bool paired = ep_overlapped && k.ep_overlap > 0;
    if (paired) place.ep_paired = sim::ep_overlap_paired_share(p, j, v, m);
    s.min_layers = j == 0 && dense > 0 ? std::max(least, dense * v) : least;
    const int from = std::max(v, s.min_layers);
    auto compute_line = [&] { return sim::stage_line(k, place, from, v); };
    const int flags = (place.first ? 1 : 0) | (place.last ? 2 : 0);
    const sim::StageLine line = cache ? cache->line(&k, flags, paired ? j : 0, paired ? p : 0,
                                                    compute_line)
                                      : compute_line();
    s.per_layer_s = line.per_layer_s;
    s.fixed_s += line.fixed_s;
    if (j + 1 < p) {
      const sim::StageKernel& next = *kernels[static_cast<std::size_t>(j + 1)];
      auto compute = [&] { return sim::stage_boundary(cluster, model, settings, k, next); };
      const sim::Boundary boundary = cache ? cache->boundary(&k, &next, compute) : compute();
      boundaries.push_back(boundary);
      s.fixed_s += boundary.time_s;
      problem.stages[static_cast<std::size_t>(j + 1)].fixed_s += boundary.time_s;
    }
  }
  if (std::isfinite(cutoff_s)) {
    PipelineFloor floor;
    for (const auto& s : problem.stages)
      floor.add(s.per_layer_s, s.fixed_s, std::max(v, s.min_layers));
    if (floor.value(layers, m, v) >= cutoff_s) return {ScoreStatus::cut_off, -1};
  }
  for (int j = 0; j < p; ++j) {
    const sim::StageKernel& k = *kernels[static_cast<std::size_t>(j)];
    SplitStage& s = problem.stages[static_cast<std::size_t>(j)];
    int* cached = cache ? cache->cap(&k, j, p) : nullptr;
    if (cached && *cached >= 0) {
      if (*cached < v) return {ScoreStatus::stage_too_small, j};
      s.max_layers = *cached;
      continue;
    }
    // Memory cap: a stage's memory grows linearly with its layers (from the least it holds;
    // the first stage's dense layers among them).
    const int base = std::max(v, s.min_layers);
    auto memory = [&](int n) {
      const int dense_here = j == 0 ? sim::stage_dense_layers(model, 0, n, v) : 0;
      return sim::slot_memory(model, settings, k, n, j, p, m, recompute, dense_here).total();
    };
    const double one = memory(base);
    const double two = memory(base + v);
    const double capacity = k.memory_usable.value_or(0.0);
    int cap = 0;
    if (one <= capacity) {
      const double slope = two - one;
      // In doubles until capped by the layers: a small slope beside a large capacity makes the
      // quotient pass an int's range.
      const double fitting =
          slope > 0 ? base + v * std::floor((capacity - one) / slope + 1e-9) : layers;
      cap = static_cast<int>(std::min<double>(fitting, layers / v * v));
      // Guard the linear step against rounding at the edge.
      while (cap > base && memory(cap) > capacity) cap -= v;
    }
    if (cached) *cached = cap;
    if (cap < base) return {ScoreStatus::stage_too_small, j};
    s.max_layers = cap;
  }
  SplitWorkspace local_work;
  Split local_split;
  Split& split = cache ? cache->split : local_split;
  if (!solve_split(problem, cache ? cache->work : local_work, split))
    return {ScoreStatus::layers_do_not_fit, -1};
  // A split the framework of some stage's island cannot express is not a plan that runs: with
  // model chunks MindSpeed-LLM takes equal middle stages only (core/framework.hpp,
  // docs/planner.md#expressible-splits), so the best such split is taken instead.
  if (v > 1 && !first_last_form(split.layers)) {
    const bool first_last_only =
        std::any_of(kernels.begin(), kernels.end(), [&](const sim::StageKernel* k) {
          return needs_first_last_split(framework_of(cluster.chip_of(*k->island)), v);
        });
    if (first_last_only && !solve_first_last_split(problem, split))
      return {ScoreStatus::layers_do_not_fit, -1};
  }

  slots.clear();
  std::vector<models::StageMemory> local_memories;
  std::vector<models::StageMemory>& memories = cache ? cache->pipeline_memories : local_memories;
  std::vector<sim::StageSyncTimes> local_syncs;
  std::vector<sim::StageSyncTimes>& syncs = cache ? cache->pipeline_syncs : local_syncs;
  memories.clear();
  syncs.clear();
  int first = 0;
  for (int j = 0; j < p; ++j) {
    const sim::StageKernel* k = kernels[static_cast<std::size_t>(j)];
    const int n = split.layers[static_cast<std::size_t>(j)];
    // A mixture's dense layers sit on the first stage (its layers start at 0, so its place
    // and layer count fix them); a later stage holding some is not memoised.
    const int dense_here = sim::stage_dense_layers(model, first, n, v);
    slots.push_back({k, first, n});
    first += n;
    auto compute = [&] {
      ScoreCache::SlotCost cost;
      cost.memory = sim::slot_memory(model, settings, *k, n, j, p, m, recompute, dense_here);
      cost.sync = sim::stage_sync_times(*k, settings.training, cost.memory);
      return cost;
    };
    // A stage's memory depends on its place only through the chunks it holds in flight and
    // whether it holds the embedding or the head (models::chunks_in_flight), so stages alike in
    // those share an entry, whatever the pipeline's length: the entry is keyed by them (a flag
    // word in place of the stage count; a count past the key's field is not cached).
    const double in_flight = models::chunks_in_flight(p, j, v, m);
    const int place = in_flight < (1 << 16) ? static_cast<int>(in_flight) : 1 << 16;
    const int of = (j == 0 ? 1 : 0) | (j == p - 1 ? 2 : 0) | (p > 1 ? 4 : 0);
    const ScoreCache::SlotCost cost = cache && (j == 0 || dense_here == 0)
                                          ? cache->slot_cost(k, place, of, n, compute)
                                          : compute();
    memories.push_back(cost.memory);
    syncs.push_back(cost.sync);
  }
  // The assumptions are left out: the plans the search ranks are estimated again in full.
  sim::assemble_estimate(cluster, model, settings, slots, estimate,
                         sim::EstimateOptions{}.memory_headroom, false, &boundaries, &memories,
                         &syncs);
  return {};
}

}  // namespace hetplan::planner
