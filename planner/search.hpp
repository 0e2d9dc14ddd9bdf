// Plan search: which islands a job should run on and how. For each island alone, for all
// islands running separate jobs (resource-pool mixing) and for one job whose pipeline stages
// span islands (task-level mixing), it finds the fastest (or cheapest) plan in its search
// space, scores it with the analytic estimator, and records why candidates were rejected.
// docs/planner.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan.hpp"
#include "core/scenario.hpp"
#include "planner/progress.hpp"
#include "sim/estimator.hpp"
#include "sim/replica_groups.hpp"

namespace hetplan::planner {

enum class Mode { single_island, resource_pool, task_level };
std::string_view to_string(Mode mode);

struct SearchOptions {
  std::vector<int> micro_batches = {1, 2, 4};  // and the workload's own
  std::vector<Recompute> recomputes = {Recompute::none, Recompute::selective, Recompute::full};
  // With full recompute, also these partial ones: the first N layers of each model chunk of a
  // stage recomputed, the others keeping their activations (Megatron's block method); each
  // stage then holds at least N layers per chunk. The workload's own count is added.
  std::vector<int> recompute_layers = {1, 2, 4, 8};
  std::vector<int> zero_stages = {0, 1};  // and the workload's own
  // Model chunks per stage: 1 is 1F1B, more is interleaved with that many chunks. Empty: every
  // count the layers allow (each chunk of each of at least two stages holds a whole number of
  // layers, Megatron's rule: v divides the layers and v <= layers / 2).
  std::vector<int> virtual_stages;
  // Task-level: enumerate every ordered island subset and every (tp, stages) per island, and
  // prune nothing. Exponential; for checking the real search on small cases.
  bool exhaustive = false;
  // Task-level: the most islands one pipeline may span (0: as many as there are). The search's
  // time grows steeply with the islands it combines (docs/planner.md, "Not yet"); a cap bounds
  // it the same way on every machine, where max_seconds depends on the machine's speed.
  int max_pipeline_islands = 0;
  std::size_t top = 10;
  sim::EstimateOptions estimate;
  // Long searches: who hears of the progress, who can stop it, and a time budget in seconds
  // (0: none). A search that stops early returns the best plans found until then and says so
  // in SearchResult::stopped; a search that runs to the end is the same whatever these are.
  SearchObserver* observer = nullptr;
  const StopToken* stop = nullptr;
  double max_seconds = 0;
  // Threads that search settings side by side; 0: one per core. The result is the same for
  // any count (docs/planner.md#threads).
  std::size_t threads = 0;
};

// A constraint pass: what it rejected and a few examples of why.
struct PassReport {
  std::string name;
  std::size_t rejected = 0;
  std::vector<std::string> examples;  // the first few distinct reasons
};

// A phase of the search: how long it took and how many plans it scored. Timings differ from
// run to run; the front ends print them only on request.
struct PhaseReport {
  std::string name;
  std::size_t evaluations = 0;
  double seconds = 0;
};

struct RankedPlan {
  Mode mode = Mode::single_island;
  Plan plan;               // resource pool: empty (see jobs)
  sim::Estimate estimate;  // of plan, exactly what `hetplan eval` computes
  double search_step_s = 0;  // the step time the search scored it with (same model, cached)
  double tokens_per_s = 0;
  int chips = 0;
  int software_stacks = 0;
  std::optional<double> cost_per_million_tokens;
  std::vector<std::string> islands;  // in pipeline order
  std::vector<std::string> notes;
  std::vector<RankedPlan> jobs;  // resource pool: one single-island job per island that has one
};

struct IslandBaseline {
  std::string island;
  std::optional<RankedPlan> best;  // the island alone; empty when it cannot train the job
  std::string why_not;
};

// Data parallelism across chip types (docs/planner.md#mixed-data-parallel): one job whose
// replica groups run on islands with a declared gradient path between them, each group its
// island's best plan alone, the global batch shared so that the groups finish together.
struct MixedDataParallelPlan {
  Plan plan;  // with replica_groups, the balanced shares and their gradient weights
  sim::MixedDataParallelStep step;
  std::vector<std::string> islands;
  std::string flag;  // sim::cross_vendor_flag of its path
  int software_stacks = 0;  // distinct runtimes of its islands, as the pool counts them
};

struct SearchResult {
  Objective objective = Objective::throughput;
  // Best first by the objective: the best plan of each shape (mode, islands, tp, dp) in the
  // top, the best of each mode, and the resource pool (whose tokens/s add up separate jobs).
  std::vector<RankedPlan> ranked;
  std::vector<IslandBaseline> islands;
  std::optional<RankedPlan> resource_pool;
  std::optional<RankedPlan> task_level;
  // Candidates only where the cluster declares gradient paths: the feasible ones, fastest
  // first, and why the others cannot train the job ("ascend-910b + dcu-k100: ...").
  std::vector<MixedDataParallelPlan> mixed_data_parallel;
  std::vector<std::string> mixed_data_parallel_refused;
  std::vector<PassReport> passes;
  std::vector<PhaseReport> phases;
  std::size_t evaluations = 0;  // plans scored (layer split + assembly)
  std::size_t pruned = 0;       // candidates a bound proved could not beat the best
  std::size_t settings = 0;     // (dtype, micro-batch, recompute, ZeRO, schedule, dp) tried
  std::size_t settings_total = 0;  // all the search would have tried
  // Empty when the search ran to the end. Otherwise why it stopped early ("stopped on request",
  // "the time budget of 30 s ran out"): its plans are the best found until then, not
  // necessarily the best there are.
  std::string stopped;
  int max_pipeline_islands = 0;  // SearchOptions' cap the search ran under (0: none)
};

// The best plan for one job (single-island or task-level), or null when there is none.
const RankedPlan* best_job(const SearchResult& result);

// The indices into `result.ranked` of the best `count` plans that are one job (not the pool)
// and can run: what the twin simulates of a ranking.
std::vector<std::size_t> runnable_jobs(const SearchResult& result, std::size_t count);

SearchResult search_plans(const Scenario& scenario, const SearchOptions& options = {});

// Sentences explaining the result: why the best plan beats the runner-up and each
// single-island baseline, and the three-state comparison.
std::vector<std::string> explain(const SearchResult& result);

}  // namespace hetplan::planner
