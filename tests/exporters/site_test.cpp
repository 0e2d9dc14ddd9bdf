// A site as kubectl shows it, imported without hand edits but the zone link the import asks for,
// planned and exported for both schedulers: nine nodes (a tainted control plane, four Ascend
// 910B3 nodes whose site label says ascend-910b, two DCU and two MLU nodes with the RDMA
// shared-device plugin, one MLU node cordoned; tests/importers/data/
// kubectl-get-nodes-site-labels.README.md). After labels.sh has run on them, every object
// validates against its schema, every pod's selectors pick nodes that advertise everything it
// requests, and the HyperNodes name nodes that exist.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/placement.hpp"
#include "exporters/export.hpp"
#include "formats/loaders.hpp"
#include "importers/k8s_inventory.hpp"
#include "planner/search.hpp"
#include "sim/estimator.hpp"
#include "tests/exporters/kube_check.hpp"
#include "tests/support/llama.hpp"
#include "tests/support/temp_folder.hpp"

namespace hetplan::exporters {
namespace {

using nlohmann::json;
using namespace kube_check;

const std::string kSource = HETPLAN_SOURCE_DIR;

json site_nodes() {
  return json::parse(
      std::ifstream(kSource + "/tests/importers/data/kubectl-get-nodes-site-labels.json"));
}

// What labels.sh does to the nodes: each `kubectl label node NAME key=value ... --overwrite`.
void apply_labels(const std::string& script, json& nodes) {
  std::istringstream lines(script);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("kubectl label node ", 0) != 0) continue;
    std::istringstream words(line.substr(19));
    std::string name;
    words >> name;
    json* node = nullptr;
    for (auto& item : nodes["items"])
      if (item["metadata"]["name"] == name) node = &item;
    ASSERT_NE(node, nullptr) << line;
    for (std::string word; words >> word;) {
      if (word == "--overwrite") continue;
      const auto eq = word.find('=');
      ASSERT_NE(eq, std::string::npos) << word;
      (*node)["metadata"]["labels"][word.substr(0, eq)] = word.substr(eq + 1);
    }
  }
}

// The nodes a pod's nodeSelector picks, each checked to advertise every resource the pod requests
// (allocatable, as many as it asks); how many of the pods fit on them.
long long room_for(const json& nodes, const json& pod_spec, const std::string& what) {
  long long room = 0;
  const json& requests = pod_spec["containers"][0]["resources"]["requests"];
  for (const auto& node : nodes["items"]) {
    bool selected = true;
    for (const auto& [key, value] : pod_spec["nodeSelector"].items())
      selected &=
          node["metadata"]["labels"].value(key, std::string("\x01")) == value.get<std::string>();
    if (!selected) continue;
    long long pods = 1 << 20;
    for (const auto& [resource, count] : requests.items()) {
      const auto advertised = importers::kubernetes_count(
          node["status"]["allocatable"].value(resource, std::string("0")));
      EXPECT_TRUE(advertised && *advertised >= count.get<long long>())
          << what << ": node " << node["metadata"]["name"] << " is selected but advertises "
          << node["status"]["allocatable"].value(resource, std::string("none")) << " " << resource;
      if (advertised) pods = std::min(pods, *advertised / count.get<long long>());
    }
    if (!node["spec"].value("unschedulable", false)) room += pods;
  }
  return room;
}

struct Site {
  test::TempFolder folder;
  importers::Inventory inventory;
  Scenario scenario;
};

// The site imported, its zone link answered, with a small LLaMA workload.
const Site& site() {
  static Site* const loaded = [] {
    auto* out = new Site;
    out->inventory = importers::parse_kubectl_nodes(site_nodes().dump(2), "nodes.json");
    std::vector<ChipProfile> profiles;
    for (const auto& island : out->inventory.islands)
      profiles.push_back(formats::load_chip(kSource + "/profiles/" + island.chip_id + ".yaml"));
    std::string text =
        importers::cluster_yaml(out->inventory, "site", kSource + "/profiles", profiles);
    const std::string commented = "  # zone_links:\n  #   - {between";
    const auto at = text.find(commented);
    EXPECT_NE(at, std::string::npos) << text;
    if (at != std::string::npos)
      text.replace(at, commented.size(), "  zone_links:\n    - {between");
    const std::string path = out->folder.file("site.yaml");
    std::ofstream(path) << text;
    out->scenario.name = "site";
    out->scenario.cluster = formats::load_cluster(path);
    out->scenario.workload = test::small_llama(24, 64);
    return out;
  }();
  return *loaded;
}

ExportInput input_for(const Plan& plan, const sim::Estimate* estimate) {
  ExportInput input;
  input.scenario = &site().scenario;
  input.plan = &plan;
  input.estimate = estimate;
  input.validation.validated = true;
  return input;
}

// Every plan checked: the planner's single-job plans and one by hand over the three islands.
std::vector<Plan> plans() {
  std::vector<Plan> out;
  const planner::SearchResult result = planner::search_plans(site().scenario);
  for (const auto& ranked : result.ranked) {
    if (ranked.mode != planner::Mode::resource_pool && !ranked.plan.stages.empty())
      out.push_back(ranked.plan);
    if (out.size() == 3) break;
  }
  Plan hand;
  hand.name = "three-vendors";
  hand.stages = {{"ascend-910b-313t", 0, 12, 8, 1, {}, {}},
                 {"hygon-k100-ai", 12, 8, 8, 1, {}, {}},
                 {"cambricon-mlu370-x8", 20, 4, 8, 1, {}, {}}};
  out.push_back(hand);
  return out;
}

TEST(Site, TheDevicePluginDecidesTheChipAndTheSelectorPinsIt) {
  const importers::InventoryIsland& ascend = site().inventory.islands.at(0);
  EXPECT_EQ(ascend.chip_id, "ascend-910b-313t");
  const Island* island = site().scenario.cluster.find_island("ascend-910b-313t");
  ASSERT_NE(island, nullptr);
  EXPECT_EQ(site().scenario.cluster.chip_of(*island).id, "ascend-910b-313t");
  // Every label the pods select by names the 313T part: the profile id, the chip, its 20 cores.
  EXPECT_EQ(island->labels.at("accelerator.model"), "ascend-910b-313t");
  EXPECT_EQ(island->labels.at("node.kubernetes.io/npu.chip.name"), "910B3");
  EXPECT_EQ(island->labels.at("servertype"), "Ascend910B-20");
}

TEST(Site, EveryExportValidatesAndSchedulesOnTheLabelledNodes) {
  std::set<std::string> islands_seen;
  const std::vector<json> hypernodes =
      parse_yaml_documents(export_hypernodes(site().scenario.cluster).text);
  std::set<std::string> node_names;
  const json all_nodes = site_nodes();
  for (const auto& node : all_nodes["items"])
    node_names.insert(node["metadata"]["name"].get<std::string>());
  for (const json& object : hypernodes) {
    EXPECT_EQ(crd_errors("topology.volcano.sh_hypernodes.yaml", object),
              std::vector<std::string>{});
    for (const json& member : object["spec"]["members"]) {
      if (member["type"] != "Node") continue;
      EXPECT_TRUE(node_names.count(member["selector"]["exactMatch"]["name"].get<std::string>()))
          << member.dump();
    }
  }
  for (const Plan& plan : plans()) {
    SCOPED_TRACE(plan.name);
    const sim::Estimate estimate =
        sim::estimate_step(site().scenario.cluster, site().scenario.workload, plan);
    ASSERT_TRUE(estimate.feasible) << (estimate.reasons.empty() ? "" : estimate.reasons.front());
    const ExportInput input = input_for(plan, &estimate);
    json nodes = site_nodes();
    apply_labels(export_labels(input).text, nodes);

    const json job = parse_yaml(export_volcano(input).front().text);
    EXPECT_EQ(crd_errors("batch.volcano.sh_jobs.yaml", job), std::vector<std::string>{});
    const Placement placement = place_plan(site().scenario.cluster, plan);
    for (const json& task : job["spec"]["tasks"]) {
      islands_seen.insert(
          task["template"]["metadata"]["labels"]["hetplan.io/island"].get<std::string>());
      EXPECT_GE(room_for(nodes, task["template"]["spec"], task["name"]),
                task["replicas"].get<long long>())
          << task["name"];
    }
    // The placement's nodes are the site's, never the cordoned one.
    for (const StagePlacement& stage : placement.stages)
      for (const PlacedNode& node : stage.nodes) {
        EXPECT_TRUE(node.named);
        EXPECT_TRUE(node_names.count(node.name)) << node.name;
        EXPECT_NE(node.name, "mlu370-01");
      }

    const std::vector<ExportedFile> kube = export_kube_scheduler(input);
    EXPECT_EQ(scheduler_config_errors(parse_yaml(kube.at(0).text)), std::vector<std::string>{});
    for (const json& object : parse_yaml_documents(kube.at(1).text)) {
      EXPECT_EQ(kube_object_errors(object), std::vector<std::string>{});
      if (object["kind"] != "Job") continue;
      EXPECT_GE(room_for(nodes, object["spec"]["template"]["spec"], object["metadata"]["name"]),
                object["spec"]["completions"].get<long long>());
    }
  }
  EXPECT_EQ(islands_seen.size(), 3u);
}

}  // namespace
}  // namespace hetplan::exporters
