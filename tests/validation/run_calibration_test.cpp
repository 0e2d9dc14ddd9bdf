// Calibration from training runs (validation/run_calibration.hpp): the fit finds terms it is
// given runs made of, and refuses runs that cannot tell two terms apart.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "formats/loaders.hpp"
#include "validation/published_runs.hpp"
#include "validation/run_calibration.hpp"

namespace hetplan::validation {
namespace {

const std::string kSource = HETPLAN_SOURCE_DIR;

std::vector<TrainingRun> made_up_runs() {
  return published_training_runs(kSource + "/tests/validation/data/made-up-runs-a100.yaml",
                                 kSource + "/profiles");
}

const FittedTerm& term_of(const RunCalibration& fit, InStepTerm term) {
  for (const auto& t : fit.terms)
    if (t.term == term) return t;
  throw std::logic_error("term not reported");
}

TEST(RunCalibration, FindsTheTermsTheRunsWereMadeOf) {
  const ChipProfile base = formats::load_chip(kSource + "/profiles/nvidia-a100-sxm4-80gb.yaml");
  std::vector<TrainingRun> runs = made_up_runs();
  ASSERT_EQ(runs.size(), 3u);
  // Each run's measured step is the model's with these terms, far from the priors (1, 1, 0).
  InStepTerms truth;
  truth.gemm = 0.8;
  truth.attention = 0.6;
  truth.layer_overhead = 2e-3;
  const std::vector<std::string> chips{base.id};
  for (auto& run : runs) {
    const double step = predicted_step(run, truth, chips);
    ASSERT_GT(step, 0) << run.id;
    run.measured = run.metric_of(step);
  }
  RunFitOptions options;
  options.terms = {InStepTerm::gemm, InStepTerm::attention, InStepTerm::layer_overhead};
  options.run_sigma = 1e-3;  // runs far more precise than the priors: the data decide
  options.label = "made-up";
  const RunCalibration fit = calibrate_from_runs(base, runs, options);
  EXPECT_NEAR(term_of(fit, InStepTerm::gemm).value, 0.8, 0.8 * 0.01);
  EXPECT_NEAR(term_of(fit, InStepTerm::attention).value, 0.6, 0.6 * 0.01);
  EXPECT_NEAR(term_of(fit, InStepTerm::layer_overhead).value, 2e-3, 2e-3 * 0.02);
  for (const auto& run : fit.runs) EXPECT_NEAR(run.after_s / run.measured_step_s, 1.0, 1e-3);
  // The new version states them, cites every run with its file's hash, and is at level runs.
  const ChipProfile& p = fit.profile;
  EXPECT_EQ(p.id, base.id + ".made-up");
  ASSERT_TRUE(p.efficiency.in_step.gemm);
  EXPECT_NEAR(*p.efficiency.in_step.gemm, 0.8, 0.008);
  ASSERT_EQ(p.efficiency.in_step.runs.size(), 3u);
  EXPECT_EQ(p.efficiency.in_step.runs[0].id, "short-wide-batch");
  EXPECT_EQ(p.efficiency.in_step.runs[0].file, "data/made-up-runs-a100.yaml");
  EXPECT_EQ(p.efficiency.in_step.runs[0].sha256, runs[0].sha256);
  EXPECT_EQ(p.efficiency.in_step.runs[0].sha256.size(), 64u);
  EXPECT_EQ(p.evidence_level(), EvidenceLevel::runs);
  EXPECT_EQ(p.cited_by.at("efficiency.in_step.gemm"), "runs-made-up");
  EXPECT_EQ(p.cited_by.count("efficiency.in_step.communication"), 0u);
}

TEST(RunCalibration, RefusesRunsThatCannotSeparateTwoTerms) {
  const ChipProfile base = formats::load_chip(kSource + "/profiles/nvidia-a100-sxm4-80gb.yaml");
  std::vector<TrainingRun> runs = made_up_runs();
  runs.resize(1);  // one run: a GEMM factor and an overhead per layer move it alike
  RunFitOptions options;
  options.terms = {InStepTerm::gemm, InStepTerm::layer_overhead};
  try {
    calibrate_from_runs(base, runs, options);
    FAIL() << "expected a refusal";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "calibrate: --from-runs: expected runs that separate efficiency.in_step.gemm "
                 "from efficiency.in_step.layer_overhead (every run moves them alike: correlation "
                 "1.000), got 1 run(s) that do not; add a run with another micro-batch size or "
                 "hidden size (an overhead is per layer and micro-batch, the GEMMs grow with the "
                 "tokens and the width), or fit one of them (--terms)");
  }
  // Kept at its prior instead, when asked to: the other is fitted, and the notes say which.
  options.keep_inseparable = true;
  const RunCalibration fit = calibrate_from_runs(base, runs, options);
  EXPECT_NE(term_of(fit, InStepTerm::gemm).fitted, term_of(fit, InStepTerm::layer_overhead).fitted);
  ASSERT_EQ(fit.notes.size(), 1u);
  EXPECT_NE(fit.notes[0].find("kept at its prior"), std::string::npos) << fit.notes[0];
}

TEST(RunCalibration, RefusesWhenNoRunIsOnTheChip) {
  const ChipProfile base = formats::load_chip(kSource + "/profiles/nvidia-h100-sxm5-80gb.yaml");
  try {
    calibrate_from_runs(base, made_up_runs());
    FAIL() << "expected a refusal";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "calibrate: --from-runs: expected at least one run on nvidia-h100-sxm5-80gb that "
                 "the model can price, got 3 run(s), none of them");
  }
}

}  // namespace
}  // namespace hetplan::validation
