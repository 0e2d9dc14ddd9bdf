// Data parallelism across chip types at the step level (sim/replica_groups): replica groups on
// the default cluster's Ascend and Hygon islands training a 1.3B-class model together, with a
// fast and a slow declared gradient path between them.
#include "sim/replica_groups.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "formats/loaders.hpp"
#include "tests/support/llama.hpp"

namespace hetplan::sim {
namespace {

const std::string kSource = HETPLAN_SOURCE_DIR;

struct Site {
  Cluster cluster;
  Workload workload;
};

// The default scenario with a 24-layer, 2048-wide model (global batch 512 of one sequence per
// micro-batch) and one declared path between the Ascend and Hygon islands.
Site setup(GradientPathKind kind, double bandwidth, double latency) {
  Scenario scenario = formats::load_scenario(kSource + "/scenarios/default.yaml");
  test::shrink_to_1_3b(scenario.workload.model);
  GradientPath path;
  path.island_a = "ascend-910b";
  path.island_b = "dcu-k100";
  path.kind = kind;
  path.bandwidth = bandwidth;
  path.latency = latency;
  path.source = "assumed";
  scenario.cluster.gradient_paths.push_back(path);
  return {scenario.cluster, scenario.workload};
}

// One pipeline stage of the whole model, tp x dp on one island.
Plan group(const std::string& island, int tp, int dp) {
  Plan plan;
  plan.name = island + "-group";
  PlanStage stage;
  stage.island = island;
  stage.first_layer = 0;
  stage.num_layers = 24;
  stage.tp = tp;
  stage.dp = dp;
  plan.stages.push_back(stage);
  return plan;
}

// The group alone with `micro_batches` per replica.
Estimate alone(const Site& s, const Plan& plan, int micro_batches) {
  Workload workload = s.workload;
  workload.training.global_batch = plan.stages.front().dp * micro_batches;
  return estimate_step(s.cluster, workload, plan);
}

const double kFast = 50e9;     // 400 Gbps per node, device to device
const double kSlow = 0.125e9;  // 1 Gbps per node through the hosts

TEST(ReplicaGroups, SharesAddUpToTheGlobalBatchAndWeightsToOne) {
  const Site s = setup(GradientPathKind::device_rdma, kFast, 10e-6);
  const auto step = estimate_mixed_data_parallel(
      s.cluster, s.workload, {group("ascend-910b", 1, 32), group("dcu-k100", 1, 16)});
  ASSERT_TRUE(step.feasible) << (step.reasons.empty() ? "" : step.reasons.front());
  ASSERT_EQ(step.groups.size(), 2u);
  long long samples = 0;
  double weights = 0;
  for (const ReplicaGroupStep& g : step.groups) {
    EXPECT_EQ(g.samples, static_cast<long long>(g.replicas) * g.micro_batch * g.micro_batches);
    EXPECT_DOUBLE_EQ(g.gradient_weight, static_cast<double>(g.micro_batch * g.micro_batches) / 512);
    samples += g.samples;
    weights += g.replicas * g.gradient_weight;
  }
  EXPECT_EQ(samples, 512);
  EXPECT_NEAR(weights, 1.0, 1e-12);
  // 32 + 16 chips on 4 + 2 nodes of 8.
  EXPECT_EQ(step.chips, 48);
  EXPECT_EQ(step.groups[0].nodes, 4);
  EXPECT_EQ(step.groups[1].nodes, 2);
  // The step: the slowest group's own estimate at its share, then the exchange.
  const double slowest =
      std::max(step.groups[0].estimate.step_time_s, step.groups[1].estimate.step_time_s);
  EXPECT_DOUBLE_EQ(step.slowest_group_s, slowest);
  EXPECT_DOUBLE_EQ(step.step_time_s, slowest + step.exchange_s);
  EXPECT_DOUBLE_EQ(step.tokens_per_s, 512.0 * s.workload.training.seq_len / step.step_time_s);
}

// The exchange by hand: the model's gradients in fp32 (bf16 training accumulates and reduces
// them in fp32), the 2-node group's nodes each holding half and sending and receiving half of
// that (2 (G - 1) / G = 1) over the path, plus two steps of its latency.
TEST(ReplicaGroups, ExchangeOfTheModelsGradientsOverThePathByHand) {
  const Site s = setup(GradientPathKind::host_staged, kSlow, 1e-3);
  const auto step = estimate_mixed_data_parallel(
      s.cluster, s.workload, {group("ascend-910b", 1, 32), group("dcu-k100", 1, 16)});
  ASSERT_TRUE(step.feasible) << (step.reasons.empty() ? "" : step.reasons.front());
  const double bytes = 4 * s.workload.model.total_parameters();
  EXPECT_DOUBLE_EQ(step.exchange_bytes, bytes);
  EXPECT_NEAR(step.exchange_s, bytes / 2 / kSlow + 2e-3, 1e-9 * step.exchange_s);
  EXPECT_EQ(step.path_kind, GradientPathKind::host_staged);
  EXPECT_FALSE(step.assumptions.empty());
}

// Through a parameter server on the Hygon group's 2 nodes (only when a plan asks for one): the
// Ascend group pushes its sum node with node over the 2 lanes, then pulls the total back, each
// phase one share (bytes / 2) over the path, plus one latency each; a ring of two groups sends
// and receives one share at once, so the server takes twice as long here.
TEST(ReplicaGroups, AParameterServerPushesThenPulls) {
  const Site s = setup(GradientPathKind::host_staged, kSlow, 1e-3);
  const std::vector<Plan> groups{group("ascend-910b", 1, 32), group("dcu-k100", 1, 16)};
  const auto ring = estimate_mixed_data_parallel(s.cluster, s.workload, groups);
  GroupExchange server;
  server.algorithm = GradientExchange::parameter_server;
  server.server = 1;
  const auto served = estimate_mixed_data_parallel(s.cluster, s.workload, groups, {}, nullptr, server);
  ASSERT_TRUE(served.feasible) << (served.reasons.empty() ? "" : served.reasons.front());
  const double bytes = 4 * s.workload.model.total_parameters();
  EXPECT_NEAR(served.exchange_s, 2 * (bytes / 2 / kSlow) + 2e-3, 1e-9 * served.exchange_s);
  EXPECT_NEAR(served.exchange_s - 2e-3, 2 * (ring.exchange_s - 2e-3), 1e-9 * served.exchange_s);
  EXPECT_DOUBLE_EQ(served.slowest_group_s, ring.slowest_group_s);
  EXPECT_TRUE(std::any_of(served.assumptions.begin(), served.assumptions.end(),
                          [](const std::string& a) { return a.find("parameter server on dcu-k100") != std::string::npos; }));
  server.server = 2;
  const auto outside = estimate_mixed_data_parallel(s.cluster, s.workload, groups, {}, nullptr, server);
  EXPECT_FALSE(outside.feasible);
}

// ZeRO across groups (a plan's choice): the distributed optimizer's state sharded over all 48
// replicas instead of each group's own 32 and 16; the exchange is a reduce-scatter of the fp32
// gradients and, after the optimizer step, an all-gather of the bf16 weights, each half of a ring
// all-reduce of its bytes over the 2 lanes; and the practice's warning.
TEST(ReplicaGroups, ZeroAcrossGroupsShardsOverEveryReplicaAndWarns) {
  Site s = setup(GradientPathKind::host_staged, kSlow, 1e-3);
  s.workload.training.zero_stage = 1;
  const std::vector<Plan> groups{group("ascend-910b", 1, 32), group("dcu-k100", 1, 16)};
  const auto inside = estimate_mixed_data_parallel(s.cluster, s.workload, groups);
  GroupExchange across;
  across.zero_across_groups = true;
  const auto shared = estimate_mixed_data_parallel(s.cluster, s.workload, groups, {}, nullptr, across);
  ASSERT_TRUE(shared.feasible) << (shared.reasons.empty() ? "" : shared.reasons.front());
  ASSERT_TRUE(inside.feasible);
  const double p = s.workload.model.total_parameters();
  EXPECT_NEAR(shared.groups[0].estimate.stages[0].memory.optimizer * 48,
              inside.groups[0].estimate.stages[0].memory.optimizer * 32,
              1e-9 * inside.groups[0].estimate.stages[0].memory.optimizer * 32);
  EXPECT_NEAR(shared.groups[1].estimate.stages[0].memory.optimizer * 48,
              inside.groups[1].estimate.stages[0].memory.optimizer * 16,
              1e-9 * inside.groups[1].estimate.stages[0].memory.optimizer * 16);
  const double by_hand = 0.5 * (4 * p / 2) / kSlow + 1e-3 + 0.5 * (2 * p / 2) / kSlow + 1e-3;
  EXPECT_NEAR(shared.exchange_s, by_hand, 1e-9 * by_hand);
  EXPECT_DOUBLE_EQ(shared.exchange_bytes, 6 * p);
  ASSERT_EQ(shared.warnings.size(), 1u);
  EXPECT_NE(shared.warnings[0].find("does not balance chips of different speeds"), std::string::npos);
  EXPECT_TRUE(inside.warnings.empty());

  s.workload.training.zero_stage = 0;
  const auto unsharded = estimate_mixed_data_parallel(s.cluster, s.workload, groups, {}, nullptr, across);
  ASSERT_FALSE(unsharded.feasible);
  EXPECT_NE(unsharded.reasons.front().find("needs one ZeRO stage of at least 1"), std::string::npos);
  across.algorithm = GradientExchange::parameter_server;
  EXPECT_FALSE(estimate_mixed_data_parallel(s.cluster, s.workload, groups, {}, nullptr, across).feasible);
}

// ZeRO-3 across groups: every micro-batch gathers the weights from all replicas, a collective
// over every group, so the groups run the same 10 micro-batches (480 = 10 x 48) at the slowest
// group's pace, and the two gathers per micro-batch over the slow path (each half a ring
// all-reduce of the bf16 weights) are exposed beyond what that pace hides.
TEST(ReplicaGroups, ZeroThreeAcrossGroupsRunsInLockstep) {
  Site s = setup(GradientPathKind::host_staged, kSlow, 1e-3);
  s.workload.training.zero_stage = 3;
  s.workload.training.global_batch = 480;
  const std::vector<Plan> groups{group("ascend-910b", 1, 32), group("dcu-k100", 1, 16)};
  GroupExchange across;
  across.zero_across_groups = true;
  const auto step = estimate_mixed_data_parallel(s.cluster, s.workload, groups, {}, nullptr, across);
  ASSERT_TRUE(step.feasible) << (step.reasons.empty() ? "" : step.reasons.front());
  EXPECT_EQ(step.groups[0].micro_batches, 10);
  EXPECT_EQ(step.groups[1].micro_batches, 10);
  const double fixed = std::max(step.groups[0].fixed_s, step.groups[1].fixed_s);
  const double pace = std::max(step.groups[0].per_micro_batch_s, step.groups[1].per_micro_batch_s);
  EXPECT_NEAR(step.slowest_group_s, fixed + 10 * pace, 1e-9 * step.slowest_group_s);
  const double p = s.workload.model.total_parameters();
  const double gather = 0.5 * (2 * p / 2) / kSlow + 1e-3;
  EXPECT_NEAR(step.zero3_gather_s, 10 * std::max(0.0, 2 * gather - pace), 1e-9 * step.zero3_gather_s);
  EXPECT_NEAR(step.exchange_s, 0.5 * (4 * p / 2) / kSlow + 1e-3, 1e-9 * step.exchange_s);
  EXPECT_DOUBLE_EQ(step.step_time_s, step.slowest_group_s + step.zero3_gather_s + step.exchange_s);
  EXPECT_EQ(step.warnings.size(), 2u);
  // 512 sequences do not split into equal micro-batches over 48 replicas.
  s.workload.training.global_batch = 512;
  EXPECT_FALSE(estimate_mixed_data_parallel(s.cluster, s.workload, groups, {}, nullptr, across).feasible);
}

// Each group's step is a line in its micro-batch count: the two-point fit predicts the
// estimate at the balanced share exactly.
TEST(ReplicaGroups, EachGroupsStepIsLinearInItsMicroBatches) {
  const Site s = setup(GradientPathKind::device_rdma, kFast, 10e-6);
  const auto step = estimate_mixed_data_parallel(
      s.cluster, s.workload, {group("ascend-910b", 2, 16), group("dcu-k100", 1, 16)});
  ASSERT_TRUE(step.feasible) << (step.reasons.empty() ? "" : step.reasons.front());
  for (const ReplicaGroupStep& g : step.groups) {
    EXPECT_GT(g.per_micro_batch_s, 0);
    EXPECT_NEAR(g.estimate.step_time_s, g.fixed_s + g.micro_batches * g.per_micro_batch_s,
                1e-9 * g.estimate.step_time_s);
  }
}

// No other split of the 512 sequences makes the slower group faster: every (m0, m1) with
// 32 m0 + 16 m1 = 512, each group estimated alone at its count.
TEST(ReplicaGroups, BalancedSharesBeatEveryOtherSplit) {
  const Site s = setup(GradientPathKind::device_rdma, kFast, 10e-6);
  const Plan a = group("ascend-910b", 1, 32);
  const Plan b = group("dcu-k100", 1, 16);
  const auto step = estimate_mixed_data_parallel(s.cluster, s.workload, {a, b});
  ASSERT_TRUE(step.feasible) << (step.reasons.empty() ? "" : step.reasons.front());
  int splits = 0;
  for (int m0 = 1; 32 * m0 < 512; ++m0) {
    const int m1 = (512 - 32 * m0) / 16;
    const double slowest = std::max(alone(s, a, m0).step_time_s, alone(s, b, m1).step_time_s);
    EXPECT_GE(slowest, step.slowest_group_s * (1 - 1e-12)) << "m0 " << m0 << ", m1 " << m1;
    ++splits;
  }
  EXPECT_EQ(splits, 15);
}

// "Can my Hygon nodes join the Ascend job as extra replicas?": with a fast device path and a
// small model, the 16 extra replicas make the step shorter than the Ascend replicas alone; over
// a slow host-staged path the exchange costs more than they save.
TEST(ReplicaGroups, AFastPathMakesExtraReplicasPayAndASlowOneDoesNot) {
  const Plan a = group("ascend-910b", 1, 32);
  const Plan b = group("dcu-k100", 1, 16);
  const Site fast = setup(GradientPathKind::device_rdma, kFast, 10e-6);
  const double ascend_alone = alone(fast, a, 16).step_time_s;  // 32 replicas x 16 = 512
  const auto with_fast = estimate_mixed_data_parallel(fast.cluster, fast.workload, {a, b});
  ASSERT_TRUE(with_fast.feasible);
  EXPECT_LT(with_fast.step_time_s, ascend_alone);

  const Site slow = setup(GradientPathKind::host_staged, kSlow, 1e-3);
  const auto with_slow = estimate_mixed_data_parallel(slow.cluster, slow.workload, {a, b});
  ASSERT_TRUE(with_slow.feasible);
  EXPECT_GT(with_slow.step_time_s, ascend_alone);
  // Why: the groups themselves are as fast as over the fast path; the exchange is what loses.
  EXPECT_DOUBLE_EQ(with_slow.slowest_group_s, with_fast.slowest_group_s);
  EXPECT_GT(with_slow.exchange_s, ascend_alone - with_slow.slowest_group_s);
}

TEST(ReplicaGroups, WhatCannotTrainTogetherSaysWhy) {
  const Site s = setup(GradientPathKind::device_rdma, kFast, 10e-6);
  auto reason = [&](const std::vector<Plan>& groups) {
    const auto step = estimate_mixed_data_parallel(s.cluster, s.workload, groups);
    EXPECT_FALSE(step.feasible);
    return step.reasons.empty() ? std::string() : step.reasons.front();
  };
  EXPECT_NE(reason({group("ascend-910b", 1, 32)}).find("at least two groups"), std::string::npos);
  // The default cluster declares Ascend-Cambricon, the setup Ascend-Hygon: not Hygon-Cambricon.
  EXPECT_NE(reason({group("dcu-k100", 1, 16), group("mlu370", 1, 16)}).find("gradient_paths"),
            std::string::npos);
  EXPECT_NE(reason({group("ascend-910b", 1, 16), group("ascend-910b", 1, 16)})
                .find("replicas on one island are one group"),
            std::string::npos);
  Plan fp16 = group("dcu-k100", 1, 16);
  fp16.dtype = DType::fp16;
  EXPECT_NE(reason({group("ascend-910b", 1, 32), fp16}).find("one dtype"), std::string::npos);
  Plan spans = group("dcu-k100", 1, 16);
  spans.stages.front().num_layers = 12;
  PlanStage second = spans.stages.front();
  second.island = "ascend-910b";
  second.first_layer = 12;
  spans.stages.push_back(second);
  EXPECT_NE(reason({group("mlu370", 1, 16), spans}).find("one chip type"), std::string::npos);
  // 32 x m0 + 16 x m1 = 8 has no solution with both groups taking part.
  Site tiny = s;
  tiny.workload.training.global_batch = 8;
  const auto none = estimate_mixed_data_parallel(
      tiny.cluster, tiny.workload, {group("ascend-910b", 1, 32), group("dcu-k100", 1, 16)});
  EXPECT_FALSE(none.feasible);
  ASSERT_FALSE(none.reasons.empty());
  EXPECT_NE(none.reasons.front().find("add up"), std::string::npos);
}

}  // namespace
}  // namespace hetplan::sim
