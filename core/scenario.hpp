// A scenario: a cluster, a workload, what to optimise, and optionally prices and a reference
// plan. docs/formats/scenario.md.
#pragma once

#include <map>
#include <optional>
#include <string>

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

struct Scenario {
  std::string name;
  Cluster cluster;
  Workload workload;
  Objective objective = Objective::throughput;
  std::optional<Prices> prices;
  std::optional<Plan> reference_plan;
  std::optional<std::string> validation_records;  // a folder of validation records
  SourceLocation location;
};

std::string_view to_string(Objective objective);

}  // namespace hetplan
