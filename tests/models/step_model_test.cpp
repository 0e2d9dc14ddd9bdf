// The step model has one definition of a stage's time (sim::stage_micro_batch): the estimate
// assembles it and the plan search's layer split solves its straight line (sim::stage_line).
// These tests hold the two to it on dense and mixture-of-experts stages, first, middle and last,
// under full, partial and selective recompute and the expert-parallel overlap.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "formats/loaders.hpp"
#include "sim/estimator.hpp"
#include "tests/support/plans.hpp"

namespace hetplan::sim {
namespace {

Scenario bundled(const std::string& name) {
  return formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/" + name + ".yaml");
}

struct Case {
  std::string label;
  Scenario scenario;
  std::string island;
  int tp = 1, dp = 1, ep = 1;
  int chunks = 1;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  {
    Case c{"default, 1F1B", bundled("default"), "ascend-910b", 8, 2, 1, 1};
    out.push_back(c);
    c.label = "default, interleaved, partial recompute";
    c.chunks = 2;
    c.scenario.workload.training.recompute = Recompute::full;
    c.scenario.workload.training.recompute_layers = 1;
    out.push_back(c);
  }
  {
    Case c{"DeepSeek-V2-Lite, dense first layer", bundled("deepseek-v2-lite-mixed"), "", 2, 8, 8, 1};
    c.island = c.scenario.cluster.islands.front().name;
    out.push_back(c);
  }
  {
    Case c{"Mixtral, expert-parallel overlap", bundled("mixtral-mixed"), "dcu-k100", 2, 8, 8, 2};
    c.scenario.workload.training.overlap_ep_comm = true;
    out.push_back(c);
  }
  return out;
}

// From the least layers on, the split's line is the stage's time at every layer count: first,
// middle and last stages, with the combined 1F1B schedule's pairing where it applies.
TEST(StepModel, TheSplitsLineIsTheStageTimeAtEveryLayerCount) {
  int checked = 0;
  for (const Case& c : cases()) {
    StepSettings settings;
    settings.training = c.scenario.workload.training;
    settings.micro_batch = settings.training.micro_batch;
    settings.virtual_stages = c.chunks;
    const Island* island = c.scenario.cluster.find_island(c.island);
    ASSERT_NE(island, nullptr) << c.label;
    const StageKernel k = make_stage_kernel(c.scenario.cluster, c.scenario.workload.model, settings,
                                            *island, c.tp, c.dp, {}, c.ep);
    ASSERT_TRUE(k.has_rates) << c.label;
    const StageRecompute recompute = settings_recompute(settings);
    const int least = recompute.mode == Recompute::full && recompute.layers > 0
                          ? recompute.layers * c.chunks
                          : 0;
    const int dense = c.scenario.workload.model.moe() ? c.scenario.workload.model.dense_layers : 0;
    for (int place_index = 0; place_index < 3; ++place_index) {
      StagePlace place;
      place.first = place_index == 0;
      place.last = place_index == 2;
      place.dense_layers = place.first ? dense : 0;
      place.recompute = recompute;
      place.chunks = c.chunks;
      if (settings.training.overlap_ep_comm)
        place.ep_paired = ep_overlap_paired_share(4, place_index, c.chunks, 32);
      const int from = std::max({c.chunks, least, place.dense_layers * c.chunks});
      const StageLine line = stage_line(k, place, from, c.chunks);
      for (int layers = from; layers <= from + 12 * c.chunks; layers += c.chunks) {
        const double time = stage_micro_batch(k, place, layers).total();
        EXPECT_NEAR(line.fixed_s + layers * line.per_layer_s, time, 1e-12 * time)
            << c.label << ", place " << place_index << ", " << layers << " layers";
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 100);
}

// The estimate's stage time is the one definition, plus what only a whole plan knows: the
// boundaries' sends and ZeRO's per-micro-batch collectives.
TEST(StepModel, TheEstimateAssemblesTheStageTime) {
  for (const Case& c : cases()) {
    const int stages = 4;
    const int layers = c.scenario.workload.model.layers;
    std::vector<int> split(static_cast<std::size_t>(stages), layers / stages);
    split.back() += layers % stages;
    if (c.chunks > 1 && layers % (stages * c.chunks) != 0) continue;
    const Plan plan = test::plan_on(c.island, split, c.tp, c.dp, c.chunks, c.ep);
    const Estimate e = estimate_step(c.scenario.cluster, c.scenario.workload, plan);
    ASSERT_EQ(e.stages.size(), static_cast<std::size_t>(stages)) << c.label;
    const StepSettings settings = step_settings(c.scenario.workload, plan);
    const StageKernel k =
        make_stage_kernel(c.scenario.cluster, c.scenario.workload.model, settings,
                          *c.scenario.cluster.find_island(c.island), c.tp, c.dp, {}, c.ep);
    const bool paired = ep_overlap_refusal(settings, stages).empty();
    for (int i = 0; i < stages; ++i) {
      const StageEstimate& se = e.stages[static_cast<std::size_t>(i)];
      StagePlace place;
      place.first = i == 0;
      place.last = i == stages - 1;
      place.dense_layers = stage_dense_layers(c.scenario.workload.model, se.first_layer,
                                              se.num_layers, c.chunks);
      place.recompute = settings_recompute(settings);
      place.chunks = c.chunks;
      if (paired) place.ep_paired = ep_overlap_paired_share(stages, i, c.chunks, e.micro_batches);
      const double own = stage_micro_batch(k, place, se.num_layers).total();
      EXPECT_NEAR(se.micro_batch_s - se.p2p_s - se.zero3_gather_s - se.zero_reduce_s, own,
                  1e-12 * own)
          << c.label << ", stage " << i;
      EXPECT_GT(own, 0) << c.label;
    }
  }
}

}  // namespace
}  // namespace hetplan::sim
