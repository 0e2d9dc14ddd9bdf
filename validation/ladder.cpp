#include "validation/ladder.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include "formats/loaders.hpp"

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

bool same_stack(const SoftwareComponent& a, const SoftwareComponent& b) {
  return lower(a.name) == lower(b.name) && a.version == b.version;
}


// The latest entry of a step (by date; the later record or entry on the same date) decides.
const LadderEntry* latest(const std::vector<const LadderEntry*>& entries) {
  const LadderEntry* best = nullptr;
  for (const LadderEntry* e : entries)
    if (!best || e->date >= best->date) best = e;
  return best;
}

// The entry of islands a and b (either order) in a list of boundaries or exchanges.
std::vector<BoundaryLadder>::const_iterator find_pair(const std::vector<BoundaryLadder>& pairs,
                                                      const std::string& a, const std::string& b) {
  return std::find_if(pairs.begin(), pairs.end(), [&](const BoundaryLadder& x) {
    return (x.a == a && x.b == b) || (x.a == b && x.b == a);
  });
}

}  // namespace

LadderReport ladder_state(const Cluster& cluster, const std::vector<ValidationRecord>& records) {
  LadderReport out;
  for (const auto& island : cluster.islands) {
    const ChipProfile& chip = cluster.chip_of(island);
    IslandLadder state;
    state.island = island.name;
    state.chip = chip.id;
    state.runtime = island.runtime;
    std::map<LadderStep, std::vector<const LadderEntry*>> steps;
    for (const auto& record : records) {
      if (base_chip(record.chip) != base_chip(chip.id) || !same_stack(record.runtime, island.runtime))
        continue;
      for (const auto& entry : record.entries)
        if (entry.step != LadderStep::boundary && entry.step != LadderStep::gradient_exchange)
          steps[entry.step].push_back(&entry);
    }
    auto passed = [&](LadderStep step) {
      const LadderEntry* e = latest(steps[step]);
      return e && e->passed;
    };
    auto need = [&](LadderStep step) {
      const LadderEntry* e = latest(steps[step]);
      state.missing.push_back(std::string(to_string(step)) +
                              (e ? " failed on " + e->date : std::string(" has no record")));
    };
    if (passed(LadderStep::single_card)) {
      state.level = 1;
      if (passed(LadderStep::collectives) && passed(LadderStep::checkpoint)) state.level = 2;
    }
    if (!passed(LadderStep::single_card)) need(LadderStep::single_card);
    if (!passed(LadderStep::collectives)) need(LadderStep::collectives);
    if (!passed(LadderStep::checkpoint)) need(LadderStep::checkpoint);
    for (const LadderEntry* e : steps[LadderStep::scale])
      if (e->passed) state.scale_chips = std::max(state.scale_chips, e->chips);
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
        const bool ab = base_chip(record.chip) == chip_a && same_stack(record.runtime, a.runtime) &&
                        base_chip(entry.with_chip) == chip_b &&
                        same_stack(entry.with_runtime, b.runtime);
        const bool ba = base_chip(record.chip) == chip_b && same_stack(record.runtime, b.runtime) &&
                        base_chip(entry.with_chip) == chip_a &&
                        same_stack(entry.with_runtime, a.runtime);
        if (ab || ba) entries.push_back(&entry);
      }
    }
    BoundaryLadder state{a.name, b.name, false, ""};
    if (const LadderEntry* e = latest(entries)) {
      state.passed = e->passed;
      state.evidence = e->evidence;
    }
    return state;
  };
  for (std::size_t i = 0; i < cluster.islands.size(); ++i) {
    for (std::size_t j = i + 1; j < cluster.islands.size(); ++j) {
      const Island& a = cluster.islands[i];
      const Island& b = cluster.islands[j];
      if (base_chip(cluster.chip_of(a).id) == base_chip(cluster.chip_of(b).id) &&
          same_stack(a.runtime, b.runtime))
        continue;
      out.boundaries.push_back(pair_state(LadderStep::boundary, a, b));
      if (cluster.gradient_path(a.name, b.name))
        out.exchanges.push_back(pair_state(LadderStep::gradient_exchange, a, b));
    }
  }
  return out;
}

std::string ladder_text(const LadderReport& report) {
  std::string out = "island               chip                        runtime              step  missing\n";
  for (const auto& s : report.islands) {
    char line[256];
    std::snprintf(line, sizeof line, "%-20s %-27s %-20s %4d  ", s.island.c_str(), s.chip.c_str(),
                  (s.runtime.name + " " + s.runtime.version).c_str(), s.level);
    out += line;
    for (std::size_t k = 0; k < s.missing.size(); ++k) out += (k ? ", " : "") + s.missing[k];
    if (s.missing.empty()) out += "-";
    if (s.scale_chips > 0) out += "; scale run passed on " + std::to_string(s.scale_chips) + " chips";
    out += "\n";
  }
  out += "cross-island pipeline boundaries (step 3)\n";
  for (const auto& b : report.boundaries) {
    out += "  " + b.a + " <-> " + b.b + ": " +
           (b.passed ? "passed (" + b.evidence + ")" : std::string("not validated")) + "\n";
  }
  if (!report.exchanges.empty()) {
    out += "gradient exchanges between replicas on two chip types (step 3)\n";
    for (const auto& b : report.exchanges) {
      out += "  " + b.a + " <-> " + b.b + ": " +
             (b.passed ? "passed (" + b.evidence + ")" : std::string("not validated")) + "\n";
    }
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
    if (state->level < needed) {
      std::string what = "island " + island + " (" + state->runtime.name + " " +
                         state->runtime.version + ") is at step " + std::to_string(state->level) +
                         " of the " + std::to_string(needed) + " it needs: ";
      for (std::size_t k = 0; k < state->missing.size(); ++k)
        what += (k ? ", " : "") + state->missing[k];
      out.missing.push_back(what);
    }
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t i = 0; i + 1 < plan.stages.size(); ++i) {
    const std::string& a = plan.stages[i].island;
    const std::string& b = plan.stages[i + 1].island;
    if (a == b || !seen.insert(std::minmax(a, b)).second) continue;
    const auto boundary = find_pair(ladder.boundaries, a, b);
    if (boundary != ladder.boundaries.end() && !boundary->passed)
      out.missing.push_back("boundary " + a + " -> " + b + " has not passed step 3");
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
    if (exchange == ladder.exchanges.end() || !exchange->passed)
      out.missing.push_back("gradient exchange " + a + " <-> " + b + " has not passed step 3");
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
  return ladder_state(scenario.cluster, formats::load_validation_records(folder));
}

}  // namespace hetplan::validation
