// `hetplan sweep` as a user runs it: every bundled sweep runs and writes its results, a bad axis
// fails before any point runs, an interrupted sweep resumes without redoing finished points, and
// shards merge to the single run's bytes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "formats/rounded_json.hpp"
#include "tests/e2e/cli_run.hpp"

namespace hetplan::e2e {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  return read_text(path.string());
}

std::size_t files_in(const fs::path& folder) {
  return static_cast<std::size_t>(
      std::distance(fs::directory_iterator(folder), fs::directory_iterator()));
}

std::size_t lines_of(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST(SweepCli, EveryBundledSweepRuns) {
  TempFolder folder;
  std::size_t sweeps = 0;
  for (const auto& entry : fs::directory_iterator(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/sweeps")) {
    if (entry.path().extension() != ".yaml") continue;
    ++sweeps;
    const std::string out = folder.file(entry.path().stem().string());
    const auto run = hetplan("sweep " + entry.path().string() + " --jobs 2 --out " + out);
    ASSERT_EQ(run.exit_code, 0) << entry.path() << ": " << run.out;
    EXPECT_NE(run.out.find(", 0 failed;"), std::string::npos) << run.out;
    const std::string jsonl = read(fs::path(out) / "results.jsonl");
    const std::string csv = read(fs::path(out) / "results.csv");
    EXPECT_GE(lines_of(jsonl), 4u) << entry.path();
    EXPECT_EQ(lines_of(csv), lines_of(jsonl) + 1) << entry.path();  // with its header
    EXPECT_EQ(jsonl.find("\"status\":\"failed\""), std::string::npos) << entry.path();
    // Every figure has six significant digits, as all of hetplan's JSON (core/units.hpp).
    std::istringstream lines(jsonl);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_EQ(nlohmann::ordered_json::parse(line), hetplan::formats::rounded(nlohmann::ordered_json::parse(line)))
          << entry.path() << ": " << line.substr(0, 200);
    }
    // Its report: one page and each chart beside it as SVG.
    const auto report = hetplan("sweep report " + out);
    ASSERT_EQ(report.exit_code, 0) << report.out;
    const std::string html = read(fs::path(out) / "report.html");
    EXPECT_NE(html.find("<svg"), std::string::npos) << entry.path();
    EXPECT_TRUE(fs::exists(fs::path(out) / "report-states.svg")) << entry.path();
  }
  EXPECT_GE(sweeps, 3u);
}

TEST(SweepCli, ABadAxisFailsBeforeAnyPointRuns) {
  TempFolder folder;
  std::ofstream(folder.file("bad.yaml"))
      << "schema: hetplan/sweep/v1\nname: bad\nscenario: " << HETPLAN_SOURCE_DIR
      << "/scenarios/default.yaml\naxes:\n  - path: cluster.islands[ascend-910b].nodes\n"
         "    values: [8, many]\n";
  const auto run = hetplan("sweep " + folder.file("bad.yaml") + " --out " + folder.file("out"));
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "error: " + folder.file("bad.yaml") +
                         ":6:17: cluster.islands[ascend-910b].nodes: expected an integer from 1 "
                         "to 100000, got \"many\"\n");
  // Refused before any point: --out is not even made.
  EXPECT_FALSE(fs::exists(folder.file("out")));
}

// One --out holds one sweep's results: a second sweep into it is refused (nothing of it
// written), a run while another holds the folder is refused, and what a killed run left
// half-written is removed when the sweep runs there again.
TEST(SweepCli, AnOutFolderHoldsOneSweepsResults) {
  TempFolder folder;
  const std::string sweep = std::string(HETPLAN_SOURCE_DIR) + "/scenarios/sweeps/ascend-scaling.yaml";
  const std::string out = folder.file("out");
  ASSERT_EQ(hetplan("sweep " + sweep + " --jobs 2 --out " + out).exit_code, 0);
  const std::string results = read(fs::path(out) / "results.jsonl");

  const auto other = hetplan("sweep " + std::string(HETPLAN_SOURCE_DIR) +
                             "/scenarios/sweeps/dcu-mlu-mtbf.yaml --jobs 2 --out " + out);
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_EQ(other.out, "error: " + out +
                           "/sweep.txt:1:1: --out: expected a folder of sweep dcu-mlu-mtbf's "
                           "results with these inputs, or a new one, got the results of sweep "
                           "ascend-scaling: choose another --out\n");
  EXPECT_EQ(read(fs::path(out) / "results.jsonl"), results);

  // A killed run's half-written point, and the folder held by a running sweep (its lock taken
  // here as that sweep would hold it).
  const fs::path stale = fs::path(out) / "points" / ".0123abcd.json.tmp4242";
  std::ofstream(stale) << "{\"half\":";
  {
    const int held = ::open((fs::path(out) / ".lock").c_str(), O_RDWR);
    ASSERT_GE(held, 0);
    ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
    const auto busy = hetplan("sweep " + sweep + " --jobs 2 --resume --out " + out);
    EXPECT_EQ(busy.exit_code, 2);
    EXPECT_EQ(busy.out, "error: " + out +
                            ": --out: expected a folder no other sweep is writing to, got one a "
                            "running sweep holds\n");
    ::close(held);
  }
  EXPECT_TRUE(fs::exists(stale));
  const auto again = hetplan("sweep " + sweep + " --jobs 2 --resume --out " + out);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_EQ(read(fs::path(out) / "results.jsonl"), results);
}

// Values spelled differently are one point: 8, 8.0 and 8e0 nodes are searched once, and each
// keeps its own spelling and index beside the one result.
TEST(SweepCli, OnePointUnderThreeSpellingsIsSearchedOnce) {
  TempFolder folder;
  std::ofstream(folder.file("same.yaml"))
      << "schema: hetplan/sweep/v1\nname: same\nscenario: " << HETPLAN_SOURCE_DIR
      << "/scenarios/default.yaml\ntop: 1\naxes:\n  - path: cluster.islands[ascend-910b].nodes\n"
         "    values: [8, 8.0, 8e0, 16]\n";
  const std::string out = folder.file("out");
  const auto run = hetplan("sweep " + folder.file("same.yaml") + " --jobs 2 --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(files_in(fs::path(out) / "points"), 2u);  // 8 and 16
  std::vector<nlohmann::json> lines;
  std::istringstream text(read(fs::path(out) / "results.jsonl"));
  for (std::string line; std::getline(text, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 4u);
  const char* spelled[] = {"8", "8.0", "8e0", "16"};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(lines[i]["index"], i);
    EXPECT_EQ(lines[i]["values"]["cluster.islands[ascend-910b].nodes"], spelled[i]);
  }
  for (std::size_t i = 1; i < 3; ++i) {
    nlohmann::json a = lines[0], b = lines[i];
    for (auto* line : {&a, &b}) {
      line->erase("index");
      line->erase("values");
    }
    EXPECT_EQ(a, b) << i;
  }
  EXPECT_NE(lines[0]["key"], lines[3]["key"]);
}

TEST(SweepCli, ResumeRunsOnlyWhatIsMissingAndShardsMergeToTheSameBytes) {
  TempFolder folder;
  const std::string sweep = std::string(HETPLAN_SOURCE_DIR) + "/scenarios/sweeps/ascend-scaling.yaml";
  const std::string whole = folder.file("whole");
  ASSERT_EQ(hetplan("sweep " + sweep + " --jobs 1 --out " + whole).exit_code, 0);
  const std::string expected = read(fs::path(whole) / "results.jsonl");
  // An interrupted run: two points' files are gone, and the results are not written yet.
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(whole) / "points")) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 5u);
  fs::remove(files[1]);
  fs::remove(files[3]);
  fs::remove(fs::path(whole) / "results.jsonl");
  const auto resumed = hetplan("sweep " + sweep + " --jobs 2 --resume --out " + whole);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_EQ(read(fs::path(whole) / "results.jsonl"), expected);
  EXPECT_EQ(files_in(fs::path(whole) / "points"), 5u);

  std::string parts;
  for (int i = 0; i < 3; ++i) {
    const std::string shard = folder.file("shard" + std::to_string(i));
    ASSERT_EQ(hetplan("sweep " + sweep + " --shard " + std::to_string(i) + "/3 --out " + shard).exit_code, 0);
    parts += " " + shard;
  }
  const auto merged = hetplan("sweep merge" + parts + " --out " + folder.file("merged"));
  ASSERT_EQ(merged.exit_code, 0) << merged.out;
  EXPECT_EQ(read(fs::path(folder.file("merged")) / "results.jsonl"), expected);
  EXPECT_EQ(read(fs::path(folder.file("merged")) / "results.csv"), read(fs::path(whole) / "results.csv"));
  EXPECT_EQ(hetplan("sweep " + sweep + " --shard 3/3").exit_code, 2);
}

// `--max-seconds`: a spent budget starts no new point, says so on stderr and exits 0; --resume
// then runs the rest, and the results are the full run's bytes.
TEST(SweepCli, ATimeBudgetLeavesTheRestForResume) {
  TempFolder folder;
  const std::string sweep = "scenarios/sweeps/dcu-mlu-mtbf.yaml";
  const std::string out = folder.file("out");
  const auto first = hetplan("sweep " + sweep + " --jobs 1 --max-seconds 0.001 --out " + out);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("stopped (the time budget ran out): "), std::string::npos) << first.out;
  EXPECT_LT(lines_of(read(fs::path(out) / "results.jsonl")), 5u);
  const auto rest = hetplan("sweep " + sweep + " --jobs 1 --resume --out " + out);
  ASSERT_EQ(rest.exit_code, 0) << rest.out;
  const auto whole = hetplan("sweep " + sweep + " --jobs 1 --out " + folder.file("whole"));
  ASSERT_EQ(whole.exit_code, 0) << whole.out;
  EXPECT_EQ(read(fs::path(out) / "results.jsonl"), read(fs::path(folder.file("whole")) / "results.jsonl"));
}

// `hetplan sweep job` writes its three manifests into the folder; options Kubernetes would
// refuse are one line and exit 2, and nothing is written.
TEST(SweepCli, JobWritesItsManifests) {
  TempFolder folder;
  const std::string sweep = "scenarios/sweeps/dcu-mlu-mtbf.yaml";
  const auto run = hetplan("sweep job " + sweep + " --shards 2 --image img:1 --out " + folder.file("job"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("kubectl apply -f " + folder.file("job") + "/configmap.yaml"), std::string::npos)
      << run.out;
  for (const char* name : {"configmap.yaml", "job.yaml", "merge-job.yaml"})
    EXPECT_TRUE(fs::is_regular_file(fs::path(folder.file("job")) / name)) << name;
  EXPECT_NE(read(fs::path(folder.file("job")) / "job.yaml").find("completionMode: Indexed"),
            std::string::npos);
  const auto bad = hetplan("sweep job " + sweep + " --shards 9 --image img:1 --out " + folder.file("bad"));
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_EQ(bad.out, "error: sweep job: --shards: expected 1 to 5 shards (the sweep's points), got 9\n");
  EXPECT_FALSE(fs::exists(folder.file("bad")));
}

}  // namespace
}  // namespace hetplan::e2e
