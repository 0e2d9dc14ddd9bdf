// A chip profile: what one accelerator can do, the node it ships in, its software stack, which
// operator classes its stack covers, and the efficiency priors the cost models use. Loaded from
// profiles/*.yaml (docs/formats/chip.md). Every number may be unknown; the models say so when
// they need one that is.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace hetplan {

enum class ChipRole { training, inference };
enum class IntraNodeKind { hccs, xgmi, mlu_link, nvlink, nvswitch, pcie };
enum class IntraNodeTopology { switched, full_mesh, groups, ring, pairs, pcie_tree };

// Operator classes the compute model prices separately; coverage is declared per class.
enum class OpClass {
  gemm,
  flash_attention,
  attention_unfused,
  norm,
  activation,
  rope,
  embedding,
  cross_entropy,
  optimizer,
  dropout,
};
inline constexpr int kOpClassCount = 10;

enum class Support { native, fallback, missing };

struct OpCoverage {
  Support support = Support::native;
  double slowdown = 1.0;  // > 1 for a fallback: time multiplier against the native kernel
};

struct SoftwareComponent {
  std::string name;
  std::string version;
};

struct IntraNodeFabric {
  IntraNodeKind kind = IntraNodeKind::pcie;
  IntraNodeTopology topology = IntraNodeTopology::pcie_tree;
  int group_size = 1;                           // chips sharing the fast fabric
  std::optional<double> bandwidth;              // B/s per chip, one direction, within its group
  std::optional<double> cross_group_bandwidth;  // B/s per chip, one direction, between groups
};

// Priors (or, when calibrated, fitted values) for the roofline and collective models.
struct EfficiencyModel {
  bool calibrated = false;
  std::optional<double> gemm_max;                // best GEMM throughput / dense peak
  std::optional<double> gemm_half_dim;           // a GEMM dimension at which efficiency halves
  std::optional<double> gemm_backward_max;       // backward GEMMs (other layouts), when they differ
  std::optional<double> gemm_fp8_max;            // FP8 GEMMs' best throughput / fp8 peak
  std::optional<double> attention_max;           // fused attention throughput / dense peak
  std::optional<double> memory;                  // achieved / nominal memory bandwidth
  std::optional<double> intra_bus_efficiency;    // collective bus bandwidth / intra-node link
  std::optional<double> intra_latency;           // s, per collective step inside a node
  std::optional<double> network_bus_efficiency;  // bus bandwidth / NIC bandwidth
  std::optional<double> network_latency;         // s, per collective step across nodes
  std::optional<double> kernel_overhead;  // s, fixed cost of one kernel (launch, dispatch, tail)
  // Share of a tensor-parallel collective that overlapped execution (Transformer Engine's
  // userbuffers, MindSpeed's MC2) hides behind the GEMM beside it.
  std::optional<double> tp_comm_overlap;
  // Share of an expert-parallel all-to-all that the combined 1F1B schedule hides behind the
  // other micro-batch's compute (docs/models/estimator.md#ep-overlap).
  std::optional<double> ep_comm_overlap;
};

// A comment of a profile's file, kept so that a profile written again (a calibration) carries
// it (docs/formats/chip.md#comments). The text is what follows the `#`.
struct FieldComment {
  std::vector<std::string> leading;  // whole-line comments above the key
  std::string trailing;              // the comment at the end of the key's line
  bool on_values = false;  // the key's line holds its value(s): the comment speaks of them
  bool operator==(const FieldComment&) const = default;
};

struct ChipProfile {
  std::string id;
  std::string vendor;
  std::string model;
  std::string family;
  ChipRole role = ChipRole::training;
  SourceLocation location;  // where the profile was read from

  SoftwareComponent runtime;
  SoftwareComponent framework_adapter;
  SoftwareComponent collective_library;

  // Dense peak FLOP/s per dtype. A dtype present in the map is supported; its value may still
  // be unknown.
  std::map<DType, std::optional<double>> peak_flops;
  std::optional<double> memory_capacity;   // bytes
  std::optional<double> memory_usable;     // bytes a process can allocate (capacity less runtime)
  std::optional<double> memory_bandwidth;  // B/s

  std::optional<int> chips_per_node;
  IntraNodeFabric intra_node;
  std::optional<int> nic_count;     // per node
  std::optional<double> nic_speed;  // B/s per NIC
  std::optional<double> tdp;        // W

  Support default_support = Support::native;
  std::map<OpClass, OpCoverage> op_coverage;  // exceptions to default_support

  EfficiencyModel efficiency;

  std::map<std::string, std::string> sources;   // source id -> citation
  std::map<std::string, std::string> cited_by;  // field path -> source id, for every number
  // By the dotted path of the key a comment belongs to ("" for comments after the last key).
  std::map<std::string, FieldComment> comments;

  bool supports(DType dtype) const { return peak_flops.contains(dtype); }
  std::optional<double> peak(DType dtype) const;
  OpCoverage coverage(OpClass op) const;
};

std::string_view to_string(OpClass op);
std::string_view to_string(Support support);
std::string_view to_string(IntraNodeKind kind);
std::string_view to_string(IntraNodeTopology topology);
std::string_view to_string(ChipRole role);

}  // namespace hetplan
