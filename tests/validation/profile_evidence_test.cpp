// The bundled chip profiles' evidence (validation/profile_evidence.hpp): what the bundled runs
// give each profile, and how well the held-out bands cover runs they were not measured on.
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "validation/profile_evidence.hpp"
#include "validation/published_runs.hpp"

namespace hetplan::validation {
namespace {

const std::string kSource = HETPLAN_SOURCE_DIR;

const ProfileEvidence& bundled_evidence() {
  static const ProfileEvidence evidence = [] {
    std::vector<TrainingRun> runs;
    for (const char* set : {"published-runs", "published-runs-ascend", "published-runs-fp8",
                            "published-runs-moe"}) {
      auto more = published_training_runs(kSource + "/validation/" + set, kSource + "/profiles");
      runs.insert(runs.end(), more.begin(), more.end());
    }
    return profile_evidence(runs, kSource + "/profiles");
  }();
  return evidence;
}

// `hetplan validate --cross-validate --write-profiles profiles` made every bundled profile: a
// change to the model, a run set or a profile that moves its evidence shows here until the
// profiles are written again.
TEST(BundledProfiles, AreWhatTheRunsGiveThem) {
  const ProfileEvidence& evidence = bundled_evidence();
  ASSERT_FALSE(evidence.profiles.empty());
  for (std::size_t i = 0; i < evidence.profiles.size(); ++i) {
    const std::string path = kSource + "/profiles/" + evidence.files[i];
    EXPECT_EQ(formats::chip_yaml(evidence.profiles[i]), formats::read_text_file(path))
        << path << " is not what `hetplan validate --cross-validate --write-profiles profiles` "
        << "writes";
  }
}

// The chips the bundled runs were made on are calibrated from them; every profile has a band.
TEST(BundledProfiles, TheRunsChipsAreAtLevelRunsAndEveryProfileHasABand) {
  for (const auto& profile : bundled_evidence().profiles) {
    const bool ran = profile.id == "nvidia-a100-sxm4-80gb" || profile.id == "nvidia-a800-sxm4-80gb" ||
                     profile.id == "nvidia-h100-sxm5-80gb" || profile.id == "ascend-910b";
    EXPECT_EQ(profile.evidence_level() == EvidenceLevel::runs, ran) << profile.id;
    ASSERT_TRUE(profile.evidence.step) << profile.id;
    EXPECT_LT(profile.evidence.step->low, profile.evidence.step->high) << profile.id;
    EXPECT_TRUE(profile.evidence.memory) << profile.id;
  }
}

// The stated 80% intervals hold between 70% and 90% of the measured runs, each judged by a
// band computed without its own source.
TEST(CrossValidation, EightyPercentBandsCoverSeventyToNinetyPercentOfHeldOutRuns) {
  const CrossValidation& cv = bundled_evidence().cv;
  ASSERT_GT(cv.banded, 30);
  const double coverage = static_cast<double>(cv.inside) / cv.banded;
  EXPECT_GE(coverage, 0.70) << cv.inside << " of " << cv.banded;
  EXPECT_LE(coverage, 0.90) << cv.inside << " of " << cv.banded;
}

}  // namespace
}  // namespace hetplan::validation
