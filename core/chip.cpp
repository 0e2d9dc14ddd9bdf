#include "core/chip.hpp"

#include <cstdio>

namespace hetplan {

std::optional<double> ChipProfile::peak(DType dtype) const {
  const auto it = peak_flops.find(dtype);
  if (it == peak_flops.end()) return std::nullopt;
  return it->second;
}

OpCoverage ChipProfile::coverage(OpClass op) const {
  const auto it = op_coverage.find(op);
  if (it != op_coverage.end()) return it->second;
  return OpCoverage{default_support, 1.0};
}

std::string_view to_string(OpClass op) {
  switch (op) {
    case OpClass::gemm:
      return "gemm";
    case OpClass::flash_attention:
      return "flash_attention";
    case OpClass::attention_unfused:
      return "attention_unfused";
    case OpClass::norm:
      return "norm";
    case OpClass::activation:
      return "activation";
    case OpClass::rope:
      return "rope";
    case OpClass::embedding:
      return "embedding";
    case OpClass::cross_entropy:
      return "cross_entropy";
    case OpClass::optimizer:
      return "optimizer";
    case OpClass::dropout:
      return "dropout";
  }
  return "?";
}

std::string_view to_string(Support support) {
  switch (support) {
    case Support::native:
      return "native";
    case Support::fallback:
      return "fallback";
    case Support::missing:
      return "missing";
  }
  return "?";
}

std::string_view to_string(IntraNodeKind kind) {
  switch (kind) {
    case IntraNodeKind::hccs:
      return "hccs";
    case IntraNodeKind::xgmi:
      return "xgmi";
    case IntraNodeKind::mlu_link:
      return "mlu-link";
    case IntraNodeKind::nvlink:
      return "nvlink";
    case IntraNodeKind::nvswitch:
      return "nvswitch";
    case IntraNodeKind::pcie:
      return "pcie";
  }
  return "?";
}

std::string_view to_string(IntraNodeTopology topology) {
  switch (topology) {
    case IntraNodeTopology::switched:
      return "switch";
    case IntraNodeTopology::full_mesh:
      return "full-mesh";
    case IntraNodeTopology::groups:
      return "groups";
    case IntraNodeTopology::ring:
      return "ring";
    case IntraNodeTopology::pairs:
      return "pairs";
    case IntraNodeTopology::pcie_tree:
      return "pcie-tree";
  }
  return "?";
}

std::string_view to_string(ChipRole role) {
  return role == ChipRole::training ? "training" : "inference";
}

std::string band_text(const Band& band) {
  char text[64];
  std::snprintf(text, sizeof text, "%+.0f%% to %+.0f%%", 100 * (band.low - 1), 100 * (band.high - 1));
  return text;
}

std::string_view to_string(EvidenceLevel level) {
  switch (level) {
    case EvidenceLevel::datasheet:
      return "datasheet";
    case EvidenceLevel::microbenchmarks:
      return "microbenchmarks";
    case EvidenceLevel::probe:
      return "probe";
    case EvidenceLevel::runs:
      return "runs";
  }
  return "?";
}

EvidenceLevel ChipProfile::evidence_level() const {
  if (evidence.level) return *evidence.level;
  if (efficiency.in_step.any()) return EvidenceLevel::runs;
  return efficiency.calibrated ? EvidenceLevel::microbenchmarks : EvidenceLevel::datasheet;
}

}  // namespace hetplan
