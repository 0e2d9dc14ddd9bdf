// File-based loaders (load_cluster, load_workload, load_scenario, check_file) on the bad
// fixtures in tests/formats/data/bad/: exact messages, with the file's path.
#include <gtest/gtest.h>

#include <fstream>

#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "tests/support/temp_folder.hpp"
#include "tests/formats/test_support.hpp"

namespace hetplan {
namespace {

using testing::input_error_of;
using testing::kDataDir;
using testing::kSourceDir;

const std::string kBad = kDataDir + "/bad/";

std::string cluster_error(const std::string& name) {
  return input_error_of([&] { (void)formats::load_cluster(kBad + name); });
}
std::string workload_error(const std::string& name) {
  return input_error_of([&] { (void)formats::load_workload(kBad + name); });
}
std::string scenario_error(const std::string& name) {
  return input_error_of([&] { (void)formats::load_scenario(kBad + name); });
}

TEST(ClusterErrors, ChipWithoutProfileFile) {
  EXPECT_EQ(cluster_error("cluster-unknown-chip.yaml"),
            kBad + "cluster-unknown-chip.yaml:13:11: islands[0].chip: expected a chip profile id with a file "
                   "nvidia-b200.yaml in " + kSourceDir + "/profiles, got \"nvidia-b200\" (no such profile)");
}

TEST(ClusterErrors, ZoneNotInFabric) {
  EXPECT_EQ(cluster_error("cluster-unknown-zone.yaml"),
            kBad + "cluster-unknown-zone.yaml:15:11: islands[0].zone: expected a zone listed in "
                   "fabric.zones, got \"basement\"");
}

TEST(ClusterErrors, NegativeBandwidth) {
  EXPECT_EQ(cluster_error("cluster-negative-bandwidth.yaml"),
            kBad + "cluster-negative-bandwidth.yaml:7:22: fabric.leaf_uplink_speed: expected a bandwidth "
                   "such as \"200 Gbps\", got \"-400 Gbps\"");
}

TEST(ClusterErrors, DeviceResourceThatIsNotAResourceName) {
  EXPECT_EQ(cluster_error("cluster-bad-resource.yaml"),
            kBad + "cluster-bad-resource.yaml:16:25: islands[0].resources.device: expected a "
                   "Kubernetes extended resource name (a domain, a slash and a name of "
                   "[A-Za-z0-9._-], such as cambricon.com/mlu), got \"Cambricon MLU\"");
}

// Values that would poison a result: a zero or denormal peak (a nan step), a switch latency
// of 1e308 ns (a step of 1e62 s, and a search that did not end).
TEST(ClusterErrors, AbsurdLatencyIsRefused) {
  test::TempFolder folder;
  std::string text = formats::read_text_file(kBad + "cluster-unknown-zone.yaml");
  text.replace(text.find("zone: basement"), 14, "zone: lab");
  text.replace(text.find("[../../../../profiles]"), 22, "[" + kSourceDir + "/profiles]");
  text.replace(text.find("switch_latency: 600 ns"), 22, "switch_latency: 1e308 ns");
  const std::string path = folder.file("cluster.yaml");
  std::ofstream(path) << text;
  EXPECT_EQ(input_error_of([&] { (void)formats::load_cluster(path); }).substr(path.size()),
            ":8:19: fabric.switch_latency: expected a duration between 0 s and 1e9 s, got "
            "\"1e308 ns\"");
  text.replace(text.find("switch_latency: 1e308 ns"), 24, "switch_latency: 2 s");
  std::ofstream(path, std::ios::trunc) << text;
  EXPECT_EQ(input_error_of([&] { (void)formats::load_cluster(path); }).substr(path.size()),
            ":8:19: fabric.switch_latency: expected a latency of at most 1 s, got \"2 s\"");
}

TEST(ClusterErrors, UnknownIslandKey) {
  EXPECT_EQ(cluster_error("cluster-unknown-island-key.yaml"),
            kBad + "cluster-unknown-island-key.yaml:15:5: islands[0].gpus: unknown key");
}

TEST(ClusterErrors, WordWhereIntegerExpected) {
  EXPECT_EQ(cluster_error("cluster-wrong-type.yaml"),
            kBad + "cluster-wrong-type.yaml:14:12: islands[0].nodes: expected an integer from 1 to 100000, "
                   "got \"four\"");
}

TEST(ClusterErrors, MoreFreeNodesThanNodes) {
  EXPECT_EQ(cluster_error("cluster-free-nodes-above-nodes.yaml"),
            kBad + "cluster-free-nodes-above-nodes.yaml:15:17: islands[0].free_nodes: expected at most the "
                   "island's 32 nodes, got \"40\"");
}

TEST(ClusterErrors, TruncatedFile) {
  EXPECT_EQ(cluster_error("cluster-truncated.yaml"),
            kBad + "cluster-truncated.yaml:7:22: fabric.leaf_uplink_speed: expected a bandwidth such as "
                   "\"200 Gbps\", got \"400 Gb\"");
}

TEST(ClusterErrors, ErrorInsideTheChipProfileNamesTheProfile) {
  // Both places: the cluster's line that names the chip, then the profile's own error.
  EXPECT_EQ(cluster_error("cluster-broken-profile.yaml"),
            kBad + "cluster-broken-profile.yaml:13:11: islands[0].chip: " + kBad +
                   "profiles/broken-chip.yaml:42:8: power.tdp: expected a power such as \"400 W\", got "
                   "\"400 Watt\"");
}

TEST(ClusterErrors, ProfileDeclaresAnotherId) {
  EXPECT_EQ(cluster_error("cluster-mislabelled-profile.yaml"),
            kBad + "cluster-mislabelled-profile.yaml:13:11: islands[0].chip: profile " + kBad +
                "profiles/mislabelled-chip.yaml declares id \"nvidia-a100-sxm4-80gb\", expected "
                "\"mislabelled-chip\"");
}

TEST(ClusterErrors, MissingFile) {
  EXPECT_EQ(cluster_error("no-such-file.yaml"), kBad + "no-such-file.yaml: cannot open the file for reading");
}

// A folder or a device where a file is expected says which, in the one line (a pipe would
// block a reader that waited for its end).
TEST(ClusterErrors, AFolderOrADeviceIsNotAFile) {
  EXPECT_EQ(input_error_of([] { (void)formats::load_cluster(kDataDir); }),
            kDataDir + ": expected a file, got a directory");
  EXPECT_EQ(input_error_of([] { (void)formats::load_cluster("/dev/null"); }),
            "/dev/null: expected a regular file, got a pipe, socket or device");
}

TEST(ClusterErrors, WrongSchema) {
  // A workload given where a cluster is expected.
  EXPECT_EQ(input_error_of([] { (void)formats::load_cluster(kDataDir + "/workload.yaml"); }),
            kDataDir + "/workload.yaml:1:9: schema: expected \"hetplan/cluster/v1\", got "
                       "\"hetplan/workload/v1\"");
}

TEST(WorkloadErrors, HfConfigFileMissing) {
  EXPECT_EQ(workload_error("workload-missing-hf.yaml"),
            kBad + "workload-missing-hf.yaml:4:14: model.hf_config: expected a readable Hugging Face "
                   "config.json, got \"../hf/llama-3-8b.json\" (cannot open the file for reading)");
}

TEST(WorkloadErrors, ErrorInsideHfConfigNamesTheConfig) {
  EXPECT_EQ(workload_error("workload-bad-hf.yaml"),
            kBad + "workload-bad-hf.yaml:4:14: model.hf_config: " + kBad +
                   "config-bad-activation.json:2:67: activation_function: expected an activation hetplan "
                   "models (silu, gelu, gelu_new, gelu_pytorch_tanh, relu), got \"tanh\"");
}

TEST(WorkloadErrors, GlobalBatchNotMultipleOfMicroBatch) {
  EXPECT_EQ(workload_error("workload-batch.yaml"),
            kBad + "workload-batch.yaml:6:3: training.global_batch: expected a multiple of micro_batch (3), "
                   "got 256");
}

TEST(WorkloadErrors, BothHfConfigAndShape) {
  EXPECT_EQ(workload_error("workload-both-models.yaml"),
            kBad + "workload-both-models.yaml:5:10: model.shape: expected either hf_config or shape, not both");
}

TEST(WorkloadErrors, InlineShapeHeadsDoNotDivideHidden) {
  EXPECT_EQ(workload_error("workload-bad-shape.yaml"),
            kBad + "workload-bad-shape.yaml:5:5: model.shape: expected hidden size (100) divisible by the "
                   "number of attention heads (3)");
}

TEST(WorkloadErrors, UnknownTrainingKey) {
  EXPECT_EQ(workload_error("workload-unknown-training-key.yaml"),
            kBad + "workload-unknown-training-key.yaml:9:3: training.optimiser: unknown key");
}

TEST(WorkloadErrors, PartialRecomputeNeedsFullRecompute) {
  EXPECT_EQ(workload_error("workload-recompute-layers.yaml"),
            kDataDir + "/bad/workload-recompute-layers.yaml:10:21: training.recompute_layers: "
                       "expected recompute: full beside it");
}

// Megatron-Core's --recompute-modules belong to selective recompute; each name once, from its
// list.
TEST(WorkloadErrors, RecomputeModulesNeedSelectiveRecomputeAndKnownNames) {
  EXPECT_EQ(workload_error("workload-recompute-modules-full.yaml"),
            kBad +
                "workload-recompute-modules-full.yaml:10:22: training.recompute_modules: "
                "expected recompute: selective beside it");
  EXPECT_EQ(workload_error("workload-recompute-modules-unknown.yaml"),
            kBad +
                "workload-recompute-modules-unknown.yaml:10:28: training.recompute_modules[1]: "
                "expected one of core_attn, mla_up_proj, moe_act, layernorm, mlp, moe or "
                "shared_experts, got \"attention\"");
  EXPECT_EQ(workload_error("workload-recompute-modules-twice.yaml"),
            kBad +
                "workload-recompute-modules-twice.yaml:10:39: training.recompute_modules[2]: "
                "expected each module once");
}

// The loss's fusion is one of Megatron's: none, native or Transformer Engine's.
TEST(WorkloadErrors, CrossEntropyFusionIsOneOfMegatrons) {
  EXPECT_EQ(workload_error("workload-cross-entropy-unknown.yaml"),
            kBad +
                "workload-cross-entropy-unknown.yaml:9:25: training.cross_entropy_fusion: "
                "expected one of none, native or te, got \"liger\"");
}

// The operators a framework leaves unfused: each name once, from its list, and only one the
// model has (GPT-2's LayerNorm is one native kernel either way, its MLP is not SwiGLU).
TEST(WorkloadErrors, UnfusedOperatorsAreKnownOnesTheModelHas) {
  EXPECT_EQ(workload_error("workload-unfused-unknown.yaml"),
            kBad +
                "workload-unfused-unknown.yaml:9:21: training.unfused[1]: expected one of "
                "rmsnorm, swiglu or rope, got \"rotary\"");
  EXPECT_EQ(workload_error("workload-unfused-twice.yaml"),
            kBad +
                "workload-unfused-twice.yaml:9:30: training.unfused[2]: expected each "
                "operator once");
  EXPECT_EQ(workload_error("workload-unfused-layernorm.yaml"),
            kBad +
                "workload-unfused-layernorm.yaml:9:13: training.unfused[0]: expected rmsnorm "
                "only for a model whose norm is RMSNorm (its LayerNorm is one native kernel "
                "either way)");
  EXPECT_EQ(workload_error("workload-unfused-learned-positions.yaml"),
            kBad +
                "workload-unfused-learned-positions.yaml:9:13: training.unfused[0]: expected "
                "rope only for a model with rotary positions (this one learns them)");
  EXPECT_EQ(workload_error("workload-unfused-gelu.yaml"),
            kBad +
                "workload-unfused-gelu.yaml:9:13: training.unfused[0]: expected swiglu only "
                "for a model whose MLP is SwiGLU");
}

// A mixture written inline: its keys only with experts, top-k within the experts, and latent
// attention's widths together.
TEST(WorkloadErrors, InlineMixtureAndLatentAttentionKeysComeTogether) {
  EXPECT_EQ(workload_error("workload-inline-moe-stray.yaml"),
            kBad +
                "workload-inline-moe-stray.yaml:12:17: model.shape.expert_ffn: expected "
                "experts beside it");
  EXPECT_EQ(workload_error("workload-inline-moe-topk.yaml"),
            kBad +
                "workload-inline-moe-topk.yaml:13:24: model.shape.experts_per_token: expected "
                "an integer from 1 to 8, got \"9\"");
  EXPECT_EQ(workload_error("workload-inline-latent-partial.yaml"),
            kBad +
                "workload-inline-latent-partial.yaml:5:5: model.shape.qk_rope_head_dim: "
                "missing required key");
}

// Megatron-Core's checks of --overlap-moe-expert-parallel-comm: no full recompute, no recomputed
// mixture, a bf16 or fp16 model.
TEST(WorkloadErrors, ExpertParallelOverlapTakesMegatronCoresLimits) {
  EXPECT_EQ(workload_error("workload-ep-overlap-full-recompute.yaml"),
            kBad +
                "workload-ep-overlap-full-recompute.yaml:10:22: training.overlap.ep_comm: "
                "expected no full recompute beside it (Megatron-Core's combined 1F1B schedule "
                "refuses full recomputation)");
  EXPECT_EQ(workload_error("workload-ep-overlap-moe-recompute.yaml"),
            kBad +
                "workload-ep-overlap-moe-recompute.yaml:12:14: training.overlap.ep_comm: "
                "expected recompute_modules without moe beside it (a recomputed mixture would "
                "dispatch again, which the combined 1F1B schedule does not allow)");
  EXPECT_EQ(workload_error("workload-ep-overlap-fp32.yaml"),
            kBad +
                "workload-ep-overlap-fp32.yaml:9:42: training.overlap.ep_comm: expected dtype "
                "bf16, fp16 or fp8 (Megatron-Core overlaps the all-to-alls only in a bf16 or "
                "fp16 model)");
}

// Megatron-Core asserts --overlap-param-gather needs --overlap-grad-reduce.
TEST(WorkloadErrors, ParamGatherOverlapNeedsGradReduceOverlap) {
  EXPECT_EQ(workload_error("workload-param-gather-alone.yaml"),
            kBad + "workload-param-gather-alone.yaml:10:27: training.overlap.param_gather: expected "
                   "grad_reduce: true beside it (Megatron-Core overlaps the parameter all-gather only "
                   "with the gradient reduction overlapped)");
}

TEST(WorkloadErrors, UnknownMoeDispatcher) {
  EXPECT_EQ(workload_error("workload-moe-dispatcher.yaml"),
            kBad +
                "workload-moe-dispatcher.yaml:9:21: training.moe.dispatcher: expected one of "
                "alltoall, flex or gshard, got \"deepep\"");
}

// GShard's masks have a capacity per expert: its dispatcher without one is refused.
TEST(WorkloadErrors, GshardDispatcherWithoutCapacity) {
  EXPECT_EQ(workload_error("workload-moe-gshard-without-capacity.yaml"),
            kBad +
                "workload-moe-gshard-without-capacity.yaml:9:21: training.moe.dispatcher: expected "
                "capacity_factor beside gshard (its dispatch masks give every expert a capacity)");
}

// Padding needs a capacity to pad to, and GShard's masks always pad.
TEST(WorkloadErrors, PaddingNeedsACapacityAndGshardPads) {
  EXPECT_EQ(workload_error("workload-moe-pad-without-capacity.yaml"),
            kBad +
                "workload-moe-pad-without-capacity.yaml:9:26: training.moe.pad_to_capacity: "
                "expected capacity_factor beside it (it pads the experts to their capacity)");
  EXPECT_EQ(
      workload_error("workload-moe-gshard-unpadded.yaml"),
      kBad +
          "workload-moe-gshard-unpadded.yaml:9:69: training.moe.pad_to_capacity: expected "
          "true with dispatcher gshard (GShard's masks give every expert its whole capacity)");
}

TEST(ScenarioErrors, PlanStageIslandNotInCluster) {
  EXPECT_EQ(scenario_error("scenario-unknown-island.yaml"),
            kBad + "scenario-unknown-island.yaml:5:7: plan: " + kBad +
                   "plan-unknown-island.yaml:5:14: stages[1].island: expected an island of cluster "
                   "\"two-zone\" (a100, h100), got \"tpu-v5\"");
}

TEST(ScenarioErrors, CostObjectiveWithoutPrices) {
  EXPECT_EQ(scenario_error("scenario-cost-without-prices.yaml"),
            kBad + "scenario-cost-without-prices.yaml:5:12: objective: expected prices when the objective "
                   "is cost");
}

TEST(ScenarioErrors, PriceForUnknownIsland) {
  EXPECT_EQ(scenario_error("scenario-price-island.yaml"),
            kBad + "scenario-price-island.yaml:9:11: prices.islands.v100: expected an island of cluster "
                   "\"two-zone\", got \"v100\"");
}

TEST(ScenarioErrors, PriceInAnotherCurrency) {
  EXPECT_EQ(scenario_error("scenario-price-currency.yaml"),
            kBad + "scenario-price-currency.yaml:8:23: prices.islands.a100.chip_hour: expected a price in "
                   "USD per hour such as \"2.5 USD/h\", got \"12 CNY/h\"");
}

TEST(ScenarioErrors, ClusterFileMissing) {
  EXPECT_EQ(scenario_error("scenario-missing-cluster.yaml"),
            kBad + "scenario-missing-cluster.yaml:3:10: cluster: " + kDataDir +
                "/no-such-cluster.yaml: cannot open the file for reading");
}

TEST(ScenarioErrors, StragglerOnUnknownIsland) {
  EXPECT_EQ(scenario_error("scenario-straggler-island.yaml"),
            kBad + "scenario-straggler-island.yaml:8:16: simulation.stragglers[1].island: expected an "
                   "island of cluster \"two-zone\" (a100, h100), got \"tpu-v5\"");
}

TEST(ScenarioErrors, StragglerNodeOutOfRange) {
  EXPECT_EQ(scenario_error("scenario-straggler-node.yaml"),
            kBad + "scenario-straggler-node.yaml:7:28: simulation.stragglers[0].node: expected a node "
                   "index of island \"a100\" from 0 to 3, got \"4\"");
}

TEST(ScenarioErrors, StragglerNodeTwice) {
  EXPECT_EQ(scenario_error("scenario-straggler-twice.yaml"),
            kBad + "scenario-straggler-twice.yaml:8:28: simulation.stragglers[1].node: expected each "
                   "node once, got node 1 of island \"h100\" again (first at line 7)");
}

TEST(ScenarioErrors, StragglerFasterThanItsPeers) {
  EXPECT_EQ(scenario_error("scenario-straggler-slowdown.yaml"),
            kBad + "scenario-straggler-slowdown.yaml:7:41: simulation.stragglers[0].slowdown: expected a "
                   "number from 1 to 100, got \"0.5\"");
}

TEST(ScenarioErrors, JitterAboveOne) {
  EXPECT_EQ(scenario_error("scenario-jitter.yaml"),
            kBad + "scenario-jitter.yaml:7:11: simulation.jitter: expected a number from 0 to 1, got \"1.5\"");
}

TEST(ScenarioErrors, RandomStragglerFractionAboveOne) {
  EXPECT_EQ(scenario_error("scenario-random-stragglers.yaml"),
            kBad + "scenario-random-stragglers.yaml:6:33: simulation.random_stragglers.fraction: "
                   "expected a number from 0 to 1, got \"2\"");
}

TEST(ScenarioErrors, NegativeSeed) {
  EXPECT_EQ(scenario_error("scenario-seed.yaml"),
            kBad + "scenario-seed.yaml:6:9: simulation.seed: expected an integer from 0 to "
                   "9223372036854775807, got \"-1\"");
}

TEST(ScenarioErrors, MtbfOfAChipTheClusterDoesNotUse) {
  EXPECT_EQ(scenario_error("scenario-mtbf-chip.yaml"),
            kBad + "scenario-mtbf-chip.yaml:8:18: reliability.node_mtbf.nvidia-b200: expected a chip "
                   "profile id of an island of cluster \"two-zone\" (nvidia-a100-sxm4-80gb, "
                   "nvidia-h100-sxm5-80gb), got \"nvidia-b200\"");
}

TEST(ScenarioErrors, ZeroMtbf) {
  EXPECT_EQ(scenario_error("scenario-mtbf-zero.yaml"),
            kBad + "scenario-mtbf-zero.yaml:6:38: reliability.node_mtbf.nvidia-a100-sxm4-80gb: expected "
                   "a positive duration such as \"1.5 us\", got \"0 h\"");
}

TEST(ScenarioErrors, ZeroCheckpointBandwidth) {
  EXPECT_EQ(scenario_error("scenario-checkpoint-bandwidth.yaml"),
            kBad + "scenario-checkpoint-bandwidth.yaml:7:31: reliability.checkpoint_write_bandwidth: "
                   "expected a bandwidth between 1 MB/s and 1 PB/s, got \"0 GB/s\"");
}

TEST(ScenarioErrors, UnknownReliabilityKey) {
  EXPECT_EQ(scenario_error("scenario-reliability-unknown-key.yaml"),
            kBad + "scenario-reliability-unknown-key.yaml:9:3: reliability.checkpoint_size: unknown key");
}

TEST(ScenarioErrors, RestartTimeMissing) {
  EXPECT_EQ(scenario_error("scenario-restart-missing.yaml"),
            kBad + "scenario-restart-missing.yaml:6:3: reliability.restart_time: missing required key");
}

TEST(CheckFile, UnknownSchema) {
  EXPECT_EQ(input_error_of([] { (void)formats::check_file(kBad + "unknown-schema.yaml"); }),
            kBad + "unknown-schema.yaml:1:9: schema: expected one of "
                   "hetplan/chip/v1, hetplan/cluster/v1, hetplan/workload/v1, hetplan/scenario/v1 or "
                   "hetplan/plan/v1, got \"hetplan/cluster/v2\"");
}

TEST(CheckFile, NeitherSchemaNorModelType) {
  EXPECT_EQ(input_error_of([] { (void)formats::check_file(kBad + "no-schema.yaml"); }),
            kBad + "no-schema.yaml:1:1: schema: missing required key (expected "
                   "hetplan/<chip|cluster|workload|scenario|plan>/v1, or a Hugging Face config with "
                   "model_type)");
}

}  // namespace
}  // namespace hetplan
