// The evidence every bundled chip profile carries (docs/models/uncertainty.md): the in-step terms
// of the chips the bundled runs were made on, fitted to all of them, and for every profile the
// 80% band of measured over predicted that its evidence level showed on held-out runs. Made by
// `hetplan validate --cross-validate --write-profiles DIR` from the bundled runs; a test checks
// that the bundled profiles are its output.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/chip.hpp"
#include "validation/cross_validation.hpp"

namespace hetplan::validation {

struct LevelBand {
  std::optional<Band> band;
  int runs = 0;
  int sources = 0;
  std::string how;  // what the band was measured on, in words (the profile's citation)
};

struct ProfileEvidence {
  CrossValidation cv;
  // The band a profile at each level carries when it has no runs of its own: datasheet (the
  // profiles' priors, no in-step terms: their errors on every run) and runs (every chip's
  // held-out residuals).
  LevelBand datasheet, runs;
  LevelBand memory;  // measured over predicted peak memory, where runs state it
  std::vector<ChipProfile> profiles;  // every profile of the folder, with its evidence
  std::vector<std::string> files;     // their files, in the same order
};

// `runs` read from the bundled sets, the profiles of `profiles_folder` (as `runs` were priced
// with). Profiles on silicon the runs used take the terms fitted to every run of it and the band
// of their own held-out residuals (every chip's when they have fewer than kOwnBandRuns from two
// sources); the others keep their terms and take their level's band.
ProfileEvidence profile_evidence(std::vector<TrainingRun> runs, const std::string& profiles_folder);

}  // namespace hetplan::validation
