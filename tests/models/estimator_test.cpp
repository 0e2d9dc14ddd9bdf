#include "sim/estimator.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "formats/loaders.hpp"
#include "models/transformer_ops.hpp"
#include "tests/support/llama.hpp"
#include "tests/support/plans.hpp"

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
  // The formulas these tests check are the model's before terms fitted to runs
  // (docs/models/in-step.md), which run_calibration_test.cpp checks.
  c.chips.back().efficiency.in_step = {};
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
  EXPECT_NEAR(e.bubble_s, sum_tau - max_tau, 1e-12 * sum_tau);  // summed in another order
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
  EXPECT_NE(e.reasons[0].find("nvidia-a100-sxm4-80gb has 80.0 GiB, of which a process can use 78.4 GiB"), std::string::npos)
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

TEST(Estimator, ReasonsOfAPlanFileNameTheStageLine) {
  // A plan read from a file carries its stages' locations; the estimator's reasons start with
  // the line of the stage they are about (the planner's plans have none, as above).
  Cluster c = a100_cluster(2);
  c.islands.push_back(island("far", 0, 1, "b"));
  Plan plan = pipeline(2, 3, 1);
  plan.stages[0].location = {"plan.yaml", 5, 5};
  plan.stages[1].location = {"plan.yaml", 6, 5};
  plan.stages[1].island_location = {"plan.yaml", 6, 15};
  plan.stages[1].island = "far";
  plan.stages[1].tp = 16;
  const auto reasons = estimate_step(c, small_llama(), plan).reasons;
  ASSERT_GE(reasons.size(), 3u);
  EXPECT_EQ(reasons[0], "plan.yaml:6:15: island far has 8 chips; the plan places 16 there");
  EXPECT_EQ(reasons[1].substr(0, 58), "plan.yaml:5:5: stage 0 (gpu): tp 3 does not divide the 16 ");
  EXPECT_EQ(reasons.back(),
            "plan.yaml:6:5: stages 0 and 1: zones a and b have no link between them");
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

}  // namespace
}  // namespace hetplan::sim

namespace hetplan::sim {
namespace {

// One node of 8 A100s (NVSwitch, 300 GB/s at the profile's 0.77 bus efficiency, the 2.5 us
// latency prior): a ring all-gather of BF16 weights takes 7 x 2.5 us + 7/8 x 2 bytes x
// parameters / 231 GB/s.
double one_node_weight_gather(double parameters) {
  return 7 * 2.5e-6 + 7.0 / 8 * 2 * parameters / (300e9 * 0.77);
}

// The distributed optimizer's all-gather follows its step: fully exposed, unless
// overlap_param_gather runs it during the next step's first forward pass.
TEST(EstimatorOverlap, TheWeightAllGatherFollowsTheOptimizerUnlessOverlapped) {
  Workload w = test::small_llama(16, 64);
  w.training.zero_stage = 1;
  const auto plain = estimate_step(a100_cluster(1), w, pipeline(1, 1, 8));
  w.training.overlap_param_gather = true;
  const auto overlapped = estimate_step(a100_cluster(1), w, pipeline(1, 1, 8));
  ASSERT_TRUE(plain.feasible && overlapped.feasible);
  const auto& stage = plain.stages[0];
  const double gather = one_node_weight_gather(stage.memory.parameters);
  EXPECT_NEAR(stage.param_gather_s, gather, 1e-12);
  EXPECT_NEAR(plain.step_time_s - overlapped.step_time_s, std::min(gather, stage.forward_s),
              1e-12);
}

TEST(EstimatorOverlap, ExposedBesideItsGemm) {
  EXPECT_DOUBLE_EQ(exposed_beside(10e-3, 4e-3, 0.8), 6e-3);   // the GEMM is shorter
  EXPECT_DOUBLE_EQ(exposed_beside(10e-3, 100e-3, 0.8), 2e-3);  // at most 80% hidden
  EXPECT_DOUBLE_EQ(exposed_beside(10e-3, 100e-3, 0.0), 10e-3);
}

// Tensor-parallel overlap hides collectives behind their GEMMs; it needs sequence parallelism
// and says so when it is asked for without.
TEST(EstimatorOverlap, TensorParallelOverlapNeedsSequenceParallelism) {
  Workload w = test::small_llama(16, 64);
  w.training.sequence_parallel = true;
  const auto plain = estimate_step(a100_cluster(1), w, pipeline(1, 8, 1));
  w.training.overlap_tp_comm = true;
  const auto overlapped = estimate_step(a100_cluster(1), w, pipeline(1, 8, 1));
  ASSERT_TRUE(plain.feasible && overlapped.feasible);
  // Hidden: at most the 0.8 prior of each collective, and no more than its GEMM lasts (this
  // small model's GEMMs at tp 8 are shorter than its collectives).
  EXPECT_LT(overlapped.stages[0].tp_comm_s, 0.9 * plain.stages[0].tp_comm_s);
  EXPECT_GE(overlapped.stages[0].tp_comm_s, 0.2 * plain.stages[0].tp_comm_s);
  EXPECT_DOUBLE_EQ(overlapped.stages[0].forward_s, plain.stages[0].forward_s);
  w.training.sequence_parallel = false;
  const auto without_sp = estimate_step(a100_cluster(1), w, pipeline(1, 8, 1));
  bool said = false;
  for (const auto& a : without_sp.assumptions) said |= a.find("needs sequence parallelism") != std::string::npos;
  EXPECT_TRUE(said);
}

// A model whose config slides an attention window is priced with full causal attention, and
// the estimate says so once the sequence is longer than the window; the step does not change.
TEST(Estimator, ASlidingWindowShorterThanTheSequenceIsNamed) {
  Workload w = small_llama();
  const auto full = estimate_step(a100_cluster(1), w, pipeline(1, 1, 1));
  auto names_window = [](const Estimate& e) {
    bool said = false;
    for (const auto& a : e.assumptions) said |= a.find("sliding window of") != std::string::npos;
    return said;
  };
  EXPECT_FALSE(names_window(full));
  w.model.sliding_window = w.training.seq_len;
  EXPECT_FALSE(names_window(estimate_step(a100_cluster(1), w, pipeline(1, 1, 1))));
  w.model.sliding_window = w.training.seq_len / 2;
  const auto windowed = estimate_step(a100_cluster(1), w, pipeline(1, 1, 1));
  EXPECT_TRUE(names_window(windowed));
  EXPECT_DOUBLE_EQ(windowed.step_time_s, full.step_time_s);
}

// On Ascend the overlap is MindSpeed's MC2, which refuses mixture-of-experts models: a Mixtral
// stage on the 910B exposes its tensor-parallel collectives with or without the overlap asked
// for, and says why; the same stage on another vendor hides part of them.
TEST(EstimatorOverlap, NoMc2ForMixtureOfExpertsOnAscend) {
  Scenario s = formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/mixtral-mixed.yaml");
  s.workload.training.sequence_parallel = true;
  auto tp_comm = [&](const std::string& island, bool overlap, Estimate* out = nullptr) {
    Workload w = s.workload;
    w.training.overlap_tp_comm = overlap;
    Plan plan;
    plan.name = "moe-" + island;
    for (int i = 0; i < 4; ++i) {
      PlanStage stage;
      stage.island = island;
      stage.first_layer = 8 * i;
      stage.num_layers = 8;
      stage.tp = 2;
      stage.dp = 8;
      stage.ep = 8;
      plan.stages.push_back(stage);
    }
    const Estimate e = estimate_step(s.cluster, w, plan);
    if (out) *out = e;
    return e.stages[1].tp_comm_s;
  };
  Estimate ascend;
  EXPECT_EQ(tp_comm("ascend-910b", true, &ascend), tp_comm("ascend-910b", false));
  bool said = false;
  for (const auto& a : ascend.assumptions) said |= a.find("MC2 does not take") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_LT(tp_comm("dcu-k100", true), tp_comm("dcu-k100", false));
}

// Experts padded to a capacity compute exactly that on every chip (docs/models/moe.md#capacity):
// with one expert a chip (ep 8 of Mixtral's 8) a capacity factor of 1.3 costs what a busiest
// expert at 1.3 times the mean does; without expert parallelism the imbalance costs nothing (a
// chip holds every expert) but the padding still does; and no imbalance prior is assumed.
TEST(EstimatorCapacity, PaddedExpertsComputeTheirCapacity) {
  const Scenario s =
      formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/mixtral-mixed.yaml");
  auto estimate = [&](int ep, double imbalance, double capacity, bool pad = true) {
    Workload w = s.workload;
    w.training.expert_imbalance = imbalance;
    w.training.moe_capacity_factor = capacity;
    w.training.moe_pad_to_capacity = pad;
    return estimate_step(s.cluster, w, test::plan_on("ascend-910b", {8, 8, 8, 8}, 2, 8, 1, ep));
  };
  const Estimate padded = estimate(8, 0, 1.3);
  const Estimate busiest = estimate(8, 1.3, 0);
  EXPECT_DOUBLE_EQ(padded.step_time_s, busiest.step_time_s);
  EXPECT_DOUBLE_EQ(padded.stages[1].ep_comm_s, busiest.stages[1].ep_comm_s);
  EXPECT_GT(estimate(1, 0, 1.3).step_time_s, estimate(1, 1.3, 0).step_time_s);
  EXPECT_DOUBLE_EQ(estimate(1, 1.3, 0).step_time_s, estimate(1, 1.0, 0).step_time_s);
  for (const auto& a : padded.assumptions)
    EXPECT_EQ(a.find("expert load imbalance unknown"), std::string::npos) << a;
  // Capped without padding (Megatron-Core's capacity without --moe-pad-expert-input-to-capacity):
  // the busiest chip carries the lesser of its imbalance and the capacity.
  EXPECT_DOUBLE_EQ(estimate(8, 1.5, 1.2, false).step_time_s, estimate(8, 1.2, 0).step_time_s);
  EXPECT_DOUBLE_EQ(estimate(8, 1.5, 2.0, false).step_time_s, estimate(8, 1.5, 0).step_time_s);
  EXPECT_DOUBLE_EQ(estimate(1, 1.5, 1.2, false).step_time_s, estimate(1, 1.0, 0).step_time_s);
}

// A plan that fits is flagged tight, not rejected, when the 80% interval of its memory reaches
// past usable memory; a chip that states no memory band falls back to a headroom.
TEST(EstimatorMemory, TightPlansAreFlagged) {
  const Workload w = test::small_llama(16, 64);
  Cluster cluster = a100_cluster(1);
  cluster.chips[0].evidence.memory.reset();
  EstimateOptions options;
  const auto roomy = estimate_step(cluster, w, pipeline(1, 1, 1), options);
  ASSERT_TRUE(roomy.feasible);
  EXPECT_FALSE(roomy.stages[0].tight);
  EXPECT_FALSE(roomy.memory_tight());
  EXPECT_DOUBLE_EQ(roomy.stages[0].memory_usable, 78.36 * (1ull << 30));
  auto flagged = [](const Estimate& e) {
    bool found = false;
    for (const auto& a : e.assumptions) found |= a.find("stage 0 (gpu): tight") != std::string::npos;
    return found;
  };
  options.memory_headroom = 0.95;
  const auto tight = estimate_step(cluster, w, pipeline(1, 1, 1), options);
  EXPECT_TRUE(tight.feasible);
  EXPECT_TRUE(tight.stages[0].tight);
  EXPECT_TRUE(tight.memory_tight());
  EXPECT_TRUE(flagged(tight));
  // With a measured band the band decides, whatever the headroom: just past usable at its high
  // end is tight, just short of it is not.
  const double share = roomy.stages[0].memory.total() / roomy.stages[0].memory_usable;
  cluster.chips[0].evidence.memory = Band{0.9, 1.001 / share};
  const auto past = estimate_step(cluster, w, pipeline(1, 1, 1));
  EXPECT_TRUE(past.stages[0].tight);
  EXPECT_TRUE(flagged(past));
  ASSERT_TRUE(past.memory_band);
  EXPECT_DOUBLE_EQ(past.memory_band->high, 1.001 / share);
  cluster.chips[0].evidence.memory = Band{0.9, 0.999 / share};
  options.memory_headroom = 0.95;
  const auto short_of = estimate_step(cluster, w, pipeline(1, 1, 1), options);
  EXPECT_FALSE(short_of.stages[0].tight);
  EXPECT_FALSE(flagged(short_of));
}

// ZeRO-3 gathers the stage's weights before every micro-batch's forward and backward pass; what
// the compute does not hide is exposed, and there is no all-gather after the optimizer step.
TEST(EstimatorOverlap, ZeroThreeGathersTheWeightsEveryMicroBatch) {
  Workload w = test::small_llama(16, 64);
  w.training.zero_stage = 3;
  const auto e = estimate_step(a100_cluster(1), w, pipeline(1, 1, 8));
  ASSERT_TRUE(e.feasible);
  const auto& stage = e.stages[0];
  const double gather = one_node_weight_gather(stage.memory.parameters);
  EXPECT_NEAR(stage.zero3_gather_s,
              std::max(0.0, gather - stage.forward_s) + std::max(0.0, gather - stage.backward_s),
              1e-12);
  EXPECT_EQ(stage.param_gather_s, 0.0);
  EXPECT_NEAR(stage.micro_batch_s,
              stage.forward_s + stage.backward_s + stage.tp_comm_s + stage.p2p_s +
                  stage.zero3_gather_s + stage.zero_reduce_s,
              1e-12);
}

// With ZeRO 2 the gradients are sharded: every micro-batch's are reduce-scattered (a ring of 8
// on one node, as the weight gather above but of the gradients' bytes), the last one as the
// step's reduction and the m - 1 before it on the critical path, or behind their own backward
// pass with overlap.grad_reduce. ZeRO 1 accumulates whole gradients and reduces once.
TEST(EstimatorOverlap, ShardedGradientsAreReducedEveryMicroBatch) {
  Workload w = test::small_llama(16, 64);
  w.training.zero_stage = 1;
  const auto one = estimate_step(a100_cluster(1), w, pipeline(1, 1, 8));
  w.training.zero_stage = 2;
  const auto two = estimate_step(a100_cluster(1), w, pipeline(1, 1, 8));
  w.training.overlap_grad_reduce = true;
  const auto overlapped = estimate_step(a100_cluster(1), w, pipeline(1, 1, 8));
  ASSERT_TRUE(one.feasible && two.feasible && overlapped.feasible);
  const int m = two.micro_batches;
  ASSERT_EQ(m, 64 / 8);  // one sequence a micro-batch
  const auto& stage = two.stages[0];
  const double bytes = stage.memory.parameters * (w.training.fp32_grad_accumulation ? 4.0 : 2.0);
  const double reduce = 7 * 2.5e-6 + 7.0 / 8 * bytes / (300e9 * 0.77);
  EXPECT_NEAR(stage.dp_sync_s, reduce, 1e-12);
  EXPECT_NEAR(stage.zero_reduce_s, reduce * (m - 1) / m, 1e-12);
  EXPECT_EQ(one.stages[0].zero_reduce_s, 0.0);
  // One stage: the step runs its m micro-batches, so the step grows by the m - 1 reductions.
  EXPECT_NEAR(two.step_time_s - one.step_time_s, (m - 1) * reduce, 1e-9);
  EXPECT_NEAR(two.exposed.data_parallel - one.exposed.data_parallel, (m - 1) * reduce, 1e-9);
  EXPECT_NEAR(overlapped.stages[0].zero_reduce_s,
              std::max(0.0, reduce - stage.backward_s) * (m - 1) / m, 1e-12);
}

}  // namespace
}  // namespace hetplan::sim

namespace hetplan::sim {
namespace {

// Chip counts in 64 bits: stages that sum past 2^31 chips are too many for the island, not a
// negative count that fits.
TEST(Estimator, ChipCountsDoNotWrap) {
  Workload w = test::small_llama(16, 1 << 24);
  Plan plan = pipeline(4, 8, 1 << 20);
  const auto e = estimate_step(a100_cluster(1), w, plan);
  EXPECT_FALSE(e.feasible);
  ASSERT_FALSE(e.reasons.empty());
  bool named = false;
  for (const auto& reason : e.reasons)
    named |= reason.find("the plan places 33554432 there") != std::string::npos;
  EXPECT_TRUE(named) << e.reasons.front();
  plan = pipeline(4, 1024, 1 << 20);
  const auto wide = estimate_step(a100_cluster(1), w, plan);
  EXPECT_FALSE(wide.feasible);
  bool big = false;
  for (const auto& reason : wide.reasons)
    big |= reason.find("the plan places 4294967296 there") != std::string::npos;
  EXPECT_TRUE(big);
}

}  // namespace
}  // namespace hetplan::sim

namespace hetplan::sim {
namespace {

// DeepSeek-V2-Lite on the 910B island: four stages of tp 2, dp 8, ep 8 holding 7, 7, 7 and 6 of
// its 27 layers; the first layer is dense (first_k_dense_replace 1), the others mixtures.
Plan deepseek_plan(const std::vector<int>& layers) {
  Plan plan;
  plan.name = "deepseek";
  int first = 0;
  for (int n : layers) {
    PlanStage stage;
    stage.island = "ascend-910b";
    stage.first_layer = first;
    stage.num_layers = n;
    stage.tp = 2;
    stage.dp = 8;
    stage.ep = 8;
    plan.stages.push_back(stage);
    first += n;
  }
  return plan;
}

// A stage that holds the dense layer and k MoE layers costs exactly one dense layer and k MoE
// layers of its kernel, each kind with its own compute, tensor-parallel and (MoE only)
// expert-parallel time; the stages without it cost their MoE layers only. The dense layer
// differs from the MoE one, so counting it as one would show.
TEST(EstimatorDenseLayers, AStageCostsItsDenseAndItsMoeLayers) {
  const Scenario s = formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) +
                                            "/scenarios/deepseek-v2-lite-mixed.yaml");
  const ModelShape& model = s.workload.model;
  ASSERT_TRUE(model.latent_attention());
  ASSERT_EQ(model.dense_layers, 1);
  const Plan plan = deepseek_plan({7, 7, 7, 6});
  const Estimate e = estimate_step(s.cluster, s.workload, plan);
  ASSERT_TRUE(e.feasible) << (e.reasons.empty() ? "" : e.reasons.front());
  const StepSettings settings = step_settings(s.workload, plan);
  ASSERT_EQ(settings.training.recompute, Recompute::selective);
  const StageKernel k = make_stage_kernel(s.cluster, model, settings,
                                          *s.cluster.find_island("ascend-910b"), 2, 8, {}, 8);
  ASSERT_TRUE(k.has_dense_layers);
  EXPECT_NE(k.dense_layer.forward_s, k.layer_forward_s);
  EXPECT_NE(k.dense_layer.tp_s, k.layer_tp_s);

  const StageEstimate& first = e.stages[0];
  EXPECT_DOUBLE_EQ(first.forward_s,
                   k.dense_layer.forward_s + 6 * k.layer_forward_s + k.embedding_forward_s);
  EXPECT_DOUBLE_EQ(first.backward_s, k.dense_layer.backward_s + k.dense_layer.selective_s +
                                         6 * (k.layer_backward_s + k.layer_selective_s) +
                                         k.embedding_backward_s);
  EXPECT_DOUBLE_EQ(first.tp_comm_s, k.dense_layer.tp_s + 6 * k.layer_tp_s + k.boundary_tp_s);
  EXPECT_DOUBLE_EQ(first.ep_comm_s, 6 * k.layer_a2a_s);
  EXPECT_EQ(first.ep_forward_all_to_alls, 12);
  const StageEstimate& second = e.stages[1];
  EXPECT_DOUBLE_EQ(second.forward_s, 7 * k.layer_forward_s);
  EXPECT_DOUBLE_EQ(second.ep_comm_s, 7 * k.layer_a2a_s);
  EXPECT_EQ(second.ep_forward_all_to_alls, 14);
  // Memory: the first stage holds the dense layer's parameters in place of a MoE layer's.
  const double per_chip_moe = e.stages[1].memory.parameters / 7;
  const double dense_per_chip =
      model.layer_parameters() / 2 + model.replicated_kv_parameters(2);
  EXPECT_NEAR(first.memory.parameters,
              6 * per_chip_moe + dense_per_chip + model.embedding_parameters() / 2,
              1e-6 * first.memory.parameters);
  EXPECT_DOUBLE_EQ(first.memory.expert_parameters, 6 * e.stages[1].memory.expert_parameters / 7);
  // Model FLOPs count the dense layer as dense.
  EXPECT_DOUBLE_EQ(e.model_flops_per_step,
                   3.0 * s.workload.training.global_batch *
                       (models::layer_model_flops(model, 1, 4096, true) +
                        26 * models::layer_model_flops(model, 1, 4096) +
                        models::head_model_flops(model, 1, 4096)));
}

// Interleaved, a stage's chunks are Megatron's: its first chunk holds the model's first layers
// of its share, so the dense layers belong to the first stage's first chunk.
TEST(EstimatorDenseLayers, InterleavedChunksPlaceTheDenseLayers) {
  ModelShape m;
  m.layers = 24;
  m.experts = 8;
  m.dense_layers = 3;
  EXPECT_EQ(stage_dense_layers(m, 0, 12, 1), 3);
  EXPECT_EQ(stage_dense_layers(m, 2, 12, 1), 1);
  EXPECT_EQ(stage_dense_layers(m, 12, 12, 1), 0);
  // Two chunks of 24 layers over stages of 4, 4, 8 and 8: the first chunks hold layers 0-1,
  // 2-3, 4-7 and 8-11.
  EXPECT_EQ(stage_dense_layers(m, 0, 4, 2), 2);
  EXPECT_EQ(stage_dense_layers(m, 4, 4, 2), 1);
  EXPECT_EQ(stage_dense_layers(m, 8, 8, 2), 0);
  m.experts = 0;  // a dense model has no "dense layers" apart
  EXPECT_EQ(stage_dense_layers(m, 0, 12, 1), 0);
}

// Chunks of a layout (PlanStage::chunk_layers) take the model's layers in virtual-stage order:
// chunk c of stage s is virtual stage c x stages + s.
TEST(EstimatorDenseLayers, ChunkLayoutsPlaceTheDenseLayers) {
  ModelShape m;
  m.layers = 6;
  m.experts = 8;
  m.dense_layers = 3;
  std::vector<PlanStage> stages(2);
  stages[0].num_layers = 3;
  stages[1].num_layers = 3;
  // Virtual stages 0..3 hold 1, 2, 2 and 1 layers: layers 0 | 1-2 | 3-4 | 5.
  stages[0].chunk_layers = {1, 2};
  stages[1].chunk_layers = {2, 1};
  EXPECT_EQ(pipeline_dense_layers(m, stages, 2), (std::vector<int>{1, 2}));
  // An empty first chunk: stage 1's first chunk holds layers 0-2, all three dense.
  stages[0].chunk_layers = {0, 3};
  stages[1].chunk_layers = {3, 0};
  EXPECT_EQ(pipeline_dense_layers(m, stages, 2), (std::vector<int>{0, 3}));
  // Without a layout, as stage_dense_layers places them.
  stages[0].chunk_layers.clear();
  stages[1].chunk_layers.clear();
  stages[0].num_layers = 2;
  stages[1].first_layer = 2;
  stages[1].num_layers = 4;
  EXPECT_EQ(pipeline_dense_layers(m, stages, 2),
            (std::vector<int>{stage_dense_layers(m, 0, 2, 2), stage_dense_layers(m, 2, 4, 2)}));
}

// Four stages of four layers in two chunks each, as 2 + 2 or as the layout says. A stage's time
// is its layers' whatever their chunks; its saved activations are the most its chunks in flight
// hold over Megatron's interleaved order (64 micro-batches; warm-up 2 (p - s - 1) + p forward
// operations, chunk (k mod 8) / 4 forward, 1 - (k mod 8) / 4 backward):
//   stage 0, chunks of 1 and 3: warm-up 4 x 1 + 4 x 3 + 2 x 1 = 18 layers, then one more
//     chunk-0 pass: 19 at most; equal chunks hold 11 chunks of 2 = 22;
//   stage 2, chunks of 3 and 1: warm-up 4 x 3 + 2 x 1 = 14, then the next chunk-0 passes come
//     in while chunk-1 passes leave: 21 at most; equal chunks 7 x 2 = 14.
// Partial recompute takes its count from each chunk.
TEST(EstimatorChunks, UnequalChunksKeepTheStageTimeAndHoldTheirPeakInFlight) {
  Plan even = pipeline(4, 1, 1);
  even.schedule = Schedule::interleaved;
  even.virtual_stages = 2;
  Plan uneven = even;
  const std::vector<std::vector<int>> layout = {{1, 3}, {2, 2}, {3, 1}, {2, 2}};
  for (std::size_t s = 0; s < 4; ++s) uneven.stages[s].chunk_layers = layout[s];
  const auto a = estimate_step(a100_cluster(1), small_llama(), even);
  const auto b = estimate_step(a100_cluster(1), small_llama(), uneven);
  ASSERT_TRUE(a.feasible) << a.reasons.front();
  ASSERT_TRUE(b.feasible) << b.reasons.front();
  ASSERT_EQ(a.micro_batches, 64);
  // The embedding's output goes with the first stage's chunk-0 passes: 7 of them at that peak
  // (4 chunk-1 passes), where equal chunks count it with all 11 chunks in flight.
  const Workload w = small_llama();
  const double embedding = static_cast<double>(w.training.micro_batch) * w.training.seq_len *
                           w.model.hidden * bytes_per_element(storage_dtype(w.training.dtype));
  const double layers_more[] = {19 - 22, 0, 21 - 14, 0};
  const double embeddings_more[] = {7 - 11, 0, 0, 0};
  for (std::size_t s = 0; s < 4; ++s) {
    EXPECT_DOUBLE_EQ(b.stages[s].forward_s, a.stages[s].forward_s);
    EXPECT_DOUBLE_EQ(b.stages[s].backward_s, a.stages[s].backward_s);
    EXPECT_NEAR(
        b.stages[s].memory.activations - a.stages[s].memory.activations,
        layers_more[s] * a.stages[s].memory.activation_per_layer + embeddings_more[s] * embedding,
        1e-9 * a.stages[s].memory.activations)
        << "stage " << s;
  }
  // Full recompute of 2 layers per chunk: stage 2's chunks of 3 and 1 recompute 2 + 1 layers,
  // the even plan's 2 + 2: one forward pass of a layer (a quarter of the stage's forward
  // pass, which has neither the embedding nor the head) less.
  even.recompute = uneven.recompute = Recompute::full;
  even.recompute_layers = uneven.recompute_layers = 2;
  const auto c = estimate_step(a100_cluster(1), w, even);
  const auto d = estimate_step(a100_cluster(1), w, uneven);
  ASSERT_TRUE(c.feasible && d.feasible);
  EXPECT_NEAR(c.stages[2].backward_s - d.stages[2].backward_s, c.stages[2].forward_s / 4,
              1e-9 * c.stages[2].backward_s);
  EXPECT_DOUBLE_EQ(d.stages[1].backward_s, c.stages[1].backward_s);
}

TEST(EstimatorChunks, ALayoutThatDoesNotFitItsStageIsRejected) {
  Plan plan = pipeline(4, 1, 1);
  plan.schedule = Schedule::interleaved;
  plan.virtual_stages = 2;
  plan.stages[1].chunk_layers = {1, 2};  // 3 of the stage's 4 layers
  const auto e = estimate_step(a100_cluster(1), small_llama(), plan);
  EXPECT_FALSE(e.feasible);
  ASSERT_FALSE(e.reasons.empty());
  EXPECT_NE(e.reasons.front().find("stage 1: chunk_layers needs"), std::string::npos)
      << e.reasons.front();
}

// A DeepSeek-V2-Lite plan has finite figures, a share of the peak below one, and fits.
TEST(EstimatorDenseLayers, DeepSeekFiguresAreFinite) {
  const Scenario s = formats::load_scenario(std::string(HETPLAN_SOURCE_DIR) +
                                            "/scenarios/deepseek-v2-lite-mixed.yaml");
  const Estimate e = estimate_step(s.cluster, s.workload, deepseek_plan({7, 7, 7, 6}));
  EXPECT_TRUE(std::isfinite(e.step_time_s));
  EXPECT_GT(e.mfu, 0.0);
  EXPECT_LT(e.mfu, 1.0);
  for (const auto& stage : e.stages) {
    EXPECT_TRUE(stage.fits);
    EXPECT_GT(stage.memory.total(), 0.0);
  }
}

}  // namespace
}  // namespace hetplan::sim
