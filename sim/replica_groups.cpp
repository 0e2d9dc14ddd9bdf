// docs/models/mixed-data-parallel.md#step
#include "sim/replica_groups.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "models/batch_balance.hpp"

namespace hetplan::sim {
namespace {

// The group's plan estimated alone with `micro_batches` micro-batches per replica: the global
// batch is what its replicas take.
Estimate estimate_share(const Cluster& cluster, Workload workload, const Plan& plan,
                        int micro_batch, int micro_batches, const EstimateOptions& options) {
  workload.training.global_batch = plan.stages.front().dp * micro_batch * micro_batches;
  return estimate_step(cluster, workload, plan, options);
}

std::string first_reason(const Estimate& estimate) {
  return estimate.reasons.empty() ? std::string("it cannot train the model")
                                  : estimate.reasons.front();
}

}  // namespace

GradientPaths gradient_paths(const Cluster& cluster, const std::vector<std::string>& islands,
                             const GroupExchange& exchange) {
  GradientPaths out;
  const int n = static_cast<int>(islands.size());
  if (n < 2) return out;
  if (exchange.algorithm == GradientExchange::parameter_server) {
    for (int g = 0; g < n; ++g)
      if (g != exchange.server) out.pairs.emplace_back(exchange.server, g);
  } else {
    for (int g = 0; g < (n == 2 ? 1 : n); ++g) out.pairs.emplace_back(g, (g + 1) % n);
  }
  for (const auto& [ga, gb] : out.pairs) {
    const std::string& a = islands[static_cast<std::size_t>(ga)];
    const std::string& b = islands[static_cast<std::size_t>(gb)];
    const GradientPath* path = cluster.gradient_path(a, b);
    if (!path) {
      out.missing.emplace_back(a, b);
      continue;
    }
    out.bandwidth = std::min(out.bandwidth, path->bandwidth);
    out.server_port = std::max(out.server_port, path->bandwidth);
    out.latency = std::max(out.latency, path->latency);
    if (path->kind == GradientPathKind::host_staged) out.kind = GradientPathKind::host_staged;
    if (path->source == "assumed") out.assumed.emplace_back(a, b);
  }
  return out;
}

ReplicaGroupLine replica_group_line(const Cluster& cluster, const Workload& workload,
                                    const Plan& plan, const EstimateOptions& options) {
  ReplicaGroupLine line;
  if (plan.stages.empty()) {
    line.reason = "it has no stages";
    return line;
  }
  const StepSettings settings = step_settings(workload, plan);
  line.island = plan.stages.front().island;
  line.dtype = settings.training.dtype;
  line.group.replicas = plan.stages.front().dp;
  line.group.micro_batch = settings.micro_batch;
  const int k =
      plan.schedule == Schedule::interleaved ? static_cast<int>(plan.stages.size()) : 1;
  line.group.multiple = k;
  const Estimate one = estimate_share(cluster, workload, plan, line.group.micro_batch, k, options);
  if (!one.feasible) {
    line.reason = first_reason(one);
    return line;
  }
  const Estimate two =
      estimate_share(cluster, workload, plan, line.group.micro_batch, 2 * k, options);
  line.group.per_micro_batch_s = (two.step_time_s - one.step_time_s) / k;
  line.group.fixed_s = one.step_time_s - k * line.group.per_micro_batch_s;
  const Island* island = cluster.find_island(line.island);
  if (!island) {
    line.reason = "the cluster has no island " + line.island;
    return line;
  }
  for (const PlanStage& stage : plan.stages) line.chips += stage.tp * stage.dp;
  line.nodes = (line.chips + island->chips_per_node - 1) / island->chips_per_node;
  line.feasible = true;
  return line;
}

MixedDataParallelStep estimate_mixed_data_parallel(const Cluster& cluster, const Workload& workload,
                                                   const std::vector<Plan>& groups,
                                                   const EstimateOptions& options,
                                                   const std::vector<int>* micro_batches,
                                                   const GroupExchange& exchange) {
  MixedDataParallelStep out;
  out.exchange = exchange;
  auto reject = [&](std::string reason) { out.reasons.push_back(std::move(reason)); };
  if (groups.size() < 2) {
    reject("replica groups on different islands need at least two groups");
    return out;
  }

  // Structure: each group a pipeline on one island, islands distinct, one dtype.
  std::vector<StepSettings> settings;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const Plan& plan = groups[g];
    const std::string name = "replica group " + std::to_string(g);
    if (plan.stages.empty()) {
      reject(name + " has no stages");
      return out;
    }
    const std::string& island = plan.stages.front().island;
    for (const PlanStage& stage : plan.stages) {
      if (stage.island != island) {
        reject(name + " spans islands " + island + " and " + stage.island +
               "; each replica group runs on one chip type");
        return out;
      }
    }
    if (!cluster.find_island(island)) {
      reject(name + " names island " + island + ", which the cluster does not have");
      return out;
    }
    for (std::size_t h = 0; h < g; ++h) {
      if (groups[h].stages.front().island == island) {
        reject("replica groups " + std::to_string(h) + " and " + std::to_string(g) +
               " are both on island " + island + "; replicas on one island are one group");
        return out;
      }
    }
    settings.push_back(step_settings(workload, plan));
    if (settings[g].training.dtype != settings.front().training.dtype) {
      reject(name + " trains in " + std::string(to_string(settings[g].training.dtype)) +
             " and replica group 0 in " + std::string(to_string(settings.front().training.dtype)) +
             "; replicas that exchange gradients share one dtype and loss-scaling regime");
      return out;
    }
  }

  // The declared paths the exchange uses (a ring: each group with the next; a parameter
  // server: each other group with it).
  if (exchange.algorithm == GradientExchange::parameter_server &&
      (exchange.server < 0 || exchange.server >= static_cast<int>(groups.size()))) {
    reject("the parameter server is not one of the replica groups");
    return out;
  }
  // ZeRO across groups: every group shards over all replicas, at one ZeRO stage.
  std::vector<Plan> sharded;
  if (exchange.zero_across_groups) {
    if (exchange.algorithm == GradientExchange::parameter_server) {
      reject("ZeRO across groups shards the state over the replicas; a parameter server holds "
             "it whole");
      return out;
    }
    int replicas = 0;
    for (const Plan& plan : groups) replicas += plan.stages.front().dp;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (settings[g].training.zero_stage < 1 ||
          settings[g].training.zero_stage != settings.front().training.zero_stage) {
        reject("ZeRO across groups needs one ZeRO stage of at least 1 in every group; replica "
               "group " + std::to_string(g) + " has " +
               std::to_string(settings[g].training.zero_stage) + " and group 0 " +
               std::to_string(settings.front().training.zero_stage));
        return out;
      }
      sharded.push_back(groups[g]);
      sharded.back().zero_shards = replicas;
    }
  }
  const std::vector<Plan>& members = exchange.zero_across_groups ? sharded : groups;
  std::vector<std::string> islands;
  for (const Plan& plan : groups) islands.push_back(plan.stages.front().island);
  const GradientPaths ring = gradient_paths(cluster, islands, exchange);
  for (const auto& [a, b] : ring.missing) {
    reject("the cluster declares no gradient path between islands " + a + " and " + b +
           " (gradient_paths); replicas on different chip types cannot exchange gradients");
  }
  if (!out.reasons.empty()) return out;
  for (const auto& [a, b] : ring.assumed)
    out.assumptions.push_back("the gradient path between " + a + " and " + b + " is assumed");
  out.path_kind = ring.kind;
  out.path_bandwidth = ring.bandwidth;
  out.path_latency = ring.latency;

  // Each group's step as a line in its micro-batch count, from two estimates.
  std::vector<models::ReplicaGroup> balance;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const ReplicaGroupLine line = replica_group_line(cluster, workload, members[g], options);
    if (!line.feasible) {
      reject("replica group " + std::to_string(g) + " on " + line.island +
             " cannot train the model: " + line.reason);
      continue;
    }
    ReplicaGroupStep step;
    step.island = line.island;
    step.replicas = line.group.replicas;
    step.micro_batch = line.group.micro_batch;
    step.granularity = line.group.multiple;
    step.fixed_s = line.group.fixed_s;
    step.per_micro_batch_s = line.group.per_micro_batch_s;
    step.chips = line.chips;
    step.nodes = line.nodes;
    out.chips += step.chips;
    balance.push_back(line.group);
    out.groups.push_back(std::move(step));
  }
  if (!out.reasons.empty()) return out;

  const int global_batch = workload.training.global_batch;
  models::BatchShares shares;
  if (micro_batches) {
    long long samples = 0;
    for (std::size_t g = 0; g < balance.size() && g < micro_batches->size(); ++g)
      samples += static_cast<long long>(balance[g].replicas) * balance[g].micro_batch *
                 (*micro_batches)[g];
    if (micro_batches->size() != balance.size() || samples != global_batch) {
      reject("the groups' shares (" + std::to_string(samples) +
             " sequences) do not make the global batch of " + std::to_string(global_batch));
      return out;
    }
    for (std::size_t g = 0; g < balance.size(); ++g) {
      if ((*micro_batches)[g] % balance[g].multiple != 0) {
        reject("replica group " + std::to_string(g) + " takes " +
               std::to_string((*micro_batches)[g]) +
               " micro-batches; the interleaved schedule needs a multiple of its " +
               std::to_string(balance[g].multiple) + " stages");
        return out;
      }
    }
    shares.feasible = true;
    shares.micro_batches = *micro_batches;
  } else if (exchange.zero_across_groups && settings.front().training.zero_stage >= 3) {
    // ZeRO-3's per-layer gathers are collectives over every replica: every group runs the same
    // micro-batches, in lockstep.
    long long per_round = 0;
    for (const models::ReplicaGroup& g : balance)
      per_round += static_cast<long long>(g.replicas) * g.micro_batch;
    const long long m = per_round > 0 ? global_batch / per_round : 0;
    bool whole = m > 0 && m * per_round == global_batch;
    for (const models::ReplicaGroup& g : balance) whole = whole && m % g.multiple == 0;
    shares.feasible = whole;
    shares.micro_batches.assign(balance.size(), static_cast<int>(m));
  } else {
    shares = models::balance_batch(balance, global_batch);
  }
  if (shares.feasible && exchange.zero_across_groups &&
      settings.front().training.zero_stage >= 3 &&
      std::adjacent_find(shares.micro_batches.begin(), shares.micro_batches.end(),
                         std::not_equal_to<>()) != shares.micro_batches.end()) {
    reject("ZeRO-3 across groups gathers every layer's weights from all replicas in every "
           "micro-batch: every group runs the same number of micro-batches");
    return out;
  }
  if (!shares.feasible) {
    reject("no shares of the global batch (" + std::to_string(global_batch) +
           " sequences) add up over the groups' replicas and micro-batches");
    return out;
  }
  const std::vector<double> weights = models::gradient_weights(balance, shares.micro_batches);

  // Each group estimated again at its share: the step is the slowest one's, plus the exchange.
  std::size_t replica = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    ReplicaGroupStep& step = out.groups[g];
    step.micro_batches = shares.micro_batches[g];
    step.samples = static_cast<long long>(step.replicas) * step.micro_batch * step.micro_batches;
    step.gradient_weight = weights[replica];
    replica += static_cast<std::size_t>(step.replicas);
    step.estimate =
        estimate_share(cluster, workload, members[g], step.micro_batch, step.micro_batches, options);
    if (!step.estimate.feasible) {
      reject("replica group " + std::to_string(g) + " on " + step.island + " cannot take " +
             std::to_string(step.micro_batches) + " micro-batches: " + first_reason(step.estimate));
      return out;
    }
    out.slowest_group_s = std::max(out.slowest_group_s, step.estimate.step_time_s);
  }

  // The model's gradients, in the precision the replicas reduce them in (the first collective
  // of a data-parallel sync: the all-reduce or the reduce-scatter).
  const TrainingSettings& training = settings.front().training;
  out.exchange_bytes =
      dp_sync_collectives(training, workload.model.total_parameters()).items[0].bytes;
  std::vector<int> nodes;
  for (const ReplicaGroupStep& step : out.groups) nodes.push_back(step.nodes);
  if (exchange.zero_across_groups) {
    // A reduce-scatter of the gradients over the groups, and after the optimizer step an
    // all-gather of the updated weights (ZeRO-3: the next forward pass gathers them): each half
    // of a ring all-reduce of its bytes.
    auto half = [&](double bytes) {
      return models::cross_group_exchange_s(bytes, nodes, out.path_bandwidth, out.path_latency) / 2;
    };
    const double weight_bytes = workload.model.total_parameters() *
                                bytes_per_element(storage_dtype(training.dtype));
    out.exchange_s = half(out.exchange_bytes);
    if (training.zero_stage < 3) {
      out.exchange_s += half(weight_bytes);
      out.exchange_bytes += weight_bytes;
    } else {
      // Every micro-batch gathers the weights before its forward and again before its backward
      // pass, over the path; the slowest group's compute of the micro-batch hides what it can.
      double slowest_per_micro_batch = 0;
      for (const ReplicaGroupStep& step : out.groups)
        slowest_per_micro_batch = std::max(slowest_per_micro_batch, step.per_micro_batch_s);
      const int m = out.groups.front().micro_batches;
      out.zero3_gather_s = m * std::max(0.0, 2 * half(weight_bytes) - slowest_per_micro_batch);
      // Lockstep: each micro-batch at the slowest group's pace.
      double fixed = 0;
      for (const ReplicaGroupStep& step : out.groups) fixed = std::max(fixed, step.fixed_s);
      out.slowest_group_s = std::max(out.slowest_group_s, fixed + m * slowest_per_micro_batch);
    }
    out.warnings.push_back(
        "ZeRO shards across chip types: ZeRO saves memory, it does not balance chips of "
        "different speeds; every shard's update and the weights' all-gather wait for the "
        "slowest group, over the " +
        std::string(out.path_kind == GradientPathKind::host_staged ? "host-staged" : "device RDMA") +
        " path");
    if (training.zero_stage >= 3) {
      out.warnings.push_back(
          "ZeRO-3 across groups gathers every layer's weights from every replica over the "
          "gradient path in every micro-batch, in lockstep: each micro-batch runs at the slowest "
          "group's pace");
    }
  } else {
    out.exchange_s =
        exchange.algorithm == GradientExchange::parameter_server
            ? models::parameter_server_exchange_s(out.exchange_bytes, nodes, out.path_bandwidth,
                                                  ring.server_port, out.path_latency)
            : models::cross_group_exchange_s(out.exchange_bytes, nodes, out.path_bandwidth,
                                             out.path_latency);
  }
  if (exchange.algorithm == GradientExchange::parameter_server) {
    out.assumptions.push_back(
        "the gradients meet at a parameter server on " + out.groups[static_cast<std::size_t>(exchange.server)].island +
        "'s nodes, as the plan asks: every other group's partial sum crosses its port at once, "
        "which a ring of the groups would spread over all of them");
  }
  out.step_time_s = out.slowest_group_s + out.zero3_gather_s + out.exchange_s;
  if (!std::isfinite(out.step_time_s) || out.step_time_s <= 0) {
    reject("the gradient exchange between the groups has no bandwidth");
    return out;
  }
  out.tokens_per_s = static_cast<double>(global_batch) * training.seq_len / out.step_time_s;
  if (training.zero_stage >= 1 && !exchange.zero_across_groups) {
    out.assumptions.push_back(
        "ZeRO shards optimizer state inside each replica group only; every group holds the "
        "whole optimizer state once");
  }
  out.feasible = true;
  return out;
}

std::string cross_vendor_flag(GradientPathKind kind) {
  return std::string("cross-vendor all-reduce over a ") +
         (kind == GradientPathKind::host_staged ? "host-staged" : "device RDMA") + " path";
}

std::vector<Plan> replica_group_plans(const Plan& plan) {
  std::vector<Plan> out;
  for (std::size_t g = 0; g < plan.replica_groups.size(); ++g) {
    const ReplicaGroupPlan& own = plan.replica_groups[g];
    Plan group = plan;
    group.name = plan.name + "-group" + std::to_string(g);
    group.replica_groups.clear();
    group.stages = own.stages;
    if (own.micro_batch) group.micro_batch = own.micro_batch;
    if (own.recompute) {
      group.recompute = own.recompute;
      group.recompute_layers = own.recompute_layers;
    }
    if (own.zero_stage) group.zero_stage = own.zero_stage;
    if (own.schedule) group.schedule = *own.schedule;
    if (own.virtual_stages) group.virtual_stages = *own.virtual_stages;
    out.push_back(std::move(group));
  }
  return out;
}

GroupExchange group_exchange(const Plan& plan) {
  GroupExchange out;
  out.algorithm = plan.gradient_exchange;
  out.zero_across_groups = plan.zero_across_groups;
  for (std::size_t g = 0; g < plan.replica_groups.size(); ++g) {
    if (plan.replica_groups[g].stages.front().island == plan.parameter_server)
      out.server = static_cast<int>(g);
  }
  return out;
}

MixedDataParallelStep estimate_replica_groups(const Cluster& cluster, const Workload& workload,
                                              const Plan& plan, const EstimateOptions& options) {
  std::vector<int> shares;
  for (const ReplicaGroupPlan& group : plan.replica_groups) shares.push_back(group.micro_batches);
  return estimate_mixed_data_parallel(cluster, workload, replica_group_plans(plan), options,
                                      &shares, group_exchange(plan));
}

TwinPoolInput replica_group_twin_pool(const Cluster& cluster, const Workload& workload,
                                      const Plan& plan, const MixedDataParallelStep& step,
                                      const TwinOptions& options) {
  const std::vector<Plan> groups = replica_group_plans(plan);
  TwinPoolInput out;
  std::vector<std::string> islands;
  for (std::size_t g = 0; g < groups.size() && g < step.groups.size(); ++g) {
    const ReplicaGroupStep& group = step.groups[g];
    Workload share = workload;
    share.training.global_batch = group.replicas * group.micro_batch * group.micro_batches;
    out.jobs.push_back(make_twin_input(cluster, share, groups[g], group.estimate, options));
    islands.push_back(group.island);
  }
  TwinGradientExchange& exchange = out.exchange.emplace();
  exchange.parameter_server = step.exchange.algorithm == GradientExchange::parameter_server;
  exchange.server = step.exchange.server;
  // A ring sends 2 (G - 1) / G of its bytes; ZeRO across groups' reduce-scatter and all-gather
  // each half of that of theirs.
  exchange.bytes = step.exchange.zero_across_groups ? step.exchange_bytes / 2 : step.exchange_bytes;
  for (const auto& [a, b] : gradient_paths(cluster, islands, step.exchange).pairs) {
    const Island* ia = cluster.find_island(islands[static_cast<std::size_t>(a)]);
    const Island* ib = cluster.find_island(islands[static_cast<std::size_t>(b)]);
    const GradientPath* path = cluster.gradient_path(ia->name, ib->name);
    if (!path) continue;  // estimate_mixed_data_parallel has refused such groups
    const bool fabric = path->kind == GradientPathKind::device_rdma;
    exchange.paths.push_back({a, b, path->bandwidth, path->latency, fabric});
    if (!fabric || ia->zone == ib->zone) continue;
    if (const ZoneLink* link = cluster.zone_link(ia->zone, ib->zone))
      exchange.zone_links.push_back({link->zone_a, link->zone_b, link->bandwidth, link->latency});
  }
  return out;
}

ReplicaGroupsSimulation replica_groups_simulation(const Workload& workload,
                                                  const MixedDataParallelStep& step,
                                                  const TwinPoolResult& simulated) {
  ReplicaGroupsSimulation out;
  for (const TwinResult& result : simulated.jobs) {
    out.group_step_s.push_back(result.step_time_s);
    out.slowest_group_s = std::max(out.slowest_group_s, result.step_time_s);
  }
  out.step_time_s = out.slowest_group_s;
  if (simulated.exchange) {
    out.exchange_s = simulated.exchange->end_s - simulated.exchange->start_s;
    out.step_time_s = simulated.exchange->end_s;
    out.exchange_links = simulated.exchange->links;
  }
  out.step_time_s += step.zero3_gather_s;
  if (out.step_time_s > 0) {
    out.tokens_per_s = static_cast<double>(workload.training.global_batch) *
                       workload.training.seq_len / out.step_time_s;
  }
  return out;
}

}  // namespace hetplan::sim
