#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "planner/search.hpp"

namespace hetplan::planner {
namespace {

std::string num(double value, int digits = 1) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string shape(const RankedPlan& plan) {
  if (plan.mode == Mode::resource_pool) {
    return "the resource pool (" + std::to_string(plan.jobs.size()) + " separate jobs)";
  }
  return plan.plan.name;
}

// The parts of a step that differ most between two plans, largest first.
std::string differences(const sim::Estimate& a, const sim::Estimate& b) {
  struct Part {
    const char* name;
    double delta;  // b - a: positive where a is faster
  };
  const double compute_a = a.compute_s, compute_b = b.compute_s;
  Part parts[] = {
      {"compute on the bottleneck stage", compute_b - compute_a},
      {"pipeline bubble", b.bubble_s - a.bubble_s},
      {"tensor-parallel communication", b.exposed.tensor_parallel - a.exposed.tensor_parallel},
      {"stage-boundary sends", (b.exposed.pipeline + b.exposed.cross_island) -
                                   (a.exposed.pipeline + a.exposed.cross_island)},
      {"exposed gradient reduction", b.exposed.data_parallel - a.exposed.data_parallel},
      {"expert-parallel all-to-all", b.exposed.expert_parallel - a.exposed.expert_parallel},
      {"optimizer step", b.optimizer_s - a.optimizer_s},
  };
  std::sort(std::begin(parts), std::end(parts),
            [](const Part& x, const Part& y) { return std::abs(x.delta) > std::abs(y.delta); });
  std::string out;
  for (int k = 0; k < 2; ++k) {
    if (std::abs(parts[k].delta) < 1e-3) break;
    out += std::string(k ? "; " : "") + parts[k].name + " " + (parts[k].delta > 0 ? "-" : "+") +
           num(std::abs(parts[k].delta), 2) + " s";
  }
  return out;
}

// tokens/s with its 80% interval, where the plan's chips state one.
std::string rate(const RankedPlan& plan) {
  std::string out = num(plan.tokens_per_s, 0) + " tokens/s";
  if (const auto& band = plan.estimate.step_band) {
    const sim::Interval i = sim::rate_interval(plan.tokens_per_s, *band);
    out += " (80%: " + num(i.low, 0) + "-" + num(i.high, 0) + ")";
  }
  return out;
}

// What would narrow the band of `chip`, at `level` (docs/models/uncertainty.md).
std::string narrowing(EvidenceLevel level) {
  switch (level) {
    case EvidenceLevel::datasheet:
      return "a probe on one of its nodes (validation/probe/hetplan_probe.py, then hetplan "
             "calibrate --from) measures its kernels, and a training run on it (hetplan "
             "calibrate --from-runs) gives it a band of its own";
    case EvidenceLevel::microbenchmarks:
    case EvidenceLevel::probe:
      return "a training run on it (hetplan calibrate --from-runs) gives it a band of its own";
    case EvidenceLevel::runs:
      return "runs from more sources narrow its band";
  }
  return "";
}

// Whether two plans' throughput intervals overlap, and if so the sentence that says so and
// names the measurement that would tell them apart. Empty when they are apart, or when an
// interval is unknown (then `unknown` names the plan whose chips state no band).
std::string indistinguishable(const RankedPlan& best, const std::string& best_name,
                              const RankedPlan& other, const std::string& other_name) {
  const auto& a = best.estimate;
  const auto& b = other.estimate;
  if (!a.step_band || !b.step_band) {
    const RankedPlan& blind = !a.step_band ? best : other;
    return "How sure this ranking is cannot be said: the profile of " +
           blind.estimate.weakest_chip + " states no evidence band.";
  }
  const sim::Interval ia = sim::rate_interval(best.tokens_per_s, *a.step_band);
  const sim::Interval ib = sim::rate_interval(other.tokens_per_s, *b.step_band);
  if (ia.low > ib.high || ib.low > ia.high) return "";
  // The weaker of the two plans' evidence decides.
  const sim::Estimate& weak =
      (b.evidence < a.evidence ||
       (b.evidence == a.evidence &&
        b.step_band->high / b.step_band->low > a.step_band->high / a.step_band->low))
          ? b
          : a;
  return best_name + " and " + other_name + " are within each other's 80% intervals: the estimate "
         "cannot tell which is faster, and the twin shares its compute terms, so it cannot "
         "either (their steps' 80% intervals: " + band_text(*a.step_band) + " and " +
         band_text(*b.step_band) + "). The least known of their chips is " +
         weak.weakest_chip + ", at evidence level " + std::string(to_string(weak.evidence)) +
         ": " + narrowing(weak.evidence) + ".";
}

}  // namespace

std::vector<std::string> explain(const SearchResult& result) {
  std::vector<std::string> out;
  const RankedPlan* best = best_job(result);
  if (!best) {
    out.push_back("No plan can train this job on this cluster; see the rejections by pass.");
    return out;
  }
  const bool by_cost = result.objective == Objective::cost;
  // Best against runner-up (plans for one job).
  const RankedPlan* second = nullptr;
  for (const auto& ranked : result.ranked)
    if (&ranked != best && ranked.mode != Mode::resource_pool) {
      second = &ranked;
      break;
    }
  std::string line = "Best plan for one job: " + shape(*best) + " (" +
                     std::string(to_string(best->mode)) + "), " + rate(*best) + " on " +
                     std::to_string(best->chips) + " chips";
  if (second) {
    line += ", against " + rate(*second) + " for the runner-up " + shape(*second);
    if (by_cost && best->cost_per_million_tokens && second->cost_per_million_tokens) {
      line += " (cost " + num(*best->cost_per_million_tokens, 3) + " against " +
              num(*second->cost_per_million_tokens, 3) + " per million tokens)";
    }
    const std::string diff = differences(best->estimate, second->estimate);
    if (!diff.empty()) line += "; per step: " + diff;
  }
  out.push_back(line + ".");
  if (second) {
    const std::string close = indistinguishable(*best, "The best plan", *second, "the runner-up");
    if (!close.empty()) out.push_back(close);
  }
  if (result.resource_pool && !result.ranked.empty() &&
      result.ranked.front().mode == Mode::resource_pool) {
    out.push_back("The resource pool moves more tokens in all (" +
                  num(result.resource_pool->tokens_per_s, 0) + " tokens/s), but as " +
                  std::to_string(result.resource_pool->jobs.size()) +
                  " separate jobs: it suits independent fine-tunes or evaluations, not one "
                  "faster training run.");
  }
  // Against each island alone.
  for (const auto& baseline : result.islands) {
    if (!baseline.best) {
      out.push_back("Island " + baseline.island + " cannot train the job alone: " +
                    baseline.why_not + ".");
      continue;
    }
    const RankedPlan& alone = *baseline.best;
    if (&alone == best || alone.plan.name == best->plan.name) {
      out.push_back("Island " + baseline.island + " alone is the best plan.");
      continue;
    }
    std::string against = "Against " + baseline.island + " alone (" + alone.plan.name + ", " +
                       num(alone.tokens_per_s, 0) + " tokens/s on " +
                       std::to_string(alone.chips) + " chips): the best plan gives " +
                       num(best->tokens_per_s / alone.tokens_per_s, 2) + "x the throughput on " +
                       std::to_string(best->chips) + " chips";
    const std::string diff = differences(best->estimate, alone.estimate);
    if (!diff.empty()) against += "; per step: " + diff;
    out.push_back(against + ".");
  }
  // The three states side by side.
  const RankedPlan* alone_best = nullptr;
  for (const auto& baseline : result.islands)
    if (baseline.best && (!alone_best || baseline.best->tokens_per_s > alone_best->tokens_per_s))
      alone_best = &*baseline.best;
  std::string states = "Three states: islands alone, best ";
  states += alone_best ? alone_best->plan.name + " at " + rate(*alone_best) + " on " +
                             std::to_string(alone_best->chips) + " chips"
                       : std::string("none");
  states += "; resource pool ";
  states += result.resource_pool
                ? num(result.resource_pool->tokens_per_s, 0) + " tokens/s over " +
                      std::to_string(result.resource_pool->jobs.size()) + " separate jobs on " +
                      std::to_string(result.resource_pool->chips) + " chips"
                : std::string("not possible (fewer than two islands can train the job alone)");
  states += "; task-level ";
  states += result.task_level ? result.task_level->plan.name + " at " +
                                    rate(*result.task_level) + " on " +
                                    std::to_string(result.task_level->chips) + " chips"
                              : std::string("no feasible cross-island plan");
  out.push_back(states + ".");
  if (result.task_level && alone_best) {
    const double gain = result.task_level->tokens_per_s / alone_best->tokens_per_s;
    if (gain > 1.0) {
      out.push_back("Mixing pays for one job: the task-level plan trains " + num(gain, 2) +
                    "x as fast as the best single island, with " +
                    std::to_string(result.task_level->software_stacks) +
                    " software stacks to keep working together.");
      const std::string close = indistinguishable(*result.task_level, "The task-level plan",
                                                  *alone_best, "the best single island");
      if (!close.empty()) out.push_back(close);
    } else {
      out.push_back("Mixing does not pay for one job: the best task-level plan reaches only " +
                    num(gain, 2) + "x the best single island.");
    }
  } else if (!result.task_level && alone_best) {
    out.push_back("Mixing does not pay for one job: no cross-island plan is feasible.");
  }
  // Data parallelism across chip types, where the cluster declares gradient paths: against the
  // best plan for one job and against its fastest island alone (what the extra replicas join).
  if (!result.mixed_data_parallel.empty()) {
    const MixedDataParallelPlan& mixed = result.mixed_data_parallel.front();
    const sim::MixedDataParallelStep& step = mixed.step;
    std::string islands;
    const RankedPlan* fastest_member = nullptr;
    for (const auto& island : mixed.islands) {
      islands += (islands.empty() ? "" : " + ") + island;
      for (const auto& baseline : result.islands)
        if (baseline.island == island && baseline.best &&
            (!fastest_member || baseline.best->tokens_per_s > fastest_member->tokens_per_s))
          fastest_member = &*baseline.best;
    }
    std::string sentence = "Replica groups on " + islands + " (" + mixed.flag + ") give " +
                           num(step.tokens_per_s, 0) + " tokens/s on " +
                           std::to_string(step.chips) + " chips, " +
                           num(step.tokens_per_s / best->tokens_per_s, 2) +
                           "x the best plan for one job";
    if (fastest_member) {
      sentence += " and " + num(step.tokens_per_s / fastest_member->tokens_per_s, 2) + "x " +
                  fastest_member->islands.front() + " alone";
    }
    const double beat = fastest_member ? fastest_member->estimate.step_time_s
                                       : best->estimate.step_time_s;
    const sim::ReplicaGroupStep* slowest = nullptr;
    for (const auto& group : step.groups)
      if (!slowest || group.estimate.step_time_s > slowest->estimate.step_time_s) slowest = &group;
    if (step.step_time_s < beat) {
      sentence += ": the groups take " + num(step.slowest_group_s, 3) +
                  " s and the gradient exchange between them adds " + num(step.exchange_s, 3) +
                  " s, less than the extra replicas save";
    } else if (step.slowest_group_s >= beat && slowest) {
      sentence += ": before any exchange the groups already take " +
                  num(step.slowest_group_s, 3) + " s against " + num(beat, 3) + " s; " +
                  slowest->island + " pays " + num(slowest->fixed_s, 3) +
                  " s per step whatever its share (pipeline fill and drain, its own gradient "
                  "synchronisation, the optimizer step), which no share of the batch in the "
                  "layouts tried makes up for";
    } else {
      sentence += ": the gradient exchange between the groups adds " + num(step.exchange_s, 3) +
                  " s to the " + num(step.slowest_group_s, 3) +
                  " s they take, more than the extra replicas save";
    }
    out.push_back(sentence + ".");
  }
  return out;
}

}  // namespace hetplan::planner
