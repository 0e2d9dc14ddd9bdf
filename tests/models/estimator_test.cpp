#include "sim/estimator.hpp"

#include <gtest/gtest.h>

#include "formats/loaders.hpp"
#include "tests/support/llama.hpp"

namespace hetplan::sim {
namespace {

const std::string kProfiles = std::string(HETPLAN_SOURCE_DIR) + "/profiles/";

Island island(const std::string& name, std::size_t chip, int nodes, const std::string& zone) {
  Island i;
  i.name = name;
  i.chip = chip;
  i.nodes = nodes;
  i.chips_per_node = 8;
  i.nic_count = 8;
  i.nic_speed = 25e9;
  i.zone = zone;
  i.nodes_per_leaf = nodes;
  return i;
}

Cluster a100_cluster(int nodes) {
  Cluster c;
  c.name = "test";
  c.fabric.zones = {"a", "b"};
  c.fabric.leaf_uplink_speed = 50e9;
  c.chips.push_back(formats::load_chip(kProfiles + "nvidia-a100-sxm4-80gb.yaml"));
  c.islands.push_back(island("gpu", 0, nodes, "a"));
  return c;
}

Workload small_llama() { return test::small_llama(16, 64); }

Plan pipeline(int stages, int tp, int dp, const std::string& island_name = "gpu") {
  Plan plan;
  plan.name = "p";
  const int layers = 16 / stages;
  for (int i = 0; i < stages; ++i) {
    PlanStage s;
    s.island = island_name;
    s.first_layer = i * layers;
    s.num_layers = layers;
    s.tp = tp;
    s.dp = dp;
    plan.stages.push_back(s);
  }
  return plan;
}

TEST(Estimator, SingleStageHasNoBubble) {
  const auto e = estimate_step(a100_cluster(1), small_llama(), pipeline(1, 1, 1));
  ASSERT_TRUE(e.feasible) << (e.reasons.empty() ? "" : e.reasons[0]);
  EXPECT_EQ(e.micro_batches, 64);
  EXPECT_DOUBLE_EQ(e.bubble_s, 0.0);
  EXPECT_DOUBLE_EQ(e.step_time_s, 64 * e.stages[0].micro_batch_s + e.optimizer_s);
  EXPECT_DOUBLE_EQ(e.tokens_per_s, 64.0 * 2048 / e.step_time_s);
}

TEST(Estimator, OneFOneBFillsAndDrainsAroundTheBottleneck) {
  const auto e = estimate_step(a100_cluster(1), small_llama(), pipeline(4, 1, 1));
  ASSERT_TRUE(e.feasible);
  double max_tau = 0, min_tau = 1e30, sum_tau = 0;
  for (const auto& s : e.stages) {
    max_tau = std::max(max_tau, s.micro_batch_s);
    min_tau = std::min(min_tau, s.micro_batch_s);
    sum_tau += s.micro_batch_s;
  }
  EXPECT_DOUBLE_EQ(e.bubble_s, sum_tau - max_tau);
  // The other p - 1 stages fill and drain once each.
  EXPECT_GE(e.bubble_s, 3 * min_tau);
  EXPECT_LE(e.bubble_s, 3 * max_tau);
  EXPECT_DOUBLE_EQ(e.step_time_s,
                   64 * max_tau + e.bubble_s + e.exposed.data_parallel + e.optimizer_s);
}

TEST(Estimator, InterleavingShrinksTheBubble) {
  Plan plain = pipeline(4, 1, 1);
  Plan interleaved = plain;
  interleaved.schedule = Schedule::interleaved;
  interleaved.virtual_stages = 2;
  const auto a = estimate_step(a100_cluster(1), small_llama(), plain);
  const auto b = estimate_step(a100_cluster(1), small_llama(), interleaved);
  ASSERT_TRUE(b.feasible) << (b.reasons.empty() ? "" : b.reasons[0]);
  EXPECT_LT(b.bubble_s, 0.6 * a.bubble_s);
}

TEST(Estimator, MemoryThatDoesNotFitIsAReasonNotAnError) {
  Workload w = small_llama();
  w.model.layers = 160;
  w.model.hidden = 8192;
  w.model.heads = 64;
  w.model.kv_heads = 64;
  w.model.ffn = 28672;
  Plan plan = pipeline(1, 1, 1);
  plan.stages[0].num_layers = 160;
  const auto e = estimate_step(a100_cluster(1), w, plan);
  EXPECT_FALSE(e.feasible);
  ASSERT_FALSE(e.reasons.empty());
  EXPECT_NE(e.reasons[0].find("stage 0 (gpu): needs"), std::string::npos) << e.reasons[0];
  EXPECT_NE(e.reasons[0].find("nvidia-a100-sxm4-80gb has 80.0 GiB"), std::string::npos)
      << e.reasons[0];
}

TEST(Estimator, RejectsPlansThatCannotRun) {
  Cluster c = a100_cluster(1);
  auto reasons_of = [&](const Plan& plan, const Workload& w = small_llama()) {
    return estimate_step(c, w, plan).reasons;
  };
  // More chips than the island has.
  EXPECT_EQ(reasons_of(pipeline(1, 1, 16))[0], "island gpu has 8 chips; the plan places 16 there");
  // tp that does not divide the heads.
  EXPECT_EQ(reasons_of(pipeline(1, 3, 1))[0].substr(0, 47),
            "stage 0 (gpu): tp 3 does not divide the 16 atte");
  // Stages with different dp.
  Plan uneven = pipeline(2, 1, 2);
  uneven.stages[1].dp = 1;
  EXPECT_EQ(reasons_of(uneven)[0].substr(0, 40), "stages have different data-parallel degr");
  // A missing operator on the chip.
  c.chips[0].op_coverage[OpClass::flash_attention] = {Support::missing, 1.0};
  const auto missing = reasons_of(pipeline(1, 1, 1));
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0],
            "stage 0 (gpu): chip nvidia-a100-sxm4-80gb lacks operator class flash_attention");
  // An inference-only chip.
  c.chips[0].op_coverage.clear();
  c.chips[0].role = ChipRole::inference;
  EXPECT_EQ(reasons_of(pipeline(1, 1, 1))[0],
            "stage 0 (gpu): NVIDIA A100-SXM4-80GB is an inference-only chip");
}

TEST(Estimator, UnconnectedZonesCannotShareAPipeline) {
  Cluster c = a100_cluster(1);
  c.islands.push_back(island("far", 0, 1, "b"));
  Plan plan = pipeline(2, 1, 1);
  plan.stages[1].island = "far";
  const auto e = estimate_step(c, small_llama(), plan);
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.reasons.back(), "stages 0 and 1: zones a and b have no link between them");
  c.fabric.zone_links.push_back({"a", "b", 12.5e9, 2e-6});
  const auto linked = estimate_step(c, small_llama(), plan);
  EXPECT_TRUE(linked.feasible);
  EXPECT_GT(linked.exposed.cross_island, 0.0);
}

TEST(Estimator, SlowerChipsMakeTheirStageTheBottleneck) {
  Cluster c = a100_cluster(1);
  ChipProfile slow = c.chips[0];
  slow.id = "slow";
  slow.peak_flops[DType::bf16] = 312e12 / 2;
  c.chips.push_back(slow);
  c.islands.push_back(island("slow", 1, 1, "a"));
  Plan plan = pipeline(2, 1, 1);
  plan.stages[1].island = "slow";
  const auto e = estimate_step(c, small_llama(), plan);
  ASSERT_TRUE(e.feasible);
  EXPECT_GT(e.stages[1].forward_s, 1.5 * e.stages[0].forward_s);
}

TEST(Estimator, SameInputsSameNumbers) {
  const auto a = estimate_step(a100_cluster(2), small_llama(), pipeline(2, 2, 4));
  const auto b = estimate_step(a100_cluster(2), small_llama(), pipeline(2, 2, 4));
  EXPECT_EQ(a.step_time_s, b.step_time_s);
  EXPECT_EQ(a.mfu, b.mfu);
}

}  // namespace
}  // namespace hetplan::sim
