#include "core/cluster.hpp"

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
