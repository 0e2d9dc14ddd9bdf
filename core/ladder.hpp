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
  std::string sha256;    // the evidence file's SHA-256 as the record states it; empty: none
  std::string note;      // for a failed entry, what failed (validate --run: the error)
  std::string with_chip;          // boundary, gradient exchange: the other side's chip profile id
  SoftwareComponent with_runtime;  // boundary, gradient exchange: the other side's runtime
  int chips = 0;                   // scale: chips in the run
  SourceLocation location;
  SourceLocation evidence_location;
  SourceLocation passed_location;
  // Whether the evidence holds (validation/evidence.hpp, check_evidence): the file is there, of
  // the step's kind, unchanged since the record was written (its SHA-256) and says what the entry
  // says. Until it is checked (evidence_checked false) a passed entry does not count.
  bool evidence_checked = false;
  std::string evidence_problem;  // why it does not hold, located ("r.yaml:5:60: ladder[0]...")
};

// One record per chip profile and runtime version.
struct ValidationRecord {
  std::string file;
  std::string chip;  // a chip profile id (calibrated versions "<id>.<label>" count as <id>)
  SoftwareComponent runtime;
  std::vector<LadderEntry> entries;
};

std::string_view to_string(LadderStep step);

// The output of validation/probe/hetplan_boundary.py (hetplan/ladder-evidence/v1,
// docs/formats/calibration-bundle.md#ladder-evidence): one check of rung 2 or 3 and its verdict.
struct LadderEvidenceBackend {
  std::string backend;  // cpu, cuda, npu, mlu
  std::string device;
  SoftwareComponent runtime;
  SourceLocation location;  // of its runtime
};

struct LadderEvidenceResult {
  std::string what;
  double max_abs_error = 0, max_rel_error = 0, tolerance = 0;
  bool passed = false;
};

struct LadderEvidence {
  std::string file;
  LadderStep check = LadderStep::collectives;  // collectives, checkpoint, boundary, gradient_exchange
  std::string started;                         // YYYY-MM-DDTHH:MM:SSZ
  SourceLocation started_location;
  std::string hostname, torch, dtype;
  std::vector<LadderEvidenceBackend> backends;  // one; boundary and exchange: the two sides
  bool passed = false;
  std::vector<LadderEvidenceResult> results;
  std::vector<std::string> notes;
};

}  // namespace hetplan
