// The validation ladder: what must be shown on real hardware, per chip and runtime version,
// before a plan on it is trusted (docs/formats/validation-record.md):
//   1 single-card forward/backward and missing operators,
//   2 same-vendor collectives and checkpoint save/restore,
//   3 one cross-chip pipeline boundary (outputs and key gradients against a reference), and for
//     replicas on two chip types the gradient exchange between them (sample-weighted gradients
//     summed over the pair against the whole batch's),
//   4 scale.
#pragma once

#include <string>
#include <vector>

#include "core/chip.hpp"
#include "core/error.hpp"

namespace hetplan {

enum class LadderStep { single_card, collectives, checkpoint, boundary, scale, gradient_exchange };

struct LadderEntry {
  LadderStep step = LadderStep::single_card;
  bool passed = false;
  std::string date;      // YYYY-MM-DD
  std::string evidence;  // a file (probe bundle, ladder evidence), resolved from the record
  std::string note;
  std::string with_chip;          // boundary, gradient exchange: the other side's chip profile id
  SoftwareComponent with_runtime;  // boundary, gradient exchange: the other side's runtime
  int chips = 0;                   // scale: chips in the run
  SourceLocation location;
};

// One record per chip profile and runtime version.
struct ValidationRecord {
  std::string file;
  std::string chip;  // a chip profile id (calibrated versions "<id>.<label>" count as <id>)
  SoftwareComponent runtime;
  std::vector<LadderEntry> entries;
};

std::string_view to_string(LadderStep step);

}  // namespace hetplan
