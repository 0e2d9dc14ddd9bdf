#include "validation/profile_evidence.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "formats/loaders.hpp"

namespace hetplan::validation {
namespace {

// A band measured on `residuals` (log measured over predicted) of runs from `sources`.
LevelBand level_band(const std::vector<double>& residuals, const std::set<std::string>& sources,
                     const std::string& what) {
  LevelBand out;
  out.band = prediction_band(residuals);
  if (out.band) {  // three decimals: the band's own uncertainty is far coarser
    out.band->low = std::round(out.band->low * 1e3) / 1e3;
    out.band->high = std::round(out.band->high * 1e3) / 1e3;
  }
  out.runs = static_cast<int>(residuals.size());
  out.sources = static_cast<int>(sources.size());
  out.how = "hetplan validate --cross-validate on the bundled runs: the 80% prediction interval "
            "(mean and Student's t spread) of log(measured / predicted) " +
            what + ", " + std::to_string(out.runs) + " runs from " +
            std::to_string(out.sources) + " sources";
  return out;
}

}  // namespace

ProfileEvidence profile_evidence(std::vector<TrainingRun> runs, const std::string& profiles_folder) {
  ProfileEvidence out;
  out.cv = cross_validate(runs);
  const CrossValidation& cv = out.cv;

  std::vector<double> before, held, memory;
  std::set<std::string> all_sources, memory_sources;
  for (std::size_t i = 0; i < cv.runs.size(); ++i) {
    before.push_back(cv.runs[i].before_log_residual);
    held.push_back(cv.runs[i].log_residual);
    all_sources.insert(cv.runs[i].source);
    if (cv.runs[i].memory_log_residual) {
      memory.push_back(*cv.runs[i].memory_log_residual);
      memory_sources.insert(cv.runs[i].source);
    }
  }
  out.datasheet = level_band(before, all_sources,
                             "of the step with the profiles' priors and no in-step terms, every "
                             "chip's");
  out.runs = level_band(held, all_sources,
                        "of the step held out (each source predicted with terms fitted to the "
                        "others), every chip's");
  out.memory = level_band(memory, memory_sources,
                          "of the fullest stage's peak memory, every run that states it");

  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(profiles_folder))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());

  for (const auto& file : files) {
    ChipProfile profile = formats::load_chip(file.string());
    profile.efficiency.in_step = {};
    profile.evidence = {};
    for (const char* id : {"cross-validation", "memory-validation", "runs-bundled"}) profile.sources.erase(id);
    for (auto it = profile.cited_by.begin(); it != profile.cited_by.end();) {
      const bool ours = it->first.rfind("efficiency.in_step", 0) == 0 ||
                        it->first.rfind("evidence", 0) == 0;
      it = ours ? profile.cited_by.erase(it) : std::next(it);
    }
    // The silicon the runs used that this profile is, or whose bin it is.
    auto silicon = [&](const std::string& id) -> const ChipTerms* {
      for (const auto& chip : cv.chips) {
        if (chip.chip == id || std::find(chip.shares.begin(), chip.shares.end(), id) != chip.shares.end())
          return &chip;
      }
      return nullptr;
    };
    const ChipTerms* terms = silicon(profile.id);
    const ChipTerms* bin_of = terms || profile.in_step_from.empty() ? nullptr
                                                                    : silicon(profile.in_step_from);
    LevelBand step;
    if (bin_of && bin_of->fit.profile.efficiency.in_step.any()) {
      // Another bin of a die the runs used: its terms, cited to its runs; the level stays what
      // this profile's own figures are, and the band is every chip's held-out one (a prediction
      // with terms fitted to other runs, as each held-out prediction is).
      profile.efficiency.in_step = bin_of->fit.profile.efficiency.in_step;
      const std::string source = "runs-bundled";
      const ChipProfile& fitted = bin_of->fit.profile;
      for (const auto& [path, cited] : fitted.cited_by) {
        if (path.rfind("efficiency.in_step", 0) != 0) continue;
        profile.cited_by[path] = source;
        profile.sources[source] = "the in-step terms of " + bin_of->chip + " (in_step_from): " +
                                  fitted.sources.at(cited);
      }
      profile.evidence.level = profile.efficiency.calibrated ? EvidenceLevel::microbenchmarks
                                                              : EvidenceLevel::datasheet;
      step = out.runs;
      step.how += " (the terms are " + bin_of->chip + "'s, this bin has no runs)";
    } else if (terms && terms->fit.profile.efficiency.in_step.any()) {
      std::vector<std::string> group{terms->chip};
      group.insert(group.end(), terms->shares.begin(), terms->shares.end());
      std::vector<TrainingRun> own;
      std::vector<double> residuals;
      std::set<std::string> sources;
      for (std::size_t i = 0; i < runs.size(); ++i) {
        if (std::find(group.begin(), group.end(), runs[i].first_chip()) == group.end()) continue;
        own.push_back(runs[i]);
        residuals.push_back(cv.runs[i].log_residual);
        sources.insert(runs[i].source);
      }
      RunFitOptions options;
      options.chips = group;
      options.keep_inseparable = true;
      options.label = "bundled";
      const std::string id = profile.id;
      profile = calibrate_from_runs(profile, own, options).profile;
      profile.id = id;
      step = terms->own_band ? level_band(residuals, sources,
                                          "of the step held out (each source predicted with "
                                          "terms fitted to the others), this silicon's")
                             : out.runs;
      if (!terms->own_band)
        step.how += " (this silicon has fewer than " + std::to_string(kOwnBandRuns) +
                    " runs from two sources)";
    } else {
      step = profile.evidence_level() == EvidenceLevel::runs ? out.runs : out.datasheet;
    }
    if (step.band) {
      profile.evidence.level = profile.evidence_level();
      profile.evidence.step = step.band;
      profile.sources["cross-validation"] = step.how;
      profile.cited_by["evidence.step.low"] = "cross-validation";
      profile.cited_by["evidence.step.high"] = "cross-validation";
    }
    if (out.memory.band) {
      profile.evidence.memory = out.memory.band;
      profile.sources["memory-validation"] = out.memory.how;
      profile.cited_by["evidence.memory.low"] = "memory-validation";
      profile.cited_by["evidence.memory.high"] = "memory-validation";
    }
    out.profiles.push_back(std::move(profile));
    out.files.push_back(file.filename().string());
  }
  return out;
}

}  // namespace hetplan::validation
