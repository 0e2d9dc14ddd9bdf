// docs/models/mixed-data-parallel.md#step
#include "sim/replica_groups.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

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

GradientRing gradient_ring(const Cluster& cluster, const std::vector<std::string>& islands) {
  GradientRing ring;
  const std::size_t pairs = islands.size() == 2 ? 1 : islands.size();
  for (std::size_t k = 0; k < pairs && islands.size() >= 2; ++k) {
    const std::string& a = islands[k];
    const std::string& b = islands[(k + 1) % islands.size()];
    const GradientPath* path = cluster.gradient_path(a, b);
    if (!path) {
      ring.missing.emplace_back(a, b);
      continue;
    }
    ring.bandwidth = std::min(ring.bandwidth, path->bandwidth);
    ring.latency = std::max(ring.latency, path->latency);
    if (path->kind == GradientPathKind::host_staged) ring.kind = GradientPathKind::host_staged;
    if (path->source == "assumed") ring.assumed.emplace_back(a, b);
  }
  return ring;
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
                                                   const std::vector<int>* micro_batches) {
  MixedDataParallelStep out;
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

  // The declared path between each group and the next (a ring; two groups: one pair).
  std::vector<std::string> islands;
  for (const Plan& plan : groups) islands.push_back(plan.stages.front().island);
  const GradientRing ring = gradient_ring(cluster, islands);
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
    const ReplicaGroupLine line = replica_group_line(cluster, workload, groups[g], options);
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
  } else {
    shares = models::balance_batch(balance, global_batch);
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
        estimate_share(cluster, workload, groups[g], step.micro_batch, step.micro_batches, options);
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
  out.exchange_s = models::cross_group_exchange_s(out.exchange_bytes, nodes, out.path_bandwidth,
                                                  out.path_latency);
  out.step_time_s = out.slowest_group_s + out.exchange_s;
  if (!std::isfinite(out.step_time_s) || out.step_time_s <= 0) {
    reject("the gradient exchange between the groups has no bandwidth");
    return out;
  }
  out.tokens_per_s = static_cast<double>(global_batch) * training.seq_len / out.step_time_s;
  if (training.zero_stage >= 1) {
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

MixedDataParallelStep estimate_replica_groups(const Cluster& cluster, const Workload& workload,
                                              const Plan& plan, const EstimateOptions& options) {
  std::vector<int> shares;
  for (const ReplicaGroupPlan& group : plan.replica_groups) shares.push_back(group.micro_batches);
  return estimate_mixed_data_parallel(cluster, workload, replica_group_plans(plan), options,
                                      &shares);
}

std::vector<TwinInput> replica_group_twin_inputs(const Cluster& cluster, const Workload& workload,
                                                 const Plan& plan,
                                                 const MixedDataParallelStep& step,
                                                 const TwinOptions& options) {
  const std::vector<Plan> groups = replica_group_plans(plan);
  std::vector<TwinInput> out;
  for (std::size_t g = 0; g < groups.size() && g < step.groups.size(); ++g) {
    const ReplicaGroupStep& group = step.groups[g];
    Workload share = workload;
    share.training.global_batch = group.replicas * group.micro_batch * group.micro_batches;
    out.push_back(make_twin_input(cluster, share, groups[g], group.estimate, options));
  }
  return out;
}

ReplicaGroupsSimulation replica_groups_simulation(const Workload& workload,
                                                  const MixedDataParallelStep& step,
                                                  const std::vector<TwinResult>& groups,
                                                  bool together) {
  ReplicaGroupsSimulation out;
  out.together = together;
  for (const TwinResult& result : groups) {
    out.group_step_s.push_back(result.step_time_s);
    out.slowest_group_s = std::max(out.slowest_group_s, result.step_time_s);
  }
  out.exchange_s = step.exchange_s;
  out.step_time_s = out.slowest_group_s + out.exchange_s;
  if (out.step_time_s > 0) {
    out.tokens_per_s = static_cast<double>(workload.training.global_batch) *
                       workload.training.seq_len / out.step_time_s;
  }
  return out;
}

}  // namespace hetplan::sim
