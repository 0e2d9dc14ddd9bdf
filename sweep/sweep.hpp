// Batch what-if: a sweep file (hetplan/sweep/v1) names a base scenario and axes, each a path
// into the scenario and the files it references with a list or range of values; the points
// (a grid, the axes zipped, or a seeded random sample of the grid) each run the plan search on
// the base scenario with their values set, in parallel. Results are one JSON line per point in
// point order, whatever the number of workers or shards. docs/sweep.md.
//
// Plain C++ like the rest of the core: progress goes to an observer, a stop token ends a sweep
// early, and results reach the front end through callbacks (it writes the files).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/scenario.hpp"
#include "planner/progress.hpp"

namespace hetplan::sweep {

inline constexpr std::string_view kSweepSchema = "hetplan/sweep/v1";

enum class Combine { grid, zip, random };

struct AxisValue {
  std::string text;  // as written, or as a range generated it ("32", "200 Gbps")
  SourceLocation location;
};

struct Axis {
  std::string path;  // "cluster.islands[dcu-k100].nodes" (docs/sweep.md#paths)
  SourceLocation location;
  std::vector<AxisValue> values;
};

struct Sweep {
  std::string name;
  std::string file;      // the sweep file, as named
  std::string scenario;  // the base scenario's path, resolved against the sweep file's folder
  SourceLocation scenario_location;
  Combine combine = Combine::grid;
  std::size_t samples = 0;  // random: points drawn from the grid, without repeats
  std::uint64_t seed = 0;   // random
  std::vector<Axis> axes;
  std::size_t top = 3;  // ranked plans a point keeps
  std::size_t twin = 0;  // of those, the best this many jobs simulated by the twin as well
  int max_pipeline_islands = 0;  // SearchOptions::max_pipeline_islands of every point (0: none)
};

// Reads a sweep file strictly (unknown keys, wrong types, values and ranges that cannot be
// generated are InputErrors at file:line:column).
Sweep load_sweep(const std::string& path);
// From text (file_name is used in messages and to resolve the scenario's path).
Sweep parse_sweep(const std::string& text, const std::string& file_name);

// A point of the sweep: for each axis, the index of its value.
struct Point {
  std::size_t index = 0;  // in the sweep's point order
  std::vector<std::size_t> values;
};

// Every point, in order: a grid varies the last axis fastest; zip takes the i-th value of every
// axis (the axes have as many values); random draws `samples` distinct grid points with the
// seed and keeps them in grid order.
std::vector<Point> points(const Sweep& sweep);

// Sets a point's values in `scenario` (a copy of the base). Throws InputError at the axis for a
// path the scenario does not have, at the value for a value the field cannot take.
void apply(const Sweep& sweep, const Point& point, Scenario& scenario);

// Checks every axis path against the base and every value the sweep uses in its field, so that
// a bad axis fails before any point runs.
void check(const Sweep& sweep, const Scenario& base);

struct Shard {
  std::size_t index = 0;  // this shard runs the points with index % count == index
  std::size_t count = 1;
};

struct SweepProgress {
  std::size_t done = 0;    // points finished (run or reused), failed ones included
  std::size_t total = 0;   // points of this shard
  std::size_t failed = 0;  // points whose search could not run (their error is in the result)
  std::size_t reused = 0;  // points whose result an earlier run left (resume)
};

// Called from the workers, one call at a time, after each point.
class SweepObserver {
 public:
  virtual ~SweepObserver() = default;
  virtual void on_point(const SweepProgress& progress) = 0;
};

// One point's result line.
struct PointResult {
  std::size_t index = 0;
  std::string key;  // sha256 of the point's inputs: the base files, the values, the settings
  bool ok = false;
  bool reused = false;
  nlohmann::ordered_json line;
};

struct SweepOptions {
  int jobs = 1;  // points run at once (each a plan search on its own thread)
  Shard shard;
  SweepObserver* observer = nullptr;
  const planner::StopToken* stop = nullptr;  // no new point starts once it is set
  // Resume: the result an earlier run left for this key, if any (a line it wrote).
  std::function<std::optional<nlohmann::ordered_json>(const std::string& key)> earlier;
  // Each finished point as it finishes (one call at a time): a front end keeps it for resume.
  std::function<void(const PointResult&)> finished;
  // Once the base scenario is loaded and the sweep checked against it, before any point runs:
  // the sweep's inputs (a digest of the base files and the settings the results depend on), for
  // a front end to prepare where it keeps results (nothing is made for a sweep that is refused).
  std::function<void(const std::string& inputs)> started;
  // Seconds after which no new point starts (0: no budget); points running then finish.
  double max_seconds = 0;
  // The twin's worker executable (hetplan-twin), for a sweep with `twin:`; each point runs its
  // simulations in worker processes of its own, one at a time.
  std::string twin_worker;
};

struct SweepResult {
  std::vector<PointResult> points;  // of this shard, in point order
  std::size_t total_points = 0;     // of the whole sweep
  bool stopped = false;             // a stop came before every point of the shard had run
  std::string stopped_by;           // why: "stopped on request" or "the time budget ran out"
};

// Loads the base scenario, checks the sweep against it, and runs the shard's points. Throws
// InputError (before any point runs) for a bad base or axis; a point whose search fails records
// its one-line error and the sweep goes on.
SweepResult run_sweep(const Sweep& sweep, const SweepOptions& options = {});

// The results as JSON lines (one per point, in order) and as a flat CSV with a header: the
// point's index, its value of each axis (by path), then the best plan's figures.
std::string results_jsonl(const std::vector<PointResult>& points);
std::string results_csv(const std::vector<std::string>& axis_paths,
                        const std::vector<PointResult>& points);
std::vector<std::string> axis_paths(const Sweep& sweep);

// The report (docs/sweep.md#report): charts as standalone SVG, named for their files ("states",
// "best", "scaling", "gain", "cost"; those the results have data for), and one self-contained
// HTML page with the charts inline and a table of the points. No script, nothing fetched.
struct ReportChart {
  std::string name;
  std::string svg;
};
std::vector<ReportChart> report_charts(const std::vector<std::string>& axis_paths,
                                       const std::vector<PointResult>& points);
std::string report_html(const std::vector<std::string>& axis_paths,
                        const std::vector<PointResult>& points);

// Reads the JSON lines of shards (each `results.jsonl` text with its name for messages) and
// returns every point once, in order. Throws InputError for a line that is not a point, a
// point given twice with different contents, or shards of different sweeps.
std::vector<PointResult> merge_results(const std::vector<std::pair<std::string, std::string>>& parts);

}  // namespace hetplan::sweep
