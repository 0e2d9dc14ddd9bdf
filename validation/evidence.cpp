#include "validation/evidence.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/input_file.hpp"
#include "core/sha256.hpp"
#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "importers/run_files.hpp"
#include "importers/training_logs.hpp"
#include "validation/ladder.hpp"

namespace hetplan::validation {
namespace {

// The largest evidence: a training log, as the importers bound it.
constexpr std::size_t kMaxEvidenceBytes = std::size_t{64} << 20;

constexpr const char* kProbeOutputs =
    "the output of hetplan_probe.py (hetplan/calibration-bundle/v1) or of hetplan_boundary.py "
    "(hetplan/ladder-evidence/v1)";

bool pair_step(LadderStep step) {
  return step == LadderStep::boundary || step == LadderStep::gradient_exchange;
}

std::string runtime_text(const SoftwareComponent& runtime) {
  return runtime.name + " " + runtime.version;
}

std::string short_hash(const std::string& hash) {
  return hash.substr(0, 12) + "...";
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// Single card: the bundle's training step ran (forward, backward, optimizer) and its operator
// coverage is known.
bool bundle_passes(const CalibrationBundle& bundle) {
  return !bundle.steps.empty() && !bundle.operators.empty();
}

std::string bundle_note(const CalibrationBundle& bundle) {
  if (!bundle_passes(bundle)) {
    std::string note = bundle.steps.empty() ? "no training step ran" : "no operator coverage";
    for (const auto& skipped : bundle.skipped)
      if (skipped.rfind("step", 0) == 0) note += " (" + skipped + ")";
    return note;
  }
  const StepSample& step = bundle.steps.front();
  std::string note = "a training step of " + std::to_string(step.model.layers) + " layers ran in " +
                     number(step.seconds) + " s on " + bundle.host.device;
  std::string missing, fallback;
  for (const auto& op : bundle.operators) {
    std::string& list = op.status == Support::missing ? missing : fallback;
    if (op.status != Support::native) list += (list.empty() ? "" : ", ") + std::string(to_string(op.op));
  }
  note += "; operators missing: " + (missing.empty() ? std::string("none") : missing);
  if (!fallback.empty()) note += "; fallback: " + fallback;
  return note;
}

std::string evidence_note(const LadderEvidence& evidence) {
  std::string note = evidence.dtype + " on " + evidence.hostname + ": ";
  if (evidence.passed) {
    double largest = 0;
    for (const auto& r : evidence.results) largest = std::max(largest, r.max_rel_error);
    return note + std::to_string(evidence.results.size()) +
           " results within their tolerance (largest relative error " + number(largest) + ")";
  }
  std::vector<std::string> failed;
  for (const auto& r : evidence.results)
    if (!r.passed)
      failed.push_back(r.what + ": relative error " + number(r.max_rel_error) + " > tolerance " +
                       number(r.tolerance));
  for (const auto& n : evidence.notes)
    if (n.rfind("error:", 0) == 0) failed.push_back(n);
  if (failed.empty()) failed.push_back("no results");
  constexpr std::size_t kShown = 3;
  for (std::size_t i = 0; i < std::min(failed.size(), kShown); ++i)
    note += (i ? "; " : "") + failed[i];
  if (failed.size() > kShown) note += "; and " + std::to_string(failed.size() - kShown) + " more";
  return note;
}

// An error inside the evidence file, as an error at the record's `evidence` field.
template <typename Parse>
auto read_as_evidence(const LadderEntry& e, const std::string& field, Parse&& parse) {
  try {
    return parse();
  } catch (const InputError& error) {
    throw InputError(e.evidence_location, field, error.what());
  }
}

void check_entry(LadderEntry& e, const std::string& at, const ValidationRecord& record) {
  const std::string field = at + ".evidence";
  if (e.sha256.empty()) {
    throw InputError(e.location, at + ".sha256",
                     "expected the evidence file's SHA-256, got none: a record written before "
                     "evidence was hashed does not count; make it again with hetplan validate "
                     "--evidence (or --run, for scale)");
  }
  const std::string text = read_as_evidence(e, field, [&] { return read_evidence_file(e.evidence); });
  if (text.empty()) {
    throw InputError(e.evidence_location, field,
                     "expected " + evidence_kind(e.step) + ", got an empty file (" + e.evidence + ")");
  }
  const std::string hash = sha256_hex(text);
  if (hash != e.sha256) {
    throw InputError(e.evidence_location, field,
                     "expected " + e.evidence + " as recorded (sha256 " + short_hash(e.sha256) +
                         "), got a changed file (sha256 " + short_hash(hash) + ")");
  }
  auto wrong_runtime = [&](const std::string& recorded, const std::string& found) {
    return InputError(e.evidence_location, field,
                      "expected a run on " + recorded + " (the record's), got " + e.evidence +
                          "'s on " + found);
  };
  auto passed_but = [&](const std::string& why) {
    return InputError(e.passed_location, at + ".passed",
                      "expected false, as " + e.evidence + " " + why + ", got true");
  };
  switch (e.step) {
    case LadderStep::single_card: {
      const CalibrationBundle bundle = read_as_evidence(
          e, field, [&] { return formats::parse_calibration_bundle(text, e.evidence); });
      if (!same_runtime(bundle.host.runtime, record.runtime))
        throw wrong_runtime(runtime_text(record.runtime), runtime_text(bundle.host.runtime));
      if (e.passed && !bundle_passes(bundle)) throw passed_but("shows " + bundle_note(bundle));
      return;
    }
    case LadderStep::scale: {
      const auto kind = importers::recognise_run_file(text);
      if (kind != importers::RunFile::training_log) {
        throw InputError(e.evidence_location, field,
                         "expected " + evidence_kind(e.step) + ", got " +
                             (kind ? importers::describe(*kind) : "a file of another kind") + " (" +
                             e.evidence + ")");
      }
      const auto log = read_as_evidence(
          e, field, [&] { return importers::parse_training_log(text, e.evidence); });
      if (importers::summarize(log).count == 0) {
        throw InputError(e.evidence_location, field,
                         "expected " + evidence_kind(e.step) + ", got " + e.evidence +
                             " with no iteration line after the first");
      }
      return;
    }
    case LadderStep::collectives:
    case LadderStep::checkpoint:
    case LadderStep::boundary:
    case LadderStep::gradient_exchange:
      break;
  }
  const LadderEvidence evidence = read_as_evidence(
      e, field, [&] { return formats::parse_ladder_evidence(text, e.evidence); });
  if (evidence.check != e.step) {
    throw InputError(e.evidence_location, field,
                     "expected the output of hetplan_boundary.py --check " +
                         std::string(to_string(e.step)) + ", got " + e.evidence + "'s --check " +
                         std::string(to_string(evidence.check)));
  }
  if (!pair_step(e.step)) {
    if (!same_runtime(evidence.backends[0].runtime, record.runtime))
      throw wrong_runtime(runtime_text(record.runtime), runtime_text(evidence.backends[0].runtime));
  } else {
    const SoftwareComponent& first = evidence.backends[0].runtime;
    const SoftwareComponent& second = evidence.backends[1].runtime;
    const bool ab = same_runtime(first, record.runtime) && same_runtime(second, e.with_runtime);
    const bool ba = same_runtime(first, e.with_runtime) && same_runtime(second, record.runtime);
    if (!ab && !ba) {
      throw wrong_runtime(runtime_text(record.runtime) + " and " + runtime_text(e.with_runtime),
                          runtime_text(first) + " and " + runtime_text(second));
    }
  }
  if (e.passed && !evidence.passed) throw passed_but("says the check failed");
}

}  // namespace

std::string evidence_kind(LadderStep step) {
  switch (step) {
    case LadderStep::single_card:
      return "a probe bundle (hetplan_probe.py, hetplan/calibration-bundle/v1)";
    case LadderStep::scale:
      return "a training log (Megatron-LM, MindSpeed-LLM or Megatron-DeepSpeed iteration lines)";
    case LadderStep::collectives:
    case LadderStep::checkpoint:
    case LadderStep::boundary:
    case LadderStep::gradient_exchange:
      break;
  }
  return "the output of hetplan_boundary.py --check " + std::string(to_string(step)) +
         " (hetplan/ladder-evidence/v1)";
}

std::string read_evidence_file(const std::string& path) {
  return read_input_file(path, kMaxEvidenceBytes, "an evidence file");
}

std::string relative_to_folder(const std::string& path, const std::string& folder) {
  return std::filesystem::absolute(path)
      .lexically_normal()
      .lexically_relative(std::filesystem::absolute(folder).lexically_normal())
      .generic_string();
}

void check_evidence(ValidationRecord& record) {
  for (std::size_t i = 0; i < record.entries.size(); ++i) {
    LadderEntry& e = record.entries[i];
    e.evidence_checked = true;
    e.evidence_problem.clear();
    try {
      check_entry(e, "ladder[" + std::to_string(i) + "]", record);
    } catch (const InputError& error) {
      e.evidence_problem = error.what();
    }
  }
}

std::vector<ValidationRecord> load_checked_records(const std::string& folder) {
  std::vector<ValidationRecord> records = formats::load_validation_records(folder);
  for (auto& record : records) check_evidence(record);
  return records;
}

EvidenceRecord make_evidence_record(const std::string& evidence_path, const Scenario& scenario,
                                    const std::string& island_name, const std::string& with_name,
                                    const std::string& date, const std::string& folder) {
  const Cluster& cluster = scenario.cluster;
  auto island_of = [&](const std::string& name, const std::string& option) -> const Island& {
    if (const Island* island = cluster.find_island(name)) return *island;
    std::string names;
    for (const auto& island : cluster.islands) names += (names.empty() ? "" : ", ") + island.name;
    throw InputError({"validate", 0, 0}, option,
                     "expected an island of cluster " + cluster.name + " (" + names + "), got " +
                         hetplan::quoted(name));
  };
  const Island& island = island_of(island_name, "--island");
  const std::string text = read_evidence_file(evidence_path);
  if (text.empty())
    throw InputError({evidence_path, 1, 1}, "", std::string("expected ") + kProbeOutputs + ", got an empty file");
  if (const auto kind = importers::recognise_run_file(text))
    throw InputError({evidence_path, 1, 1}, "", std::string("expected ") + kProbeOutputs + ", got " + importers::describe(*kind));
  const YAML::Node root = formats::parse_document(text, evidence_path);
  const std::string schema = formats::schema_of(root);
  auto location_of = [&](const YAML::Node& node) {
    return SourceLocation{evidence_path, node.Mark().line + 1, node.Mark().column + 1};
  };

  LadderEntry entry;
  std::string started, what;
  std::vector<std::pair<SoftwareComponent, SourceLocation>> runtimes;  // each side's, in order
  std::vector<std::string> runtime_fields;
  if (schema == formats::kCalibrationBundleSchema) {
    const CalibrationBundle bundle = formats::parse_calibration_bundle(text, evidence_path);
    entry.step = LadderStep::single_card;
    entry.passed = bundle_passes(bundle);
    entry.note = bundle_note(bundle);
    started = bundle.started;
    what = "probe bundle";
    runtimes.push_back({bundle.host.runtime, location_of(root["host"]["runtime"])});
    runtime_fields.push_back("host.runtime");
    if (date.empty() && !formats::is_record_date(started.substr(0, 10))) {
      throw InputError(location_of(root["probe"]["started"]), "probe.started",
                       "expected a time YYYY-MM-DDTHH:MM:SSZ (or give --date), got " + hetplan::quoted(started));
    }
  } else if (schema == formats::kLadderEvidenceSchema) {
    const LadderEvidence evidence = formats::parse_ladder_evidence(text, evidence_path);
    entry.step = evidence.check;
    entry.passed = evidence.passed;
    entry.note = evidence_note(evidence);
    started = evidence.started;
    what = "--check " + std::string(to_string(evidence.check));
    for (std::size_t i = 0; i < evidence.backends.size(); ++i) {
      runtimes.push_back({evidence.backends[i].runtime, evidence.backends[i].location});
      runtime_fields.push_back("backends[" + std::to_string(i) + "].runtime");
    }
  } else {
    const SourceLocation at = root.IsMap() && root["schema"] ? location_of(root["schema"])
                                                             : SourceLocation{evidence_path, 1, 1};
    throw InputError(at, "schema",
                     "expected hetplan/calibration-bundle/v1 (hetplan_probe.py) or "
                     "hetplan/ladder-evidence/v1 (hetplan_boundary.py), got " +
                         (schema.empty() ? std::string("none") : hetplan::quoted(schema)));
  }

  const std::string step(to_string(entry.step));
  std::vector<const Island*> sides = {&island};
  if (pair_step(entry.step)) {
    if (with_name.empty()) {
      throw InputError({"validate", 0, 0}, "--with",
                       "expected --with ISLAND, the island of the second backend of " +
                           evidence_path + " (a " + step + " check is between two islands)");
    }
    const Island& other = island_of(with_name, "--with");
    if (same_chip(cluster.chip_of(other).id, cluster.chip_of(island).id) &&
        same_runtime(other.runtime, island.runtime)) {
      throw InputError({"validate", 0, 0}, "--with",
                       "expected an island of another chip or runtime than " + island.name +
                           " (the ladder has no " + step + " between islands of one chip and "
                           "runtime), got " + hetplan::quoted(with_name));
    }
    sides.push_back(&other);
    entry.with_chip = cluster.chip_of(other).id;
    entry.with_runtime = other.runtime;
  } else if (!with_name.empty()) {
    throw InputError({"validate", 0, 0}, "--with",
                     "expected no --with: " + evidence_path + " is a " + step + " check of one island");
  }
  for (std::size_t i = 0; i < sides.size(); ++i) {
    if (!same_runtime(runtimes[i].first, sides[i]->runtime)) {
      throw InputError(runtimes[i].second, runtime_fields[i],
                       "expected island " + sides[i]->name + "'s runtime, " +
                           runtime_text(sides[i]->runtime) + " (as the cluster file says), got " +
                           runtime_text(runtimes[i].first));
    }
  }
  if (!date.empty() && !formats::is_record_date(date))
    throw InputError({"validate", 0, 0}, "--date", "expected YYYY-MM-DD, got " + hetplan::quoted(date));
  entry.date = date.empty() ? started.substr(0, 10) : date;
  entry.evidence = relative_to_folder(evidence_path, folder);
  entry.sha256 = sha256_hex(text);

  EvidenceRecord out;
  out.record.chip = cluster.chip_of(island).id;
  out.record.runtime = island.runtime;
  out.record.entries.push_back(entry);
  // The run's time in the name: records of one check on one island sort in the order they ran.
  std::string stamp = entry.date;
  if (formats::is_utc_time(started)) {
    stamp = started;
    stamp.erase(std::remove(stamp.begin(), stamp.end(), ':'), stamp.end());
  }
  out.file_name = step + "-" + stamp + "-" + island.name +
                  (sides.size() > 1 ? "-" + sides[1]->name : std::string()) + ".yaml";
  out.summary = evidence_path + ": " + what + " on island " + island.name +
                (sides.size() > 1 ? " and " + sides[1]->name : std::string()) + ", " +
                (entry.passed ? "passed" : "failed") + ": " + entry.note;
  return out;
}

}  // namespace hetplan::validation
