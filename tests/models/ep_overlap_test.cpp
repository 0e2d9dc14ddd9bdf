// The expert-parallel overlap (Megatron-Core's combined 1F1B schedule, the workload's
// overlap.ep_comm): what it hides, where it does not apply, and the forward operation it adds
// in flight (docs/models/estimator.md#ep-overlap).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/loaders.hpp"
#include "sim/estimator.hpp"
#include "tests/support/plans.hpp"

namespace hetplan::sim {
namespace {

Scenario mixtral(int global_batch) {
  Scenario s =
      formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/mixtral-mixed.yaml");
  s.workload.training.global_batch = global_batch;
  return s;
}

// Mixtral's 32 layers in `stages` equal stages of tp 2, dp 8, ep 8 on the DCU island.
Plan moe_plan(int stages, int virtual_stages) {
  return test::plan_on("dcu-k100", std::vector<int>(static_cast<std::size_t>(stages), 32 / stages),
                       2, 8, virtual_stages, 8);
}

struct Pair {
  Estimate without;
  Estimate with;
};

Pair estimate_both(const Scenario& s, const Plan& plan) {
  Pair out;
  out.without = estimate_step(s.cluster, s.workload, plan);
  Workload overlapped = s.workload;
  overlapped.training.overlap_ep_comm = true;
  out.with = estimate_step(s.cluster, overlapped, plan);
  return out;
}

bool said(const Estimate& e, const std::string& text) {
  for (const auto& a : e.assumptions)
    if (a.find(text) != std::string::npos) return true;
  return false;
}

const double kPrior = models::EfficiencyDefaults{}.ep_comm_overlap;

// Without pipelining, 64 micro-batches: the first forward pass runs alone, then each step
// runs micro-batch i + 1's forward beside micro-batch i's backward, then the last backward
// alone. 63 of 64 forward passes and 63 of 64 backward passes are paired; their compute is far
// longer than their all-to-alls, so each paired all-to-all hides the prior's share:
// exposed = A (1 - 0.8 x 63/64) = 0.2125 A. Nothing else moves.
TEST(ExpertParallelOverlap, WithoutPipeliningAllButOneMicroBatchPairs) {
  const Scenario s = mixtral(512);  // 512 / (dp 8 x 1) = 64 micro-batches
  const Pair e = estimate_both(s, moe_plan(1, 1));
  ASSERT_EQ(e.with.micro_batches, 64);
  const StageEstimate& a = e.without.stages[0];
  const StageEstimate& b = e.with.stages[0];
  ASSERT_GT(a.ep_comm_s, 0);
  ASSERT_EQ(a.ep_forward_all_to_alls, a.ep_backward_all_to_alls);  // no recomputed mixture
  ASSERT_GT(a.forward_s, kPrior * a.ep_comm_s / 2);  // compute-rich: the share is the limit
  ASSERT_DOUBLE_EQ(kPrior, 0.8);
  EXPECT_NEAR(b.ep_comm_s, 0.2125 * a.ep_comm_s, 1e-12 * a.ep_comm_s);
  EXPECT_DOUBLE_EQ(b.forward_s, a.forward_s);
  EXPECT_DOUBLE_EQ(b.backward_s, a.backward_s);
  EXPECT_DOUBLE_EQ(b.tp_comm_s, a.tp_comm_s);
  EXPECT_NEAR(e.without.step_time_s - e.with.step_time_s, 64 * (a.ep_comm_s - b.ep_comm_s),
              1e-9 * e.without.step_time_s);
  EXPECT_LT(e.with.exposed.expert_parallel, e.without.exposed.expert_parallel);
  EXPECT_TRUE(said(e.with, "expert-parallel overlap unknown, prior 0.80"));
  EXPECT_FALSE(said(e.without, "expert-parallel"));
}

// Interleaved, 2 stages of 2 chunks and 4 micro-batches (8 chunk operations per stage): the
// warm-up is Megatron's 2 (p - i - 1) + (v - 1) p forward operations plus the one the combined
// schedule adds, 5 on stage 0 and 3 on stage 1, so 3 of 8 and 5 of 8 operations pair:
// exposed = A (1 - 0.8 x 3/8) = 0.7 A and A (1 - 0.8 x 5/8) = 0.5 A.
TEST(ExpertParallelOverlap, InterleavedStagesPairWhatFollowsTheirWarmUp) {
  const Scenario s = mixtral(32);  // 32 / 8 = 4 micro-batches
  const Pair e = estimate_both(s, moe_plan(2, 2));
  ASSERT_EQ(e.with.micro_batches, 4);
  for (int i : {0, 1}) {
    const StageEstimate& a = e.without.stages[static_cast<std::size_t>(i)];
    ASSERT_GT(a.forward_s, kPrior * a.ep_comm_s / 2);
    const double expected = i == 0 ? 0.7 : 0.5;
    EXPECT_NEAR(e.with.stages[static_cast<std::size_t>(i)].ep_comm_s, expected * a.ep_comm_s,
                1e-12 * a.ep_comm_s)
        << "stage " << i;
  }
  // The combined schedule holds one chunk more in flight: stage 0 six instead of five, stage 1
  // four instead of three (equal chunks, no dense layers; the embedding's output counts per
  // chunk in flight too).
  EXPECT_NEAR(e.with.stages[0].memory.activations,
              6.0 / 5.0 * e.without.stages[0].memory.activations,
              1e-9 * e.without.stages[0].memory.activations);
  EXPECT_NEAR(e.with.stages[1].memory.activations,
              4.0 / 3.0 * e.without.stages[1].memory.activations,
              1e-9 * e.without.stages[1].memory.activations);
  EXPECT_DOUBLE_EQ(e.with.stages[1].memory.head, e.without.stages[1].memory.head);
}

// Without pipelining the merged step starts micro-batch i + 1's forward pass before micro-batch
// i's backward pass frees its activations: two micro-batches in flight instead of one.
TEST(ExpertParallelOverlap, WithoutPipeliningTwoMicroBatchesAreInFlight) {
  const Scenario s = mixtral(512);
  const Pair e = estimate_both(s, moe_plan(1, 1));
  EXPECT_NEAR(e.with.stages[0].memory.activations, 2.0 * e.without.stages[0].memory.activations,
              1e-9 * e.without.stages[0].memory.activations);
}

// When the all-to-alls outlast the compute beside them (a slow network), the compute is the
// limit: each paired forward's all-to-alls hide behind the backward's compute and the other way
// round, exposed = A - 63/64 (C_f + C_b).
TEST(ExpertParallelOverlap, ComputeBoundsWhatHides) {
  Scenario s = mixtral(512);
  for (Island& island : s.cluster.islands)
    if (island.name == "dcu-k100") island.nic_speed /= 2000.0;
  const Pair e = estimate_both(s, moe_plan(1, 1));
  const StageEstimate& a = e.without.stages[0];
  ASSERT_LT(a.backward_s, kPrior * a.ep_comm_s / 2);  // the all-to-alls outlast the compute
  EXPECT_NEAR(e.with.stages[0].ep_comm_s, a.ep_comm_s - 63.0 / 64.0 * (a.forward_s + a.backward_s),
              1e-12 * a.ep_comm_s);
}

// With pipeline parallelism Megatron-Core runs the combined schedule only interleaved: a
// 1F1B plan keeps its all-to-alls exposed and its memory, and says why.
TEST(ExpertParallelOverlap, OneFOneBWithoutInterleavingIsNotOverlapped) {
  const Scenario s = mixtral(512);
  const Pair e = estimate_both(s, moe_plan(2, 1));
  for (int i : {0, 1}) {
    const auto k = static_cast<std::size_t>(i);
    EXPECT_DOUBLE_EQ(e.with.stages[k].ep_comm_s, e.without.stages[k].ep_comm_s);
    EXPECT_DOUBLE_EQ(e.with.stages[k].memory.activations, e.without.stages[k].memory.activations);
  }
  EXPECT_DOUBLE_EQ(e.with.step_time_s, e.without.step_time_s);
  EXPECT_TRUE(said(e.with,
                   "expert-parallel all-to-all overlap not applied: with pipeline "
                   "parallelism Megatron-Core runs it only under the interleaved schedule"));
}

// A plan's own full recompute turns it off too (the workload loader refuses the pair; a plan may
// change the recompute).
TEST(ExpertParallelOverlap, APlansFullRecomputeTurnsItOff) {
  const Scenario s = mixtral(512);
  Plan plan = moe_plan(1, 1);
  plan.recompute = Recompute::full;
  const Pair e = estimate_both(s, plan);
  EXPECT_DOUBLE_EQ(e.with.step_time_s, e.without.step_time_s);
  EXPECT_TRUE(said(e.with, "not applied: Megatron-Core refuses it with full recomputation"));
}

// A dense model has no all-to-alls: asking for the overlap changes nothing and says nothing.
TEST(ExpertParallelOverlap, ADenseModelIsUnchanged) {
  Scenario s = formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/default.yaml");
  const int half = s.workload.model.layers / 2;
  const Plan plan = test::plan_on(s.cluster.islands.front().name, {half, half}, 8, 2);
  const Pair e = estimate_both(s, plan);
  EXPECT_DOUBLE_EQ(e.with.step_time_s, e.without.step_time_s);
  EXPECT_FALSE(said(e.with, "expert-parallel"));
}

// The plan search prunes with per-stage lower bounds that take every all-to-all hidden to the
// kernel's share (StageKernel::layer_time_bound, head_time_bound; docs/planner.md#ep-overlap).
// They must stay at or below the time the estimate gives each stage under the overlap, which
// a bound without the overlap is not: it would prune the plans that gain most from it.
TEST(ExpertParallelOverlap, TheSearchBoundsStayBelowEveryStagesTime) {
  Scenario s = mixtral(512);
  s.workload.training.overlap_ep_comm = true;
  const Island& island = *s.cluster.find_island("dcu-k100");
  for (const auto& [stages, chunks] : {std::pair{1, 1}, {2, 2}, {4, 2}}) {
    const Plan plan = moe_plan(stages, chunks);
    const Estimate e = estimate_step(s.cluster, s.workload, plan);
    ASSERT_EQ(e.stages.size(), static_cast<std::size_t>(stages));
    const StepSettings settings = step_settings(s.workload, plan);
    const StageKernel k =
        make_stage_kernel(s.cluster, s.workload.model, settings, island, 2, 8, {}, 8);
    ASSERT_GT(k.ep_overlap, 0);
    const Recompute mode = marginal_recompute(settings);
    for (int i = 0; i < stages; ++i) {
      const StageEstimate& se = e.stages[static_cast<std::size_t>(i)];
      const double layers = plan.stages[static_cast<std::size_t>(i)].num_layers;
      const double bound = layers * k.layer_time_bound(mode) + (i == 0 ? k.embedding_time() : 0.0) +
                           (i == stages - 1 ? k.head_time_bound() : 0.0);
      EXPECT_LE(bound, se.micro_batch_s * (1 + 1e-12)) << stages << " stages, stage " << i;
      // Not vacuous: the same layers with their all-to-alls exposed take longer than the stage.
      EXPECT_GT(layers * k.layer_time(mode), se.micro_batch_s) << stages << " stages, stage " << i;
    }
  }
}

}  // namespace
}  // namespace hetplan::sim
