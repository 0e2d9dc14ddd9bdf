#include "sim/goodput.hpp"

#include <cstdio>
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

SimulatedStep simulated_step(const Scenario& scenario, const Plan& plan, const Estimate& estimate,
                             const TwinInput& input, const TwinResult& result) {
  SimulatedStep out;
  out.result = result;
  out.seed = input.seed;
  for (const PlanStage& stage : plan.stages) out.stage_islands.push_back(stage.island);
  constexpr std::size_t kListed = 8;
  for (std::size_t k = 0; k < input.stragglers.size() && k < kListed; ++k) {
    const TwinStraggler& slow = input.stragglers[k];
    char factor[32];
    std::snprintf(factor, sizeof factor, "%.2f", slow.slowdown);
    out.notes.push_back("straggler: " + input.islands[static_cast<std::size_t>(slow.island)].name +
                        " node " + std::to_string(slow.node) + " runs " + factor + "x slower");
  }
  if (input.stragglers.size() > kListed) {
    out.notes.push_back("and " + std::to_string(input.stragglers.size() - kListed) +
                        " more stragglers");
  }
  out.analytic_step_time_s = estimate.step_time_s;
  out.analytic_tokens_per_s = estimate.tokens_per_s;
  out.goodput = plan_goodput(scenario, plan, result.tokens_per_s, result.step_time_s, out.notes);
  return out;
}

}  // namespace hetplan::sim
