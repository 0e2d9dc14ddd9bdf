// A plan as one Volcano Job (batch.volcano.sh/v1alpha1): a task per pipeline stage on its
// island's nodes, all pods scheduled as one gang, the rank layout in HETPLAN_* variables, and the
// network-topology tiers the plan's placement needs; and the cluster's fabric as Volcano
// HyperNodes (topology.volcano.sh/v1alpha1). docs/export.md, "Volcano".
#include <algorithm>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/placement.hpp"
#include "exporters/export.hpp"
#include "exporters/manifest.hpp"
#include "formats/loaders.hpp"

namespace hetplan::exporters {
namespace {

using manifest::Json;
using manifest::Task;

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("export_volcano: " + what);
}

const char* tier_name(int tier) {
  return tier == kLeafTier ? "leaf" : tier == kZoneTier ? "zone" : "site";
}

Json network_topology(int tier) {
  return {{"mode", "hard"}, {"highestTierAllowed", tier}};
}

// The placement of a plan, with what cannot be placed as the exporter's error.
Placement placement_of(const Cluster& cluster, const Plan& plan, const std::string& who) {
  try {
    return place_plan(cluster, plan);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(who + ": " + error.what());
  }
}

// A HyperNode name: a DNS-1123 subdomain of at most 63 characters made from `text`.
std::string hypernode_name(const std::string& text) {
  std::string name = manifest::dns_label(text);
  if (name.empty()) name = "hypernode";
  return manifest::shorten(name, manifest::kDnsLabelMax, text);
}

Json hypernode(const std::string& name, const Cluster& cluster, int tier, Json members) {
  Json node;
  node["apiVersion"] = "topology.volcano.sh/v1alpha1";
  node["kind"] = "HyperNode";
  node["metadata"]["name"] = name;
  node["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "hetplan";
  node["metadata"]["labels"]["hetplan.io/cluster"] = manifest::label_value(cluster.name);
  node["spec"]["tier"] = tier;
  node["spec"]["tierName"] = tier_name(tier);
  node["spec"]["members"] = std::move(members);
  return node;
}

Json hypernode_member(const std::string& name) {
  return {{"type", "HyperNode"}, {"selector", {{"exactMatch", {{"name", name}}}}}};
}

}  // namespace

std::vector<ExportedFile> export_volcano(const ExportInput& input) {
  if (!input.scenario || !input.plan) fail("scenario and plan are required");
  check_validation_gate(input);
  const Scenario& scenario = *input.scenario;
  const Plan& plan = *input.plan;
  if (plan.stages.empty()) {
    fail("plan \"" + plan.name + "\" has no stages (a resource-pool result is one plan per job)");
  }
  formats::check_plan_references(plan, scenario.cluster, scenario.workload);

  const std::vector<Task> tasks = manifest::layout_tasks(input, "export_volcano");
  const Placement placement = placement_of(scenario.cluster, plan, "export_volcano");
  const std::string name = manifest::job_name(plan, tasks);
  long long total_pods = 0;
  for (const Task& task : tasks) total_pods += task.replicas;
  const manifest::Stamp stamp = manifest::stamp(input, name, tasks);

  Json job;
  job["apiVersion"] = "batch.volcano.sh/v1alpha1";
  job["kind"] = "Job";
  job["metadata"]["name"] = name;
  job["metadata"]["labels"] = stamp.labels;
  job["metadata"]["annotations"] = stamp.annotations;
  if (input.estimate) {
    job["metadata"]["annotations"]["hetplan.io/predicted-step-seconds"] =
        manifest::six_digits(input.estimate->step_time_s);
    job["metadata"]["annotations"]["hetplan.io/predicted-tokens-per-second"] =
        manifest::six_digits(input.estimate->tokens_per_s);
  }
  if (!input.inputs.empty()) {
    std::vector<std::string> hashes;
    for (const auto& [file, hash] : input.inputs) hashes.push_back(file + " sha256:" + hash);
    job["metadata"]["annotations"]["hetplan.io/inputs"] = manifest::join(hashes, "; ");
  }

  Json& spec = job["spec"];
  spec["schedulerName"] = "volcano";
  spec["queue"] = "default";
  spec["minAvailable"] = total_pods;  // the gang: every rank starts, or none
  // Every pod within one HyperNode of the tier the placement spans (docs/export.md#placement).
  spec["networkTopology"] = network_topology(placement.tier);
  spec["plugins"]["env"] = Json::array();
  spec["plugins"]["svc"] = Json::array();
  spec["policies"] = Json::array({{{"event", "PodEvicted"}, {"action", "RestartJob"}}});
  spec["tasks"] = Json::array();

  std::string host_file = tasks.front().name;
  std::replace(host_file.begin(), host_file.end(), '-', '_');
  const std::string script = manifest::launch_script(
      tasks,
      "# Placeholder launcher written by hetplan: replace train.py with the trainer. The rank\n"
      "# layout is in the HETPLAN_* variables (docs/export.md, \"Volcano\"); the host names of\n"
      "# each task are in /etc/volcano/<task>.host (Volcano's svc plugin). torchrun numbers the\n"
      "# ranks node_rank * nproc_per_node + local_rank.\n",
      "VC_TASK_INDEX", "$(head -n 1 /etc/volcano/" + host_file + ".host)");
  for (const Task& task : tasks) {
    const StagePlacement& placed = placement.stages[task.stage];
    Json pod_labels = stamp.labels;
    pod_labels["hetplan.io/stage"] = std::to_string(task.stage);
    pod_labels["hetplan.io/island"] = manifest::label_value(task.island->name);

    Json entry;
    entry["name"] = task.name;
    entry["replicas"] = task.replicas;
    // The stage's pods within one HyperNode of the tier its placement spans; a tensor-parallel
    // group wider than a node is a partition of its own, within the tier of its nodes.
    const bool wide = task.pods_per_replica > 1;
    entry["partitionPolicy"]["totalPartitions"] = wide ? task.replicas / task.pods_per_replica : 1;
    entry["partitionPolicy"]["partitionSize"] = wide ? task.pods_per_replica : task.replicas;
    entry["partitionPolicy"]["networkTopology"] =
        network_topology(wide ? placed.replica_tier : placed.tier);
    entry["template"]["metadata"]["labels"] = pod_labels;
    entry["template"]["metadata"]["annotations"] = stamp.annotations;
    entry["template"]["spec"] =
        manifest::pod_spec(task, manifest::trainer_container(input, tasks, task, script));
    spec["tasks"].push_back(entry);
  }

  std::string text = "# Volcano Job for plan \"" + manifest::comment_text(plan.name) +
                     "\" of scenario \"" + manifest::comment_text(scenario.name) +
                     "\", written by hetplan.\n" +
                     "# docs/export.md, \"Volcano\". Apply the HyperNodes of its cluster first, "
                     "then: kubectl apply -f <this file>\n";
  if (!input.validation.validated) {
    text += "# UNVALIDATED: " + manifest::comment_text(stamp.unvalidated) + "\n";
  }
  manifest::write_yaml(text, job);
  return {ExportedFile{"volcano-" + name + ".yaml", text}};
}

ExportedFile export_hypernodes(const Cluster& cluster) {
  const auto refuse = [](const std::string& what) {
    throw std::invalid_argument("export_hypernodes: " + what);
  };
  // A Node member's exactMatch name: a DNS-1123 subdomain (the HyperNode CRD's pattern).
  static const std::regex kSubdomain(
      "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
  std::vector<Json> objects;
  std::set<std::string> names;
  const auto add = [&](Json object) {
    const std::string name = object["metadata"]["name"];
    if (!names.insert(name).second) refuse("two HyperNodes would be named " + name);
    objects.push_back(std::move(object));
  };
  std::vector<std::pair<std::string, std::vector<std::string>>> zones;  // zone -> its leaves
  for (const std::string& zone : cluster.fabric.zones) zones.push_back({zone, {}});
  for (const Island& island : cluster.islands) {
    const bool named = static_cast<int>(island.node_names.size()) == island.nodes;
    const int per_leaf = cluster.leaf_nodes(island);
    for (int leaf = 0; leaf < leaf_count(cluster, island); ++leaf) {
      const std::string leaf_value = leaf_name(cluster, island, leaf);
      if (!manifest::is_label_value(leaf_value)) {
        refuse("island \"" + island.name + "\": its leaf label " + std::string(kLeafLabel) + "=" +
               leaf_value + " is not a Kubernetes label value (at most 63 characters)");
      }
      Json members = Json::array();
      if (named) {
        for (int n = leaf * per_leaf; n < std::min(island.nodes, (leaf + 1) * per_leaf); ++n) {
          const std::string& node = island.node_names[static_cast<std::size_t>(n)];
          if (!std::regex_match(node, kSubdomain) || node.size() > 253) {
            refuse("island \"" + island.name + "\": node name \"" + node +
                   "\" is not a Kubernetes node name");
          }
          members.push_back({{"type", "Node"}, {"selector", {{"exactMatch", {{"name", node}}}}}});
        }
      } else {
        // Nodes the cluster file only counts: the ones labels.sh labels with this leaf.
        members.push_back(
            {{"type", "Node"},
             {"selector",
              {{"labelMatch", {{"matchLabels", {{std::string(kLeafLabel), leaf_value}}}}}}}});
      }
      const std::string name = hypernode_name(cluster.name + "-" + leaf_value);
      add(hypernode(name, cluster, kLeafTier, std::move(members)));
      for (auto& [zone, leaves] : zones)
        if (zone == island.zone) leaves.push_back(name);
    }
  }
  std::vector<std::pair<std::string, std::string>> zone_nodes;  // zone -> its HyperNode
  for (const auto& [zone, leaves] : zones) {
    if (leaves.empty()) continue;  // no island in it: a HyperNode needs a member
    Json members = Json::array();
    for (const std::string& leaf : leaves) members.push_back(hypernode_member(leaf));
    const std::string name = hypernode_name(cluster.name + "-" + zone);
    add(hypernode(name, cluster, kZoneTier, std::move(members)));
    zone_nodes.emplace_back(zone, name);
  }
  const auto groups = linked_zone_groups(cluster);
  int site = 0;
  for (const auto& group : groups) {
    Json members = Json::array();
    for (const auto& [zone, name] : zone_nodes)
      if (std::find(group.begin(), group.end(), zone) != group.end())
        members.push_back(hypernode_member(name));
    if (members.size() < 2) continue;  // one zone with nodes: its zone HyperNode is the top
    ++site;
    const std::string name = hypernode_name(cluster.name + "-site" +
                                            (groups.size() > 1 ? "-" + std::to_string(site) : ""));
    add(hypernode(name, cluster, kSiteTier, std::move(members)));
  }

  std::string text = "# Volcano HyperNodes of cluster \"" + manifest::comment_text(cluster.name) +
                     "\", written by hetplan: leaf switches (tier 1), the zones' spines (tier "
                     "2)\n# and zones joined by zone links (tier 3). docs/export.md, \"Volcano\". "
                     "Apply: kubectl apply -f <this file>\n";
  for (const Json& object : objects) {
    text += "---\n";
    manifest::write_yaml(text, object);
  }
  return {"hypernodes-" + hypernode_name(cluster.name) + ".yaml", text};
}

}  // namespace hetplan::exporters
