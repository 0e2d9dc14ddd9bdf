// Reader of `kubectl get nodes -o json` into an inventory of islands, and the writer of a
// hetplan/cluster/v1 document from it (docs/inventory.md).
//
// What Kubernetes knows and this importer reads, per node: its name, labels and annotations,
// `spec.unschedulable` and taints, the Ready condition, and the device-plugin resources in
// `status.capacity` / `status.allocatable`:
//   - Huawei Ascend (MindCluster Ascend Device Plugin): huawei.com/Ascend910 (910A and the 910B
//     series alike), huawei.com/Ascend310P; vNPU slices huawei.com/Ascend910-<template>; HAMi's
//     huawei.com/Ascend910A, huawei.com/Ascend910B2 / B3 / B4, huawei.com/Ascend310P.
//   - Hygon DCU: hygon.com/dcu (native plugin); HAMi's hygon.com/dcunum (virtual DCUs).
//   - Cambricon MLU: cambricon.com/mlu, or cambricon.com/mlu370 (and mlu290, ...) when the plugin
//     registers device types; HAMi's cambricon.com/mlunum and cambricon.com/vmlu (virtual).
//   - NVIDIA: nvidia.com/gpu (native plugin, time-slicing, HAMi), with GPU feature discovery's
//     nvidia.com/gpu.product and nvidia.com/gpu.count labels; volcano.sh/gpu-number.
//   - Other accelerators (amd.com/gpu, metax-tech.com/gpu, ...): recognised, no chip guessed.
//   - RDMA: rdma/* resources, vpc.amazonaws.com/efa (a NIC count), NFD's rdma.available label.
// With HAMi, resource counts are virtual devices; the physical ones are counted from HAMi's
// register annotation (hami.io/node-<type>-register, docs/develop/protocol.md of Project-HAMi).
//
// What Kubernetes does not know — the fabric wiring, nodes per leaf switch, NIC speeds, links
// between zones, often the runtime version — is returned as questions, and the cluster writer
// fills in defaults marked ASSUMED.
//
// Malformed input is an InputError naming file:line:column (of the JSON value), the field
// ("items[3].metadata.name", "items[0].status.allocatable[\"huawei.com/Ascend910\"]") and what was
// expected. An accelerator without a bundled profile is not an error: its island has chip
// "unknown" and a question.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/chip.hpp"
#include "core/error.hpp"

namespace hetplan::importers {

// A node that is in an island but not free for the job being planned, and why ("cordoned
// (spec.unschedulable)", "taint node.kubernetes.io/not-ready:NoSchedule", "7 of 8
// huawei.com/Ascend910 allocatable").
struct BusyNode {
  std::string name;
  std::string reason;
};

// Nodes of one chip, one runtime version and one zone.
struct InventoryIsland {
  std::string name;      // unique, a hetplan name: the chip id, with the zone (and runtime) when
                         // several islands share a chip
  std::string chip_id;   // a bundled profile id guessed from resources and labels, or "unknown"
  std::string family;    // "ascend", "dcu", "mlu", "nvidia", or the resource's vendor domain
  std::string resource;  // the device resource counted ("huawei.com/Ascend910")
  std::string model;     // the label or annotation value the chip was guessed from ("910B3")
  int nodes = 0;
  int free_nodes = 0;      // schedulable, Ready, no NoSchedule/NoExecute taint, all devices healthy
  int chips_per_node = 0;  // physical devices per node (most nodes' count); 0: unknown
  std::string zone;        // a hetplan name made from the zone label ("default" without one)
  std::string zone_label;  // the zone label's value as Kubernetes has it; empty without one
  std::string runtime_name;     // from a node label ("CANN", "CUDA"); empty when no label says
  std::string runtime_version;  // ("8.0.RC3", "12.4"); empty when no label says
  int nic_count = 0;            // per node, from a resource that counts NICs (EFA); 0: unknown
  // RDMA resources or labels seen ("rdma/hca_shared_devices_a"): RDMA is there, NICs uncounted.
  std::vector<std::string> rdma_resources;
  // The node labels hetplan relies on to select these nodes, where every node of the island
  // carries the same value: accelerator, accelerator-type, node.kubernetes.io/npu.chip.name,
  // nvidia.com/gpu.product, node.kubernetes.io/instance-type, topology.kubernetes.io/zone, ...,
  // and hetplan's own accelerator.vendor / accelerator.model / runtime.version / fabric.zone.
  std::map<std::string, std::string> labels;
  std::vector<std::string> node_names;  // the free ones first, each part in input order
  std::vector<BusyNode> busy_nodes;     // the nodes not counted in free_nodes, in input order
  // What Kubernetes does not know about these nodes: fabric wiring (nodes per leaf), NICs when
  // no resource counts them, the runtime version when no label names it, an uncertain chip guess.
  std::vector<std::string> questions;
  SourceLocation location;  // the first node's object in the input
};

struct Inventory {
  std::string file;                      // as named
  std::vector<InventoryIsland> islands;  // in the order of their first node in the input
  std::vector<std::string> other_nodes;  // nodes without accelerators (control plane, CPU nodes)
  std::vector<std::string> questions;    // about the site as a whole: fabric, zone links, ...
};

// The output of `kubectl get nodes -o json` (a v1 List of Nodes; a NodeList from the API, or a
// single Node from `kubectl get node NAME -o json`, are read too).
// A Kubernetes quantity ("8", "1k", "2Ki", "1e3", "500m") as a whole count; empty when it is not
// one (a fraction of a unit, another grammar, beyond 10^15).
std::optional<std::int64_t> kubernetes_count(std::string_view text);

Inventory parse_kubectl_nodes(const std::string& text, const std::string& file_name);

// Reads a file (at most 256 MiB) and parses it.
Inventory import_kubectl_nodes(const std::string& path);

// A complete hetplan/cluster/v1 document (docs/formats/cluster.md) for the inventory:
//   - a header comment listing every question;
//   - a RoCE v2 leaf-spine fabric whose figures are defaults marked ASSUMED;
//   - zones from the nodes' zone labels; zone links left as a commented example (Kubernetes does
//     not know them; until they are filled in, no plan spans two zones);
//   - one island per inventory island with chip, nodes, free_nodes, chips_per_node (only when it
//     differs from the profile's), nics (counted, or ASSUMED when the profile does not know
//     them), runtime (when a label names it), zone, nodes_per_leaf (ASSUMED) and labels.
// Islands with chip "unknown" are written as commented-out blocks to complete by hand.
// profiles_folder is written as the document's `profiles:` entry. `profiles` are the chip
// profiles found there (formats::load_chip of each island's chip id; missing ones may be left
// out): an island whose profile is not given gets explicit chips_per_node and, ASSUMED, nics.
std::string cluster_yaml(const Inventory& inventory, const std::string& cluster_name,
                         const std::string& profiles_folder,
                         const std::vector<ChipProfile>& profiles = {});

}  // namespace hetplan::importers
