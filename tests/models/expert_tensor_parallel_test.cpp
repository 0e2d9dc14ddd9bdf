// Expert tensor parallelism apart from tp (Megatron-Core's --expert-tensor-parallel-size, "MoE
// parallel folding"): the experts' GEMMs, the copies they take, their parameters and activations,
// their groups and collectives, by hand (docs/models/moe.md#parallelism).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/loaders.hpp"
#include "models/memory.hpp"
#include "models/transformer_ops.hpp"
#include "sim/estimator.hpp"
#include "sim/twin_input.hpp"
#include "tests/support/plans.hpp"

namespace hetplan::sim {
namespace {

// Mixtral-8x7B (hidden 4,096, 8 experts of 14,336, top 2) at 4,096 tokens a micro-batch, its
// router forced to balance (every expert the mean load) so that the copies are exact.
Scenario mixtral() {
  Scenario s =
      formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/mixtral-mixed.yaml");
  s.workload.training.micro_batch = 1;
  s.workload.training.seq_len = 4096;
  s.workload.training.expert_imbalance = 1.0;
  s.workload.training.sequence_parallel = true;
  return s;
}

const models::Op& op_named(const std::vector<models::Op>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return op;
  throw std::runtime_error("no operator " + name);
}

// tp 2 with sequence parallelism, ep 4 (2 experts a chip): with etp 2 (= tp) a chip's experts
// take the copies of both chips of its tensor-parallel group, 2 x 2,048 tokens x 2 copies =
// 8,192, 4,096 an expert, each expert's up-projection 2 x 14,336 / 2 wide; with etp 1 only its
// own 2,048 tokens' 4,096 copies, 2,048 an expert, the whole 28,672-wide projection. The FLOPs
// are the same; the GEMMs' shapes and the copies kept for backward are not.
TEST(ExpertTensorParallel, ExpertsGemmsTakeTheirGroupsCopies) {
  const Scenario s = mixtral();
  models::LayerSlice slice{1, 4096, 2, true, true, DType::bf16};
  slice.ep = 4;
  slice.etp = 2;
  const auto split = models::layer_ops(s.workload.model, slice);
  slice.etp = 1;
  const auto whole = models::layer_ops(s.workload.model, slice);
  const models::Op& up2 = op_named(split, "experts_gate_up");
  const models::Op& up1 = op_named(whole, "experts_gate_up");
  EXPECT_DOUBLE_EQ(up2.gemm.m, 4096.0);
  EXPECT_DOUBLE_EQ(up2.gemm.n, 14336.0);
  EXPECT_DOUBLE_EQ(up1.gemm.m, 2048.0);
  EXPECT_DOUBLE_EQ(up1.gemm.n, 28672.0);
  EXPECT_DOUBLE_EQ(up1.gemm.k, 4096.0);
  EXPECT_DOUBLE_EQ(up1.gemm.batch, 2.0);
  EXPECT_DOUBLE_EQ(up1.flops, 2.0 * 2 * 2048 * 28672 * 4096);
  EXPECT_DOUBLE_EQ(up1.flops, up2.flops);
  const models::Op& down1 = op_named(whole, "experts_down");
  EXPECT_DOUBLE_EQ(down1.gemm.m, 2048.0);
  EXPECT_DOUBLE_EQ(down1.gemm.n, 4096.0);
  EXPECT_DOUBLE_EQ(down1.gemm.k, 14336.0);
  // The permutation is the chip's own tokens' either way.
  EXPECT_DOUBLE_EQ(op_named(whole, "permute").bytes, op_named(split, "permute").bytes);

  // Saved for backward: the copies' inputs (hidden wide) halve, the experts' intermediate
  // tensors (copies x f / etp) do not move: 4,096 fewer copies of 4,096 BF16 elements.
  TrainingSettings t = s.workload.training;
  const double kept2 =
      models::layer_activation_bytes(s.workload.model, t, 1, 2, Recompute::none, false, 2);
  const double kept1 =
      models::layer_activation_bytes(s.workload.model, t, 1, 2, Recompute::none, false, 1);
  EXPECT_DOUBLE_EQ(kept2 - kept1, 4096.0 * 4096 * 2);
  // etp 0 is tp.
  EXPECT_DOUBLE_EQ(models::layer_activation_bytes(s.workload.model, t, 1, 2, Recompute::none),
                   kept2);
}

// A stage of tp 2 x dp 8 with ep 4: with etp 1 each chip holds 2 whole experts, a quarter of a
// layer's routed experts, and the same experts sit on every 4th chip (4 of the 16); with etp 2
// it holds half of each of 2 experts, an eighth, and every 4th replica has them (2 chips).
TEST(ExpertTensorParallel, ExpertParametersAndTheirShards) {
  const Scenario s = mixtral();
  const ModelShape& m = s.workload.model;
  const double routed = 8.0 * 3 * 4096 * 14336;  // gate, up and down of 8 experts
  EXPECT_DOUBLE_EQ(m.routed_expert_parameters(), routed);
  models::StageShape shape;
  shape.num_layers = 4;
  shape.tp = 2;
  shape.dp = 8;
  shape.ep = 4;
  shape.pipeline_stages = 2;
  shape.stage_index = 1;
  shape.micro_batches = 8;
  shape.zero_stage = 1;
  TrainingSettings t = s.workload.training;
  t.zero_stage = 1;
  shape.etp = 1;
  const models::StageMemory whole = models::stage_memory(m, t, shape);
  shape.etp = 2;
  const models::StageMemory split = models::stage_memory(m, t, shape);
  EXPECT_DOUBLE_EQ(whole.expert_parameters, 4 * routed / 4);
  EXPECT_DOUBLE_EQ(split.expert_parameters, 4 * routed / 8);
  // The rest of the layer splits over tp either way.
  EXPECT_DOUBLE_EQ(whole.parameters - whole.expert_parameters,
                   split.parameters - split.expert_parameters);
  // Adam's fp32 master weights and moments (12 bytes a parameter) shard over the chips holding
  // the same experts: 4 with etp 1, 2 with etp 2; the dense part over the 8 replicas.
  const double dense = whole.parameters - whole.expert_parameters;
  EXPECT_DOUBLE_EQ(whole.optimizer, dense * 12 / 8 + whole.expert_parameters * 12 / 4);
  EXPECT_DOUBLE_EQ(split.optimizer, dense * 12 / 8 + split.expert_parameters * 12 / 2);
}

// The kernel's groups and collectives: with etp 1 the dispatched copies are not gathered over the
// tensor-parallel group (each chip runs whole experts), so a layer loses that gather and
// reduce-scatter each way; the all-to-all is the same send buffer over ep 4 consecutive chips
// instead of 4 chips 2 apart; the experts' gradients reduce over 4 chips 4 apart instead of 2
// chips 8 apart.
TEST(ExpertTensorParallel, KernelGroupsAndCollectives) {
  const Scenario s = mixtral();
  const Island& island = *s.cluster.find_island("dcu-k100");
  const StepSettings settings = step_settings(s.workload, test::plan_on("dcu-k100", {32}, 2, 8));
  const StageKernel split =
      make_stage_kernel(s.cluster, s.workload.model, settings, island, 2, 8, {}, 4, 2);
  const StageKernel whole =
      make_stage_kernel(s.cluster, s.workload.model, settings, island, 2, 8, {}, 4, 1);
  ASSERT_TRUE(split.problems.empty()) << split.problems.front();
  ASSERT_TRUE(whole.problems.empty()) << whole.problems.front();
  EXPECT_EQ(whole.etp, 1);
  EXPECT_EQ(split.ep_group.ranks, 4);
  EXPECT_EQ(whole.ep_group.ranks, 4);
  EXPECT_EQ(split.expert_dp_group.ranks, 2);
  EXPECT_EQ(whole.expert_dp_group.ranks, 4);
  // A chip's send buffer: its own 2,048 tokens, 2 copies, 4,096 BF16 elements each.
  EXPECT_DOUBLE_EQ(whole.a2a_bytes, 2048.0 * 2 * 4096 * 2);
  EXPECT_DOUBLE_EQ(split.a2a_bytes, whole.a2a_bytes);
  // The gathered copies: the tensor-parallel group's 4,096 tokens x 2 copies x 4,096 x 2 bytes.
  const double routed = 4096.0 * 2 * 4096 * 2;
  const double pass =
      models::best_collective(models::Collective::all_gather, routed, split.tp_group).time +
      models::best_collective(models::Collective::reduce_scatter, routed, split.tp_group).time;
  EXPECT_GT(pass, 0.0);
  EXPECT_NEAR(split.layer_tp_s - whole.layer_tp_s, 2.0 * pass, 1e-12);
  EXPECT_NEAR(split.layer_recompute_tp_s - whole.layer_recompute_tp_s, pass, 1e-12);

  // ep x etp must tile tp x dp, and ep divide the experts.
  const StageKernel bad =
      make_stage_kernel(s.cluster, s.workload.model, settings, island, 2, 8, {}, 8, 4);
  ASSERT_FALSE(bad.problems.empty());
  EXPECT_EQ(bad.problems.front(), "ep 8 x etp 4 does not divide tp x dp 16, or ep the 8 experts");
}

// A profile's measured all-to-all figures (efficiency.intra_node_all_to_all) price the
// expert-parallel exchange inside a node and nothing else: its bus bandwidth is the intra-node
// link times their efficiency (not the collectives'), its latency theirs, and the tensor- and
// data-parallel collectives keep the collectives' figures.
TEST(ExpertTensorParallel, MeasuredAllToAllFiguresPriceTheExchangeAlone) {
  Scenario s = mixtral();
  const Island& island = *s.cluster.find_island("ascend-910b");
  ChipProfile& chip = s.cluster.chips.at(island.chip);
  chip.efficiency.in_step = {};
  chip.efficiency.intra_all_to_all_efficiency.reset();
  chip.efficiency.intra_all_to_all_latency.reset();
  const StepSettings settings = step_settings(s.workload, test::plan_on("ascend-910b", {32}, 2, 8));
  const StageKernel plain =
      make_stage_kernel(s.cluster, s.workload.model, settings, island, 2, 8, {}, 4);
  ASSERT_TRUE(plain.problems.empty()) << plain.problems.front();
  ASSERT_TRUE(chip.intra_node.bandwidth && chip.efficiency.intra_bus_efficiency);
  ASSERT_EQ(plain.ep_group.nodes(), 1);  // ep 4 over ranks tp 2 apart: one node of 8

  chip.efficiency.intra_all_to_all_efficiency = 0.25;
  chip.efficiency.intra_all_to_all_latency = 40e-6;
  const StageKernel measured =
      make_stage_kernel(s.cluster, s.workload.model, settings, island, 2, 8, {}, 4);
  ASSERT_TRUE(measured.problems.empty()) << measured.problems.front();
  const double bus = *chip.intra_node.bandwidth * 0.25;
  const double expected = 3 * 40e-6 + 3.0 / 4.0 * measured.a2a_bytes / bus;
  EXPECT_NEAR(measured.a2a_s, expected, 1e-12 * expected);
  EXPECT_GT(measured.a2a_s, plain.a2a_s);
  EXPECT_DOUBLE_EQ(measured.a2a_bytes, plain.a2a_bytes);
  EXPECT_DOUBLE_EQ(measured.layer_tp_s, plain.layer_tp_s);
  EXPECT_DOUBLE_EQ(measured.tp_group.intra.bus_bandwidth, plain.tp_group.intra.bus_bandwidth);
  EXPECT_DOUBLE_EQ(measured.dp_group.intra.bus_bandwidth, plain.dp_group.intra.bus_bandwidth);
}

// Without data parallelism, experts whole on each chip of a tp 8 stage with ep 4 sit on 2 chips
// each: their gradients are reduced over those 2 even though dp is 1; with etp = tp (ep 1) no
// chip shares its experts and nothing is reduced.
TEST(ExpertTensorParallel, ExpertGradientsReduceWithoutDataParallelism) {
  Scenario s = mixtral();
  s.workload.training.global_batch = 32;
  const std::vector<int> layers(16, 2);
  Plan plan = test::plan_on("dcu-k100", layers, 8, 1, 1, 4);
  for (auto& stage : plan.stages) stage.etp = 1;
  const Estimate folded = estimate_step(s.cluster, s.workload, plan);
  ASSERT_TRUE(folded.feasible) << folded.reasons.front();
  EXPECT_GT(folded.stages[0].dp_sync_s, 0.0);
  Plan plain = test::plan_on("dcu-k100", layers, 8, 1);
  const Estimate whole = estimate_step(s.cluster, s.workload, plain);
  ASSERT_TRUE(whole.feasible) << whole.reasons.front();
  EXPECT_EQ(whole.stages[0].dp_sync_s, 0.0);
}

// The twin takes the folded plan as the estimator prices it: the same all-to-all send buffer,
// the experts' gradients over the ranks that hold the same experts (4 with etp 1: ep x etp = 4
// of the stage's 16 ranks), marked as the experts', and simulates it; with etp = tp written out
// the input is the one without it.
TEST(ExpertTensorParallel, TheTwinTakesFoldedExperts) {
  Scenario s = mixtral();
  s.workload.training.global_batch = 64;
  s.workload.training.zero_stage = 1;
  Plan plan = test::plan_on("dcu-k100", {8, 8, 8, 8}, 2, 8, 1, 4);
  for (auto& stage : plan.stages) stage.etp = 1;
  const Estimate estimate = estimate_step(s.cluster, s.workload, plan);
  ASSERT_TRUE(estimate.feasible) << estimate.reasons.front();
  const TwinInput input = make_twin_input(s.cluster, s.workload, plan, estimate);
  EXPECT_EQ(check_twin_input(input), std::vector<std::string>{});
  ASSERT_EQ(input.stages.size(), 4u);
  EXPECT_EQ(input.stages[0].etp, 1);
  EXPECT_EQ(input.stages[0].ep, 4);
  bool expert_sync = false;
  for (const TwinCollective& c : input.stages[0].dp_sync) expert_sync |= c.experts;
  EXPECT_TRUE(expert_sync);

  Plan written = test::plan_on("dcu-k100", {8, 8, 8, 8}, 2, 8, 1, 4);
  Plan explicit_tp = written;
  for (auto& stage : explicit_tp.stages) stage.etp = 2;
  const TwinInput a = make_twin_input(s.cluster, s.workload, written,
                                      estimate_step(s.cluster, s.workload, written));
  const TwinInput b = make_twin_input(s.cluster, s.workload, explicit_tp,
                                      estimate_step(s.cluster, s.workload, explicit_tp));
  EXPECT_EQ(b.stages[0].etp, 0);
  EXPECT_EQ(a.stages[0].a2a_bytes, b.stages[0].a2a_bytes);
  EXPECT_EQ(a.stages[0].forward_s, b.stages[0].forward_s);
}

}  // namespace
}  // namespace hetplan::sim
