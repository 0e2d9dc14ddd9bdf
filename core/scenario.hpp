// A scenario: a cluster, a workload, what to optimise, and optionally prices, a reference plan,
// the digital twin's variability and the cluster's reliability. docs/formats/scenario.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.hpp"
#include "core/plan.hpp"
#include "core/workload.hpp"

namespace hetplan {

enum class Objective { throughput, cost };

struct IslandPrice {
  std::optional<double> chip_hour;  // currency per second per chip (stored SI: per second)
};

struct Prices {
  std::string currency;  // e.g. "USD", "CNY"; all prices of one scenario share it
  std::map<std::string, IslandPrice> islands;  // by island name
  std::optional<double> energy_per_kwh;        // currency per kWh
  std::optional<double> stack_upkeep_hour;     // currency per second per extra software stack
};

// A slow node: every chip of it runs `slowdown` times slower.
struct Straggler {
  std::string island;     // an island of the scenario's cluster
  int node = 0;           // 0-based node index inside the island
  double slowdown = 1.0;  // >= 1
  SourceLocation location;
};

// Slow nodes drawn at random (seeded) among the nodes a plan uses.
struct RandomStragglers {
  double fraction = 0.0;  // of the nodes, 0..1
  double slowdown = 1.0;  // >= 1
  SourceLocation location;
};

// The digital twin's variability (`hetplan simulate`).
struct SimulationSettings {
  double jitter = 0.0;  // coefficient of variation of each compute operation per chip, 0..1
  std::vector<Straggler> stragglers;
  std::optional<RandomStragglers> random_stragglers;
  std::optional<std::uint64_t> seed;  // the default seed when the command line gives none
  SourceLocation location;
};

// Failures and checkpoints, for goodput (models/reliability.hpp).
struct Reliability {
  std::map<std::string, double> node_mtbf;  // chip profile id -> mean time between failures of
                                            // one node, s; a chip without an entry is unknown
  double checkpoint_write_bandwidth = 0;    // B/s, aggregate for the job
  double checkpoint_read_bandwidth = 0;     // B/s; the loader sets it to the write bandwidth
                                            // when the file gives none
  double restart_time = 0;  // s: detect the failure, reschedule, reload the job (not the
                            // checkpoint read)
  std::optional<double> checkpoint_interval;  // s; absent: the best interval is used
  SourceLocation location;
};

struct Scenario {
  std::string name;
  Cluster cluster;
  Workload workload;
  Objective objective = Objective::throughput;
  std::optional<Prices> prices;
  std::optional<Plan> reference_plan;
  std::optional<std::string> validation_records;  // a folder of validation records
  std::optional<SimulationSettings> simulation;
  std::optional<Reliability> reliability;
  SourceLocation location;
};

std::string_view to_string(Objective objective);

}  // namespace hetplan
