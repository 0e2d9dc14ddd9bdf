// Analytic plan evaluations per second on the bundled default scenario.
#include <benchmark/benchmark.h>

#include "formats/loaders.hpp"
#include "sim/estimator.hpp"

namespace {

void BM_EstimateDefaultScenario(benchmark::State& state) {
  const auto scenario =
      hetplan::formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/default.yaml");
  const hetplan::Plan& plan = *scenario.reference_plan;
  for (auto _ : state) {
    auto estimate = hetplan::sim::estimate_step(scenario.cluster, scenario.workload, plan);
    benchmark::DoNotOptimize(estimate.step_time_s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EstimateDefaultScenario);

void BM_LoadDefaultScenario(benchmark::State& state) {
  for (auto _ : state) {
    auto scenario = hetplan::formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) +
                                                    "/scenarios/default.yaml");
    benchmark::DoNotOptimize(scenario.cluster.islands.size());
  }
}
BENCHMARK(BM_LoadDefaultScenario);

}  // namespace

BENCHMARK_MAIN();
