// `hetplan calibrate PROFILE --from-runs RUN...` and `hetplan validate --cross-validate`: the
// step model's in-step terms fitted to real training runs, and how well they predict runs they
// were not fitted to (docs/calibration.md#runs, docs/models/in-step.md).
#pragma once

#include <string>
#include <vector>

namespace hetplan::cli {

struct CrossValidateCommand {
  std::vector<std::string> folders;  // published-run folders; empty: the four bundled ones
  std::string profiles;
  // A folder to write every profile of `profiles` into with the evidence the runs give it
  // (validation/profile_evidence.hpp): how the bundled profiles are made.
  std::string write_profiles;
  bool json = false;
};

int run_cross_validate(const CrossValidateCommand& command);

struct CalibrateFromRunsCommand {
  std::string profile;                 // the base profile's file
  std::vector<std::string> runs;       // published-run files or folders of them
  std::vector<std::string> logs;       // a site's training logs ...
  std::vector<std::string> scenarios;  // ... each with its scenario and plan: one for all, or
  std::vector<std::string> plans;      //     one per log, in the same order
  std::string profiles;                // the profiles the published runs are priced with
  std::string terms;                   // comma-separated; empty: every term the runs inform
  std::vector<std::string> chips;      // the profile ids whose runs count (default: the base's)
  bool keep_inseparable = false;
  std::string label = "runs";
  std::string out;
  bool json = false;
};

// Throws InputError on bad input (exit 2 in main).
int run_calibrate_from_runs(const CalibrateFromRunsCommand& command);

}  // namespace hetplan::cli
