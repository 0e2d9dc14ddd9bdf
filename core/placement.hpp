// Where a plan's stages run: each stage's pods on its island's nodes, and the leaf switches those
// nodes hang off. One rule, used by every export and by the scheduler extender, so that the
// Volcano Job's network-topology tiers, the labels labels.sh writes and the nodes the extender
// passes all describe the same placement (docs/export.md#placement).
//
// The rule: the stages of an island take its nodes in the order the cluster file lists them
// (node_names, or placeholders "<island>-node-NN"), stage after stage in pipeline order, as the
// twin lowers a plan (consecutive chips, docs/twin.md). A stage's pods (one per data-parallel
// replica, or chips_per_node chips each when tp is wider than a node) fill a node before the
// next; a pod never straddles two nodes. Node i of an island hangs off leaf i / nodes_per_leaf
// (Cluster::leaf_nodes).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.hpp"
#include "core/plan.hpp"

namespace hetplan {

// The node labels a placement is carried by: the leaf switch a node hangs off, and, for an
// island whose cluster file does not name its nodes, the placeholder name the node stands for.
inline constexpr std::string_view kLeafLabel = "hetplan.io/leaf";
inline constexpr std::string_view kNodeLabel = "hetplan.io/node";

// The fabric's tiers as Volcano's HyperNodes number them: a leaf switch's nodes, a zone's
// spine, and the site (zones joined by zone links).
inline constexpr int kLeafTier = 1;
inline constexpr int kZoneTier = 2;
inline constexpr int kSiteTier = 3;

struct PlacedNode {
  int index = 0;       // the island's node, from 0
  std::string name;    // node_names[index], or the placeholder "<island>-node-NN"
  bool named = false;  // the name is the cluster file's
  int leaf = 0;        // the island's leaf, from 0
};

struct StagePlacement {
  std::size_t stage = 0;
  const Island* island = nullptr;
  int chips_per_pod = 0;
  int pods_per_replica = 1;         // > 1 when tp is wider than a node
  std::vector<int> pod_nodes;       // the node (index into nodes) of each pod, in pod order
  std::vector<PlacedNode> nodes;    // the nodes its pods run on, in order
  std::vector<std::string> leaves;  // leaf_name of those nodes' leaves, in order, once each
  int tier = kLeafTier;             // kLeafTier: all on one leaf; kZoneTier otherwise
  int replica_tier = kLeafTier;     // the same for one replica's pods (the widest replica)
};

struct Placement {
  std::vector<StagePlacement> stages;  // one per plan stage, in order
  int tier = kLeafTier;  // every node of the plan: one leaf, one zone, or several zones
};

// The placement of `plan` on `cluster`. Throws std::invalid_argument naming the stage when a stage
// names an island the cluster lacks or needs more nodes than its island has.
Placement place_plan(const Cluster& cluster, const Plan& plan);

// "<island>-node-NN" (from 01; at least two digits, as many as the island's node count needs).
std::string placeholder_node_name(const Island& island, int index);

// "<island>-leaf-NN" (from 01), the value of kLeafLabel on the leaf's nodes.
std::string leaf_name(const Cluster& cluster, const Island& island, int leaf);

// Leaf switches of an island: its nodes over Cluster::leaf_nodes, rounded up.
int leaf_count(const Cluster& cluster, const Island& island);

// The zones of the cluster joined, directly or through others, by zone links: one group per
// set of linked zones with more than one zone, each in the order of Fabric::zones.
std::vector<std::vector<std::string>> linked_zone_groups(const Cluster& cluster);

}  // namespace hetplan
