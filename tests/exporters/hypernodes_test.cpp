// The placement of a plan on its islands' nodes and leaf switches (core/placement.hpp), the
// cluster's fabric as Volcano HyperNodes (checked against the HyperNode CRD in
// tests/exporters/data and the CRD's one-selector rule), and the network-topology tiers the
// Volcano Job asks for (checked against the Job CRD and Volcano's partition admission).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/placement.hpp"
#include "exporters/export.hpp"
#include "formats/loaders.hpp"
#include "tests/exporters/kube_check.hpp"

namespace hetplan::exporters {
namespace {

using nlohmann::json;
using namespace kube_check;

// Every reason the API server with the HyperNode CRD (its schema and its x-kubernetes-validations:
// exactly one selector per member) or Volcano's admission would refuse the objects, and the
// reasons they would not form one tree of tiers: each HyperNode member names a HyperNode of a
// lower tier, no HyperNode has two parents, a tier-1 HyperNode holds nodes only.
std::vector<std::string> hypernode_errors(const std::vector<json>& objects) {
  std::vector<std::string> errors;
  const auto tier_in = [](const json& object) {
    const json tier = object["spec"].value("tier", json(-1));
    return tier.is_number_integer() ? tier.get<int>() : -1;
  };
  std::map<std::string, int> tier_of;
  for (const json& object : objects) {
    for (const auto& error : crd_errors("topology.volcano.sh_hypernodes.yaml", object))
      errors.push_back(error);
    const std::string name = object["metadata"].value("name", "");
    if (!std::regex_match(name, kDnsLabel) || name.size() > 63) {
      errors.push_back(name + ": not a DNS label");
    }
    if (!tier_of.emplace(name, tier_in(object)).second) {
      errors.push_back(name + ": two HyperNodes of this name");
    }
  }
  std::map<std::string, std::string> parent_of;
  for (const json& object : objects) {
    const std::string name = object["metadata"].value("name", "");
    const int tier = tier_in(object);
    for (const json& member : object["spec"].value("members", json::array())) {
      const json selector = member.value("selector", json::object());
      const int kinds = static_cast<int>(selector.contains("exactMatch")) +
                        static_cast<int>(selector.contains("regexMatch")) +
                        static_cast<int>(selector.contains("labelMatch"));
      if (kinds != 1) errors.push_back(name + ": a member needs exactly one selector");
      if (member.value("type", "") == "HyperNode") {
        if (tier == 1) errors.push_back(name + ": a tier-1 HyperNode holds a HyperNode");
        const std::string child = selector.value("exactMatch", json::object()).value("name", "");
        if (!tier_of.count(child)) {
          errors.push_back(name + ": member " + child + " is no HyperNode");
        } else if (tier_of[child] >= tier) {
          errors.push_back(name + ": member " + child + " is not of a lower tier");
        }
        if (!parent_of.emplace(child, name).second) errors.push_back(child + ": two parents");
      } else if (selector.contains("labelMatch") && tier != 1) {
        errors.push_back(name + ": nodes outside a tier-1 HyperNode");
      }
    }
  }
  return errors;
}

std::vector<json> hypernodes_of(const Cluster& cluster) {
  return parse_yaml_documents(export_hypernodes(cluster).text);
}

// What Volcano's job admission checks of a task's partitionPolicy
// (pkg/webhooks/admission/jobs/validate, validatePartitionPolicy): replicas = totalPartitions x
// partitionSize, and highestTierAllowed and highestTierName not both.
std::vector<std::string> job_errors(const json& job) {
  std::vector<std::string> errors = crd_errors("batch.volcano.sh_jobs.yaml", job);
  const auto topology_ok = [&](const json& topology, const std::string& where) {
    if (topology.contains("highestTierAllowed") && topology.contains("highestTierName"))
      errors.push_back(where + ": both highestTierAllowed and highestTierName");
  };
  topology_ok(job["spec"].value("networkTopology", json::object()), "spec");
  for (const json& task : job["spec"]["tasks"]) {
    if (!task.contains("partitionPolicy")) continue;
    const json& policy = task["partitionPolicy"];
    if (task.value("replicas", 0) !=
        policy.value("totalPartitions", 0) * policy.value("partitionSize", 0))
      errors.push_back(task.value("name", "") +
                       ": replicas are not totalPartitions x partitionSize");
    topology_ok(policy.value("networkTopology", json::object()), task.value("name", ""));
  }
  return errors;
}

// ---- the placement ---------------------------------------------------------------------------

// The reference plan on the bundled site, counted by hand from the files: 8 chips a node, 16 nodes
// a leaf; five Ascend stages of tp 8 x dp 4 take the Ascend island's nodes 1-20, four each, so
// stages 0-3 fill its first leaf and stage 4 starts the second; the DCU stages take DCU nodes 1-4
// and 5-8, the MLU stage MLU nodes 1-4.
TEST(Placement, TheReferencePlanOnTheBundledSite) {
  const Placement placement = place_plan(bundled().cluster, reference());
  ASSERT_EQ(placement.stages.size(), 8u);
  const std::vector<std::pair<std::string, std::string>> first_last = {
      {"ascend-910b-node-01", "ascend-910b-node-04"},
      {"ascend-910b-node-05", "ascend-910b-node-08"},
      {"ascend-910b-node-09", "ascend-910b-node-12"},
      {"ascend-910b-node-13", "ascend-910b-node-16"},
      {"ascend-910b-node-17", "ascend-910b-node-20"},
      {"dcu-k100-node-01", "dcu-k100-node-04"},
      {"dcu-k100-node-05", "dcu-k100-node-08"},
      {"mlu370-node-01", "mlu370-node-04"}};
  const std::vector<std::string> leaves = {
      "ascend-910b-leaf-01", "ascend-910b-leaf-01", "ascend-910b-leaf-01", "ascend-910b-leaf-01",
      "ascend-910b-leaf-02", "dcu-k100-leaf-01",    "dcu-k100-leaf-01",    "mlu370-leaf-01"};
  for (std::size_t i = 0; i < 8; ++i) {
    const StagePlacement& stage = placement.stages[i];
    ASSERT_EQ(stage.nodes.size(), 4u) << i;
    EXPECT_EQ(stage.nodes.front().name, first_last[i].first) << i;
    EXPECT_EQ(stage.nodes.back().name, first_last[i].second) << i;
    EXPECT_FALSE(stage.nodes.front().named);
    EXPECT_EQ(stage.leaves, std::vector<std::string>{leaves[i]}) << i;
    EXPECT_EQ(stage.tier, kLeafTier) << i;
    EXPECT_EQ(stage.pod_nodes, (std::vector<int>{0, 1, 2, 3})) << i;  // a pod of 8 per node
  }
  EXPECT_EQ(placement.tier, kSiteTier);  // zone-a and zone-b
}

TEST(Placement, PodsFillNodesAndStagesThatCrossALeafNeedTheZone) {
  Scenario scenario = bundled();
  for (Island& island : scenario.cluster.islands) island.nodes_per_leaf = 2;
  Plan plan;
  plan.name = "small";
  // tp 4: two pods a node; tp 16: two nodes a pod-pair (a replica); one island, one zone.
  plan.stages = {{"dcu-k100", 0, 40, 4, 3, {}, {}}, {"dcu-k100", 40, 40, 16, 1, {}, {}}};
  const Placement placement = place_plan(scenario.cluster, plan);
  const StagePlacement& first = placement.stages[0];
  // Three pods of 4: two on node 1, one on node 2 (the rest of node 2 stays empty: the next
  // stage's pods are 8 chips wide).
  EXPECT_EQ(first.pod_nodes, (std::vector<int>{0, 0, 1}));
  ASSERT_EQ(first.nodes.size(), 2u);
  EXPECT_EQ(first.nodes[1].name, "dcu-k100-node-02");
  EXPECT_EQ(first.tier, kLeafTier);  // nodes 1-2: leaf 1
  const StagePlacement& second = placement.stages[1];
  EXPECT_EQ(second.pods_per_replica, 2);
  ASSERT_EQ(second.nodes.size(), 2u);
  EXPECT_EQ(second.nodes[0].name, "dcu-k100-node-03");
  EXPECT_EQ(second.leaves, std::vector<std::string>{"dcu-k100-leaf-02"});
  EXPECT_EQ(second.replica_tier, kLeafTier);
  EXPECT_EQ(placement.tier, kZoneTier);  // leaves 1 and 2 of one zone

  // dp 3 of tp 8 from node 5: nodes 5, 6 (leaf 3) and 7 (leaf 4).
  plan.stages.push_back({"dcu-k100", 80, 0, 8, 3, {}, {}});
  const Placement wider = place_plan(scenario.cluster, plan);
  EXPECT_EQ(wider.stages[2].leaves,
            (std::vector<std::string>{"dcu-k100-leaf-03", "dcu-k100-leaf-04"}));
  EXPECT_EQ(wider.stages[2].tier, kZoneTier);

  // More nodes than the island has is an error naming the stage.
  plan.stages.push_back({"dcu-k100", 80, 0, 8, 16, {}, {}});
  try {
    (void)place_plan(scenario.cluster, plan);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "stage 3 (island \"dcu-k100\"): its pods need node 17 of an island of 16 nodes");
  }
}

TEST(Placement, NamedNodesInTheirOrder) {
  Scenario scenario = bundled();
  Island& mlu = scenario.cluster.islands[2];
  for (int n = 0; n < mlu.nodes; ++n) mlu.node_names.push_back("mlu-" + std::to_string(100 - n));
  const Placement placement = place_plan(scenario.cluster, reference());
  const StagePlacement& last = placement.stages[7];
  ASSERT_EQ(last.nodes.size(), 4u);
  EXPECT_TRUE(last.nodes[0].named);
  EXPECT_EQ(last.nodes[0].name, "mlu-100");
  EXPECT_EQ(last.nodes[3].name, "mlu-97");
}

// ---- HyperNodes ------------------------------------------------------------------------------

// The bundled site: 32 Ascend nodes, 16 a leaf (two leaves), 16 DCU and 16 MLU nodes (a leaf
// each), zone-a and zone-b joined by a zone link: four leaf HyperNodes, two zones, one site.
TEST(HyperNodes, TheBundledSiteAsThreeTiers) {
  const ExportedFile file = export_hypernodes(bundled().cluster);
  EXPECT_EQ(file.name, "hypernodes-mixed-roce-64.yaml");
  const std::vector<json> objects = parse_yaml_documents(file.text);
  EXPECT_EQ(hypernode_errors(objects), std::vector<std::string>{})
      << joined(hypernode_errors(objects));
  std::map<std::string, json> by_name;
  for (const json& object : objects) by_name[object["metadata"]["name"]] = object;
  std::vector<std::string> names;
  for (const auto& [name, object] : by_name) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "mixed-roce-64-ascend-910b-leaf-01", "mixed-roce-64-ascend-910b-leaf-02",
                       "mixed-roce-64-dcu-k100-leaf-01", "mixed-roce-64-mlu370-leaf-01",
                       "mixed-roce-64-site", "mixed-roce-64-zone-a", "mixed-roce-64-zone-b"}));
  const json& leaf = by_name["mixed-roce-64-ascend-910b-leaf-02"];
  EXPECT_EQ(leaf["apiVersion"], "topology.volcano.sh/v1alpha1");
  EXPECT_EQ(leaf["spec"]["tier"], 1);
  EXPECT_EQ(leaf["spec"]["tierName"], "leaf");
  // The cluster file does not name its nodes: the leaf selects the nodes labels.sh labels.
  EXPECT_EQ(leaf["spec"]["members"],
            json::parse(R"([{"type": "Node", "selector": {"labelMatch": {"matchLabels":
                           {"hetplan.io/leaf": "ascend-910b-leaf-02"}}}}])"));
  EXPECT_EQ(by_name["mixed-roce-64-zone-b"]["spec"]["tier"], 2);
  EXPECT_EQ(
      by_name["mixed-roce-64-zone-b"]["spec"]["members"],
      json::parse(
          R"([{"type": "HyperNode", "selector": {"exactMatch": {"name": "mixed-roce-64-dcu-k100-leaf-01"}}},
                            {"type": "HyperNode", "selector": {"exactMatch": {"name": "mixed-roce-64-mlu370-leaf-01"}}}])"));
  EXPECT_EQ(by_name["mixed-roce-64-site"]["spec"]["tier"], 3);
  EXPECT_EQ(by_name["mixed-roce-64-site"]["spec"]["members"].size(), 2u);

  // Zones without a link are not joined: no site HyperNode.
  Cluster unlinked = bundled().cluster;
  unlinked.fabric.zone_links.clear();
  const std::vector<json> apart = hypernodes_of(unlinked);
  EXPECT_EQ(apart.size(), 6u);
  for (const json& object : apart) EXPECT_LT(object["spec"]["tier"].get<int>(), 3);
}

TEST(HyperNodes, NamedNodesAreExactMatchesLeafByLeaf) {
  Cluster cluster = bundled().cluster;
  Island& dcu = cluster.islands[1];
  dcu.nodes = 5;
  dcu.nodes_per_leaf = 2;
  for (int n = 1; n <= 5; ++n) dcu.node_names.push_back("dcu-" + std::to_string(n));
  const std::vector<json> objects = hypernodes_of(cluster);
  EXPECT_EQ(hypernode_errors(objects), std::vector<std::string>{})
      << joined(hypernode_errors(objects));
  std::vector<std::vector<std::string>> leaves;
  for (const json& object : objects) {
    if (object["metadata"]["name"].get<std::string>().find("dcu-k100-leaf") == std::string::npos)
      continue;
    std::vector<std::string> nodes;
    for (const json& member : object["spec"]["members"]) {
      EXPECT_EQ(member["type"], "Node");
      nodes.push_back(member["selector"]["exactMatch"]["name"]);
    }
    leaves.push_back(nodes);
  }
  EXPECT_EQ(leaves, (std::vector<std::vector<std::string>>{
                        {"dcu-1", "dcu-2"}, {"dcu-3", "dcu-4"}, {"dcu-5"}}));

  // A node name Kubernetes would not accept is refused, not written.
  dcu.node_names[4] = "DCU_5";
  try {
    (void)export_hypernodes(cluster);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "export_hypernodes: island \"dcu-k100\": node name \"DCU_5\" is not a Kubernetes "
                 "node name");
  }
}

// The checks are real: each of these breaks the objects the way a bug could, and is refused.
TEST(HyperNodes, BrokenOnesAreRefused) {
  const std::vector<json> good = hypernodes_of(bundled().cluster);
  ASSERT_TRUE(hypernode_errors(good).empty());
  const auto refused = [](const std::vector<json>& objects, const std::string& expected) {
    const auto errors = hypernode_errors(objects);
    EXPECT_TRUE(mentions(errors, expected)) << expected << ", got:\n" << joined(errors);
  };
  auto broken = good;
  broken[0]["spec"]["tier"] = "one";
  refused(broken, "[tier]: Value type not permitted");
  broken = good;
  broken[0]["spec"]["members"] = json::array();
  refused(broken, "[members]: Array should contain no fewer than 1 elements");
  broken = good;
  broken[0]["spec"]["members"][0]["selector"]["regexMatch"] = {{"pattern", ".*"}};
  refused(broken, "exactly one selector");
  broken = good;
  broken[0]["spec"]["members"][0]["type"] = "Switch";
  refused(broken, "Failed to match against any enum values");
  broken = good;
  broken.back()["spec"]["members"][0]["selector"]["exactMatch"]["name"] = "Nowhere_1";
  refused(broken, "Failed to match regex");
  broken = good;
  broken.back()["spec"]["tier"] = 1;
  refused(broken, "a tier-1 HyperNode holds a HyperNode");
  broken = good;
  broken[0]["spec"]["tierNam"] = "leaf";
  refused(broken, "'tierNam'");
}

// ---- the Volcano Job's tiers -----------------------------------------------------------------

TEST(VolcanoTopology, TheJobAndEachStageAskForTheTierOfTheirPlacement) {
  const ExportInput input = validated_input(bundled(), reference());
  const json job = parse_yaml(export_volcano(input).front().text);
  EXPECT_EQ(job_errors(job), std::vector<std::string>{}) << joined(job_errors(job));
  // The reference plan spans zone-a and zone-b: the site.
  EXPECT_EQ(job["spec"]["networkTopology"],
            json::parse(R"({"mode": "hard", "highestTierAllowed": 3})"));
  for (const json& task : job["spec"]["tasks"]) {
    // Four pods, each stage under one leaf switch.
    EXPECT_EQ(task["partitionPolicy"], json::parse(R"({"totalPartitions": 1, "partitionSize": 4,
                              "networkTopology": {"mode": "hard", "highestTierAllowed": 1}})"))
        << task["name"];
  }
  // Every tier asked for is one the site's HyperNodes have.
  std::set<int> tiers;
  for (const json& object : hypernodes_of(bundled().cluster))
    tiers.insert(object["spec"]["tier"].get<int>());
  EXPECT_TRUE(tiers.count(job["spec"]["networkTopology"]["highestTierAllowed"].get<int>()));

  // One island and leaves of 2 nodes: the job stays in its zone; a stage over two leaves asks
  // for the zone; a tensor-parallel group of two nodes is a partition of its own.
  Scenario small = bundled();
  for (Island& island : small.cluster.islands) island.nodes_per_leaf = 2;
  Plan plan;
  plan.name = "dcu-only";
  plan.stages = {{"dcu-k100", 0, 40, 8, 2, {}, {}}, {"dcu-k100", 40, 40, 16, 2, {}, {}}};
  const json second = parse_yaml(export_volcano(validated_input(small, plan)).front().text);
  EXPECT_EQ(job_errors(second), std::vector<std::string>{}) << joined(job_errors(second));
  EXPECT_EQ(second["spec"]["networkTopology"]["highestTierAllowed"], 2);
  EXPECT_EQ(second["spec"]["tasks"][0]["partitionPolicy"]["networkTopology"]["highestTierAllowed"],
            1);
  EXPECT_EQ(second["spec"]["tasks"][1]["partitionPolicy"],
            json::parse(R"({"totalPartitions": 2, "partitionSize": 2,
                            "networkTopology": {"mode": "hard", "highestTierAllowed": 1}})"));
  plan.stages[0].dp = 3;  // nodes 1-3: two leaves
  const json third = parse_yaml(export_volcano(validated_input(small, plan)).front().text);
  EXPECT_EQ(third["spec"]["tasks"][0]["partitionPolicy"]["networkTopology"]["highestTierAllowed"],
            2);
  // Stage 1 now starts on node 4, leaf 2: its replicas are nodes 4-5 (leaves 2 and 3) and 6-7.
  EXPECT_EQ(third["spec"]["tasks"][1]["partitionPolicy"]["networkTopology"]["highestTierAllowed"],
            2);

  // Broken partitions are refused by the admission check.
  json broken = job;
  broken["spec"]["tasks"][0]["partitionPolicy"]["partitionSize"] = 3;
  EXPECT_FALSE(job_errors(broken).empty());
  broken = job;
  broken["spec"]["networkTopology"]["mode"] = "strict";
  EXPECT_FALSE(job_errors(broken).empty());
}

TEST(ExportPlan, VolcanoWritesTheJobAndItsClustersHyperNodes) {
  const std::vector<ExportedFile> files =
      export_plan(validated_input(bundled(), reference()), ExportTarget::volcano);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].name, "volcano-default-reference.yaml");
  EXPECT_EQ(files[1].name, "hypernodes-mixed-roce-64.yaml");
  EXPECT_EQ(export_target("kube-scheduler"), ExportTarget::kube_scheduler);
  EXPECT_EQ(export_target_names(),
            (std::vector<std::string>{"volcano", "json", "megatron", "labels", "kube-scheduler"}));
}

}  // namespace
}  // namespace hetplan::exporters
