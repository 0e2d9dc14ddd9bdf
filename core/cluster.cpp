#include "core/cluster.hpp"

#include <algorithm>

namespace hetplan {

const Island* Cluster::find_island(std::string_view island_name) const {
  for (const auto& island : islands) {
    if (island.name == island_name) return &island;
  }
  return nullptr;
}

const ZoneLink* Cluster::zone_link(std::string_view a, std::string_view b) const {
  for (const auto& link : fabric.zone_links) {
    if ((link.zone_a == a && link.zone_b == b) || (link.zone_a == b && link.zone_b == a)) {
      return &link;
    }
  }
  return nullptr;
}

bool Cluster::zones_connected(std::string_view a, std::string_view b) const {
  return a == b || zone_link(a, b) != nullptr;
}

const GradientPath* Cluster::gradient_path(std::string_view a, std::string_view b) const {
  for (const GradientPath& path : gradient_paths) {
    if ((path.island_a == a && path.island_b == b) || (path.island_a == b && path.island_b == a))
      return &path;
  }
  return nullptr;
}

int Cluster::leaf_nodes(const Island& island) const {
  return fabric.topology == FabricTopology::single_switch ? island.nodes
                                                          : std::max(1, island.nodes_per_leaf);
}

double Cluster::leaf_uplink_capacity(const Island& island) const {
  const double oversubscription = fabric.topology == FabricTopology::single_switch
                                      ? 1.0
                                      : std::max(1.0, fabric.oversubscription);
  return leaf_nodes(island) * island.nic_count * island.nic_speed / oversubscription;
}

double Cluster::spine_capacity(std::string_view zone) const {
  if (fabric.topology == FabricTopology::single_switch || fabric.spine_oversubscription <= 1.0)
    return 0.0;
  double uplinks = 0;
  for (const Island& island : islands) {
    if (island.zone != zone) continue;
    const int leaves = (island.nodes + leaf_nodes(island) - 1) / leaf_nodes(island);
    uplinks += leaves * leaf_uplink_capacity(island);
  }
  return uplinks / fabric.spine_oversubscription;
}

std::string_view to_string(FabricKind kind) {
  return kind == FabricKind::roce_v2 ? "roce-v2" : "infiniband";
}

std::string_view to_string(FabricTopology topology) {
  switch (topology) {
    case FabricTopology::single_switch:
      return "single-switch";
    case FabricTopology::leaf_spine:
      return "leaf-spine";
    case FabricTopology::fat_tree_3:
      return "fat-tree-3";
  }
  return "?";
}

}  // namespace hetplan
