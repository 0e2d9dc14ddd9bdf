// A cluster: compute islands (node pools of one chip type and software stack) on a RoCE v2 or
// InfiniBand fabric. Loaded from topologies/*.yaml (docs/formats/cluster.md).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/chip.hpp"
#include "core/error.hpp"

namespace hetplan {

enum class FabricKind { roce_v2, infiniband };
enum class FabricTopology { single_switch, leaf_spine, fat_tree_3 };

struct ZoneLink {
  std::string zone_a;
  std::string zone_b;
  double bandwidth = 0.0;  // B/s, each direction
  double latency = 0.0;    // s
};

struct Fabric {
  FabricKind kind = FabricKind::roce_v2;
  FabricTopology topology = FabricTopology::leaf_spine;
  bool rail_optimized = false;
  double leaf_uplink_speed = 0.0;  // B/s per leaf-to-spine link
  double oversubscription = 1.0;   // leaf downlink capacity / uplink capacity (>= 1)
  // The leaf uplinks of a zone together / the spine tier's capacity (>= 1; 1: the spine
  // carries whatever the uplinks bring). Jobs on different islands of one zone share it.
  double spine_oversubscription = 1.0;
  double switch_latency = 0.0;     // s per switch traversed
  double link_latency = 0.0;       // s per cable
  std::vector<std::string> zones;
  std::vector<ZoneLink> zone_links;
};

struct Island {
  std::string name;
  std::size_t chip = 0;  // index into Cluster::chips
  int nodes = 0;
  int free_nodes = -1;  // nodes free for the job now; negative: all of them (the loader's default)
  int chips_per_node = 0;
  int nic_count = 0;       // per node
  double nic_speed = 0.0;  // B/s per NIC
  SoftwareComponent runtime;
  std::string zone;
  int nodes_per_leaf = 0;                     // nodes under one leaf switch (rail group)
  std::map<std::string, std::string> labels;  // Kubernetes node labels
  // What the island's nodes advertise and run (docs/formats/cluster.md); empty: the exporter's
  // defaults for the chip family.
  std::string device_resource;  // device-plugin resource ("cambricon.com/mlu")
  std::string rdma_resource;    // RDMA device resource ("rdma/hca_shared_devices_a")
  std::string image;            // container image built for the island's stack
  std::vector<std::string> node_names;  // the nodes' Kubernetes names, when the file lists them
  SourceLocation location;
  bool free_nodes_stated = false;  // the file states free_nodes (else it defaults to nodes)

  int chip_count() const { return nodes * chips_per_node; }
  int free_chip_count() const { return (free_nodes < 0 ? nodes : free_nodes) * chips_per_node; }
};

// A way two islands can exchange tensors beside the collective library of either: the
// gradient exchange between data-parallel replicas on different chip types
// (docs/formats/cluster.md#gradient-paths, docs/models/mixed-data-parallel.md).
enum class GradientPathKind {
  host_staged,  // device to host memory, the hosts' network (TCP or RoCE), host to device
  device_rdma,  // the devices' memory read and written over RDMA directly
};

struct GradientPath {
  std::string island_a;
  std::string island_b;
  GradientPathKind kind = GradientPathKind::host_staged;
  double bandwidth = 0.0;  // B/s per node, each direction, end to end
  double latency = 0.0;    // s per message, end to end
  std::string source;      // where the figures come from, or "assumed"
  SourceLocation location;
};

struct Cluster {
  std::string name;
  Fabric fabric;
  std::vector<ChipProfile> chips;  // the profiles the islands use
  std::vector<Island> islands;
  std::vector<GradientPath> gradient_paths;
  SourceLocation location;

  const Island* find_island(std::string_view island_name) const;
  const ChipProfile& chip_of(const Island& island) const { return chips.at(island.chip); }
  // Whether traffic can flow between two zones (same zone, or a zone link between them).
  bool zones_connected(std::string_view a, std::string_view b) const;
  // The narrowest path between two zones: the zone link's bandwidth, or 0 when unconnected.
  const ZoneLink* zone_link(std::string_view a, std::string_view b) const;
  // The declared gradient path between two islands (either order), or null.
  const GradientPath* gradient_path(std::string_view a, std::string_view b) const;
  // Nodes under one leaf switch of an island (all of them on a single-switch fabric).
  int leaf_nodes(const Island& island) const;
  // The uplinks of one of an island's leaf switches together, B/s each direction: the leaf's
  // downlinks (its nodes' NICs) divided by the fabric's oversubscription.
  double leaf_uplink_capacity(const Island& island) const;
  // What a zone's spine tier carries, B/s: its islands' leaf uplinks together divided by the
  // spine's oversubscription; 0 when it does not limit (1:1, or a single switch).
  double spine_capacity(std::string_view zone) const;
};

std::string_view to_string(FabricKind kind);
std::string_view to_string(FabricTopology topology);

}  // namespace hetplan
