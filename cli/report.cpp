#include "cli/report.hpp"

#include "core/units.hpp"

#include <cmath>
#include <cstdio>

namespace hetplan::cli {
namespace {

std::string gib(double bytes) {
  return fixed(bytes / (1ull << 30), 1) + " GiB";
}

}  // namespace

std::string fixed(double value, int precision) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", precision, value);
  return buffer;
}

std::string tokens_interval_text(const sim::Estimate& estimate, double tokens_per_s) {
  if (!estimate.step_band) return {};
  const sim::Interval i = sim::rate_interval(tokens_per_s, *estimate.step_band);
  return fixed(i.low, 0) + "-" + fixed(i.high, 0);
}

std::string estimate_text(const sim::Estimate& e, const Plan& plan) {
  std::string out;
  out += "plan " + plan.name + ": " + std::to_string(plan.stages.size()) + " stages, " +
         std::to_string(e.chips) + " chips, schedule " + std::string(to_string(plan.schedule));
  if (plan.virtual_stages > 1) out += " x" + std::to_string(plan.virtual_stages) + " chunks";
  out += ", " + std::to_string(e.micro_batches) + " micro-batches of " +
         std::to_string(e.micro_batch) + "\n";
  out += std::string("feasible: ") + (e.feasible ? "yes" : "no") + "\n";
  for (const auto& reason : e.reasons) out += "  reason: " + reason + "\n";
  // Each figure with its 80% interval (docs/models/uncertainty.md).
  auto interval = [&](const sim::Interval& i, double scale, int digits, const char* unit) {
    return "   80%: " + fixed(scale * i.low, digits) + " - " + fixed(scale * i.high, digits) + unit;
  };
  const auto& band = e.step_band;
  out += "step time      " + fixed(e.step_time_s, 3) + " s" +
         (band ? interval(sim::scaled_interval(e.step_time_s, *band), 1, 3, " s") : "") + "\n";
  out += "tokens/s       " + fixed(e.tokens_per_s, 0) +
         (band ? interval(sim::rate_interval(e.tokens_per_s, *band), 1, 0, "") : "") + "\n";
  out += "MFU            " + fixed(100 * e.mfu, 1) + " %" +
         (band ? interval(sim::rate_interval(e.mfu, *band), 100, 1, " %") : "") + "\n";
  out += "evidence       " + std::string(to_string(e.evidence)) +
         (band ? "" : ", interval unknown (a chip's profile states no evidence band)") + "\n";
  out += "bubble         " + fixed(e.bubble_s, 3) + " s (" + fixed(100 * e.bubble_fraction, 1) +
         " %)\n";
  out += "compute        " + fixed(e.compute_s, 3) + " s (bottleneck stage)\n";
  out += "exposed comm   tp " + fixed(e.exposed.tensor_parallel, 3) + " s, pp " +
         fixed(e.exposed.pipeline, 3) + " s, cross-island " + fixed(e.exposed.cross_island, 3) +
         " s, dp " + fixed(e.exposed.data_parallel, 3) + " s" +
         (e.exposed.expert_parallel > 0 ? ", ep " + fixed(e.exposed.expert_parallel, 3) + " s"
                                        : std::string()) +
         "\n";
  out += "optimizer      " + fixed(e.optimizer_s, 3) + " s\n";
  out += "stage  island               layers     tp  dp  fwd+bwd/mb  memory peak / usable\n";
  for (std::size_t i = 0; i < e.stages.size(); ++i) {
    const auto& s = e.stages[i];
    char line[256];
    std::snprintf(line, sizeof line, "%-6zu %-20s %3d-%-5d %3d %3d  %8.1f ms  %s / %s%s", i,
                  s.island.c_str(), s.first_layer, s.first_layer + s.num_layers - 1, s.tp, s.dp,
                  1e3 * s.micro_batch_s,
                  (gib(s.memory.total()) +
                   (e.memory_band ? " (80% up to " + gib(s.memory.total() * e.memory_band->high) + ")"
                                  : std::string()))
                      .c_str(),
                  s.memory_capacity > 0 ? gib(s.memory_usable).c_str() : "unknown",
                  s.fits ? (s.tight ? "  TIGHT" : "") : "  DOES NOT FIT");
    out += line;
    // A mixture's expert parallelism, and its expert tensor parallelism when folded.
    if (i < plan.stages.size()) {
      const PlanStage& ps = plan.stages[i];
      if (ps.ep > 1) out += "  ep " + std::to_string(ps.ep);
      if (expert_tp(ps) != ps.tp)
        out += (ps.ep > 1 ? ", etp " : "  etp ") + std::to_string(expert_tp(ps));
    }
    out += "\n";
  }
  for (const auto& assumption : e.assumptions) out += "  assumption: " + assumption + "\n";
  return out;
}

nlohmann::ordered_json estimate_json(const sim::Estimate& e, const Plan& plan) {
  nlohmann::ordered_json j;
  j["plan"] = plan.name;
  j["feasible"] = e.feasible;
  j["reasons"] = e.reasons;
  j["assumptions"] = e.assumptions;
  j["step_time_s"] = round6(e.step_time_s);
  j["tokens_per_s"] = round6(e.tokens_per_s);
  j["mfu"] = round6(e.mfu);
  // The 80% intervals (docs/models/uncertainty.md); null when a chip states no band.
  j["evidence"] = std::string(to_string(e.evidence));
  auto interval_json = [](const sim::Interval& i) {
    return nlohmann::ordered_json{{"low", round6(i.low)}, {"high", round6(i.high)}};
  };
  if (e.step_band) {
    j["interval_80"] = {{"step_time_s", interval_json(sim::scaled_interval(e.step_time_s, *e.step_band))},
                        {"tokens_per_s", interval_json(sim::rate_interval(e.tokens_per_s, *e.step_band))},
                        {"mfu", interval_json(sim::rate_interval(e.mfu, *e.step_band))}};
  } else {
    j["interval_80"] = nullptr;
  }
  if (e.memory_band) {
    j["memory_band_80"] = {{"low", round6(e.memory_band->low)}, {"high", round6(e.memory_band->high)}};
  } else {
    j["memory_band_80"] = nullptr;
  }
  j["memory_tight"] = e.memory_tight();
  j["model_flops_per_step"] = round6(e.model_flops_per_step);
  j["chips"] = e.chips;
  j["micro_batches"] = e.micro_batches;
  j["micro_batch"] = e.micro_batch;
  j["bubble_s"] = round6(e.bubble_s);
  j["bubble_fraction"] = round6(e.bubble_fraction);
  j["compute_s"] = round6(e.compute_s);
  j["optimizer_s"] = round6(e.optimizer_s);
  j["exposed_communication_s"] = {{"tensor_parallel", round6(e.exposed.tensor_parallel)},
                                  {"pipeline", round6(e.exposed.pipeline)},
                                  {"cross_island", round6(e.exposed.cross_island)},
                                  {"data_parallel", round6(e.exposed.data_parallel)},
                                  {"expert_parallel", round6(e.exposed.expert_parallel)}};
  auto& stages = j["stages"] = nlohmann::ordered_json::array();
  for (const auto& s : e.stages) {
    nlohmann::ordered_json stage;
    stage["island"] = s.island;
    stage["chip"] = s.chip;
    stage["first_layer"] = s.first_layer;
    stage["num_layers"] = s.num_layers;
    stage["tp"] = s.tp;
    stage["dp"] = s.dp;
    const std::size_t at = static_cast<std::size_t>(&s - e.stages.data());
    stage["ep"] = at < plan.stages.size() ? plan.stages[at].ep : 1;
    stage["forward_s"] = round6(s.forward_s);
    stage["backward_s"] = round6(s.backward_s);
    stage["tp_comm_s"] = round6(s.tp_comm_s);
    stage["ep_comm_s"] = round6(s.ep_comm_s);
    stage["p2p_s"] = round6(s.p2p_s);
    stage["micro_batch_s"] = round6(s.micro_batch_s);
    stage["dp_sync_s"] = round6(s.dp_sync_s);
    stage["optimizer_s"] = round6(s.optimizer_s);
    stage["memory_peak_bytes"] = round6(s.memory.total());
    stage["memory_capacity_bytes"] = round6(s.memory_capacity);
    stage["memory_usable_bytes"] = round6(s.memory_usable);
    stage["memory_tight"] = s.tight;
    stage["memory_fits"] = s.fits;
    stage["memory_breakdown_bytes"] = {
        {"weights", round6(s.memory.weights)},     {"gradients", round6(s.memory.gradients)},
        {"optimizer", round6(s.memory.optimizer)}, {"activations", round6(s.memory.activations)},
        {"head", round6(s.memory.head)},           {"transient", round6(s.memory.transient)},
        {"optimizer_step", round6(s.memory.optimizer_step_extra())}};
    stages.push_back(std::move(stage));
  }
  return j;
}

std::string replica_groups_text(const sim::MixedDataParallelStep& step, const Plan& plan) {
  std::string islands;
  long long chips = 0;
  for (const auto& group : plan.replica_groups) {
    islands += (islands.empty() ? "" : ", ") + group.stages.front().island;
    for (const auto& stage : group.stages) chips += static_cast<long long>(stage.tp) * stage.dp;
  }
  std::string out = "plan " + plan.name + ": " + std::to_string(plan.replica_groups.size()) +
                    " replica groups on " + islands + ", " + std::to_string(chips) + " chips\n";
  out += std::string("feasible: ") + (step.feasible ? "yes" : "no") + "\n";
  for (const auto& reason : step.reasons) out += "  reason: " + reason + "\n";
  if (!step.feasible) return out;
  out += "step time      " + fixed(step.step_time_s, 3) + " s (slowest group " +
         fixed(step.slowest_group_s, 3) + " s + gradient exchange between groups " +
         fixed(step.exchange_s, 3) + " s)\n";
  out += "tokens/s       " + fixed(step.tokens_per_s, 0) + "\n";
  out += "exchange       " +
         (step.exchange.algorithm == GradientExchange::parameter_server
              ? "parameter server on " +
                    step.groups[static_cast<std::size_t>(step.exchange.server)].island
              : std::string("ring of the groups")) +
         (step.exchange.zero_across_groups
              ? ", ZeRO sharded across the groups (reduce-scatter, then the weights gathered)"
              : "") +
         "\n";
  out += "flag           " + sim::cross_vendor_flag(step.path_kind) + ", " +
         fixed(step.path_bandwidth * 8 / 1e9, 1) + " Gbps per node, " +
         fixed(step.path_latency * 1e6, 1) + " us; " + gib(step.exchange_bytes) +
         (step.exchange.zero_across_groups ? " of gradients and weights" : " of gradients") +
         " exchanged, exposed\n";
  out += "group  island               replicas  stages  tp  micro-batches  samples  weight     step\n";
  for (std::size_t g = 0; g < step.groups.size(); ++g) {
    const auto& group = step.groups[g];
    char line[256];
    std::snprintf(line, sizeof line, "%-6zu %-20s %8d %7zu %3d %14d %8lld  %-9.7g  %.3f s\n", g,
                  group.island.c_str(), group.replicas, group.estimate.stages.size(),
                  group.estimate.stages.empty() ? 0 : group.estimate.stages.front().tp,
                  group.micro_batches, group.samples, group.gradient_weight,
                  group.estimate.step_time_s);
    out += line;
  }
  for (const auto& assumption : step.assumptions) out += "  assumption: " + assumption + "\n";
  for (const auto& warning : step.warnings) out += "  warning: " + warning + "\n";
  return out;
}

nlohmann::ordered_json replica_groups_json(const sim::MixedDataParallelStep& step,
                                           const Plan& plan) {
  nlohmann::ordered_json j;
  j["plan"] = plan.name;
  j["feasible"] = step.feasible;
  j["reasons"] = step.reasons;
  j["assumptions"] = step.assumptions;
  j["warnings"] = step.warnings;
  j["flag"] = sim::cross_vendor_flag(step.path_kind);
  j["step_time_s"] = round6(step.step_time_s);
  j["tokens_per_s"] = round6(step.tokens_per_s);
  j["chips"] = step.chips;
  j["slowest_group_s"] = round6(step.slowest_group_s);
  j["cross_vendor_exchange_s"] = round6(step.exchange_s);
  j["exchange_bytes"] = round6(step.exchange_bytes);
  j["gradient_exchange"] = std::string(to_string(step.exchange.algorithm));
  if (step.exchange.algorithm == GradientExchange::parameter_server)
    j["parameter_server"] = step.groups[static_cast<std::size_t>(step.exchange.server)].island;
  j["zero_across_groups"] = step.exchange.zero_across_groups;
  j["zero3_gather_s"] = round6(step.zero3_gather_s);
  j["path"] = {{"kind", step.path_kind == GradientPathKind::host_staged ? "host-staged"
                                                                         : "device-rdma"},
               {"bandwidth_bytes_per_s", round6(step.path_bandwidth)},
               {"latency_s", round6(step.path_latency)}};
  auto& groups = j["replica_groups"] = nlohmann::ordered_json::array();
  const std::vector<Plan> group_plans = sim::replica_group_plans(plan);
  for (std::size_t g = 0; g < step.groups.size() && g < group_plans.size(); ++g) {
    const auto& group = step.groups[g];
    groups.push_back({{"island", group.island},
                      {"replicas", group.replicas},
                      {"micro_batch", group.micro_batch},
                      {"micro_batches", group.micro_batches},
                      {"samples", group.samples},
                      {"gradient_weight", round6(group.gradient_weight)},
                      {"step_time_s", round6(group.estimate.step_time_s)},
                      {"estimate", estimate_json(group.estimate, group_plans[g])}});
  }
  return j;
}

std::string replica_groups_simulation_text(const sim::ReplicaGroupsSimulation& simulated,
                                           const sim::MixedDataParallelStep& step,
                                           const Plan& plan) {
  std::string out = "plan " + plan.name + ": " + std::to_string(plan.replica_groups.size()) +
                    " replica groups, " + std::to_string(step.chips) + " chips (" +
                    sim::cross_vendor_flag(step.path_kind) + ")\n";
  out += "simulated step " + fixed(simulated.step_time_s, 3) + " s (slowest group " +
         fixed(simulated.slowest_group_s, 3) + " s + exchange between groups " +
         fixed(simulated.exchange_s, 3) + " s, " + std::string(to_string(plan.gradient_exchange)) +
         ")\n";
  out += "analytic step  " + fixed(step.step_time_s, 3) + " s (exchange " +
         fixed(step.exchange_s, 3) + " s)\n";
  out += "tokens/s       " + fixed(simulated.tokens_per_s, 0) + " simulated, " +
         fixed(step.tokens_per_s, 0) + " analytic\n";
  out += "group  island               analytic s  simulated s\n";
  for (std::size_t g = 0; g < step.groups.size() && g < simulated.group_step_s.size(); ++g) {
    char line[256];
    std::snprintf(line, sizeof line, "%-6zu %-20s %10.3f  %11.3f\n", g,
                  step.groups[g].island.c_str(), step.groups[g].estimate.step_time_s,
                  simulated.group_step_s[g]);
    out += line;
  }
  if (!simulated.exchange_links.empty()) {
    out += "most loaded links of the exchange (busy over the exchange)\n";
    for (std::size_t k = 0; k < simulated.exchange_links.size() && k < 5; ++k) {
      const sim::TwinLinkLoad& link = simulated.exchange_links[k];
      out += "  " + link.name + ": " + fixed(link.bytes / 1e9, 2) + " GB, " +
             fixed(100 * link.utilization, 0) + "%\n";
    }
  }
  return out;
}

nlohmann::ordered_json replica_groups_simulation_json(const sim::ReplicaGroupsSimulation& simulated,
                                                      const sim::MixedDataParallelStep& step,
                                                      const Plan& plan) {
  nlohmann::ordered_json j;
  j["plan"] = plan.name;
  j["flag"] = sim::cross_vendor_flag(step.path_kind);
  j["step_time_s"] = round6(simulated.step_time_s);
  j["tokens_per_s"] = round6(simulated.tokens_per_s);
  j["slowest_group_s"] = round6(simulated.slowest_group_s);
  j["cross_vendor_exchange_s"] = round6(simulated.exchange_s);
  j["gradient_exchange"] = std::string(to_string(plan.gradient_exchange));
  j["analytic_step_time_s"] = round6(step.step_time_s);
  j["analytic_exchange_s"] = round6(step.exchange_s);
  auto& groups = j["replica_groups"] = nlohmann::ordered_json::array();
  for (std::size_t g = 0; g < step.groups.size() && g < simulated.group_step_s.size(); ++g) {
    groups.push_back({{"island", step.groups[g].island},
                      {"analytic_step_time_s", round6(step.groups[g].estimate.step_time_s)},
                      {"simulated_step_time_s", round6(simulated.group_step_s[g])}});
  }
  auto& links = j["exchange_links"] = nlohmann::ordered_json::array();
  for (const sim::TwinLinkLoad& link : simulated.exchange_links) {
    links.push_back({{"name", link.name},
                     {"bytes", round6(link.bytes)},
                     {"busy_s", round6(link.busy_s)},
                     {"utilization", round6(link.utilization)}});
  }
  return j;
}

}  // namespace hetplan::cli
