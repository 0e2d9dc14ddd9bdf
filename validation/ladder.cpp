#include "validation/ladder.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include "validation/evidence.hpp"

namespace hetplan::validation {
namespace {

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Calibrated versions "<id>.<label>" are the same chip.
std::string base_chip(const std::string& id) {
  return id.substr(0, id.find('.'));
}

using Status = RungState::Status;

// Whether an entry counts: a failure needs no proof, a pass needs its evidence.
bool counts(const LadderEntry& e) {
  return !e.passed || (e.evidence_checked && e.evidence_problem.empty());
}

// The rung of a step from its entries: the latest that counts decides.
RungState decide(LadderStep step, const std::vector<const LadderEntry*>& entries) {
  RungState rung;
  rung.step = step;
  const LadderEntry* best = nullptr;
  for (const LadderEntry* e : entries) {
    if (!counts(*e)) {
      rung.refused.push_back(e->evidence_checked
                                 ? e->evidence_problem
                                 : to_string(e->location) + ": its evidence was not checked");
      continue;
    }
    if (!best || e->date >= best->date) best = e;
  }
  if (best) {
    rung.status = best->passed ? Status::passed : Status::failed;
    rung.date = best->date;
    rung.evidence = best->evidence;
    rung.note = best->note;
    rung.chips = best->chips;
  } else if (!rung.refused.empty()) {
    rung.status = Status::not_counted;
  }
  return rung;
}

// What a rung that has not passed lacks, in a few words: "collectives has no record",
// "collectives failed on 2026-11-03: <note>", "collectives has no record that counts: <why>".
std::string lack(const RungState& rung) {
  const std::string step(to_string(rung.step));
  switch (rung.status) {
    case Status::failed:
      return step + " failed on " + rung.date + (rung.note.empty() ? "" : ": " + rung.note);
    case Status::not_counted: {
      std::string why;
      for (const auto& r : rung.refused) why += (why.empty() ? "" : "; ") + r;
      return step + " has no record that counts (" + why + ")";
    }
    case Status::no_record:
    case Status::passed:
      break;
  }
  return step + " has no record";
}

// The probe's --backend for a chip family (docs/formats/calibration-bundle.md): NVIDIA and
// Hygon DCU run torch.cuda, Ascend torch_npu, Cambricon torch_mlu.
std::string probe_backend(const std::string& family) {
  if (family == "ascend") return "npu";
  if (family == "mlu") return "mlu";
  if (family == "nvidia" || family == "dcu") return "cuda";
  return "BACKEND";
}

std::vector<std::string> island_commands(LadderStep step, const Island& island,
                                         const ChipProfile& chip, const std::string& scope) {
  const std::string backend = probe_backend(chip.family);
  const std::string record = "hetplan validate --evidence E.json --island " + island.name + " " + scope;
  switch (step) {
    case LadderStep::single_card:
      return {"python3 hetplan_probe.py --backend " + backend + " --out E.json", record};
    case LadderStep::collectives:
      return {"python3 hetplan_boundary.py --check collectives --backend " + backend +
                  " --ranks " + std::to_string(std::max(2, island.chips_per_node)) + " --out E.json",
              record};
    case LadderStep::checkpoint:
      return {"python3 hetplan_boundary.py --check checkpoint --backend " + backend + " --out E.json",
              record};
    case LadderStep::scale:
      return {"hetplan validate --run LOG --plan PLAN " + scope};
    case LadderStep::boundary:
    case LadderStep::gradient_exchange:
      break;
  }
  return {};
}

std::vector<std::string> pair_commands(LadderStep step, const Island& a, const ChipProfile& chip_a,
                                       const Island& b, const ChipProfile& chip_b,
                                       const std::string& scope) {
  return {"python3 hetplan_boundary.py --check " + std::string(to_string(step)) +
              " --first-backend " + probe_backend(chip_a.family) + " --second-backend " +
              probe_backend(chip_b.family) + " --out E.json",
          "hetplan validate --evidence E.json --island " + a.name + " --with " + b.name + " " + scope};
}

// The entry of islands a and b (either order) in a list of boundaries or exchanges.
std::vector<BoundaryLadder>::const_iterator find_pair(const std::vector<BoundaryLadder>& pairs,
                                                      const std::string& a, const std::string& b) {
  return std::find_if(pairs.begin(), pairs.end(), [&](const BoundaryLadder& x) {
    return (x.a == a && x.b == b) || (x.a == b && x.b == a);
  });
}

}  // namespace

std::string_view to_string(RungState::Status status) {
  switch (status) {
    case Status::no_record: return "no record";
    case Status::passed: return "passed";
    case Status::failed: return "failed";
    case Status::not_counted: return "not counted";
  }
  return "?";
}

const RungState& IslandLadder::rung(LadderStep step) const {
  for (const RungState& r : rungs)
    if (r.step == step) return r;
  static const RungState none;
  return none;
}

bool same_chip(const std::string& a, const std::string& b) {
  return base_chip(a) == base_chip(b);
}

bool same_runtime(const SoftwareComponent& a, const SoftwareComponent& b) {
  return lower(a.name) == lower(b.name) && a.version == b.version;
}

LadderReport ladder_state(const Cluster& cluster, const std::vector<ValidationRecord>& records,
                          const std::string& scope) {
  LadderReport out;
  for (const auto& island : cluster.islands) {
    const ChipProfile& chip = cluster.chip_of(island);
    IslandLadder state;
    state.island = island.name;
    state.chip = chip.id;
    state.runtime = island.runtime;
    state.evidence = chip.evidence_level();
    state.band = chip.evidence.step;
    std::map<LadderStep, std::vector<const LadderEntry*>> steps;
    for (const auto& record : records) {
      if (base_chip(record.chip) != base_chip(chip.id) || !same_runtime(record.runtime, island.runtime))
        continue;
      for (const auto& entry : record.entries)
        if (entry.step != LadderStep::boundary && entry.step != LadderStep::gradient_exchange)
          steps[entry.step].push_back(&entry);
    }
    for (LadderStep step : {LadderStep::single_card, LadderStep::collectives,
                            LadderStep::checkpoint, LadderStep::scale}) {
      RungState rung = decide(step, steps[step]);
      rung.commands = island_commands(step, island, chip, scope);
      if (step != LadderStep::scale && rung.status != Status::passed)
        state.missing.push_back(lack(rung));
      state.rungs.push_back(std::move(rung));
    }
    auto passed = [&](LadderStep step) { return state.rung(step).status == Status::passed; };
    if (passed(LadderStep::single_card)) {
      state.level = 1;
      if (passed(LadderStep::collectives) && passed(LadderStep::checkpoint)) {
        state.level = 2;
        if (passed(LadderStep::scale)) state.level = 4;
      }
    }
    const RungState& scale = state.rung(LadderStep::scale);
    if (scale.status == Status::failed) state.scale_failure = lack(scale);
    if (scale.status == Status::passed) state.scale_chips = scale.chips;
    out.islands.push_back(std::move(state));
  }
  // Boundaries and gradient exchanges between islands of different chips or software stacks,
  // from either side's records.
  auto pair_state = [&](LadderStep step, const Island& a, const Island& b) {
    const std::string chip_a = base_chip(cluster.chip_of(a).id);
    const std::string chip_b = base_chip(cluster.chip_of(b).id);
    std::vector<const LadderEntry*> entries;
    for (const auto& record : records) {
      for (const auto& entry : record.entries) {
        if (entry.step != step) continue;
        const bool ab = base_chip(record.chip) == chip_a && same_runtime(record.runtime, a.runtime) &&
                        base_chip(entry.with_chip) == chip_b &&
                        same_runtime(entry.with_runtime, b.runtime);
        const bool ba = base_chip(record.chip) == chip_b && same_runtime(record.runtime, b.runtime) &&
                        base_chip(entry.with_chip) == chip_a &&
                        same_runtime(entry.with_runtime, a.runtime);
        if (ab || ba) entries.push_back(&entry);
      }
    }
    BoundaryLadder state{a.name, b.name, decide(step, entries)};
    state.rung.commands = pair_commands(step, a, cluster.chip_of(a), b, cluster.chip_of(b), scope);
    return state;
  };
  for (std::size_t i = 0; i < cluster.islands.size(); ++i) {
    for (std::size_t j = i + 1; j < cluster.islands.size(); ++j) {
      const Island& a = cluster.islands[i];
      const Island& b = cluster.islands[j];
      if (same_chip(cluster.chip_of(a).id, cluster.chip_of(b).id) &&
          same_runtime(a.runtime, b.runtime))
        continue;
      out.boundaries.push_back(pair_state(LadderStep::boundary, a, b));
      if (cluster.gradient_path(a.name, b.name))
        out.exchanges.push_back(pair_state(LadderStep::gradient_exchange, a, b));
    }
  }
  return out;
}

namespace {

// One rung as the ladder shows it: its state on the first line, then what did not count and,
// unless it passed, the commands that make its record.
std::string rung_text(const std::string& head, const RungState& rung) {
  char line[256];
  std::snprintf(line, sizeof line, "  %-28s ", head.c_str());
  std::string out = line;
  switch (rung.status) {
    case Status::passed:
      out += "passed on " + rung.date + " (" + rung.evidence + ")";
      if (rung.step == LadderStep::scale) out += ", " + std::to_string(rung.chips) + " chips";
      break;
    case Status::failed:
      out += "failed on " + rung.date + (rung.note.empty() ? "" : ": " + rung.note);
      if (rung.step == LadderStep::scale)
        out += "\n      it blocks the island's plans until a later run passes";
      break;
    case Status::not_counted:
    case Status::no_record:
      out += std::string(to_string(rung.status));
      break;
  }
  out += "\n";
  for (const auto& why : rung.refused) out += "      does not count: " + why + "\n";
  if (rung.status != Status::passed)
    for (const auto& command : rung.commands) out += "      " + command + "\n";
  return out;
}

}  // namespace

std::string ladder_text(const LadderReport& report) {
  std::string out;
  for (const auto& s : report.islands) {
    out += "island " + s.island + " (" + s.chip + ", " + s.runtime.name + " " + s.runtime.version +
           "): step " + std::to_string(s.level) + "\n";
    for (const auto& rung : s.rungs) {
      const int number = rung.step == LadderStep::single_card ? 1
                         : rung.step == LadderStep::scale     ? 4
                                                              : 2;
      out += rung_text(std::to_string(number) + " " + std::string(to_string(rung.step)), rung);
    }
    // What its chip's figures rest on (docs/models/uncertainty.md): the probe and run records
    // above are what narrow a datasheet-level chip's band.
    const std::string band =
        s.band ? "80% of runs " + band_text(*s.band) + " of the predicted step" : "no band stated";
    char line[256];
    std::snprintf(line, sizeof line, "  %-28s %s, %s\n", "profile evidence",
                  std::string(to_string(s.evidence)).c_str(), band.c_str());
    out += line;
  }
  out += "cross-island pipeline boundaries (step 3)\n";
  for (const auto& b : report.boundaries) out += rung_text(b.a + " <-> " + b.b, b.rung);
  if (!report.exchanges.empty()) {
    out += "gradient exchanges between replicas on two chip types (step 3)\n";
    for (const auto& b : report.exchanges) out += rung_text(b.a + " <-> " + b.b, b.rung);
  }
  return out;
}

PlanValidation plan_validation(const LadderReport& ladder, const Plan& plan) {
  PlanValidation out;
  std::map<std::string, long long> chips;  // 64 bits: stages can sum past 2^31 chips
  for (const auto& stage : plan.stages)
    chips[stage.island] += static_cast<long long>(stage.tp) * stage.dp;
  for (const auto& group : plan.replica_groups)
    for (const auto& stage : group.stages)
      chips[stage.island] += static_cast<long long>(stage.tp) * stage.dp;
  for (const auto& entry : chips) {
    // Named copies, not a structured binding: the lambda below captures the name (C++20 lets
    // it capture a binding, clang 14 does not).
    const std::string& island = entry.first;
    const long long count = entry.second;
    const auto state = std::find_if(ladder.islands.begin(), ladder.islands.end(),
                                    [&](const IslandLadder& s) { return s.island == island; });
    if (state == ladder.islands.end()) continue;
    const int needed = count > 1 ? 2 : 1;
    const std::string name =
        "island " + island + " (" + state->runtime.name + " " + state->runtime.version + ")";
    if (state->level < needed) {
      std::string what = name + " is at step " + std::to_string(state->level) + " of the " +
                         std::to_string(needed) + " it needs: ";
      for (std::size_t k = 0; k < state->missing.size(); ++k)
        what += (k ? ", " : "") + state->missing[k];
      out.missing.push_back(what);
    }
    // A run at scale that failed blocks the island until a later one passes.
    if (!state->scale_failure.empty()) out.missing.push_back(name + ": " + state->scale_failure);
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t i = 0; i + 1 < plan.stages.size(); ++i) {
    const std::string& a = plan.stages[i].island;
    const std::string& b = plan.stages[i + 1].island;
    if (a == b || !seen.insert(std::minmax(a, b)).second) continue;
    const auto boundary = find_pair(ladder.boundaries, a, b);
    if (boundary != ladder.boundaries.end() && !boundary->passed())
      out.missing.push_back("boundary " + a + " -> " + b + " has not passed step 3: " +
                            lack(boundary->rung));
  }
  // Replica groups: the gradient exchange between each group and the next (a ring; two
  // groups, one pair), where they are on different chips or stacks (the pairs the ladder has
  // boundaries for). Each group is one island's pipeline, so it crosses no boundary.
  const std::size_t groups = plan.replica_groups.size();
  std::set<std::pair<std::string, std::string>> exchanged;
  for (std::size_t g = 0; g < (groups == 2 ? 1 : groups); ++g) {
    const std::string& a = plan.replica_groups[g].stages.front().island;
    const std::string& b = plan.replica_groups[(g + 1) % groups].stages.front().island;
    if (a == b || !exchanged.insert(std::minmax(a, b)).second) continue;
    if (find_pair(ladder.boundaries, a, b) == ladder.boundaries.end()) continue;  // one vendor
    const auto exchange = find_pair(ladder.exchanges, a, b);
    if (exchange == ladder.exchanges.end())
      out.missing.push_back("gradient exchange " + a + " <-> " + b + " has not passed step 3");
    else if (!exchange->passed())
      out.missing.push_back("gradient exchange " + a + " <-> " + b + " has not passed step 3: " +
                            lack(exchange->rung));
  }
  out.validated = out.missing.empty();
  return out;
}

PlanValidation plan_validation(const LadderReport* ladder, const Plan& plan) {
  if (ladder) return plan_validation(*ladder, plan);
  PlanValidation none;
  none.missing.push_back(kNoValidationRecords);
  return none;
}

std::optional<LadderReport> scenario_ladder(const Scenario& scenario, const std::string& records) {
  const std::string folder = !records.empty() ? records : scenario.validation_records.value_or("");
  if (folder.empty()) return std::nullopt;
  std::string scope = "--scenario " + scenario.location.file;
  if (!records.empty()) scope += " --records " + records;
  return ladder_state(scenario.cluster, load_checked_records(folder), scope);
}

}  // namespace hetplan::validation
