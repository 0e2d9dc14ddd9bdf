// The digital twin's speed and memory: one training step of a 1,024-rank, an 8,192-rank and a
// 65,536-rank plan, and of a GPT-3-175B-scale interleaved plan on 4,096 chips, simulated on a
// leaf-spine fabric, each in its own worker process as `hetplan simulate` runs it. Counters: the
// worker's peak resident memory (MiB), the flows simulated, the wall time per flow (µs, the
// worker's whole run over its flows: the figure whose flatness across sizes docs/twin.md#speed
// follows), the same after the worker's start (the wall time of a worker that rejects an empty
// input at once: process, libraries, parse), the simulated step (s) and the ranks simulated
// (fewer than the plan's when alike replicas are folded). Run
// ./build/bench/hetplan_bench --benchmark_filter=Twin.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>

#include "formats/loaders.hpp"
#include "sim/estimator.hpp"
#include "sim/twin/runner.hpp"
#include "sim/twin_input.hpp"

namespace {

// The default scenario's Ascend 910B island grown to 1,024 nodes (8,192 chips, 16 nodes per
// leaf, 64 leaves), and a plan of `stages` x tp 8 x `dp` on it with the layers split evenly.
hetplan::sim::TwinInput large_plan(int stages, int dp, int global_batch, int nodes = 1024) {
  auto scenario = hetplan::formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) +
                                                  "/scenarios/default.yaml");
  hetplan::Island& island = scenario.cluster.islands.front();
  island.nodes = nodes;
  island.free_nodes = -1;
  scenario.workload.training.global_batch = global_batch;
  hetplan::Plan plan;
  plan.name = "bench-pp" + std::to_string(stages) + "-tp8-dp" + std::to_string(dp);
  const int layers = scenario.workload.model.layers;
  for (int s = 0; s < stages; ++s) {
    hetplan::PlanStage stage;
    stage.island = island.name;
    stage.first_layer = s * layers / stages;
    stage.num_layers = (s + 1) * layers / stages - stage.first_layer;
    stage.tp = 8;
    stage.dp = dp;
    plan.stages.push_back(stage);
  }
  const auto estimate = hetplan::sim::estimate_step(scenario.cluster, scenario.workload, plan);
  if (!estimate.feasible) throw std::runtime_error(plan.name + ": " + estimate.reasons.front());
  return hetplan::sim::make_twin_input(scenario.cluster, scenario.workload, plan, estimate);
}

// The least of three starts of the worker on an input it rejects before simulating.
double worker_start_s(const hetplan::sim::twin::WorkerCommand& worker) {
  double least = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    hetplan::sim::twin::run_workers({hetplan::sim::TwinInput{}}, worker, 1);
    least = std::min(
        least, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return least;
}

void simulate(benchmark::State& state, const hetplan::sim::TwinInput& input) {
  const hetplan::sim::twin::WorkerCommand worker{HETPLAN_TWIN_WORKER};
  long peak_kib = 0;
  double wall_s = 0;
  double flows = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const auto outcome = hetplan::sim::twin::run_workers({input}, worker, 1).front();
    wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!outcome.result) {
      state.SkipWithError(outcome.error.c_str());
      return;
    }
    peak_kib = std::max(peak_kib, outcome.peak_rss_kib);
    flows += static_cast<double>(outcome.result->flows);
    state.counters["flows"] = static_cast<double>(outcome.result->flows);
    state.counters["step_s"] = outcome.result->step_time_s;
    state.counters["simulated_ranks"] = static_cast<double>(outcome.result->simulated_ranks);
  }
  state.counters["peak_rss_MiB"] = static_cast<double>(peak_kib) / 1024.0;
  if (flows > 0) {
    state.counters["us_per_flow"] = wall_s / flows * 1e6;
    const double started = static_cast<double>(state.iterations()) * worker_start_s(worker);
    state.counters["us_per_flow_after_start"] = (wall_s - started) / flows * 1e6;
  }
}

// 1,024 ranks: 8 stages x tp 8 x dp 16, 32 micro-batches of one sequence.
void BM_Twin1024Ranks(benchmark::State& state) {
  simulate(state, large_plan(8, 16, 512));
}
BENCHMARK(BM_Twin1024Ranks)->Unit(benchmark::kSecond)->Iterations(3);

// 8,192 ranks: 16 stages x tp 8 x dp 64, 32 micro-batches of one sequence.
void BM_Twin8192Ranks(benchmark::State& state) {
  simulate(state, large_plan(16, 64, 2048));
}
BENCHMARK(BM_Twin8192Ranks)->Unit(benchmark::kSecond)->Iterations(1);

// 65,536 ranks: 16 stages x tp 8 x dp 512 on 8,192 nodes, 32 micro-batches of one sequence.
void BM_Twin65536Ranks(benchmark::State& state) {
  simulate(state, large_plan(16, 512, 16384, 8192));
}
BENCHMARK(BM_Twin65536Ranks)->Unit(benchmark::kSecond)->Iterations(1);

// The last two with every replica simulated (docs/twin.md#folding): the cost of the engine
// itself, as plans whose replicas differ (jitter, slow nodes) run it.
void BM_Twin8192RanksWhole(benchmark::State& state) {
  auto input = large_plan(16, 64, 2048);
  input.fold_replicas = false;
  simulate(state, input);
}
BENCHMARK(BM_Twin8192RanksWhole)->Unit(benchmark::kSecond)->Iterations(1);

void BM_Twin65536RanksWhole(benchmark::State& state) {
  auto input = large_plan(16, 512, 16384, 8192);
  input.fold_replicas = false;
  simulate(state, input);
}
BENCHMARK(BM_Twin65536RanksWhole)->Unit(benchmark::kSecond)->Iterations(1);

// GPT-3 175B (96 layers, hidden 12288, 96 heads, GELU MLP of 4 h, vocabulary 50257, 2,048
// tokens, Brown et al. 2020) on 512 nodes of the same island: 8 stages x tp 8 x dp 64 under the
// interleaved schedule with 12 chunks per stage (one layer each), full recompute, a global batch
// of 1,536 sequences (24 micro-batches per replica).
void BM_TwinGpt3ScaleInterleaved(benchmark::State& state) {
  auto scenario = hetplan::formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) +
                                                  "/scenarios/default.yaml");
  hetplan::Island& island = scenario.cluster.islands.front();
  island.nodes = 512;
  island.free_nodes = -1;
  hetplan::ModelShape& model = scenario.workload.model;
  model.model_type = "custom";
  model.layers = 96;
  model.hidden = 12288;
  model.heads = 96;
  model.kv_heads = 96;
  model.ffn = 4 * 12288;
  model.vocab = 50257;
  model.activation = hetplan::Activation::gelu;
  model.norm = hetplan::Norm::layernorm;
  model.linear_bias = true;
  scenario.workload.training.seq_len = 2048;
  scenario.workload.training.global_batch = 1536;
  scenario.workload.training.micro_batch = 1;
  scenario.workload.training.recompute = hetplan::Recompute::full;
  hetplan::Plan plan;
  plan.name = "gpt3-pp8-v12-tp8-dp64";
  plan.schedule = hetplan::Schedule::interleaved;
  plan.virtual_stages = 12;
  for (int s = 0; s < 8; ++s) {
    hetplan::PlanStage stage;
    stage.island = island.name;
    stage.first_layer = 12 * s;
    stage.num_layers = 12;
    stage.tp = 8;
    stage.dp = 64;
    plan.stages.push_back(stage);
  }
  const auto estimate = hetplan::sim::estimate_step(scenario.cluster, scenario.workload, plan);
  if (!estimate.feasible) {
    state.SkipWithError((plan.name + ": " + estimate.reasons.front()).c_str());
    return;
  }
  simulate(state, hetplan::sim::make_twin_input(scenario.cluster, scenario.workload, plan, estimate));
}
BENCHMARK(BM_TwinGpt3ScaleInterleaved)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
