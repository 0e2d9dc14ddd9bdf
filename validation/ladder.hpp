// Where each island and each pair of islands of a cluster stands on the validation ladder
// (core/ladder.hpp), from validation records, and whether a plan has what it needs:
// every island it uses at step 2 (collectives and checkpoint; step 1 for a single chip), no
// island whose latest run at scale failed, and every cross-island boundary it has at step 3.
// docs/formats/validation-record.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cluster.hpp"
#include "core/ladder.hpp"
#include "core/scenario.hpp"
#include "core/plan.hpp"

namespace hetplan::validation {

// Where one rung stands. The latest entry that counts decides (by date; the later record or
// entry on the same date): a failed entry always counts, a passed one only when its evidence
// holds (LadderEntry::evidence_checked, evidence_problem).
struct RungState {
  enum class Status { no_record, passed, failed, not_counted };
  LadderStep step = LadderStep::single_card;
  Status status = Status::no_record;  // not_counted: every entry is a pass whose evidence fails
  std::string date, evidence, note;   // of the deciding entry
  int chips = 0;                      // scale: the deciding run's chips
  std::vector<std::string> refused;   // passed entries whose evidence does not hold: why, located
  // The commands that make its record: the probe's run, then `hetplan validate`.
  std::vector<std::string> commands;
};

std::string_view to_string(RungState::Status status);  // "no record", "passed", ...

struct IslandLadder {
  std::string island;
  std::string chip;
  SoftwareComponent runtime;
  // 0 nothing, 1 single card, 2 also collectives and checkpoint, 4 also a run at scale whose
  // latest record passed (step 3 belongs to pairs of islands: BoundaryLadder).
  int level = 0;
  std::vector<RungState> rungs;      // single-card, collectives, checkpoint, scale
  std::vector<std::string> missing;  // what steps 1 and 2 lack ("collectives has no record")
  // What stands behind its chip's figures, and their 80% step band (docs/models/uncertainty.md):
  // the ladder's probe and run records are what raises a chip at datasheet level.
  EvidenceLevel evidence = EvidenceLevel::datasheet;
  std::optional<Band> band;
  std::string scale_failure;  // the latest run at scale failed: "scale failed on DATE: note"
  int scale_chips = 0;        // the chips of the latest run at scale, when it passed

  const RungState& rung(LadderStep step) const;
};

struct BoundaryLadder {
  std::string a, b;  // islands
  RungState rung;    // boundary, or gradient-exchange

  bool passed() const { return rung.status == RungState::Status::passed; }
};

struct LadderReport {
  std::vector<IslandLadder> islands;
  std::vector<BoundaryLadder> boundaries;  // every pair of islands on different chips or stacks
  // Every pair of such islands with a declared gradient path: the exchange between replicas
  // on the two (step 3 for replica groups on different islands).
  std::vector<BoundaryLadder> exchanges;
};

// Whether two runtimes are one, as records and islands are matched: names ignoring case,
// versions exactly.
bool same_runtime(const SoftwareComponent& a, const SoftwareComponent& b);
// Whether two chip profile ids are one chip: calibrated versions "<id>.<label>" count as <id>.
bool same_chip(const std::string& a, const std::string& b);

// `scope` ends each `hetplan validate` command the rungs name: "--scenario S", with
// " --records DIR" when the records are not the scenario's.
LadderReport ladder_state(const Cluster& cluster, const std::vector<ValidationRecord>& records,
                          const std::string& scope = "--scenario SCENARIO");
std::string ladder_text(const LadderReport& report);

struct PlanValidation {
  bool validated = false;
  std::vector<std::string> missing;  // e.g. "island dcu-k100 (DTK 24.04): no checkpoint step"
};

PlanValidation plan_validation(const LadderReport& ladder, const Plan& plan);
// The same where there may be no ladder (null: no validation records, which the plan then
// lacks, in those words).
PlanValidation plan_validation(const LadderReport* ladder, const Plan& plan);
inline constexpr const char* kNoValidationRecords =
    "no validation records (scenario validation_records, or --records)";

// Where a scenario's cluster stands on the ladder: the records of the folder `records` when
// given, else of the scenario's validation_records, else none; each entry's evidence checked
// (validation/evidence.hpp). Throws InputError for records that cannot be read.
std::optional<LadderReport> scenario_ladder(const Scenario& scenario, const std::string& records = {});

}  // namespace hetplan::validation
