#include "core/placement.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace hetplan {
namespace {

std::string numbered(const std::string& prefix, int number, int count) {
  std::string digits = std::to_string(number);
  const std::size_t width = std::max<std::size_t>(2, std::to_string(count).size());
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return prefix + digits;
}

std::string stage_text(std::size_t index, const PlanStage& stage) {
  return "stage " + std::to_string(index) + " (island \"" + stage.island + "\")";
}

}  // namespace

std::string placeholder_node_name(const Island& island, int index) {
  return numbered(island.name + "-node-", index + 1, island.nodes);
}

int leaf_count(const Cluster& cluster, const Island& island) {
  const int per_leaf = cluster.leaf_nodes(island);
  return (island.nodes + per_leaf - 1) / per_leaf;
}

std::string leaf_name(const Cluster& cluster, const Island& island, int leaf) {
  return numbered(island.name + "-leaf-", leaf + 1, leaf_count(cluster, island));
}

Placement place_plan(const Cluster& cluster, const Plan& plan) {
  struct Fill {
    int node = 0;  // the node being filled
    int used = 0;  // its chips taken
  };
  std::map<std::string, Fill> fill;  // island -> where its next pod goes
  Placement placement;
  std::vector<std::pair<const Island*, int>> all;  // (island, leaf) of every node of the plan
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const PlanStage& stage = plan.stages[i];
    const Island* island = cluster.find_island(stage.island);
    if (!island)
      throw std::invalid_argument(stage_text(i, stage) + ": no such island in the cluster");
    const int per_node = std::max(1, island->chips_per_node);
    StagePlacement placed;
    placed.stage = i;
    placed.island = island;
    placed.chips_per_pod = std::max(1, std::min(stage.tp, per_node));
    if (stage.tp > per_node) placed.pods_per_replica = (stage.tp + per_node - 1) / per_node;
    const long long chips = static_cast<long long>(stage.tp) * std::max(1, stage.dp);
    const long long pods = (chips + placed.chips_per_pod - 1) / placed.chips_per_pod;
    Fill& at = fill[island->name];
    for (long long pod = 0; pod < pods; ++pod) {
      if (at.used + placed.chips_per_pod > per_node) {
        ++at.node;
        at.used = 0;
      }
      if (at.node >= island->nodes) {
        throw std::invalid_argument(stage_text(i, stage) + ": its pods need node " +
                                    std::to_string(at.node + 1) + " of an island of " +
                                    std::to_string(island->nodes) + " nodes");
      }
      if (placed.nodes.empty() || placed.nodes.back().index != at.node) {
        PlacedNode node;
        node.index = at.node;
        node.named = static_cast<int>(island->node_names.size()) == island->nodes;
        node.name = node.named ? island->node_names[static_cast<std::size_t>(at.node)]
                               : placeholder_node_name(*island, at.node);
        node.leaf = at.node / cluster.leaf_nodes(*island);
        placed.nodes.push_back(node);
        const std::string leaf = leaf_name(cluster, *island, node.leaf);
        if (std::find(placed.leaves.begin(), placed.leaves.end(), leaf) == placed.leaves.end())
          placed.leaves.push_back(leaf);
        all.emplace_back(island, node.leaf);
      }
      placed.pod_nodes.push_back(static_cast<int>(placed.nodes.size()) - 1);
      at.used += placed.chips_per_pod;
    }
    placed.tier = placed.leaves.size() > 1 ? kZoneTier : kLeafTier;
    for (std::size_t first = 0; first < placed.pod_nodes.size();
         first += static_cast<std::size_t>(placed.pods_per_replica)) {
      const std::size_t last = std::min(placed.pod_nodes.size(),
                                        first + static_cast<std::size_t>(placed.pods_per_replica)) -
                               1;
      const int leaf_a = placed.nodes[static_cast<std::size_t>(placed.pod_nodes[first])].leaf;
      const int leaf_b = placed.nodes[static_cast<std::size_t>(placed.pod_nodes[last])].leaf;
      if (leaf_a != leaf_b) placed.replica_tier = kZoneTier;
    }
    placement.stages.push_back(std::move(placed));
  }
  // The plan's tier: one leaf of one island, one zone, or more.
  bool one_leaf = true;
  bool one_zone = true;
  for (const auto& [island, leaf] : all) {
    one_leaf &= island == all.front().first && leaf == all.front().second;
    one_zone &= island->zone == all.front().first->zone;
  }
  placement.tier = one_leaf ? kLeafTier : one_zone ? kZoneTier : kSiteTier;
  return placement;
}

std::vector<std::vector<std::string>> linked_zone_groups(const Cluster& cluster) {
  const std::vector<std::string>& zones = cluster.fabric.zones;
  std::vector<std::size_t> group(zones.size());
  for (std::size_t i = 0; i < zones.size(); ++i) group[i] = i;
  const auto find = [&](std::size_t i) {
    while (group[i] != i) i = group[i];
    return i;
  };
  const auto index = [&](const std::string& zone) {
    return static_cast<std::size_t>(std::find(zones.begin(), zones.end(), zone) - zones.begin());
  };
  for (const ZoneLink& link : cluster.fabric.zone_links) {
    const std::size_t a = index(link.zone_a);
    const std::size_t b = index(link.zone_b);
    if (a >= zones.size() || b >= zones.size()) continue;
    const std::size_t ra = find(a);
    const std::size_t rb = find(b);
    group[std::max(ra, rb)] = std::min(ra, rb);
  }
  std::vector<std::vector<std::string>> out;
  std::map<std::size_t, std::size_t> slot;  // root -> index into out
  for (std::size_t i = 0; i < zones.size(); ++i) {
    const std::size_t root = find(i);
    auto [it, added] = slot.emplace(root, out.size());
    if (added) out.emplace_back();
    out[it->second].push_back(zones[i]);
  }
  std::erase_if(out, [](const std::vector<std::string>& g) { return g.size() < 2; });
  return out;
}

}  // namespace hetplan
