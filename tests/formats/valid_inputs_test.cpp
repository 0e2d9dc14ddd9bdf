// Positive cases: the shipped profiles and the valid fixtures load, with the values they state.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>

#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "tests/formats/test_support.hpp"
#include "tests/support/temp_folder.hpp"

namespace hetplan {
namespace {

using testing::kDataDir;
using testing::kSourceDir;

TEST(ValidInputs, EveryShippedProfileLoads) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/profiles")) {
    if (entry.path().extension() != ".yaml") continue;
    ++count;
    SCOPED_TRACE(entry.path().string());
    const ChipProfile chip = formats::load_chip(entry.path().string());
    // A profile's id is its file name, and every number it states names a listed source.
    EXPECT_EQ(chip.id, entry.path().stem().string());
    EXPECT_FALSE(chip.sources.empty());
    EXPECT_FALSE(chip.peak_flops.empty());
    for (const auto& [path, source] : chip.cited_by) {
      EXPECT_TRUE(chip.sources.contains(source)) << path << " cites " << source;
    }
    EXPECT_EQ(formats::check_file(entry.path().string()).kind, "chip");
  }
  EXPECT_GE(count, 14);
}

TEST(ValidInputs, A100ProfileValues) {
  const ChipProfile chip = formats::load_chip(kSourceDir + "/profiles/nvidia-a100-sxm4-80gb.yaml");
  EXPECT_EQ(chip.peak(DType::bf16), 312e12);
  EXPECT_EQ(chip.memory_capacity, 80.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(chip.memory_bandwidth, 2039e9);
  EXPECT_EQ(chip.chips_per_node, 8);
  EXPECT_EQ(chip.nic_count, 8);
  EXPECT_EQ(chip.nic_speed, 25e9);
  EXPECT_EQ(chip.tdp, 400.0);
  EXPECT_EQ(chip.efficiency.gemm_max, 0.87);
  EXPECT_EQ(chip.cited_by.at("memory.capacity.value"), "torch-trace-a100");
  EXPECT_EQ(chip.cited_by.at("memory.bandwidth"), "datasheet");
}

TEST(ValidInputs, Cluster) {
  const Cluster cluster = formats::load_cluster(kDataDir + "/cluster.yaml");
  EXPECT_EQ(cluster.name, "two-zone");
  ASSERT_EQ(cluster.islands.size(), 2u);
  EXPECT_EQ(cluster.chips.size(), 2u);
  const Island& a100 = cluster.islands[0];
  EXPECT_EQ(a100.chip_count(), 32);      // 4 nodes x 8 from the profile
  EXPECT_EQ(a100.nic_count, 8);          // from the profile
  EXPECT_EQ(a100.nic_speed, 25e9);
  EXPECT_EQ(cluster.islands[1].nic_speed, 50e9);  // the island's own 400 Gbps
  EXPECT_EQ(cluster.islands[1].labels.at("team"), "research");
  EXPECT_EQ(cluster.fabric.oversubscription, 2.0);
  EXPECT_DOUBLE_EQ(cluster.fabric.switch_latency, 600e-9);
  ASSERT_EQ(cluster.fabric.zone_links.size(), 1u);
  EXPECT_EQ(cluster.fabric.zone_links[0].bandwidth, 100e9);
  EXPECT_TRUE(cluster.zones_connected("east", "west"));
}

TEST(ValidInputs, ClusterFreeNodesDefaultToAllNodes) {
  const Cluster cluster = formats::load_cluster(kDataDir + "/cluster.yaml");
  ASSERT_EQ(cluster.islands.size(), 2u);
  for (const Island& island : cluster.islands) {
    SCOPED_TRACE(island.name);
    EXPECT_EQ(island.free_nodes, island.nodes);
    EXPECT_EQ(island.free_chip_count(), island.chip_count());
  }
}

TEST(ValidInputs, ClusterFreeNodesGiven) {
  const Cluster cluster = formats::load_cluster(kDataDir + "/cluster-free-nodes.yaml");
  ASSERT_EQ(cluster.islands.size(), 2u);
  EXPECT_EQ(cluster.islands[0].nodes, 4);
  EXPECT_EQ(cluster.islands[0].free_nodes, 3);
  EXPECT_EQ(cluster.islands[0].free_chip_count(), 24);  // 3 nodes x 8 from the profile
  EXPECT_EQ(cluster.islands[1].free_nodes, 0);          // 0 is allowed: nothing free now
  EXPECT_EQ(cluster.islands[1].free_chip_count(), 0);
}

// What the inventory import writes for an island of a real site: the resources its device
// plugins register, its container image and its nodes' names, as the export uses them.
TEST(ValidInputs, ClusterIslandResourcesImageAndNodeNames) {
  const test::TempFolder folder;
  std::ofstream(folder.file("site.yaml"))
      << "schema: hetplan/cluster/v1\nname: site\nprofiles: [\"" << kSourceDir << "/profiles\"]\n"
      << "fabric: {kind: roce-v2, topology: single-switch, leaf_uplink_speed: 400 Gbps,\n"
         "         switch_latency: 600 ns, link_latency: 50 ns, zones: [lab]}\n"
         "islands:\n"
         "  - name: mlu\n"
         "    chip: cambricon-mlu370-x8\n"
         "    nodes: 2\n"
         "    nics: {count: 4, speed: 200 Gbps}\n"
         "    zone: lab\n"
         "    resources: {device: cambricon.com/mlu, rdma: rdma/hca_shared_devices_b}\n"
         "    image: registry.local/neuware-pytorch:5.10-x86_64\n"
         "    node_names: [mlu-0, mlu-1]\n"
         "  - {name: npu, chip: ascend-910b, nodes: 1, zone: lab, resources: {rdma: none}}\n";
  const Cluster cluster = formats::load_cluster(folder.file("site.yaml"));
  ASSERT_EQ(cluster.islands.size(), 2u);
  const Island& mlu = cluster.islands[0];
  EXPECT_EQ(mlu.device_resource, "cambricon.com/mlu");
  EXPECT_EQ(mlu.rdma_resource, "rdma/hca_shared_devices_b");
  EXPECT_EQ(mlu.image, "registry.local/neuware-pytorch:5.10-x86_64");
  EXPECT_EQ(mlu.node_names, (std::vector<std::string>{"mlu-0", "mlu-1"}));
  EXPECT_EQ(cluster.islands[1].rdma_resource, "none");
  EXPECT_TRUE(cluster.islands[1].image.empty());
}

TEST(ValidInputs, WorkloadFromHfConfig) {
  const Workload workload = formats::load_workload(kDataDir + "/workload.yaml");
  EXPECT_EQ(workload.model.model_type, "llama");
  EXPECT_EQ(workload.model.layers, 32);
  EXPECT_EQ(workload.training.seq_len, 4096);
  EXPECT_EQ(workload.training.optimizer, Optimizer::adamw);
  EXPECT_EQ(workload.training.zero_stage, 1);
}

TEST(ValidInputs, WorkloadInlineShape) {
  const Workload workload = formats::load_workload(kDataDir + "/workload-inline.yaml");
  EXPECT_EQ(workload.model.model_type, "custom");
  EXPECT_EQ(workload.model.ffn, 4 * 2048);  // the default for a non-gated MLP
  EXPECT_EQ(workload.training.dtype, DType::fp16);
  // Megatron's default for fp16: gradients accumulate and are reduced in fp16.
  EXPECT_FALSE(workload.training.fp32_grad_accumulation);
}

// A mixture's settings; without them, Megatron-Core's all-to-all dispatcher and grouped GEMMs.
TEST(ValidInputs, WorkloadMoeSettings) {
  const Workload workload = formats::load_workload(kDataDir + "/workload-moe.yaml");
  EXPECT_EQ(workload.model.experts, 8);
  EXPECT_EQ(workload.training.expert_imbalance, 1.1);
  EXPECT_FALSE(workload.training.grouped_gemm);
  EXPECT_EQ(workload.training.moe_dispatcher, MoeDispatcher::flex);
  const TrainingSettings defaults;
  EXPECT_EQ(defaults.moe_dispatcher, MoeDispatcher::all_to_all);
  EXPECT_TRUE(defaults.grouped_gemm);
  EXPECT_EQ(defaults.moe_capacity_factor, 0.0);  // dropless
  const Workload gshard = formats::load_workload(kDataDir + "/workload-moe-gshard.yaml");
  EXPECT_EQ(gshard.training.moe_dispatcher, MoeDispatcher::gshard);
  EXPECT_EQ(gshard.training.moe_capacity_factor, 1.1);
  EXPECT_TRUE(gshard.training.moe_pad_to_capacity);  // the default: padded
}

TEST(ValidInputs, GradientAccumulationDefaultsAsMegatron) {
  EXPECT_TRUE(default_fp32_grad_accumulation(DType::bf16));
  EXPECT_TRUE(default_fp32_grad_accumulation(DType::fp8));
  EXPECT_FALSE(default_fp32_grad_accumulation(DType::fp16));
  EXPECT_FALSE(default_fp32_grad_accumulation(DType::fp32));
}

// The plan writer keeps a plan's and its stages' recompute: written and read back, the same.
TEST(ValidInputs, PlanWithRecomputeReadsBackAsWritten) {
  Plan plan;
  plan.name = "partial";
  plan.recompute = Recompute::full;
  plan.recompute_layers = 2;
  for (int i = 0; i < 3; ++i) {
    PlanStage stage;
    stage.island = "a";
    stage.first_layer = 4 * i;
    stage.num_layers = 4;
    stage.tp = 2;
    stage.dp = 1;
    plan.stages.push_back(stage);
  }
  plan.stages[1].recompute = Recompute::full;
  plan.stages[1].recompute_layers = 1;
  plan.stages[2].recompute = Recompute::none;
  const std::string text = formats::plan_yaml(plan);
  const Plan read = formats::parse_plan(text, "plan.yaml");
  EXPECT_EQ(read.recompute, Recompute::full);
  EXPECT_EQ(read.recompute_layers, 2);
  EXPECT_FALSE(read.stages[0].recompute);
  EXPECT_EQ(read.stages[1].recompute, Recompute::full);
  EXPECT_EQ(read.stages[1].recompute_layers, 1);
  EXPECT_EQ(read.stages[2].recompute, Recompute::none);
  EXPECT_FALSE(read.stages[2].recompute_layers);
  EXPECT_EQ(formats::plan_yaml(read), text);
}

TEST(ValidInputs, Scenario) {
  const Scenario scenario = formats::load_scenario(kDataDir + "/scenario.yaml");
  EXPECT_EQ(scenario.objective, Objective::cost);
  ASSERT_TRUE(scenario.prices.has_value());
  EXPECT_DOUBLE_EQ(*scenario.prices->islands.at("h100").chip_hour, 3.2 / 3600);
  ASSERT_TRUE(scenario.reference_plan.has_value());
  EXPECT_EQ(scenario.reference_plan->stages.size(), 2u);
}

TEST(ValidInputs, ScenarioWithoutSimulationOrReliability) {
  const Scenario scenario = formats::load_scenario(kDataDir + "/scenario.yaml");
  EXPECT_FALSE(scenario.simulation.has_value());
  EXPECT_FALSE(scenario.reliability.has_value());
}

TEST(ValidInputs, ScenarioSimulationAndReliability) {
  const Scenario scenario = formats::load_scenario(kDataDir + "/scenario-reliability.yaml");
  ASSERT_TRUE(scenario.simulation.has_value());
  const SimulationSettings& simulation = *scenario.simulation;
  EXPECT_EQ(simulation.seed, std::optional<std::uint64_t>(7));
  EXPECT_EQ(simulation.jitter, 0.02);
  ASSERT_EQ(simulation.stragglers.size(), 2u);
  EXPECT_EQ(simulation.stragglers[0].island, "a100");
  EXPECT_EQ(simulation.stragglers[0].node, 3);
  EXPECT_EQ(simulation.stragglers[0].slowdown, 1.5);
  EXPECT_EQ(simulation.stragglers[1].island, "h100");
  EXPECT_EQ(simulation.stragglers[1].slowdown, 2.0);
  EXPECT_EQ(simulation.stragglers[1].location.line, 12);
  ASSERT_TRUE(simulation.random_stragglers.has_value());
  EXPECT_EQ(simulation.random_stragglers->fraction, 0.01);
  EXPECT_EQ(simulation.random_stragglers->slowdown, 1.25);

  ASSERT_TRUE(scenario.reliability.has_value());
  const Reliability& reliability = *scenario.reliability;
  ASSERT_EQ(reliability.node_mtbf.size(), 2u);
  EXPECT_EQ(reliability.node_mtbf.at("nvidia-a100-sxm4-80gb"), 2000 * 3600.0);
  EXPECT_EQ(reliability.node_mtbf.at("nvidia-h100-sxm5-80gb"), 1500 * 3600.0);
  EXPECT_EQ(reliability.checkpoint_write_bandwidth, 20e9);
  EXPECT_EQ(reliability.checkpoint_read_bandwidth, 40e9);
  EXPECT_EQ(reliability.restart_time, 600.0);
  EXPECT_EQ(reliability.checkpoint_interval, std::optional<double>(3600.0));
  EXPECT_EQ(reliability.location.line, 15);
  EXPECT_TRUE(scenario.reference_plan.has_value());
}

TEST(ValidInputs, ScenarioReliabilityDefaults) {
  const Scenario scenario = formats::load_scenario(kDataDir + "/scenario-reliability-minimal.yaml");
  ASSERT_TRUE(scenario.simulation.has_value());
  EXPECT_EQ(scenario.simulation->jitter, 0.0);
  EXPECT_TRUE(scenario.simulation->stragglers.empty());
  EXPECT_FALSE(scenario.simulation->seed.has_value());
  ASSERT_TRUE(scenario.reliability.has_value());
  const Reliability& reliability = *scenario.reliability;
  EXPECT_FALSE(reliability.node_mtbf.contains("nvidia-a100-sxm4-80gb"));  // unknown stays unknown
  EXPECT_EQ(reliability.checkpoint_write_bandwidth, 25e9);
  EXPECT_EQ(reliability.checkpoint_read_bandwidth, 25e9);  // the write bandwidth
  EXPECT_EQ(reliability.restart_time, 0.0);
  EXPECT_FALSE(reliability.checkpoint_interval.has_value());
}

TEST(ValidInputs, ShippedScenariosLoad) {
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(formats::check_file(entry.path().string()).kind, "scenario");
  }
  const Scenario scenario = formats::load_scenario(kSourceDir + "/scenarios/default.yaml");
  ASSERT_TRUE(scenario.reliability.has_value());
  for (const Island& island : scenario.cluster.islands) {
    EXPECT_TRUE(scenario.reliability->node_mtbf.contains(scenario.cluster.chip_of(island).id))
        << island.name;
  }
}

TEST(ValidInputs, CheckFileRecognisesEveryKind) {
  EXPECT_EQ(formats::check_file(kDataDir + "/cluster.yaml").kind, "cluster");
  EXPECT_EQ(formats::check_file(kDataDir + "/workload.yaml").kind, "workload");
  EXPECT_EQ(formats::check_file(kDataDir + "/scenario.yaml").kind, "scenario");
  EXPECT_EQ(formats::check_file(kDataDir + "/scenario-reliability.yaml").kind, "scenario");
  EXPECT_EQ(formats::check_file(kDataDir + "/plan.yaml").kind, "plan");
  EXPECT_EQ(formats::check_file(kDataDir + "/hf/gpt2.json").kind, "hf-config");
}

// A mixture of experts and latent attention written inline describe the same model as the
// published config.json: Mixtral-8x7B (46.7B) and DeepSeek-V2-Lite (15.7B), parameter for
// parameter.
TEST(ValidInputs, InlineMixturesMatchTheirConfigs) {
  for (const auto& [inline_file, hf_file] :
       {std::pair{"workload-inline-mixtral.yaml", "mixtral-8x7b-v0.1.json"},
        std::pair{"workload-inline-deepseek-v2-lite.yaml", "deepseek-v2-lite.json"}}) {
    SCOPED_TRACE(inline_file);
    const Workload w = formats::load_workload(kDataDir + "/" + inline_file);
    const ModelShape hf =
        formats::parse_hf_config(formats::read_text_file(kDataDir + "/hf/" + hf_file), hf_file);
    ASSERT_TRUE(w.model.moe());
    EXPECT_EQ(w.model.latent_attention(), hf.latent_attention());
    EXPECT_EQ(w.model.dense_layers, hf.dense_layers);
    EXPECT_EQ(w.model.shared_expert_ffn, hf.shared_expert_ffn);
    EXPECT_DOUBLE_EQ(w.model.total_parameters(), hf.total_parameters());
    EXPECT_DOUBLE_EQ(w.model.active_parameters(), hf.active_parameters());
    EXPECT_DOUBLE_EQ(w.model.layer_parameters(0), hf.layer_parameters(0));
    EXPECT_DOUBLE_EQ(w.model.layer_parameters(w.model.layers - 1),
                     hf.layer_parameters(hf.layers - 1));
  }
}

}  // namespace
}  // namespace hetplan
