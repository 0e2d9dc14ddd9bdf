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

// What a chip loses inside a real training step beyond what its microbenchmarks show, fitted
// from end-to-end training runs (hetplan calibrate --from-runs, docs/models/in-step.md). Each is
// unknown until fitted, and an unknown term changes nothing (a factor of 1, an overhead of 0).
struct RunReference {
  std::string id;      // the run: a published case's id, or a training log's file name
  std::string file;    // where it was read from
  std::string sha256;  // of that file's bytes
  bool operator==(const RunReference&) const = default;
};
struct InStepTerms {
  std::optional<double> gemm;         // GEMM rate in a step over the microbenchmark curve's
  std::optional<double> attention;    // fused attention's rate in a step over its curve's
  std::optional<double> communication;  // a collective's or send's time in a step over the model's
  std::optional<double> layer_overhead;      // s per layer and micro-batch, forward and backward
  std::optional<double> moe_layer_overhead;  // s per mixture-of-experts layer and micro-batch, more
  std::vector<RunReference> runs;            // the runs they were fitted on
  bool any() const {
    return gemm || attention || communication || layer_overhead || moe_layer_overhead;
  }
};

// How much stands behind a profile's figures, lowest first: datasheet figures and priors only;
// efficiencies fitted to published microbenchmarks; fitted to a probe run on the site's own
// chips; in-step terms fitted to real training runs.
enum class EvidenceLevel { datasheet, microbenchmarks, probe, runs };
inline constexpr int kEvidenceLevelCount = 4;

// An interval of measured over predicted: the 80% prediction interval of what a run measures
// against what the model predicts for it, as the residuals of runs at the profile's evidence
// level showed (docs/models/uncertainty.md).
struct Band {
  double low = 1;
  double high = 1;
  bool operator==(const Band&) const = default;
};

struct Evidence {
  std::optional<EvidenceLevel> level;  // stated; else derived (ChipProfile::evidence_level)
  std::optional<Band> step;            // measured over predicted step time
  std::optional<Band> memory;          // measured over predicted peak memory
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
  // A mixture's expert-parallel exchange inside a node, where all-to-alls were measured: its bus
  // bandwidth over the intra-node link and its latency per step (docs/models/moe.md#exchange);
  // unknown, it is priced with the collectives' figures above.
  std::optional<double> intra_all_to_all_efficiency;
  std::optional<double> intra_all_to_all_latency;
  std::optional<double> kernel_overhead;  // s, fixed cost of one kernel (launch, dispatch, tail)
  // Share of a tensor-parallel collective that overlapped execution (Transformer Engine's
  // userbuffers, MindSpeed's MC2) hides behind the GEMM beside it.
  std::optional<double> tp_comm_overlap;
  // Share of an expert-parallel all-to-all that the combined 1F1B schedule hides behind the
  // other micro-batch's compute (docs/models/estimator.md#ep-overlap).
  std::optional<double> ep_comm_overlap;
  InStepTerms in_step;
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
  Evidence evidence;
  // Another bin of the same die (its profile id), whose in-step terms fitted to runs this
  // profile takes where it has no runs of its own (docs/models/uncertainty.md#bins). Empty: none.
  std::string in_step_from;

  std::map<std::string, std::string> sources;   // source id -> citation
  std::map<std::string, std::string> cited_by;  // field path -> source id, for every number
  // By the dotted path of the key a comment belongs to ("" for comments after the last key).
  std::map<std::string, FieldComment> comments;

  bool supports(DType dtype) const { return peak_flops.contains(dtype); }
  // The stated evidence level, else what the profile shows: in-step terms are fitted to runs, a
  // calibrated profile to microbenchmarks, anything else rests on its datasheet.
  EvidenceLevel evidence_level() const;
  std::optional<double> peak(DType dtype) const;
  OpCoverage coverage(OpClass op) const;
};

std::string_view to_string(OpClass op);
std::string_view to_string(Support support);
std::string_view to_string(IntraNodeKind kind);
std::string_view to_string(IntraNodeTopology topology);
std::string_view to_string(ChipRole role);
std::string_view to_string(EvidenceLevel level);
// A band as the change it allows against the prediction: {0.77, 1.31} -> "-23% to +31%".
std::string band_text(const Band& band);

}  // namespace hetplan
