// The evidence behind validation records (docs/formats/validation-record.md#evidence): each
// ladder entry names the file that shows it and that file's SHA-256. An entry's evidence holds
// when the file is there, not empty, unchanged (its SHA-256 is the record's) and of the step's
// kind — a probe bundle (hetplan_probe.py) for single-card, the boundary probe's output
// (hetplan_boundary.py, hetplan/ladder-evidence/v1) of the same check for collectives,
// checkpoint, boundary and gradient-exchange, a training log the importers read for scale —
// and says what the entry says (a pass is a pass there, on the record's runtimes). A passed
// entry whose evidence does not hold does not count (validation/ladder.hpp).
//
// `hetplan validate --evidence` makes a record from a probe's output (make_evidence_record);
// `hetplan validate --run` makes the scale records from a training log.
#pragma once

#include <string>
#include <vector>

#include "core/ladder.hpp"
#include "core/scenario.hpp"

namespace hetplan::validation {

// What the evidence of a step is, in words: "a probe bundle (hetplan_probe.py,
// hetplan/calibration-bundle/v1)".
std::string evidence_kind(LadderStep step);

// An evidence file's text (at most 64 MiB, a training log's bound). Throws InputError naming the
// file when it cannot be read.
std::string read_evidence_file(const std::string& path);

// A path as a record in `folder` names it: relative to the folder.
std::string relative_to_folder(const std::string& path, const std::string& folder);

// Checks every entry's evidence: sets LadderEntry::evidence_checked, and evidence_problem to a
// located message when it does not hold. Never throws for a bad evidence file.
void check_evidence(ValidationRecord& record);

// Every record of a folder (formats::load_validation_records), its evidence checked.
std::vector<ValidationRecord> load_checked_records(const std::string& folder);

// A record of what one output of the probes shows (`hetplan validate --evidence`).
struct EvidenceRecord {
  ValidationRecord record;  // one entry; its evidence relative to the records folder
  std::string file_name;    // "<step>-<started>-<island>[-<with>].yaml"
  std::string summary;      // one line: the check, its islands and its verdict
};

// The record of `evidence_path` (a probe bundle or the boundary probe's output) for island
// `island` of the scenario, and for a boundary or gradient exchange `with` as the other side
// (the evidence's second backend). `date` empty: the evidence's own. Throws InputError, located,
// for an evidence file that is empty, unreadable or of another kind, run on another runtime
// than the island's, or for islands the check does not fit.
EvidenceRecord make_evidence_record(const std::string& evidence_path, const Scenario& scenario,
                                    const std::string& island, const std::string& with,
                                    const std::string& date, const std::string& folder);

}  // namespace hetplan::validation
