// The sweep: its file read strictly with located errors, its points in a fixed order, values set
// into the scenario, and results that do not depend on the number of workers, on sharding or on
// resuming.
#include "sweep/sweep.hpp"

#include <yaml-cpp/yaml.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "formats/loaders.hpp"
#include "sweep/job.hpp"
#include "tests/support/temp_folder.hpp"

namespace hetplan::sweep {
namespace {

const std::string kDefault = std::string(HETPLAN_SOURCE_DIR) + "/scenarios/default.yaml";

std::string sweep_text(const std::string& axes, const std::string& extra = "") {
  return "schema: hetplan/sweep/v1\nname: t\nscenario: " + kDefault + "\n" + extra + "axes:\n" + axes;
}

struct Written {
  test::TempFolder folder;
  std::string path;
  explicit Written(const std::string& text) : path(folder.file("sweep.yaml")) {
    std::ofstream(path) << text;
  }
};

// The error of loading (and checking) a sweep, without the folder's path; "no error" if none.
std::string error_of(const std::string& text) {
  Written written(text);
  try {
    const Sweep sweep = load_sweep(written.path);
    check(sweep, formats::load_scenario(sweep.scenario));
  } catch (const InputError& error) {
    std::string what = error.what();
    const std::size_t at = what.find(written.path);
    if (at != std::string::npos) what.replace(at, written.path.size(), "sweep.yaml");
    return what;
  }
  return "no error";
}

TEST(SweepFile, BadPathsAndValuesAreLocated) {
  EXPECT_EQ(error_of(sweep_text("  - path: cluster.islands[dcu].nodes\n    values: [4]\n")),
            "sweep.yaml:5:11: path: no island \"dcu\" (the cluster has ascend-910b, dcu-k100, "
            "mlu370) in \"cluster.islands[dcu].nodes\" (docs/sweep.md#paths lists the paths)");
  EXPECT_EQ(error_of(sweep_text("  - path: cluster.islands[dcu-k100].nodes\n    values: [4, 0]\n")),
            "sweep.yaml:6:17: cluster.islands[dcu-k100].nodes: expected an integer from 1 to "
            "100000, got \"0\"");
  EXPECT_EQ(error_of(sweep_text("  - path: cluster.fabric.leaf_uplink_speed\n"
                                "    range: {from: 100 Gbps, to: 4 TB, steps: 2}\n")),
            "sweep.yaml:6:33: axes[0].range.to: expected the unit of from (\"Gbps\"), got \"TB\"");
  EXPECT_EQ(error_of(sweep_text("  - path: cluster.fabric.leaf_uplink_speed\n"
                                "    values: [100 GB]\n")),
            "sweep.yaml:6:14: cluster.fabric.leaf_uplink_speed: expected a bandwidth such as "
            "\"200 Gbps\", between 1 MB/s and 1 PB/s, got \"100 GB\"");
  EXPECT_EQ(error_of(sweep_text("  - path: workload.model.heads\n    values: [63]\n")),
            "sweep.yaml:6:14: workload.model.heads: expected hidden size (8192) divisible by the "
            "number of attention heads (63)");
  EXPECT_EQ(error_of(sweep_text("  - path: objective\n    values: [cost]\n")),
            "sweep.yaml:6:14: objective: expected prices when the objective is cost");
  EXPECT_EQ(error_of(sweep_text("  - path: objective\n    values: [cost]\n", "combine: random\n")),
            "sweep.yaml:1:1: expected samples: N with combine: random");
  EXPECT_EQ(error_of(sweep_text("  - path: objective\n    values: [throughput]\n", "colour: red\n")),
            "sweep.yaml:4:1: colour: unknown key");
  EXPECT_EQ(error_of(sweep_text("  - path: objective\n    values: [throughput]\n"
                                "  - path: objective\n    values: [throughput]\n")),
            "sweep.yaml:7:11: path: expected each path once, got \"objective\" again");
  EXPECT_EQ(error_of(sweep_text("  - path: cluster.islands[dcu-k100].nodes\n    values: [4, 8]\n"
                                "  - path: cluster.fabric.oversubscription\n    values: [1]\n",
                                "combine: zip\n")),
            "sweep.yaml:8:11: path: expected as many values as the first axis (2) to zip, got 1");
}

// A mixture's expert load can be swept (the busiest expert's share, the experts' capacity); on a
// dense model the paths are refused, and the values are range-checked.
TEST(SweepApply, ExpertLoadOfAMixture) {
  const std::string mixtral = std::string(HETPLAN_SOURCE_DIR) + "/scenarios/mixtral-mixed.yaml";
  Written written("schema: hetplan/sweep/v1\nname: t\nscenario: " + mixtral +
                  "\naxes:\n  - path: workload.training.moe.imbalance\n    values: [1.5]\n"
                  "  - path: workload.training.moe.capacity_factor\n    values: [1.2]\n");
  const Sweep sweep = load_sweep(written.path);
  Scenario s = formats::load_scenario(sweep.scenario);
  apply(sweep, points(sweep).front(), s);
  EXPECT_EQ(s.workload.training.expert_imbalance, 1.5);
  EXPECT_EQ(s.workload.training.moe_capacity_factor, 1.2);
  EXPECT_EQ(error_of(sweep_text("  - path: workload.training.moe.imbalance\n    values: [1.5]\n")),
            "sweep.yaml:5:11: path: the workload's model has no experts in "
            "\"workload.training.moe.imbalance\" (docs/sweep.md#paths lists the paths)");
  EXPECT_EQ(error_of("schema: hetplan/sweep/v1\nname: t\nscenario: " + mixtral +
                     "\naxes:\n  - path: workload.training.moe.capacity_factor\n"
                     "    values: [0]\n"),
            "sweep.yaml:6:14: workload.training.moe.capacity_factor: expected a factor from 0.01 "
            "to 64, got \"0\"");
}

TEST(SweepFile, RangesGenerateTheirValues) {
  Written written(sweep_text("  - path: cluster.islands[dcu-k100].nodes\n"
                             "    range: {from: 4, to: 32, steps: 4, scale: log}\n"
                             "  - path: cluster.fabric.leaf_uplink_speed\n"
                             "    range: {from: 100 Gbps, to: 400 Gbps, steps: 3}\n"));
  const Sweep sweep = load_sweep(written.path);
  ASSERT_EQ(sweep.axes.size(), 2u);
  std::vector<std::string> nodes, speeds;
  for (const auto& v : sweep.axes[0].values) nodes.push_back(v.text);
  for (const auto& v : sweep.axes[1].values) speeds.push_back(v.text);
  EXPECT_EQ(nodes, (std::vector<std::string>{"4", "8", "16", "32"}));
  EXPECT_EQ(speeds, (std::vector<std::string>{"100 Gbps", "250 Gbps", "400 Gbps"}));
}

// A range's ends in every spelling of a number, and ones that are not numbers, at their field;
// a long end is scanned in one pass (no recursion per character).
TEST(SweepFile, RangeEndsAreNumbersWithAnOptionalUnit) {
  auto ends = [](const std::string& from, const std::string& to) {
    Written written(sweep_text("  - path: cluster.fabric.oversubscription\n    range: {from: " +
                               from + ", to: " + to + ", steps: 2}\n"));
    const Sweep sweep = load_sweep(written.path);
    std::vector<std::string> values;
    for (const auto& v : sweep.axes.at(0).values) values.push_back(v.text);
    return values;
  };
  EXPECT_EQ(ends("+1", "4."), (std::vector<std::string>{"1", "4"}));
  EXPECT_EQ(ends(".5e1", "2.5E+1"), (std::vector<std::string>{"5", "25"}));
  const std::string range = "  - path: cluster.fabric.oversubscription\n    range: {from: ";
  EXPECT_EQ(error_of(sweep_text(range + "1e999, to: 4, steps: 2}\n")),
            "sweep.yaml:6:19: axes[0].range.from: expected a number, optionally with a unit "
            "(\"8\", \"100 Gbps\"), got \"1e999\"");
  EXPECT_EQ(error_of(sweep_text(range + "e5, to: 4, steps: 2}\n")),
            "sweep.yaml:6:19: axes[0].range.from: expected a number, optionally with a unit "
            "(\"8\", \"100 Gbps\"), got \"e5\"");
  const std::string gap(300000, ' ');
  EXPECT_EQ(error_of(sweep_text(range + "\"1" + gap + "x\", to: 4, steps: 2}\n")),
            "sweep.yaml:6:300029: axes[0].range.to: expected the unit of from (\"x\"), got \"\"");
}

TEST(SweepPoints, GridZipAndRandomOrders) {
  Written grid(sweep_text("  - path: a\n    values: [1, 2]\n  - path: b\n    values: [x, y, z]\n"));
  const auto g = points(load_sweep(grid.path));
  ASSERT_EQ(g.size(), 6u);
  // The last axis varies fastest.
  EXPECT_EQ(g[0].values, (std::vector<std::size_t>{0, 0}));
  EXPECT_EQ(g[1].values, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(g[3].values, (std::vector<std::size_t>{1, 0}));
  Written zip(sweep_text("  - path: a\n    values: [1, 2]\n  - path: b\n    values: [x, y]\n",
                         "combine: zip\n"));
  const auto z = points(load_sweep(zip.path));
  ASSERT_EQ(z.size(), 2u);
  EXPECT_EQ(z[1].values, (std::vector<std::size_t>{1, 1}));

  std::string many = "  - path: a\n    range: {from: 1, to: 100, steps: 100}\n"
                     "  - path: b\n    range: {from: 1, to: 100, steps: 100}\n";
  auto draw = [&](int seed) {
    Written random(sweep_text(many, "combine: random\nsamples: 50\nseed: " + std::to_string(seed) + "\n"));
    std::vector<std::vector<std::size_t>> out;
    for (const auto& p : points(load_sweep(random.path))) out.push_back(p.values);
    return out;
  };
  const auto first = draw(7);
  ASSERT_EQ(first.size(), 50u);
  EXPECT_EQ(std::set<std::vector<std::size_t>>(first.begin(), first.end()).size(), 50u);
  EXPECT_TRUE(std::is_sorted(first.begin(), first.end()));  // kept in grid order
  EXPECT_EQ(draw(7), first);
  EXPECT_NE(draw(8), first);
}

TEST(SweepApply, ValuesReachTheScenario) {
  Written written(sweep_text("  - path: cluster.islands[dcu-k100].nodes\n    values: [4]\n"
                             "  - path: chips[ascend-910b].memory.capacity\n    values: [32 GiB]\n"
                             "  - path: reliability.node_mtbf[hygon-k100-ai]\n    values: [10 h]\n"
                             "  - path: workload.training.global_batch\n    values: [512]\n"
                             "  - path: cluster.fabric.spine_oversubscription\n    values: [3]\n"));
  const Sweep sweep = load_sweep(written.path);
  const Scenario base = formats::load_scenario(sweep.scenario);
  Scenario s = base;
  apply(sweep, points(sweep).front(), s);
  const Island& dcu = *s.cluster.find_island("dcu-k100");
  EXPECT_EQ(dcu.nodes, 4);
  EXPECT_EQ(dcu.free_nodes, 4);  // all of the island was free, and still is
  const ChipProfile& ascend = s.cluster.chips[s.cluster.find_island("ascend-910b")->chip];
  const ChipProfile& before = base.cluster.chips[base.cluster.find_island("ascend-910b")->chip];
  EXPECT_DOUBLE_EQ(*ascend.memory_capacity, 32.0 * (1ull << 30));
  // The usable share of the capacity stays the profile's.
  EXPECT_DOUBLE_EQ(*ascend.memory_usable / *ascend.memory_capacity,
                   *before.memory_usable / *before.memory_capacity);
  EXPECT_DOUBLE_EQ(s.reliability->node_mtbf.at("hygon-k100-ai"), 36000.0);
  EXPECT_EQ(s.workload.training.global_batch, 512);
  EXPECT_EQ(s.cluster.fabric.spine_oversubscription, 3.0);
}

// A small sweep of the default scenario: four points; each value is fine alone, but the last
// point's heads (128) do not divide its hidden size (8128), and it fails on its own.
const std::string kSmall =
    "  - path: workload.model.hidden\n    values: [8192, 8128]\n"
    "  - path: workload.model.heads\n    values: [64, 128]\n";

TEST(SweepRun, ResultsAreTheSameForAnyJobsShardsAndResume) {
  Written written(sweep_text(kSmall, "top: 2\n"));
  const Sweep sweep = load_sweep(written.path);
  SweepOptions one;
  one.jobs = 1;
  const SweepResult serial = run_sweep(sweep, one);
  ASSERT_EQ(serial.points.size(), 4u);
  EXPECT_FALSE(serial.stopped);
  const std::string expected = results_jsonl(serial.points);
  EXPECT_TRUE(serial.points[0].ok);
  EXPECT_TRUE(serial.points[1].ok);
  EXPECT_TRUE(serial.points[2].ok);
  EXPECT_FALSE(serial.points[3].ok);
  EXPECT_EQ(serial.points[3].line["error"],
            written.path + ":7:20: workload.model.hidden: expected hidden size (8128) divisible by "
                           "the number of attention heads (128)");
  EXPECT_NE(serial.points[0].line["best"], serial.points[2].line["best"]);

  SweepOptions two;
  two.jobs = 2;
  EXPECT_EQ(results_jsonl(run_sweep(sweep, two).points), expected);

  std::vector<std::pair<std::string, std::string>> parts;
  for (std::size_t i = 0; i < 3; ++i) {
    SweepOptions shard;
    shard.shard = {i, 3};
    parts.emplace_back("shard" + std::to_string(i), results_jsonl(run_sweep(sweep, shard).points));
  }
  EXPECT_EQ(results_jsonl(merge_results(parts)), expected);
  EXPECT_EQ(results_csv(axis_paths(sweep), merge_results(parts)),
            results_csv(axis_paths(sweep), serial.points));

  // Resume: every point but one is known; only that one runs, and the result is the same.
  SweepOptions resume;
  std::mutex lock;
  std::vector<std::string> ran;
  resume.earlier = [&](const std::string& key) -> std::optional<nlohmann::ordered_json> {
    for (const auto& p : serial.points) {
      if (p.key == key && p.index != 2) return p.line;
    }
    return std::nullopt;
  };
  resume.finished = [&](const PointResult& p) {
    std::lock_guard guard(lock);
    ran.push_back(std::to_string(p.index));
  };
  EXPECT_EQ(results_jsonl(run_sweep(sweep, resume).points), expected);
  EXPECT_EQ(ran, (std::vector<std::string>{"2"}));
}

// `twin: 2`: each point's two best jobs also go through the twin, in worker processes; the
// result lines are the same for one worker thread or two, and the CSV carries the best job's
// twin figures.
TEST(SweepRun, TheTwinOnEachPointsBestJobs) {
  Written written(sweep_text("  - path: cluster.islands[dcu-k100].nodes\n    values: [8, 16]\n",
                             "top: 3\ntwin: 2\n"));
  const Sweep sweep = load_sweep(written.path);
  EXPECT_EQ(sweep.twin, 2u);
  SweepOptions one;
  one.twin_worker = HETPLAN_TWIN_WORKER;
  const SweepResult serial = run_sweep(sweep, one);
  ASSERT_EQ(serial.points.size(), 2u);
  for (const auto& point : serial.points) {
    ASSERT_TRUE(point.ok) << point.line.dump();
    const auto& twin = point.line["twin"];
    ASSERT_EQ(twin.size(), 2u) << point.line.dump();
    EXPECT_EQ(twin[0]["plan"], point.line["best"]["plan"]);
    for (const auto& entry : twin) {
      ASSERT_TRUE(entry.contains("step_time_s")) << entry.dump();
      EXPECT_GT(entry["step_time_s"].get<double>(), 0);
      // The twin and the estimate price the same plan: within a factor of two of each other.
      EXPECT_LT(std::abs(entry["estimate_vs_twin"].get<double>()), 1.0) << entry.dump();
    }
  }
  SweepOptions two = one;
  two.jobs = 2;
  EXPECT_EQ(results_jsonl(run_sweep(sweep, two).points), results_jsonl(serial.points));
  const std::string csv = results_csv(axis_paths(sweep), serial.points);
  EXPECT_NE(csv.find(",twin_step_time_s,twin_tokens_per_s,"), std::string::npos) << csv;

  // Without a worker the sweep refuses before any point runs; twin above top is an error.
  EXPECT_THROW(run_sweep(sweep, {}), InputError);
  EXPECT_EQ(error_of(sweep_text("  - path: cluster.islands[dcu-k100].nodes\n    values: [8]\n",
                                "top: 2\ntwin: 3\n")),
            "sweep.yaml:5:7: twin: expected at most top (2) plans for the twin, got \"3\"");
}

// `max_pipeline_islands: 2` reaches every point's search as `hetplan plan
// --max-pipeline-islands 2` does: on the default cluster, whose best task-level plan spans its
// three islands, each point's task-level plan spans two, the line says the search ran capped,
// and the points' keys differ from those of the sweep without the cap (a resume never mixes
// them).
TEST(SweepRun, APipelineIslandCapReachesEveryPoint) {
  const std::string axes = "  - path: cluster.islands[dcu-k100].nodes\n    values: [8, 16]\n";
  Written free(sweep_text(axes, "top: 1\n"));
  Written capped(sweep_text(axes, "top: 1\nmax_pipeline_islands: 2\n"));
  const Sweep uncapped_sweep = load_sweep(free.path);
  const Sweep capped_sweep = load_sweep(capped.path);
  EXPECT_EQ(uncapped_sweep.max_pipeline_islands, 0);
  EXPECT_EQ(capped_sweep.max_pipeline_islands, 2);
  const SweepResult uncapped_run = run_sweep(uncapped_sweep, {});
  const SweepResult capped_run = run_sweep(capped_sweep, {});
  ASSERT_EQ(uncapped_run.points.size(), 2u);
  ASSERT_EQ(capped_run.points.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& before = uncapped_run.points[i].line;
    const auto& after = capped_run.points[i].line;
    ASSERT_EQ(before["status"], "ok") << before.dump();
    ASSERT_EQ(after["status"], "ok") << after.dump();
    ASSERT_TRUE(before["task_level"].is_object()) << before.dump();
    ASSERT_TRUE(after["task_level"].is_object()) << after.dump();
    EXPECT_EQ(before["task_level"]["islands"].size(), 3u) << before["task_level"].dump();
    EXPECT_EQ(after["task_level"]["islands"].size(), 2u) << after["task_level"].dump();
    EXPECT_FALSE(before["search"].contains("max_pipeline_islands"));
    EXPECT_EQ(after["search"]["max_pipeline_islands"], 2);
    EXPECT_NE(before["key"], after["key"]);
  }
  EXPECT_EQ(error_of(sweep_text("  - path: objective\n    values: [throughput]\n",
                                "max_pipeline_islands: 1\n")),
            "sweep.yaml:4:23: max_pipeline_islands: expected an integer from 2 to 1024, got \"1\"");
}

TEST(SweepRun, AStopLeavesTheRestForLater) {
  Written written(sweep_text(kSmall));
  const Sweep sweep = load_sweep(written.path);
  planner::StopToken stop;
  stop.request_stop();
  SweepOptions options;
  options.stop = &stop;
  const SweepResult result = run_sweep(sweep, options);
  EXPECT_TRUE(result.stopped);
  EXPECT_EQ(result.stopped_by, "stopped on request");
  EXPECT_TRUE(result.points.empty());
  EXPECT_EQ(result.total_points, 4u);

  // A spent budget starts no point either, and says why; a budget that lasts changes nothing.
  SweepOptions spent;
  spent.max_seconds = 1e-12;
  const SweepResult late = run_sweep(sweep, spent);
  EXPECT_TRUE(late.stopped);
  EXPECT_EQ(late.stopped_by, "the time budget ran out");
  EXPECT_TRUE(late.points.empty());
  SweepOptions ample;
  ample.max_seconds = 1e6;
  const SweepResult all = run_sweep(sweep, ample);
  EXPECT_FALSE(all.stopped);
  EXPECT_EQ(results_jsonl(all.points), results_jsonl(run_sweep(sweep, {}).points));
}

TEST(SweepMerge, PointsOfAnotherSweepOrConflictingPointsAreErrors) {
  const std::string a = R"({"sweep":"a","points":2,"index":0,"key":"k","status":"ok"})";
  const std::string b = R"({"sweep":"b","points":2,"index":1,"key":"k","status":"ok"})";
  const std::string a_other = R"({"sweep":"a","points":2,"index":0,"key":"k","status":"failed"})";
  auto error = [](const std::vector<std::pair<std::string, std::string>>& parts) {
    try {
      merge_results(parts);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({{"x", a + "\n"}, {"y", b + "\n"}}),
            "y:1:1: sweep: expected points of sweep a (2 points), got b (2 points)");
  EXPECT_EQ(error({{"x", a + "\n"}, {"y", a_other + "\n"}}),
            "y:1:1: index: point 0 is given twice with different results");
  EXPECT_EQ(error({{"x", "not json\n"}}), "x:1:1: line: expected one JSON object per line (a sweep point)");
  EXPECT_EQ(error({{"x", a + "\n"}, {"y", a + "\n"}}), "no error");  // the same point twice
}

}  // namespace
}  // namespace hetplan::sweep

namespace hetplan::sweep {
namespace {

// Results written by hand: a 2 x 2 grid over nodes and oversubscription, one point failed.
std::vector<PointResult> grid_results() {
  std::vector<PointResult> points;
  const char* nodes[] = {"4", "8"};
  const char* ratios[] = {"1", "2 <&>"};
  for (std::size_t i = 0; i < 4; ++i) {
    PointResult p;
    p.index = i;
    p.key = "k" + std::to_string(i);
    p.ok = i != 3;
    nlohmann::ordered_json& line = p.line;
    line["sweep"] = "g";
    line["points"] = 4;
    line["index"] = i;
    line["key"] = p.key;
    line["values"] = {{"cluster.islands[a].nodes", nodes[i / 2]},
                      {"cluster.fabric.oversubscription", ratios[i % 2]}};
    line["status"] = p.ok ? "ok" : "failed";
    if (!p.ok) {
      line["error"] = "x.yaml:1:1: no <good>";
    } else {
      const double t = 1000.0 * static_cast<double>(i + 1);
      line["best"] = {{"mode", "task-level"}, {"plan", "mix"}, {"chips", 16}, {"tokens_per_s", t},
                      {"tokens_per_s_per_chip", t / 16}, {"goodput_tokens_per_s", 0.9 * t}};
      line["single_island"] = nlohmann::ordered_json::array(
          {{{"island", "a"}, {"best", {{"chips", 8}, {"tokens_per_s", t / 2}, {"tokens_per_s_per_chip", t / 16}}}}});
      line["resource_pool"] = nullptr;
      line["task_level"] = {{"tokens_per_s", t}};
      line["task_level_gain"] = 0.1 * static_cast<double>(i);
    }
    points.push_back(std::move(p));
  }
  return points;
}

TEST(SweepReport, OneSelfContainedPageWithTheChartsTheResultsHaveDataFor) {
  const auto points = grid_results();
  const std::vector<std::string> paths = {"cluster.islands[a].nodes", "cluster.fabric.oversubscription"};
  const auto charts = report_charts(paths, points);
  std::vector<std::string> names;
  for (const auto& chart : charts) names.push_back(chart.name);
  // A grid over two axes: the three states, the best job, and where mixing pays; no scaling
  // (a grid) and no cost (no prices).
  EXPECT_EQ(names, (std::vector<std::string>{"states", "best", "gain"}));
  for (const auto& chart : charts) {
    EXPECT_EQ(chart.svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << chart.name;
  }
  // The gain map has a cell per pair: three gains and the failed point's "-".
  const std::string& gain = charts[2].svg;
  EXPECT_NE(gain.find(">+0.0%<"), std::string::npos);
  EXPECT_NE(gain.find(">+10.0%<"), std::string::npos);
  EXPECT_NE(gain.find(">+20.0%<"), std::string::npos);
  EXPECT_NE(gain.find(">-<"), std::string::npos);

  const std::string html = report_html(paths, points);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Nothing is fetched or run: no script, no link, no source, no URL but the SVG namespace.
  for (const char* absent : {"<script", "<link", "src=", "href=", "@import", "url("})
    EXPECT_EQ(html.find(absent), std::string::npos) << absent;
  std::size_t urls = 0;
  for (std::size_t at = html.find("http"); at != std::string::npos; at = html.find("http", at + 1)) {
    EXPECT_EQ(html.compare(at, 26, "http://www.w3.org/2000/svg"), 0);
    ++urls;
  }
  EXPECT_EQ(urls, charts.size());
  // Values and errors are escaped.
  EXPECT_NE(html.find("2 &lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(html.find("2 <&>"), std::string::npos);
  EXPECT_NE(html.find("no &lt;good&gt;"), std::string::npos);
  EXPECT_NE(html.find("4 of 4 points, 1 failed"), std::string::npos);
  // A row per point.
  std::size_t rows = 0;
  for (std::size_t at = html.find("<tr><td>"); at != std::string::npos; at = html.find("<tr><td>", at + 1))
    ++rows;
  EXPECT_EQ(rows, 4u);
}

TEST(SweepReport, OneAxisGetsTheScalingOfEachIslandWhoseChipsChange) {
  auto points = grid_results();
  points.resize(3);  // points 0 and 2: nodes 4 and 8 (oversubscription 1)
  points.erase(points.begin() + 1);
  for (auto& p : points) p.line["values"].erase("cluster.fabric.oversubscription");
  points[1].line["single_island"][0]["best"]["chips"] = 16;
  const auto charts = report_charts({"cluster.islands[a].nodes"}, points);
  std::vector<std::string> names;
  for (const auto& chart : charts) names.push_back(chart.name);
  EXPECT_EQ(names, (std::vector<std::string>{"states", "best", "scaling"}));
  // Island a: 1000/16 per chip at 8 chips, 3000/16 at 16 chips: 300% of its first point.
  EXPECT_NE(charts[2].svg.find("a alone: 300"), std::string::npos);
  EXPECT_NE(charts[2].svg.find("a alone: 100"), std::string::npos);
}

}  // namespace
}  // namespace hetplan::sweep

namespace hetplan::sweep {
namespace {

std::vector<std::string> strings(const YAML::Node& list) {
  std::vector<std::string> out;
  for (const auto& item : list) out.push_back(item.as<std::string>());
  return out;
}

// `hetplan sweep job`: a ConfigMap with the sweep and every file its scenario reads, an Indexed
// Job of N pods each running its shard, and a merge Job. The inputs rebuilt from the ConfigMap
// alone, and the shards run with the arguments the Job gives its pods, merge to the bytes of the
// sweep run in the source tree.
TEST(SweepJob, ShardsOfTheManifestMergeToTheSingleRun) {
  const Sweep sweep =
      load_sweep(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/sweeps/dcu-mlu-mtbf.yaml");
  JobOptions options;
  options.shards = 3;
  options.image = "registry.local/hetplan:1";
  options.scheduler = "volcano";
  options.cpus = 2;
  const auto files = sweep_job(sweep, options);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].name, "configmap.yaml");
  EXPECT_EQ(files[1].name, "job.yaml");
  EXPECT_EQ(files[2].name, "merge-job.yaml");
  const YAML::Node configmap = YAML::Load(files[0].text);
  const YAML::Node job = YAML::Load(files[1].text);
  const YAML::Node merge = YAML::Load(files[2].text);

  EXPECT_EQ(configmap["kind"].as<std::string>(), "ConfigMap");
  EXPECT_EQ(configmap["metadata"]["name"].as<std::string>(), "dcu-mlu-mtbf-inputs");
  EXPECT_EQ(job["apiVersion"].as<std::string>(), "batch/v1");
  EXPECT_EQ(job["kind"].as<std::string>(), "Job");
  EXPECT_EQ(job["spec"]["completionMode"].as<std::string>(), "Indexed");
  EXPECT_EQ(job["spec"]["completions"].as<int>(), 3);
  EXPECT_EQ(job["spec"]["parallelism"].as<int>(), 3);
  const YAML::Node pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"].as<std::string>(), "Never");
  EXPECT_EQ(pod["schedulerName"].as<std::string>(), "volcano");
  ASSERT_EQ(pod["containers"].size(), 1u);
  const YAML::Node container = pod["containers"][0];
  EXPECT_EQ(container["image"].as<std::string>(), "registry.local/hetplan:1");
  EXPECT_EQ(container["resources"]["requests"]["cpu"].as<std::string>(), "2");
  EXPECT_EQ(container["env"][0]["name"].as<std::string>(), "SHARD");
  EXPECT_EQ(container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>(),
            "metadata.annotations['batch.kubernetes.io/job-completion-index']");
  const auto args = strings(container["args"]);
  ASSERT_EQ(args.size(), 9u);
  EXPECT_EQ(args[0], "sweep");
  EXPECT_EQ(args[2], "--shard");
  EXPECT_EQ(args[3], "$(SHARD)/3");
  EXPECT_EQ(args[4], "--jobs");
  EXPECT_EQ(args[5], "2");
  EXPECT_EQ(args[7], "/results/dcu-mlu-mtbf/shard-$(SHARD)");
  EXPECT_EQ(args[8], "--resume");

  // Rebuild the inputs as the pods see them under /inputs, from the ConfigMap's data and the
  // volume's key-to-path items; the sweep is the first argument.
  const test::TempFolder folder;
  const std::string mount = folder.path() + "/inputs";
  std::size_t items = 0;
  for (const auto& volume : pod["volumes"]) {
    if (!volume["configMap"]) continue;
    EXPECT_EQ(volume["configMap"]["name"].as<std::string>(), "dcu-mlu-mtbf-inputs");
    for (const auto& item : volume["configMap"]["items"]) {
      const std::string key = item["key"].as<std::string>();
      const std::string path = item["path"].as<std::string>();
      ASSERT_TRUE(configmap["data"][key]) << key;
      const std::filesystem::path file = std::filesystem::path(mount) / path;
      std::filesystem::create_directories(file.parent_path());
      std::ofstream(file, std::ios::binary) << configmap["data"][key].as<std::string>();
      ++items;
    }
  }
  EXPECT_EQ(items, configmap["data"].size());
  ASSERT_EQ(args[1].rfind("/inputs/", 0), 0u) << args[1];
  const Sweep rebuilt = load_sweep(mount + args[1].substr(std::string("/inputs").size()));

  // Pod i's $(SHARD) is i: each pod runs shard i/3.
  std::vector<std::pair<std::string, std::string>> parts;
  for (std::size_t i = 0; i < 3; ++i) {
    SweepOptions run;
    run.shard = {i, 3};
    parts.emplace_back("shard" + std::to_string(i), results_jsonl(run_sweep(rebuilt, run).points));
  }
  const std::string single = results_jsonl(run_sweep(sweep, {}).points);
  EXPECT_EQ(results_jsonl(merge_results(parts)), single);

  // The merge Job reads the three shards' folders and reports the merged one.
  EXPECT_EQ(merge["metadata"]["name"].as<std::string>(), "dcu-mlu-mtbf-merge");
  const YAML::Node merge_pod = merge["spec"]["template"]["spec"];
  EXPECT_EQ(strings(merge_pod["initContainers"][0]["args"]),
            (std::vector<std::string>{"sweep", "merge", "/results/dcu-mlu-mtbf/shard-0",
                                      "/results/dcu-mlu-mtbf/shard-1",
                                      "/results/dcu-mlu-mtbf/shard-2", "--out",
                                      "/results/dcu-mlu-mtbf/merged"}));
  EXPECT_EQ(strings(merge_pod["containers"][0]["args"]),
            (std::vector<std::string>{"sweep", "report", "/results/dcu-mlu-mtbf/merged"}));
}

// A text with every occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// Inputs that name each other by absolute paths (the workload's hf_config among them) reach the
// pods: the ConfigMap carries each file and rewrites the paths to the carried copies, so the
// scenario rebuilt from the ConfigMap reads nothing outside the mount.
TEST(SweepJob, AbsolutePathsReachTheCarriedCopies) {
  const std::string source = HETPLAN_SOURCE_DIR;
  const test::TempFolder folder;
  std::ofstream(folder.file("workload.yaml"))
      << replaced(formats::read_text_file(source + "/workloads/llama-70b-pretrain.yaml"),
                  "hf_config: hf/", "hf_config: " + source + "/workloads/hf/");
  std::string scenario = formats::read_text_file(source + "/scenarios/default.yaml");
  scenario = replaced(scenario, "workload: ../workloads/llama-70b-pretrain.yaml",
                      "workload: " + folder.file("workload.yaml"));
  scenario = replaced(scenario, ": ../", ": " + source + "/");
  std::ofstream(folder.file("scenario.yaml")) << scenario;
  std::ofstream(folder.file("sweep.yaml"))
      << "schema: hetplan/sweep/v1\nname: absolute\nscenario: " << folder.file("scenario.yaml")
      << "\ntop: 1\naxes:\n  - path: training.global_batch\n    values: [512, 1024]\n";
  const Sweep sweep = load_sweep(folder.file("sweep.yaml"));
  JobOptions options;
  options.image = "img:1";
  const auto files = sweep_job(sweep, options);
  const YAML::Node configmap = YAML::Load(files[0].text);
  const YAML::Node job = YAML::Load(files[1].text);

  const test::TempFolder pod;
  const std::string mount = pod.path() + "/inputs";
  for (const auto& volume : job["spec"]["template"]["spec"]["volumes"]) {
    if (!volume["configMap"]) continue;
    for (const auto& item : volume["configMap"]["items"]) {
      const std::filesystem::path file = std::filesystem::path(mount) / item["path"].as<std::string>();
      std::filesystem::create_directories(file.parent_path());
      std::ofstream(file, std::ios::binary)
          << configmap["data"][item["key"].as<std::string>()].as<std::string>();
    }
  }
  const std::string sweep_arg = strings(job["spec"]["template"]["spec"]["containers"][0]["args"])[1];
  const Sweep rebuilt = load_sweep(mount + sweep_arg.substr(std::string("/inputs").size()));
  const Scenario read = formats::load_scenario(rebuilt.scenario);
  const auto inside = [&](const std::string& file) {
    return std::filesystem::path(file).lexically_normal().string().rfind(mount + "/", 0) == 0;
  };
  EXPECT_TRUE(inside(rebuilt.scenario)) << rebuilt.scenario;
  EXPECT_TRUE(inside(read.workload.model_file)) << read.workload.model_file;
  EXPECT_TRUE(inside(read.workload.location.file)) << read.workload.location.file;
  EXPECT_TRUE(inside(read.cluster.location.file)) << read.cluster.location.file;
  ASSERT_TRUE(read.reference_plan);
  EXPECT_TRUE(inside(read.reference_plan->location.file)) << read.reference_plan->location.file;
  for (const ChipProfile& chip : read.cluster.chips)
    EXPECT_TRUE(inside(chip.location.file)) << chip.location.file;
  const Scenario original = formats::load_scenario(sweep.scenario);
  EXPECT_EQ(read.workload.model.layers, original.workload.model.layers);
  EXPECT_EQ(read.workload.model.hidden, original.workload.model.hidden);
  // The carried workload names its config.json relative to itself.
  bool found = false;
  for (const auto& entry : configmap["data"]) {
    const std::string text = entry.second.as<std::string>();
    if (text.find("hf_config:") == std::string::npos) continue;
    found = true;
    EXPECT_EQ(text.find("hf_config: " + source), std::string::npos) << text;
  }
  EXPECT_TRUE(found);
}

TEST(SweepJob, OptionsKubernetesWouldRefuseAreErrors) {
  const Sweep sweep =
      load_sweep(std::string(HETPLAN_SOURCE_DIR) + "/scenarios/sweeps/dcu-mlu-mtbf.yaml");
  JobOptions options;
  options.shards = 3;
  options.image = "img:1";
  auto error = [&](JobOptions o) {
    try {
      sweep_job(sweep, o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  JobOptions many = options;
  many.shards = 6;
  EXPECT_EQ(error(many), "sweep job: --shards: expected 1 to 5 shards (the sweep's points), got 6");
  JobOptions named = options;
  named.name = "Mixed_Sweep";
  EXPECT_NE(error(named).find("--name: expected a Kubernetes name"), std::string::npos);
  JobOptions imageless = options;
  imageless.image = "";
  EXPECT_NE(error(imageless).find("--image: expected a container image reference"), std::string::npos);
}

}  // namespace
}  // namespace hetplan::sweep
