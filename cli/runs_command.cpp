#include "cli/runs_command.hpp"

#include <filesystem>
#include <iostream>

#include "cli/calibration_report.hpp"
#include "cli/report.hpp"
#include "formats/loaders.hpp"
#include "formats/paths.hpp"
#include "formats/writers.hpp"
#include "validation/cross_validation.hpp"
#include "validation/published_runs.hpp"
#include "validation/rank_agreement.hpp"
#include "validation/profile_evidence.hpp"
#include "validation/run_calibration.hpp"

namespace hetplan::cli {

std::vector<std::string> bundled_run_folders() {
  std::vector<std::string> out;
  for (const char* name : {"published-runs", "published-runs-ascend", "published-runs-fp8",
                           "published-runs-moe"})
    out.push_back(formats::bundled_path(std::string("validation/") + name));
  return out;
}

int run_cross_validate(const CrossValidateCommand& command) {
  std::vector<std::string> folders;
  for (const auto& folder : command.folders)
    if (!folder.empty()) folders.push_back(folder);
  if (folders.empty()) folders = bundled_run_folders();
  const std::string profiles =
      command.profiles.empty() ? formats::bundled_path("profiles") : command.profiles;
  std::vector<validation::TrainingRun> runs;
  for (const auto& folder : folders) {
    auto more = validation::published_training_runs(folder, profiles);
    runs.insert(runs.end(), std::make_move_iterator(more.begin()),
                std::make_move_iterator(more.end()));
  }
  const validation::ProfileEvidence evidence = validation::profile_evidence(runs, profiles);
  const validation::CrossValidation& cv = evidence.cv;
  const auto agreement = validation::rank_agreement(validation::held_out_report(cv));
  std::vector<std::string> written;
  if (!command.write_profiles.empty()) {
    std::error_code error;
    std::filesystem::create_directories(command.write_profiles, error);
    if (error) {
      throw InputError({command.write_profiles, 0, 0}, "--write-profiles",
                       "expected a folder hetplan can create, got " + error.message());
    }
    // Every file made before any is written: a profile the writer refuses leaves none changed.
    std::vector<std::string> texts;
    for (const auto& profile : evidence.profiles) texts.push_back(formats::chip_yaml(profile));
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const std::string path =
          (std::filesystem::path(command.write_profiles) / evidence.files[i]).string();
      try {
        formats::write_file_atomically(path, texts[i]);
      } catch (const std::runtime_error& failure) {
        throw InputError({path, 0, 0}, "--write-profiles", failure.what());
      }
      written.push_back(path);
    }
  }
  if (command.json) {
    auto j = validation::cross_validation_json(cv);
    j["rank_agreement"] = nlohmann::ordered_json::array();
    for (const auto& group : agreement)
      j["rank_agreement"].push_back({{"file", group.file}, {"cases", group.cases},
                                     {"kendall_tau", group.kendall_tau}});
    auto level = [](const validation::LevelBand& band) {
      nlohmann::ordered_json b{{"runs", band.runs}, {"sources", band.sources}};
      if (band.band) {
        b["low"] = band.band->low;
        b["high"] = band.band->high;
      }
      return b;
    };
    j["level_bands"] = {{"datasheet", level(evidence.datasheet)},
                        {"runs", level(evidence.runs)},
                        {"memory", level(evidence.memory)}};
    j["written"] = written;
    std::cout << rounded(j).dump(2) << "\n";
    return 0;
  }
  std::cout << validation::cross_validation_text(cv);
  std::cout << validation::rank_agreement_text(agreement);
  char line[256];
  for (const auto& chip : cv.chips) {
    std::cout << "terms of " << chip.chip;
    for (const auto& share : chip.shares) std::cout << " (and " << share << ")";
    std::cout << " from " << chip.runs << " runs of " << chip.sources << " sources:";
    for (const auto& t : chip.fit.terms) {
      if (!t.fitted) continue;
      std::snprintf(line, sizeof line, " %s %.4g", std::string(validation::to_string(t.term)).c_str(),
                    t.value);
      std::cout << line;
    }
    if (chip.band) {
      std::snprintf(line, sizeof line, "; 80%% band %+.0f%%..%+.0f%% (%s)",
                    100 * (chip.band->low - 1), 100 * (chip.band->high - 1),
                    chip.own_band ? "its own runs" : "every chip's runs");
      std::cout << line;
    }
    std::cout << "\n";
  }
  for (const auto& [what, band] : {std::pair<const char*, const validation::LevelBand*>{
                                       "step of a datasheet-level profile", &evidence.datasheet},
                                   {"step held out, every chip's", &evidence.runs},
                                   {"peak memory", &evidence.memory}}) {
    if (!band->band) continue;
    std::snprintf(line, sizeof line, "80%% band of the %s: %+.0f%%..%+.0f%% (%d runs, %d sources)\n",
                  what, 100 * (band->band->low - 1), 100 * (band->band->high - 1), band->runs,
                  band->sources);
    std::cout << line;
  }
  for (const auto& path : written) std::cout << "written " << path << "\n";
  return 0;
}

namespace {

// The i-th of `values` given once for all or once per item (`count` of them).
const std::string& paired(const std::vector<std::string>& values, std::size_t i, std::size_t count,
                          const char* option) {
  if (values.size() != 1 && values.size() != count) {
    throw InputError({"calibrate", 0, 0}, option,
                     "expected one for every --log or one for all (" + std::to_string(count) +
                         " log(s)), got " + std::to_string(values.size()));
  }
  return values.size() == 1 ? values.front() : values[i];
}

std::vector<validation::InStepTerm> terms_named(const std::string& list) {
  std::vector<validation::InStepTerm> terms;
  std::size_t start = 0;
  while (start <= list.size() && !list.empty()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, end - start);
    const auto term = validation::in_step_term_named(name);
    if (!term) {
      std::string known;
      for (const auto t : validation::kInStepTerms)
        known += (known.empty() ? "" : ", ") + std::string(validation::to_string(t));
      throw InputError({"calibrate", 0, 0}, "--terms",
                       "expected a comma-separated list of " + known + ", got \"" + name + "\"");
    }
    if (std::find(terms.begin(), terms.end(), *term) == terms.end()) terms.push_back(*term);
    start = end + 1;
  }
  return terms;
}

}  // namespace

int run_calibrate_from_runs(const CalibrateFromRunsCommand& command) {
  const ChipProfile base = formats::load_chip(command.profile);
  if (command.label.empty() ||
      command.label.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos) {
    throw InputError({"calibrate", 0, 0}, "--label",
                     "expected lower-case letters, digits, '_' or '-', got \"" + command.label +
                         "\"");
  }
  if ((!command.scenarios.empty() || !command.plans.empty()) && command.logs.empty()) {
    throw InputError({"calibrate", 0, 0}, "--scenario",
                     "expected --log: a scenario and a plan go with a training log");
  }
  // The published runs are priced with the profiles beside the base unless told otherwise.
  std::string profiles = command.profiles;
  if (profiles.empty()) {
    profiles = std::filesystem::path(command.profile).parent_path().string();
    if (profiles.empty()) profiles = ".";
  }
  std::vector<validation::TrainingRun> runs;
  for (const auto& path : command.runs) {
    auto more = validation::published_training_runs(path, profiles);
    runs.insert(runs.end(), std::make_move_iterator(more.begin()),
                std::make_move_iterator(more.end()));
  }
  for (std::size_t i = 0; i < command.logs.size(); ++i) {
    runs.push_back(validation::training_log_run(
        command.logs[i], paired(command.scenarios, i, command.logs.size(), "--scenario"),
        paired(command.plans, i, command.logs.size(), "--plan")));
  }
  validation::RunFitOptions options;
  options.terms = terms_named(command.terms);
  options.keep_inseparable = command.keep_inseparable;
  options.chips = command.chips;
  options.label = command.label;
  const validation::RunCalibration calibration =
      validation::calibrate_from_runs(base, runs, options);

  // A new file next to the base profile, never the base itself.
  std::string out_path = command.out;
  if (out_path.empty()) {
    out_path = (std::filesystem::path(command.profile).parent_path() /
                (calibration.profile.id + ".yaml"))
                   .string();
  }
  std::error_code same;
  if (std::filesystem::equivalent(out_path, command.profile, same)) {
    throw InputError({out_path, 0, 0}, "--out",
                     "expected a new file; a calibration never edits its base profile");
  }
  std::string comment = "Version of " + base.id + " (" + command.profile +
                        ") calibrated by `hetplan calibrate --from-runs` from:";
  for (const auto& path : command.runs) comment += "\n  " + path;
  for (const auto& path : command.logs) comment += "\n  " + path;
  if (!calibration.notes.empty()) comment += "\nNotes of the calibration:";
  for (const auto& note : calibration.notes) comment += "\n  " + note;
  try {
    formats::write_file_atomically(out_path, formats::chip_yaml(calibration.profile, comment));
  } catch (const std::runtime_error& failure) {
    throw InputError({out_path, 0, 0}, "--out", failure.what());
  }
  if (command.json) {
    auto j = run_fit_json(calibration);
    j["written"] = out_path;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "calibrated " << base.id << " -> " << calibration.profile.id << " from "
              << calibration.runs.size() << " run(s), written to " << out_path << "\n";
    std::cout << run_fit_text(calibration);
  }
  return 0;
}

}  // namespace hetplan::cli
