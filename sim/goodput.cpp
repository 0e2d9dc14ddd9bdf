#include "sim/goodput.hpp"

#include <map>

#include "sim/estimator.hpp"

namespace hetplan::sim {

std::optional<models::Goodput> plan_goodput(const Scenario& scenario, const Plan& plan,
                                            double tokens_per_s, double step_time_s,
                                            std::vector<std::string>& notes) {
  if (!scenario.reliability) {
    notes.push_back("no goodput: the scenario has no reliability section");
    return std::nullopt;
  }
  if (!(step_time_s > 0)) return std::nullopt;
  const Reliability& reliability = *scenario.reliability;
  std::map<std::string, int> chips;
  for (const PlanStage& stage : plan.stages) chips[stage.island] += stage.tp * stage.dp;
  std::map<std::string, int> nodes;
  for (const auto& [name, count] : chips) {
    const Island& island = *scenario.cluster.find_island(name);
    nodes[name] = (count + island.chips_per_node - 1) / island.chips_per_node;
  }
  const models::FailureRate rate = models::failure_rate(reliability, scenario.cluster, nodes);
  for (const auto& chip : rate.unknown_mtbf)
    notes.push_back("failures of " + chip + " nodes are not counted: its node MTBF is unknown");
  const sim::StepSettings settings = sim::step_settings(scenario.workload, plan);
  models::GoodputInput input;
  input.tokens_per_s = tokens_per_s;
  input.step_time_s = step_time_s;
  input.checkpoint_bytes = models::checkpoint_bytes(scenario.workload.model, settings.training);
  input.failure_rate_per_s = rate.per_s;
  input.write_bandwidth = reliability.checkpoint_write_bandwidth;
  input.read_bandwidth = reliability.checkpoint_read_bandwidth;
  input.restart_time_s = reliability.restart_time;
  input.interval_s = reliability.checkpoint_interval;
  return models::goodput(input);
}

}  // namespace hetplan::sim
