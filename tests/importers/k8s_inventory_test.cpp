// `kubectl get nodes -o json` into an inventory, and the inventory into a cluster file that the
// cluster loader (hetplan check) accepts. The fixture is built from the device plugins' documented
// resource names and labels (tests/importers/data/kubectl-get-nodes-ascend-dcu-mlu.README.md);
// variants are made from it with nlohmann::json, and malformed inputs are small inline documents
// whose error positions can be read off the text.
#include "importers/k8s_inventory.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "formats/loaders.hpp"
#include "importers/collective_logs.hpp"
#include "tests/formats/test_support.hpp"

namespace hetplan::importers {
namespace {

using hetplan::testing::input_error_of;

const std::string kData = std::string(HETPLAN_SOURCE_DIR) + "/tests/importers/data/";
const std::string kFixture = kData + "kubectl-get-nodes-ascend-dcu-mlu.json";
const std::string kProfiles = std::string(HETPLAN_SOURCE_DIR) + "/profiles";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json fixture_json() {
  return nlohmann::json::parse(read(kFixture));
}

nlohmann::json& node_named(nlohmann::json& list, const std::string& name) {
  for (auto& item : list["items"]) {
    if (item["metadata"]["name"] == name) return item;
  }
  ADD_FAILURE() << "no node " << name << " in the fixture";
  return list["items"][0];
}

Inventory parse(const nlohmann::json& list) {
  return parse_kubectl_nodes(list.dump(4), "nodes.json");
}

const InventoryIsland* island_of(const Inventory& inventory, const std::string& chip) {
  for (const auto& island : inventory.islands) {
    if (island.chip_id == chip) return &island;
  }
  return nullptr;
}

bool has_question(const std::vector<std::string>& questions, const std::string& part) {
  return std::any_of(questions.begin(), questions.end(),
                     [&](const std::string& q) { return q.find(part) != std::string::npos; });
}

std::string parse_error(const std::string& text) {
  return input_error_of([&] { (void)parse_kubectl_nodes(text, "nodes.json"); });
}

// The chip profiles an inventory's islands name, loaded from the repository's profiles/.
std::vector<ChipProfile> profiles_of(const Inventory& inventory) {
  std::vector<ChipProfile> profiles;
  for (const auto& island : inventory.islands) {
    const auto path = std::filesystem::path(kProfiles) / (island.chip_id + ".yaml");
    if (std::filesystem::exists(path)) profiles.push_back(formats::load_chip(path.string()));
  }
  return profiles;
}

// Writes a cluster file into a fresh temporary folder and loads it as `hetplan check` does.
Cluster load_written(const std::string& yaml, const std::string& test_name) {
  const auto folder = std::filesystem::temp_directory_path() / ("hetplan-inventory-" + test_name);
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  const auto path = folder / "cluster.yaml";
  std::ofstream(path) << yaml;
  return formats::load_cluster(path.string());
}

// ---------------------------------------------------------------------------------------------
// The fixture: 4 Ascend 910B3, 2 Hygon K100-AI, 2 Cambricon MLU370 (one cordoned), 1 control plane

TEST(K8sInventory, FixtureIslands) {
  const Inventory inventory = import_kubectl_nodes(kFixture);
  ASSERT_EQ(inventory.islands.size(), 3u);
  EXPECT_EQ(inventory.other_nodes, std::vector<std::string>{"master-01"});

  const InventoryIsland& ascend = inventory.islands[0];
  EXPECT_EQ(ascend.name, "ascend-910b-313t");
  EXPECT_EQ(ascend.chip_id, "ascend-910b-313t");  // 910B3: 20 AI cores
  EXPECT_EQ(ascend.family, "ascend");
  EXPECT_EQ(ascend.resource, "huawei.com/Ascend910");
  EXPECT_EQ(ascend.model, "910B3");
  EXPECT_EQ(ascend.nodes, 4);
  EXPECT_EQ(ascend.free_nodes, 4);
  EXPECT_EQ(ascend.chips_per_node, 8);
  EXPECT_EQ(ascend.zone, "hall-a");
  EXPECT_EQ(ascend.zone_label, "hall-a");
  EXPECT_EQ(ascend.node_names,
            (std::vector<std::string>{"a910b-01", "a910b-02", "a910b-03", "a910b-04"}));
  EXPECT_TRUE(ascend.busy_nodes.empty());
  EXPECT_EQ(ascend.nic_count, 0);
  EXPECT_TRUE(ascend.rdma_resources.empty());
  EXPECT_TRUE(ascend.runtime_version.empty());
  const std::map<std::string, std::string> ascend_labels = {
      {"accelerator", "huawei-Ascend910"},
      {"accelerator-type", "module-910b-8"},
      {"host-arch", "huawei-arm"},
      {"kubernetes.io/arch", "arm64"},
      {"node.kubernetes.io/npu.chip.name", "910B3"},
      {"servertype", "Ascend910-20"},
      {"topology.kubernetes.io/region", "dc1"},
      {"topology.kubernetes.io/zone", "hall-a"}};
  EXPECT_EQ(ascend.labels, ascend_labels);
  EXPECT_EQ(ascend.location.file, kFixture);
  EXPECT_GT(ascend.location.line, 1);

  const InventoryIsland& dcu = inventory.islands[1];
  EXPECT_EQ(dcu.name, "hygon-k100-ai");
  EXPECT_EQ(dcu.chip_id, "hygon-k100-ai");
  EXPECT_EQ(dcu.resource, "hygon.com/dcu");
  EXPECT_EQ(dcu.model, "K100_AI");
  EXPECT_EQ(dcu.nodes, 2);
  EXPECT_EQ(dcu.free_nodes, 2);
  EXPECT_EQ(dcu.chips_per_node, 8);
  EXPECT_EQ(dcu.zone, "hall-b");
  EXPECT_EQ(dcu.rdma_resources, std::vector<std::string>{"rdma/hca_shared_devices_a"});
  EXPECT_EQ(dcu.labels.at("hygon.com/dcu.name"), "K100_AI");

  const InventoryIsland& mlu = inventory.islands[2];
  EXPECT_EQ(mlu.name, "cambricon-mlu370-x8");
  EXPECT_EQ(mlu.chip_id, "cambricon-mlu370-x8");
  EXPECT_EQ(mlu.resource, "cambricon.com/mlu370");
  EXPECT_EQ(mlu.model, "MLU370");
  EXPECT_EQ(mlu.nodes, 2);
  EXPECT_EQ(mlu.free_nodes, 1);
  EXPECT_EQ(mlu.chips_per_node, 8);
  EXPECT_EQ(mlu.zone, "hall-b");
  ASSERT_EQ(mlu.busy_nodes.size(), 1u);
  EXPECT_EQ(mlu.busy_nodes[0].name, "mlu370-02");
  EXPECT_EQ(mlu.busy_nodes[0].reason, "cordoned (spec.unschedulable)");
}

TEST(K8sInventory, FixtureQuestions) {
  const Inventory inventory = import_kubectl_nodes(kFixture);
  ASSERT_EQ(inventory.islands.size(), 3u);
  EXPECT_TRUE(has_question(inventory.questions, "fabric: Kubernetes does not know the network"));
  EXPECT_TRUE(has_question(inventory.questions, "zone links:"));
  EXPECT_TRUE(has_question(inventory.questions, "free nodes:"));
  EXPECT_FALSE(has_question(inventory.questions, "zones: some accelerator nodes"));
  for (const auto& island : inventory.islands) {
    EXPECT_TRUE(has_question(island.questions, "nodes per leaf switch")) << island.name;
    EXPECT_TRUE(has_question(island.questions, "runtime version:")) << island.name;
  }
  const auto& ascend = inventory.islands[0].questions;
  EXPECT_FALSE(has_question(ascend, "chip:"));  // 910B3 names its class
  EXPECT_TRUE(has_question(ascend, "no RDMA resource or label on these nodes"));
  EXPECT_TRUE(
      has_question(inventory.islands[1].questions,
                   "RDMA is present (rdma/hca_shared_devices_a) but nothing counts the NICs"));
  EXPECT_FALSE(has_question(inventory.islands[1].questions, "chip:"));  // K100_AI names the chip
  EXPECT_TRUE(has_question(inventory.islands[2].questions, "the MLU370 card (X8, X4 or S4)"));
}

// ---------------------------------------------------------------------------------------------
// The cluster file

TEST(K8sInventoryClusterYaml, LoadsWithTheClusterLoader) {
  const Inventory inventory = import_kubectl_nodes(kFixture);
  const std::string yaml = cluster_yaml(inventory, "site-a", kProfiles, profiles_of(inventory));
  const Cluster cluster = load_written(yaml, "loads");
  EXPECT_EQ(cluster.name, "site-a");
  EXPECT_EQ(cluster.fabric.kind, FabricKind::roce_v2);
  EXPECT_EQ(cluster.fabric.topology, FabricTopology::leaf_spine);
  EXPECT_EQ(cluster.fabric.zones, (std::vector<std::string>{"hall-a", "hall-b"}));
  EXPECT_TRUE(cluster.fabric.zone_links.empty());
  ASSERT_EQ(cluster.islands.size(), 3u);

  const Island& ascend = cluster.islands[0];
  EXPECT_EQ(ascend.name, "ascend-910b-313t");
  EXPECT_EQ(cluster.chip_of(ascend).id, "ascend-910b-313t");
  EXPECT_EQ(ascend.nodes, 4);
  EXPECT_EQ(ascend.free_nodes, 4);
  EXPECT_EQ(ascend.chips_per_node, 8);  // the profile's
  EXPECT_EQ(ascend.nic_count, 8);       // the profile's
  EXPECT_EQ(ascend.zone, "hall-a");
  EXPECT_EQ(ascend.nodes_per_leaf, 4);
  EXPECT_EQ(ascend.labels.at("accelerator"), "huawei-Ascend910");
  EXPECT_EQ(ascend.labels.at("node.kubernetes.io/npu.chip.name"), "910B3");
  EXPECT_EQ(ascend.labels.at("accelerator.model"), "ascend-910b-313t");  // the loader's own

  const Island& dcu = cluster.islands[1];
  EXPECT_EQ(dcu.name, "hygon-k100-ai");
  EXPECT_EQ(dcu.chips_per_node, 8);  // written: the profile does not know it
  EXPECT_EQ(dcu.nic_count, 4);       // ASSUMED: the profile does not know it
  EXPECT_DOUBLE_EQ(dcu.nic_speed, 25e9);
  EXPECT_EQ(dcu.zone, "hall-b");

  const Island& mlu = cluster.islands[2];
  EXPECT_EQ(mlu.name, "cambricon-mlu370-x8");
  EXPECT_EQ(mlu.nodes, 2);
  EXPECT_EQ(mlu.free_nodes, 1);
  EXPECT_EQ(mlu.chips_per_node, 8);
  EXPECT_EQ(mlu.zone, "hall-b");
}

TEST(K8sInventoryClusterYaml, WrittenKeysAndComments) {
  const Inventory inventory = import_kubectl_nodes(kFixture);
  const std::string yaml = cluster_yaml(inventory, "site-a", kProfiles, profiles_of(inventory));
  auto contains = [&](const std::string& part) { return yaml.find(part) != std::string::npos; };
  EXPECT_TRUE(contains("schema: hetplan/cluster/v1\nname: \"site-a\"\nprofiles: [\"" + kProfiles +
                       "\"]\n"));
  EXPECT_TRUE(
      contains("  kind: roce-v2                # ASSUMED: Kubernetes does not know the fabric\n"));
  EXPECT_TRUE(contains("  zones: [\"hall-a\", \"hall-b\"]  # from topology.kubernetes.io/zone\n"));
  EXPECT_TRUE(
      contains("  #   - {between: [hall-a, hall-b], bandwidth: 6.4 Tbps, latency: 2 us}\n"));
  EXPECT_TRUE(contains(
      "#   - island hygon-k100-ai: nodes per leaf switch (rail group): Kubernetes does not "
      "know the wiring;"));
  EXPECT_TRUE(contains("# Nodes without accelerators, in no island: master-01\n"));
  EXPECT_TRUE(contains(
      "  - name: ascend-910b-313t\n"
      "    chip: ascend-910b-313t  # from huawei.com/Ascend910 and \"910B3\"\n"
      "    nodes: 4  # a910b-01, a910b-02, a910b-03, a910b-04\n"
      "    free_nodes: 4\n"
      "    # nics: the profile's 8 x 200 Gbps (ASSUMED: Kubernetes does not show the NICs)\n"
      "    zone: hall-a\n"
      "    nodes_per_leaf: 4  # ASSUMED: Kubernetes does not know the wiring\n"
      "    node_names: [\"a910b-01\", \"a910b-02\", \"a910b-03\", \"a910b-04\"]\n"
      "    resources: {device: \"huawei.com/Ascend910\", rdma: none}  # as the nodes advertise "
      "them; no RDMA resource\n"
      "    labels:\n"
      "      \"accelerator\": \"huawei-Ascend910\"\n"));
  EXPECT_TRUE(contains(
      "    chips_per_node: 8  # hygon.com/dcu per node\n"
      "    nics: {count: 4, speed: 200 Gbps}  # ASSUMED: Kubernetes does not show the NICs\n"));
  EXPECT_TRUE(contains("    free_nodes: 1  # busy: mlu370-02: cordoned (spec.unschedulable)\n"));
  // The MLU profile knows its chips per node (8), so the file does not repeat it.
  const auto mlu = yaml.find("  - name: cambricon-mlu370-x8\n");
  ASSERT_NE(mlu, std::string::npos);
  EXPECT_EQ(yaml.find("chips_per_node", mlu), std::string::npos);
  // Comment lines are wrapped at 100 columns (the one naming the input file excepted).
  std::istringstream lines(yaml);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#", 0) == 0 && line.find(kFixture) == std::string::npos) {
      EXPECT_LE(line.size(), 100u) << line;
    }
  }
}

TEST(K8sInventoryClusterYaml, WithoutProfilesEveryIslandIsExplicit) {
  const Inventory inventory = import_kubectl_nodes(kFixture);
  const std::string yaml = cluster_yaml(inventory, "site-a", kProfiles);
  const Cluster cluster = load_written(yaml, "explicit");
  ASSERT_EQ(cluster.islands.size(), 3u);
  for (const Island& island : cluster.islands) {
    EXPECT_EQ(island.chips_per_node, 8) << island.name;
    EXPECT_EQ(island.nic_count, 4) << island.name;  // ASSUMED for all
  }
}

TEST(K8sInventoryClusterYaml, UnknownChipIslandIsCommentedOut) {
  auto list = fixture_json();
  auto& node = node_named(list, "dcu-k100-01");
  node["status"]["capacity"].erase("hygon.com/dcu");
  node["status"]["allocatable"].erase("hygon.com/dcu");
  node["metadata"]["labels"].erase("hygon.com/dcu.name");
  node["status"]["capacity"]["metax-tech.com/gpu"] = "8";
  node["status"]["allocatable"]["metax-tech.com/gpu"] = "8";
  const Inventory inventory = parse(list);
  ASSERT_EQ(inventory.islands.size(), 4u);
  const InventoryIsland* metax = island_of(inventory, "unknown");
  ASSERT_NE(metax, nullptr);
  EXPECT_EQ(metax->name, "unknown-metax-tech.com-gpu");
  EXPECT_EQ(metax->family, "metax-tech.com");
  EXPECT_EQ(metax->chips_per_node, 8);
  EXPECT_TRUE(has_question(metax->questions,
                           "chip: no bundled profile is guessed for metax-tech.com/gpu; bundled "
                           "profiles of this vendor: metax-c500, metax-c550"));

  const std::string yaml = cluster_yaml(inventory, "site-a", kProfiles, profiles_of(inventory));
  EXPECT_NE(yaml.find("  # - name: unknown-metax-tech.com-gpu\n  #   chip: CHIP-PROFILE-ID"),
            std::string::npos);
  const Cluster cluster = load_written(yaml, "unknown");
  EXPECT_EQ(cluster.islands.size(), 3u);
}

TEST(K8sInventoryClusterYaml, RejectsABadClusterName) {
  const Inventory inventory = import_kubectl_nodes(kFixture);
  EXPECT_EQ(input_error_of([&] { (void)cluster_yaml(inventory, "Site A", kProfiles); }),
            "--name: expected a cluster name of [a-z0-9][a-z0-9._-]*, got \"Site A\"");
}

// ---------------------------------------------------------------------------------------------
// Variants

TEST(K8sInventory, UnhealthyDeviceNotReadyAndTaintedNodesAreBusy) {
  auto list = fixture_json();
  node_named(list, "a910b-02")["status"]["allocatable"]["huawei.com/Ascend910"] = "7";
  for (auto& condition : node_named(list, "a910b-03")["status"]["conditions"]) {
    if (condition["type"] == "Ready") {
      condition["status"] = "False";
      condition["reason"] = "KubeletNotReady";
    }
  }
  node_named(list, "a910b-03")["spec"]["taints"] =
      nlohmann::json::parse(R"([{"effect": "NoSchedule", "key": "node.kubernetes.io/not-ready"}])");
  node_named(list, "a910b-04")["spec"]["taints"] = nlohmann::json::parse(
      R"([{"effect": "NoSchedule", "key": "huawei.com/Ascend910"},
          {"effect": "PreferNoSchedule", "key": "spot"},
          {"effect": "NoExecute", "key": "team", "value": "nlp"}])");
  const Inventory inventory = parse(list);
  const InventoryIsland& ascend = inventory.islands[0];
  EXPECT_EQ(ascend.nodes, 4);
  EXPECT_EQ(ascend.free_nodes, 1);
  EXPECT_EQ(ascend.chips_per_node, 8);
  ASSERT_EQ(ascend.busy_nodes.size(), 3u);
  EXPECT_EQ(ascend.busy_nodes[0].name, "a910b-02");
  EXPECT_EQ(ascend.busy_nodes[0].reason, "7 of 8 huawei.com/Ascend910 allocatable");
  EXPECT_EQ(ascend.busy_nodes[1].name, "a910b-03");
  EXPECT_EQ(ascend.busy_nodes[1].reason, "not Ready (Ready=False, KubeletNotReady)");
  EXPECT_EQ(ascend.busy_nodes[2].name, "a910b-04");
  EXPECT_EQ(ascend.busy_nodes[2].reason, "taint team=nlp:NoExecute");
  EXPECT_TRUE(has_question(ascend.questions,
                           "free nodes: a910b-04 carry NoSchedule/NoExecute taints and are counted "
                           "as busy; if the training job tolerates them, raise free_nodes"));
}

TEST(K8sInventory, AscendChipGuesses) {
  struct Case {
    std::string chip_name;         // node.kubernetes.io/npu.chip.name; empty: no label
    std::string accelerator_type;  // empty: no label
    std::string chip;
    bool question;
  };
  const std::vector<Case> cases = {
      {"910B2", "module-910b-8", "ascend-910b", false},
      {"910B3", "module-910b-8", "ascend-910b-313t", false},
      {"910B4", "module-910b-8", "ascend-910b-313t", true},
      {"910ProB", "module", "ascend-910", false},
      // The fixture's servertype=Ascend910-20 gives a 910B server's 20 AI cores: the 313T
      // class, a 910B3 or a 910B4.
      {"", "module-910b-8", "ascend-910b-313t", true},
      {"", "module", "ascend-910", true},
      {"", "module-a3-16", "ascend-910c", false},
      {"", "", "ascend-910b", true},
  };
  for (const Case& c : cases) {
    auto list = fixture_json();
    for (auto& item : list["items"]) {
      auto& labels = item["metadata"]["labels"];
      if (!labels.contains("accelerator")) continue;
      labels.erase("node.kubernetes.io/npu.chip.name");
      labels.erase("accelerator-type");
      if (!c.chip_name.empty()) labels["node.kubernetes.io/npu.chip.name"] = c.chip_name;
      if (!c.accelerator_type.empty()) labels["accelerator-type"] = c.accelerator_type;
    }
    const Inventory inventory = parse(list);
    const InventoryIsland& ascend = inventory.islands[0];
    EXPECT_EQ(ascend.chip_id, c.chip) << c.chip_name << " " << c.accelerator_type;
    EXPECT_EQ(has_question(ascend.questions, "chip:"), c.question)
        << c.chip_name << " " << c.accelerator_type;
  }
}

// Without a chip name, MindCluster's servertype gives a 910B server's AI cores: 24 the 376T
// class, 20 the 313T class (a 910B3 or a 910B4: a question). A servertype that does not say
// 910B, on a server whose accelerator-type does not either, is not read.
TEST(K8sInventory, ServertypeGivesTheTierWithoutAChipName) {
  const auto chip_of = [](const std::string& servertype, const std::string& accelerator_type) {
    auto list = fixture_json();
    for (auto& item : list["items"]) {
      auto& labels = item["metadata"]["labels"];
      if (!labels.contains("accelerator")) continue;
      labels.erase("node.kubernetes.io/npu.chip.name");
      labels["servertype"] = servertype;
      labels["accelerator-type"] = accelerator_type;
    }
    const InventoryIsland island = parse(list).islands[0];
    return island.chip_id + (has_question(island.questions, "chip:") ? " (asked)" : "");
  };
  EXPECT_EQ(chip_of("Ascend910B-24", "module"), "ascend-910b");
  EXPECT_EQ(chip_of("Ascend910B-20", "module"), "ascend-910b-313t (asked)");
  EXPECT_EQ(chip_of("Ascend910-20", "module-910b-8"), "ascend-910b-313t (asked)");
  EXPECT_EQ(chip_of("Ascend910-20", "module"), "ascend-910 (asked)");
}

// The site's own accelerator.model label against the device plugin's (the site fixture: the
// Ascend nodes' label says ascend-910b, the 376T profile; their plugin says 910B3 and 20 AI
// cores). The plugin decides; the site label is a question naming what each said, and it is not
// kept as a selector, so the cluster loader's accelerator.model is the chip written. Where the
// plugin leaves the chip open (the MLU nodes' cambricon.com/mlu names no card) or agrees (the
// DCU nodes), the site label settles it without a question.
TEST(K8sInventory, ASiteLabelThatDisagreesWithTheDevicePluginIsAQuestion) {
  const Inventory inventory = import_kubectl_nodes(kData + "kubectl-get-nodes-site-labels.json");
  ASSERT_EQ(inventory.islands.size(), 3u);
  const InventoryIsland& ascend = inventory.islands[0];
  EXPECT_EQ(ascend.chip_id, "ascend-910b-313t");
  EXPECT_EQ(ascend.name, "ascend-910b-313t");
  EXPECT_TRUE(has_question(
      ascend.questions,
      "chip: the site's label accelerator.model=ascend-910b disagrees with the device plugin "
      "(node.kubernetes.io/npu.chip.name=910B3, servertype=Ascend910B-20, "
      "accelerator-type=module-910b-8), which names ascend-910b-313t: written chip "
      "ascend-910b-313t, and the node selectors ask for accelerator.model=ascend-910b-313t "
      "(labels.sh relabels the nodes); if ascend-910b is right, the device plugin's labels are "
      "wrong: fix them and set chip: ascend-910b"))
      << ascend.questions.front();
  EXPECT_FALSE(ascend.labels.contains("accelerator.model"));
  EXPECT_EQ(ascend.labels.at("node.kubernetes.io/npu.chip.name"), "910B3");
  for (const auto* chip : {"hygon-k100-ai", "cambricon-mlu370-x8"}) {
    const InventoryIsland* island = island_of(inventory, chip);
    ASSERT_NE(island, nullptr) << chip;
    EXPECT_FALSE(has_question(island->questions, "chip:")) << chip;
    EXPECT_EQ(island->labels.at("accelerator.model"), chip);
  }

  const std::string yaml = cluster_yaml(inventory, "site", kProfiles, profiles_of(inventory));
  EXPECT_NE(yaml.find("#   - island ascend-910b-313t: chip: the site's label "
                      "accelerator.model=ascend-910b disagrees"),
            std::string::npos)
      << yaml;
  const Cluster cluster = load_written(yaml, "site-labels");
  const Island& written = cluster.islands[0];
  EXPECT_EQ(cluster.chip_of(written).id, "ascend-910b-313t");
  EXPECT_EQ(written.labels.at("accelerator.model"), "ascend-910b-313t");
  EXPECT_EQ(written.labels.at("servertype"), "Ascend910B-20");
}

// A plan is placed on an island's nodes in the order of node_names: the free nodes come first,
// so that no placement lands on the cordoned mlu370-01 (the site fixture's first MLU node).
TEST(K8sInventory, FreeNodesComeFirstInNodeNames) {
  const Inventory inventory = import_kubectl_nodes(kData + "kubectl-get-nodes-site-labels.json");
  const InventoryIsland* mlu = island_of(inventory, "cambricon-mlu370-x8");
  ASSERT_NE(mlu, nullptr);
  EXPECT_EQ(mlu->free_nodes, 1);
  EXPECT_EQ(mlu->node_names, (std::vector<std::string>{"mlu370-02", "mlu370-01"}));
  const InventoryIsland* ascend = island_of(inventory, "ascend-910b-313t");
  ASSERT_NE(ascend, nullptr);
  EXPECT_EQ(ascend->node_names,
            (std::vector<std::string>{"a910b-01", "a910b-02", "a910b-03", "a910b-04"}));
}

// An A3 node's device plugin advertises its 16 dies; the ascend-910c profile is one die, so the
// written island has the profile's 16 chips per node, each with a die's peak and HBM, and a node
// has the compute of its 8 packages (not 16). Known memory makes the island one a plan can use.
TEST(K8sInventoryClusterYaml, AnA3NodeIsSixteenDies) {
  auto list = fixture_json();
  for (auto& item : list["items"]) {
    auto& labels = item["metadata"]["labels"];
    if (!labels.contains("accelerator")) continue;
    labels["node.kubernetes.io/npu.chip.name"] = "910_9392";
    labels["accelerator-type"] = "module-a3-16";
    for (const char* side : {"capacity", "allocatable"})
      item["status"][side]["huawei.com/Ascend910"] = "16";
  }
  const Inventory inventory = parse(list);
  const InventoryIsland* a3 = island_of(inventory, "ascend-910c");
  ASSERT_NE(a3, nullptr);
  EXPECT_FALSE(has_question(a3->questions, "chips per node")) << a3->questions.front();
  const Cluster cluster =
      load_written(cluster_yaml(inventory, "site-a3", kProfiles, profiles_of(inventory)), "a3");
  const Island& island = cluster.islands.at(0);
  const ChipProfile& die = cluster.chip_of(island);
  EXPECT_EQ(die.id, "ascend-910c");
  EXPECT_EQ(island.chips_per_node, 16);
  EXPECT_EQ(die.chips_per_node, 16);
  // 8 packages of 2 x 353.9 TFLOPS BF16 (msmodeling's die) per node, 64 GiB at 1.6 TB/s a die.
  EXPECT_DOUBLE_EQ(island.chips_per_node * *die.peak(DType::bf16), 8 * 2 * 353.9e12);
  EXPECT_DOUBLE_EQ(*die.memory_capacity, 64.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(*die.memory_bandwidth, 1.6e12);
}

TEST(K8sInventory, HamiRegisterAnnotationCountsPhysicalDevices) {
  auto list = fixture_json();
  for (const char* name : {"mlu370-01", "mlu370-02"}) {
    auto& node = node_named(list, name);
    for (const char* side : {"capacity", "allocatable"}) {
      node["status"][side].erase("cambricon.com/mlu370");
      node["status"][side]["cambricon.com/vmlu"] = "80";
    }
    node["metadata"]["labels"]["mlu"] = "on";
    std::string devices;
    for (int i = 0; i < 8; ++i) {
      devices += "MLU-" + std::to_string(i) + ",10,49152,100,MLU-MLU370-X8,0," +
                 (i == 3 && std::string(name) == "mlu370-01" ? "false" : "true") + "," +
                 std::to_string(i) + ",hami-core:";
    }
    node["metadata"]["annotations"]["hami.io/node-mlu-register"] = devices;
    node["metadata"]["annotations"]["hami.io/node-handshake-mlu"] = "Reported_2025-11-28 07:41:00";
  }
  const Inventory inventory = parse(list);
  const InventoryIsland* mlu = island_of(inventory, "cambricon-mlu370-x8");
  ASSERT_NE(mlu, nullptr);
  EXPECT_EQ(mlu->resource, "cambricon.com/vmlu");
  EXPECT_EQ(mlu->model, "MLU-MLU370-X8");
  EXPECT_EQ(mlu->chips_per_node, 8);
  EXPECT_EQ(mlu->free_nodes, 0);  // one unhealthy device, one cordoned
  EXPECT_EQ(mlu->busy_nodes[0].reason, "7 of 8 cambricon.com/vmlu allocatable");
  EXPECT_EQ(mlu->labels.at("mlu"), "on");
  EXPECT_FALSE(has_question(mlu->questions, "chip:"));
  EXPECT_TRUE(
      has_question(mlu->questions, "HAMi shares these devices (hami.io/node-mlu-register)"));
}

TEST(K8sInventory, VirtualCountWithoutAnnotationIsAQuestion) {
  auto list = fixture_json();
  for (const char* name : {"dcu-k100-01", "dcu-k100-02"}) {
    auto& node = node_named(list, name);
    for (const char* side : {"capacity", "allocatable"}) {
      node["status"][side]["hygon.com/dcu"] = "0";
      node["status"][side]["hygon.com/dcunum"] = "32";
      node["status"][side]["hygon.com/dcumem"] = "524288";
    }
  }
  const Inventory inventory = parse(list);
  const InventoryIsland* dcu = island_of(inventory, "hygon-k100-ai");
  ASSERT_NE(dcu, nullptr);
  EXPECT_EQ(dcu->resource, "hygon.com/dcunum");
  EXPECT_EQ(dcu->chips_per_node, 0);
  EXPECT_EQ(dcu->free_nodes, 2);
  EXPECT_TRUE(has_question(dcu->questions,
                           "chips per node: hygon.com/dcunum counts virtual devices, not physical "
                           "ones, and no annotation or label counts those"));
  // The profile does not know chips per node either: the file assumes 8 and says so.
  const std::string yaml = cluster_yaml(inventory, "site-a", kProfiles, profiles_of(inventory));
  EXPECT_NE(yaml.find("    chips_per_node: 8  # ASSUMED: no node reports its devices\n"),
            std::string::npos);
  EXPECT_EQ(load_written(yaml, "virtual").islands[1].chips_per_node, 8);
}

TEST(K8sInventory, NvidiaProductTimeSlicingEfaAndRuntimeLabels) {
  auto list = fixture_json();
  list["items"] = nlohmann::json::array({list["items"][0]});  // the control plane only
  for (int i = 1; i <= 3; ++i) {
    auto node = node_named(list, "master-01");
    node["metadata"]["name"] = "p4de-" + std::to_string(i);
    auto& labels = node["metadata"]["labels"];
    labels.erase("node-role.kubernetes.io/control-plane");
    labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB";
    labels["nvidia.com/gpu.count"] = "8";
    labels["nvidia.com/gpu.replicas"] = "4";
    labels["nvidia.com/cuda.runtime.major"] = "12";
    labels["nvidia.com/cuda.runtime.minor"] = "4";
    labels["node.kubernetes.io/instance-type"] = "p4de.24xlarge";
    node["spec"]["taints"] =
        nlohmann::json::parse(R"([{"effect": "NoSchedule", "key": "nvidia.com/gpu"}])");
    for (const char* side : {"capacity", "allocatable"}) {
      node["status"][side]["nvidia.com/gpu"] = "32";
      node["status"][side]["vpc.amazonaws.com/efa"] = "4";
    }
    list["items"].push_back(node);
  }
  const Inventory inventory = parse(list);
  ASSERT_EQ(inventory.islands.size(), 1u);
  const InventoryIsland& a100 = inventory.islands[0];
  EXPECT_EQ(a100.chip_id, "nvidia-a100-sxm4-80gb");
  EXPECT_EQ(a100.chips_per_node, 8);
  EXPECT_EQ(a100.free_nodes, 3);  // the nvidia.com/gpu taint is tolerated by GPU pods
  EXPECT_EQ(a100.nic_count, 4);
  EXPECT_EQ(a100.runtime_name, "CUDA");
  EXPECT_EQ(a100.runtime_version, "12.4");
  EXPECT_FALSE(has_question(a100.questions, "runtime version:"));
  EXPECT_FALSE(has_question(a100.questions, "chip:"));
  EXPECT_TRUE(has_question(a100.questions, "NIC speed: vpc.amazonaws.com/efa counts 4 NICs"));

  const std::string yaml = cluster_yaml(inventory, "eks", kProfiles, profiles_of(inventory));
  EXPECT_NE(yaml.find("    nics: {count: 4, speed: 200 Gbps}  # count from vpc.amazonaws.com/efa; "
                      "speed ASSUMED\n    runtime: {name: \"CUDA\", version: \"12.4\"}"),
            std::string::npos);
  const Cluster cluster = load_written(yaml, "nvidia");
  ASSERT_EQ(cluster.islands.size(), 1u);
  EXPECT_EQ(cluster.islands[0].runtime.version, "12.4");
  EXPECT_EQ(cluster.islands[0].nic_count, 4);
  EXPECT_EQ(cluster.fabric.zones, std::vector<std::string>{"hall-a"});
}

// The export parts by their GPU feature discovery product: the A800 has its own profile, the
// H800 gets the H100's with a question naming the link to change; other SKUs of a die ask.
TEST(K8sInventory, NvidiaExportPartsAndOtherSkus) {
  auto island_of = [](const std::string& product) {
    auto list = fixture_json();
    list["items"] = nlohmann::json::array({list["items"][0]});  // the control plane only
    auto node = node_named(list, "master-01");
    node["metadata"]["name"] = "gpu-1";
    auto& labels = node["metadata"]["labels"];
    labels.erase("node-role.kubernetes.io/control-plane");
    labels["nvidia.com/gpu.product"] = product;
    labels["nvidia.com/gpu.count"] = "8";
    for (const char* side : {"capacity", "allocatable"})
      node["status"][side]["nvidia.com/gpu"] = "8";
    list["items"].push_back(node);
    const Inventory inventory = parse(list);
    EXPECT_EQ(inventory.islands.size(), 1u);
    return inventory.islands.at(0);
  };
  const InventoryIsland a800 = island_of("NVIDIA-A800-SXM4-80GB");
  EXPECT_EQ(a800.chip_id, "nvidia-a800-sxm4-80gb");
  EXPECT_FALSE(has_question(a800.questions, "chip:"));
  const InventoryIsland h800 = island_of("NVIDIA-H800");
  EXPECT_EQ(h800.chip_id, "nvidia-h100-sxm5-80gb");
  EXPECT_TRUE(has_question(h800.questions,
                           "chip: the nodes have NVIDIA-H800; the bundled profile "
                           "is the H100 SXM5 80GB: the H800 is its die with NVLink "
                           "at 400 GB/s"));
  const InventoryIsland a800_40 = island_of("NVIDIA-A800-SXM4-40GB");
  EXPECT_EQ(a800_40.chip_id, "nvidia-a800-sxm4-80gb");
  EXPECT_TRUE(has_question(a800_40.questions, "chip: the nodes have NVIDIA-A800-SXM4-40GB"));
  const InventoryIsland l40 = island_of("NVIDIA-L40S");
  EXPECT_EQ(l40.chip_id, "unknown");
  EXPECT_TRUE(has_question(l40.questions,
                           "chip: GPU NVIDIA-L40S has no bundled profile (bundled "
                           "NVIDIA profiles: nvidia-a100-sxm4-80gb, "
                           "nvidia-a800-sxm4-80gb, nvidia-h100-sxm5-80gb)"));
}

TEST(K8sInventory, IslandsSplitByZoneAndRuntime) {
  auto list = fixture_json();
  node_named(list, "a910b-03")["metadata"]["labels"]["topology.kubernetes.io/zone"] = "Hall_C";
  node_named(list, "a910b-04")["metadata"]["labels"]["topology.kubernetes.io/zone"] = "Hall_C";
  node_named(list, "a910b-04")["metadata"]["labels"]["runtime.version"] = "cann-8.0.RC3";
  node_named(list, "dcu-k100-02")["metadata"]["labels"].erase("topology.kubernetes.io/zone");
  const Inventory inventory = parse(list);
  std::vector<std::string> names;
  for (const auto& island : inventory.islands) names.push_back(island.name);
  EXPECT_EQ(names, (std::vector<std::string>{"ascend-910b-313t-hall-a", "ascend-910b-313t-hall_c",
                                             "ascend-910b-313t-hall_c-cann-8.0.rc3",
                                             "hygon-k100-ai-hall-b", "hygon-k100-ai-default",
                                             "cambricon-mlu370-x8"}));
  EXPECT_EQ(inventory.islands[2].runtime_name, "CANN");
  EXPECT_EQ(inventory.islands[2].runtime_version, "8.0.RC3");
  EXPECT_EQ(inventory.islands[1].zone_label, "Hall_C");
  EXPECT_TRUE(has_question(inventory.questions,
                           "zones: some accelerator nodes have no "
                           "topology.kubernetes.io/zone label"));

  const std::string yaml = cluster_yaml(inventory, "site-a", kProfiles, profiles_of(inventory));
  EXPECT_NE(yaml.find("    zone: hall_c  # topology.kubernetes.io/zone=Hall_C\n"),
            std::string::npos);
  const Cluster cluster = load_written(yaml, "zones");
  EXPECT_EQ(cluster.fabric.zones,
            (std::vector<std::string>{"hall-a", "hall_c", "hall-b", "default"}));
  ASSERT_EQ(cluster.islands.size(), 6u);
  EXPECT_EQ(cluster.islands[2].runtime.name, "CANN");
  EXPECT_EQ(cluster.islands[2].runtime.version, "8.0.RC3");
}

TEST(K8sInventory, LabelledNodeWithoutDevicesIsBusy) {
  auto list = fixture_json();
  auto& node = node_named(list, "a910b-04");
  node["status"]["capacity"].erase("huawei.com/Ascend910");
  node["status"]["allocatable"].erase("huawei.com/Ascend910");
  const Inventory inventory = parse(list);
  const InventoryIsland& ascend = inventory.islands[0];
  EXPECT_EQ(ascend.nodes, 4);
  EXPECT_EQ(ascend.free_nodes, 3);
  EXPECT_EQ(ascend.chips_per_node, 8);
  ASSERT_EQ(ascend.busy_nodes.size(), 1u);
  EXPECT_EQ(ascend.busy_nodes[0].reason, "0 of 8 huawei.com/Ascend910 allocatable");
}

TEST(K8sInventory, SingleNodeAndNodeList) {
  auto list = fixture_json();
  const Inventory one = parse(node_named(list, "dcu-k100-01"));
  ASSERT_EQ(one.islands.size(), 1u);
  EXPECT_EQ(one.islands[0].node_names, std::vector<std::string>{"dcu-k100-01"});

  list["kind"] = "NodeList";
  for (auto& item : list["items"]) {
    item.erase("kind");
    item.erase("apiVersion");
  }
  EXPECT_EQ(parse(list).islands.size(), 3u);
}

// ---------------------------------------------------------------------------------------------
// Malformed input: one test per kind of mistake, exact messages

TEST(K8sInventoryErrors, EmptyFile) {
  EXPECT_EQ(parse_error(" \n"),
            "nodes.json:2:1: expected the output of `kubectl get nodes -o json`, got an empty file");
}

TEST(K8sInventoryErrors, YamlInsteadOfJson) {
  EXPECT_EQ(parse_error("apiVersion: v1\nkind: List\n"),
            "nodes.json:1:1: expected a JSON object (the output of `kubectl get nodes -o json`), "
            "got 'a'");
}

TEST(K8sInventoryErrors, MalformedJson) {
  EXPECT_EQ(parse_error("{\"kind\": \"List\",\n \"items\": [],\n}"),
            "nodes.json:3:1: expected a string key, got '}'");
  EXPECT_EQ(parse_error("{\"kind\": \"List\", \"kind\": \"List\"}"),
            "nodes.json:1:18: expected unique keys, got \"kind\" twice");
}

TEST(K8sInventoryErrors, NotAList) {
  EXPECT_EQ(parse_error(R"({"apiVersion": "v1", "kind": "Pod", "items": []})"),
            "nodes.json:1:30: kind: expected \"List\" (the output of `kubectl get nodes -o json`), "
            "got \"Pod\"");
  EXPECT_EQ(parse_error(R"({"items": []})"),
            "nodes.json:1:1: kind: missing required key (expected the output of `kubectl get "
            "nodes -o json`, a v1 List of Nodes)");
  EXPECT_EQ(parse_error(R"({"kind": "List", "items": {}})"),
            "nodes.json:1:27: items: expected a list of Nodes, got an object");
  EXPECT_EQ(
      parse_error(R"({"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"}}]})"),
      "nodes.json:1:37: items[0].kind: expected \"Node\" (a list of nodes only), got \"Pod\"");
}

TEST(K8sInventoryErrors, NodeWithoutName) {
  EXPECT_EQ(parse_error("{\"kind\": \"List\", \"items\": [\n"
                        "  {\"kind\": \"Node\", \"metadata\": {\"labels\": {}}}]}"),
            "nodes.json:2:32: items[0].metadata.name: missing required key");
  EXPECT_EQ(parse_error(R"({"kind": "List", "items": [{"kind": "Node"}]})"),
            "nodes.json:1:28: items[0].metadata: missing required key");
}

TEST(K8sInventoryErrors, DuplicateNodeName) {
  EXPECT_EQ(
      parse_error("{\"kind\": \"List\", \"items\": [\n"
                  "  {\"metadata\": {\"name\": \"n1\"}},\n"
                  "  {\"metadata\": {\"name\": \"n1\"}}]}"),
      "nodes.json:3:25: items[1].metadata.name: expected unique node names, got \"n1\" twice");
}

TEST(K8sInventoryErrors, NonIntegerDeviceCount) {
  EXPECT_EQ(parse_error("{\"kind\": \"List\", \"items\": [{\"metadata\": {\"name\": \"n1\"},\n"
                        "  \"status\": {\"capacity\": {\"cpu\": \"95690m\", "
                        "\"huawei.com/Ascend910\": \"8.5\"}}}]}"),
            "nodes.json:2:68: items[0].status.capacity[\"huawei.com/Ascend910\"]: expected a "
            "device count (a whole Kubernetes quantity such as \"8\" or \"1k\", at most 1000000), got "
            "\"8.5\"");
  EXPECT_EQ(parse_error("{\"kind\": \"List\", \"items\": [{\"metadata\": {\"name\": \"n1\"},\n"
                        "  \"status\": {\"allocatable\": {\"nvidia.com/gpu\": \"-1\"}}}]}"),
            "nodes.json:2:48: items[0].status.allocatable[\"nvidia.com/gpu\"]: expected a device "
            "count (a whole Kubernetes quantity such as \"8\" or \"1k\", at most 1000000), got \"-1\"");
  EXPECT_EQ(parse_error("{\"kind\": \"List\", \"items\": [{\"metadata\": {\"name\": \"n1\"},\n"
                        "  \"status\": {\"allocatable\": {\"nvidia.com/gpu\": \"500m\"}}}]}"),
            "nodes.json:2:48: items[0].status.allocatable[\"nvidia.com/gpu\"]: expected a device "
            "count (a whole Kubernetes quantity such as \"8\" or \"1k\", at most 1000000), got "
            "\"500m\"");
}

TEST(K8sInventoryErrors, WrongTypes) {
  EXPECT_EQ(parse_error(
                R"({"kind": "List", "items": [{"metadata": {"name": "n1", "labels": {"a": 1}}}]})"),
            "nodes.json:1:72: items[0].metadata.labels[\"a\"]: expected a string, got 1");
  EXPECT_EQ(
      parse_error(
          R"({"kind": "List", "items": [{"metadata": {"name": "n1"}, "spec": {"unschedulable": "yes"}}]})"),
      "nodes.json:1:83: items[0].spec.unschedulable: expected true or false, got \"yes\"");
  EXPECT_EQ(
      parse_error(
          R"({"kind": "List", "items": [{"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "k", "effect": "Never"}]}}]})"),
      "nodes.json:1:100: items[0].spec.taints[0].effect: expected NoSchedule, "
      "PreferNoSchedule or NoExecute, got \"Never\"");
}

TEST(K8sInventoryErrors, MissingFile) {
  const std::string path = kData + "no-such-nodes.json";
  EXPECT_EQ(input_error_of([&] { (void)import_kubectl_nodes(path); }),
            path + ": cannot open the file for reading");
}

TEST(K8sInventoryErrors, UnknownAcceleratorIsNotAnError) {
  const Inventory inventory = parse_kubectl_nodes(
      R"({"kind": "List", "items": [{"metadata": {"name": "g1"},
          "status": {"capacity": {"enflame.com/gcu": "8"}, "allocatable": {"enflame.com/gcu": "8"}}}]})",
      "nodes.json");
  ASSERT_EQ(inventory.islands.size(), 1u);
  EXPECT_EQ(inventory.islands[0].chip_id, "unknown");
  EXPECT_EQ(inventory.islands[0].chips_per_node, 8);
  EXPECT_TRUE(
      has_question(inventory.islands[0].questions,
                   "chip: no bundled profile is guessed for enflame.com/gcu; set chip: to a "
                   "profile id"));
}

}  // namespace
}  // namespace hetplan::importers

namespace hetplan::importers {
namespace {

// A UTF-8 byte-order mark, as Windows tools write before JSON, is not an error.
TEST(K8sInventory, AByteOrderMarkIsSkipped) {
  const std::string text = read(kFixture);
  const Inventory plain = parse_kubectl_nodes(text, "nodes.json");
  const Inventory marked = parse_kubectl_nodes("\xEF\xBB\xBF" + text, "nodes.json");
  ASSERT_EQ(marked.islands.size(), plain.islands.size());
  for (std::size_t i = 0; i < plain.islands.size(); ++i)
    EXPECT_EQ(marked.islands[i].nodes, plain.islands[i].nodes);
  EXPECT_TRUE(sniff_collective_log("\xEF\xBB\xBF{\"version\": 3}").has_value());
}

}  // namespace
}  // namespace hetplan::importers
