// Plan search speed: pipelines scored per second (the exact layer split and the estimate, as
// the search does for every plan it scores), and whole searches of the default scenario and of
// six chip types x 1,024 and x 4,096 chips, on one and two threads. Each search reports its
// phases as counters (seconds, plans) and the process's peak resident memory so far
// (`peak_rss_MiB`: run one benchmark per process, with --benchmark_filter, for its own).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <limits>
#include <tuple>
#include <vector>

#include "formats/loaders.hpp"
#include "planner/score.hpp"
#include "planner/search.hpp"

namespace {

hetplan::Scenario load(const char* name) {
  return hetplan::formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/" + name);
}

// The default scenario's reference plan, eight stages on three chip types, with its kernels
// built once and a score cache, as the search keeps them per setting.
void BM_ScorePipeline(benchmark::State& state) {
  const auto scenario = load("default.yaml");
  const hetplan::Plan& plan = *scenario.reference_plan;
  const auto settings = hetplan::sim::step_settings(scenario.workload, plan);
  const int dp = plan.stages.front().dp;
  const int micro_batches = settings.training.global_batch / (dp * settings.micro_batch);
  std::vector<std::tuple<std::string, int>> keys;  // one kernel per distinct (island, tp)
  std::vector<hetplan::sim::StageKernel> distinct;
  distinct.reserve(plan.stages.size());
  std::vector<std::size_t> of_stage;
  for (const auto& stage : plan.stages) {
    const auto key = std::make_tuple(stage.island, stage.tp);
    auto found = std::find(keys.begin(), keys.end(), key);
    if (found == keys.end()) {
      keys.push_back(key);
      distinct.push_back(hetplan::sim::make_stage_kernel(
          scenario.cluster, scenario.workload.model, settings,
          *scenario.cluster.find_island(stage.island), stage.tp, dp));
      found = std::prev(keys.end());
    }
    of_stage.push_back(static_cast<std::size_t>(found - keys.begin()));
  }
  std::vector<const hetplan::sim::StageKernel*> kernels;
  for (std::size_t k : of_stage) kernels.push_back(&distinct[k]);
  hetplan::planner::ScoreCache cache(distinct);
  std::vector<hetplan::sim::StageSlot> slots;
  hetplan::sim::Estimate estimate;
  for (auto _ : state) {
    const auto score = hetplan::planner::score_pipeline(
        scenario.cluster, scenario.workload.model, settings, micro_batches, kernels, slots, estimate,
        std::numeric_limits<double>::infinity(), &cache);
    benchmark::DoNotOptimize(score.status);
    benchmark::DoNotOptimize(estimate.step_time_s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ScorePipeline);

// The argument is the thread count. `scale` multiplies every island's nodes.
void search(benchmark::State& state, const char* scenario_name, int scale = 1) {
  auto scenario = load(scenario_name);
  for (auto& island : scenario.cluster.islands) {
    island.nodes *= scale;
    if (island.free_nodes >= 0) island.free_nodes *= scale;
  }
  hetplan::planner::SearchOptions options;
  options.threads = static_cast<std::size_t>(state.range(0));
  hetplan::planner::SearchResult result;
  for (auto _ : state) {
    result = hetplan::planner::search_plans(scenario, options);
    benchmark::DoNotOptimize(result.evaluations);
  }
  state.counters["plans_scored"] = static_cast<double>(result.evaluations);
  state.counters["pruned"] = static_cast<double>(result.pruned);
  for (const auto& phase : result.phases) {
    state.counters[phase.name + "_s"] = phase.seconds;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["peak_rss_MiB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}

void BM_SearchDefaultScenario(benchmark::State& state) {
  search(state, "default.yaml");
}
BENCHMARK(BM_SearchDefaultScenario)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SearchSixChipTypesOf1024(benchmark::State& state) {
  search(state, "six-vendors.yaml");
}
BENCHMARK(BM_SearchSixChipTypesOf1024)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

// The same site with 4,096 chips of each type (512 nodes per island).
void BM_SearchSixChipTypesOf4096(benchmark::State& state) {
  search(state, "six-vendors.yaml", 4);
}
BENCHMARK(BM_SearchSixChipTypesOf4096)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
