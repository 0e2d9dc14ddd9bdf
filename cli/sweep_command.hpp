// `hetplan sweep` and `hetplan sweep merge`: the batch what-if front end over hetplan_sweep
// (docs/sweep.md). It draws the progress line, handles Ctrl-C and writes the files.
#pragma once

#include <string>
#include <vector>

namespace hetplan::cli {

struct SweepCommand {
  std::string sweep_file;
  int jobs = 0;  // 0: one per hardware thread
  std::string out_dir;  // empty: the JSON lines on stdout
  bool resume = false;
  std::string shard;  // "I/N"; empty: the whole sweep
  double max_seconds = 0;  // 0: no budget
};

int run_sweep_command(const SweepCommand& command);

// `hetplan sweep job`: the Kubernetes manifests of a sharded sweep into a folder.
struct SweepJobCommand {
  std::string sweep_file;
  std::size_t shards = 0;
  std::string image;
  std::string out_dir;
  std::string name;
  std::string results_claim = "hetplan-sweep-results";
  std::string namespace_name;
  std::string scheduler;
  int cpus = 1;
};
int run_sweep_job(const SweepJobCommand& command);
int run_sweep_merge(const std::vector<std::string>& folders, const std::string& out_dir);
// DIR/results.jsonl to one HTML page (default DIR/report.html) and each chart as an SVG file
// beside it (report-<chart>.svg).
int run_sweep_report(const std::string& folder, const std::string& out_file);

}  // namespace hetplan::cli
