// Where each island and each pair of islands of a cluster stands on the validation ladder
// (core/ladder.hpp), from validation records, and whether a plan has what it needs:
// every island it uses at step 2 (collectives and checkpoint; step 1 for a single chip) and
// every cross-island boundary it has at step 3. docs/formats/validation-record.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cluster.hpp"
#include "core/ladder.hpp"
#include "core/scenario.hpp"
#include "core/plan.hpp"

namespace hetplan::validation {

struct IslandLadder {
  std::string island;
  std::string chip;
  SoftwareComponent runtime;
  int level = 0;  // 0 nothing, 1 single card, 2 also collectives and checkpoint
  std::vector<std::string> missing;  // what the next steps lack
  int scale_chips = 0;               // the largest passed scale run
};

struct BoundaryLadder {
  std::string a, b;  // islands
  bool passed = false;
  std::string evidence;
};

struct LadderReport {
  std::vector<IslandLadder> islands;
  std::vector<BoundaryLadder> boundaries;  // every pair of islands on different chips or stacks
  // Every pair of such islands with a declared gradient path: the exchange between replicas
  // on the two (step 3 for replica groups on different islands).
  std::vector<BoundaryLadder> exchanges;
};

LadderReport ladder_state(const Cluster& cluster, const std::vector<ValidationRecord>& records);
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
// given, else of the scenario's validation_records, else none. Throws InputError for records
// that cannot be read.
std::optional<LadderReport> scenario_ladder(const Scenario& scenario, const std::string& records = {});

}  // namespace hetplan::validation
