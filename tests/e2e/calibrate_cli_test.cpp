// hetplan calibrate and validate --bundle, run as a user would.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/e2e/cli_run.hpp"

namespace {

using hetplan::e2e::hetplan;
using hetplan::e2e::read_text;
using hetplan::e2e::TempFolder;

const std::string kNccl = "tests/importers/data/nccl-tests-5colls-h100-4rank-1node-nccltests2.17.8.log";

TEST(CalibrateCli, NcclTestsLogCalibratesANewProfileVersion) {
  TempFolder folder;
  const std::string out = folder.path() + "/h100.yaml";
  const auto run = hetplan("calibrate profiles/nvidia-h100-sxm5-80gb.yaml --from " + kNccl +
                           " --label lab1 --out " + out + " --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["profile"], "nvidia-h100-sxm5-80gb.lab1");
  EXPECT_EQ(j["written"], out);
  // All-reduce, all-gather, reduce-scatter and all-to-all over 4 ranks are fitted (the
  // all-to-all's fit is reported, and held out from the profile); sendrecv is not a collective
  // the model prices, and the notes say so.
  ASSERT_EQ(j["fits"].size(), 4u);
  for (const auto& fit : j["fits"]) {
    EXPECT_EQ(fit["points"], 10);
    EXPECT_LT(fit["rms_relative_error"].get<double>(), 0.1) << fit["what"];
  }
  const std::string notes = j["notes"].dump();
  EXPECT_NE(notes.find("skipped nccl-tests sendrecv"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("skipped nccl-tests alltoall"), std::string::npos) << notes;

  // The written file is a valid, calibrated profile citing the log.
  const auto check = hetplan("check " + out);
  ASSERT_EQ(check.exit_code, 0) << check.out;
  EXPECT_NE(check.out.find("calibrated"), std::string::npos) << check.out;
  const std::string text = read_text(out);
  EXPECT_NE(text.find("calibration-lab1"), std::string::npos);
  EXPECT_NE(text.find(kNccl), std::string::npos);
  EXPECT_NE(text.find("intra_node_collectives"), std::string::npos);
  // An nccl-tests log knows no runtime: the base profile's stays (the export's runtime label and
  // the ladder need it), and the notes say so.
  EXPECT_NE(text.find("runtime: {name: CUDA, version: \"12.4\"}"), std::string::npos) << text;
  EXPECT_NE(notes.find("runtime not in the bundle: kept the base profile's CUDA 12.4"),
            std::string::npos)
      << notes;
  // The base profile's comments stay beside the numbers the log did not fit; the one that
  // derived the old intra-node efficiency (361.86 / 450) goes with it.
  EXPECT_NE(text.find("    bf16: 989.5 TFLOPS   # datasheet 1979* (sparse) / 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("  gemm: {max: 0.83, fp8_max: {value: 0.7, source: azure-fp8}}   # 821.2 / 989.5"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  tdp: 700 W   # \"up to 700W (configurable)\"\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("361.86 / 450"), std::string::npos) << text;
  // The notes are in the profile too: what was kept and skipped.
  EXPECT_NE(text.find("# Notes of the calibration:\n"), std::string::npos) << text;
  EXPECT_NE(text.find("#   runtime not in the bundle: kept the base profile's CUDA 12.4"),
            std::string::npos)
      << text;
}

TEST(CalibrateCli, NeverOverwritesTheBaseProfile) {
  TempFolder folder;
  const std::string base = folder.path() + "/base.yaml";
  const std::string original = read_text(std::string(HETPLAN_SOURCE_DIR) +
                                         "/profiles/nvidia-h100-sxm5-80gb.yaml");
  {
    std::ofstream file(base);
    file << original;
  }
  const auto run = hetplan("calibrate " + base + " --from " + kNccl + " --out " + base);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--out: expected a new file"), std::string::npos) << run.out;
  EXPECT_EQ(read_text(base), original);
}

TEST(CalibrateCli, BadLabelAndUnknownLogAreInputErrors) {
  TempFolder folder;
  const auto label = hetplan("calibrate profiles/nvidia-h100-sxm5-80gb.yaml --from " + kNccl +
                             " --label 'Not OK' --out " + folder.path() + "/x.yaml");
  EXPECT_EQ(label.exit_code, 2) << label.out;
  EXPECT_NE(label.out.find("--label: expected lower-case letters"), std::string::npos) << label.out;
  const auto unknown = hetplan("calibrate profiles/nvidia-h100-sxm5-80gb.yaml --from README.md");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out;
  EXPECT_EQ(unknown.out.rfind("error: README.md", 0), 0u) << unknown.out;
}

TEST(CalibrateCli, ValidateBundleNeedsAProfile) {
  const auto run = hetplan("validate --bundle some.json");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("expected --profile PROFILE with --bundle"), std::string::npos) << run.out;
}

}  // namespace
