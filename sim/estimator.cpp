#include "sim/estimator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "models/collectives.hpp"
#include "models/transformer_ops.hpp"

namespace hetplan::sim {
namespace {

using models::Collective;
using models::CollectiveGroup;
using models::LinkLevel;

std::string gib(double bytes) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << bytes / (1ull << 30) << " GiB";
  return out.str();
}

// The links one chip of an island sees, from its profile and the island's NICs.
struct IslandLinks {
  LinkLevel intra;        // within the chip's fast group
  LinkLevel intra_cross;  // between groups of one node (falls back to intra)
  LinkLevel inter;        // per chip, across nodes under one leaf
  double nic_per_chip = 0;
  int chips_per_node = 1;
  int group_size = 1;
};

IslandLinks island_links(const Cluster& cluster, const Island& island,
                         const EstimateOptions& options, std::vector<std::string>& assumptions) {
  const ChipProfile& chip = cluster.chip_of(island);
  const EfficiencyModel& eff = chip.efficiency;
  IslandLinks links;
  links.chips_per_node = island.chips_per_node;
  links.group_size = std::min(chip.intra_node.group_size, island.chips_per_node);
  auto note = [&](const std::string& what) {
    assumptions.push_back("chip " + chip.id + ": " + what);
  };
  const double intra_eff = eff.intra_bus_efficiency.value_or(options.intra_bus_efficiency_default);
  auto prior = [](double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", value);
    return std::string(text);
  };
  if (!eff.intra_bus_efficiency) {
    note("intra-node collective efficiency unknown, prior " + prior(intra_eff) + " used");
  }
  const double net_eff =
      eff.network_bus_efficiency.value_or(options.network_bus_efficiency_default);
  if (!eff.network_bus_efficiency) {
    note("network collective efficiency unknown, prior " + prior(net_eff) + " used");
  }
  links.nic_per_chip = island.nic_count * island.nic_speed / island.chips_per_node;
  links.inter = {links.nic_per_chip * net_eff,
                 eff.network_latency.value_or(options.network_latency_default)};
  double intra_bw = 0;
  if (chip.intra_node.bandwidth) {
    intra_bw = *chip.intra_node.bandwidth;
  } else {
    note("intra-node bandwidth unknown; the node's NIC bandwidth per chip is used");
    intra_bw = links.nic_per_chip;
  }
  links.intra = {intra_bw * intra_eff, eff.intra_latency.value_or(options.intra_latency_default)};
  links.intra_cross = links.intra;
  if (links.group_size < island.chips_per_node) {
    if (chip.intra_node.cross_group_bandwidth) {
      links.intra_cross.bus_bandwidth = *chip.intra_node.cross_group_bandwidth * intra_eff;
    } else {
      note("bandwidth between intra-node groups unknown; the NIC bandwidth per chip is used");
      links.intra_cross.bus_bandwidth = links.nic_per_chip * net_eff;
    }
  }
  return links;
}

// A group of `ranks` consecutive chips every `stride` chips (tp groups have stride 1; dp groups
// stride tp), laid out node by node.
CollectiveGroup make_group(const IslandLinks& links, int ranks, int stride, double inter_scale) {
  CollectiveGroup group;
  group.ranks = ranks;
  const int per_node = std::max(1, links.chips_per_node / std::max(1, stride));
  group.ranks_per_node = std::min(ranks, per_node);
  const int span = group.ranks_per_node * stride;  // chips of a node the group touches
  group.intra = span <= links.group_size ? links.intra : links.intra_cross;
  group.inter = links.inter;
  group.inter.bus_bandwidth *= inter_scale;
  return group;
}

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

}  // namespace

Estimate estimate_step(const Cluster& cluster, const Workload& workload, const Plan& plan,
                       const EstimateOptions& options) {
  Estimate out;
  const ModelShape& model = workload.model;
  TrainingSettings training = workload.training;
  if (plan.recompute) training.recompute = *plan.recompute;
  if (plan.zero_stage) training.zero_stage = *plan.zero_stage;
  const int micro_batch = plan.micro_batch.value_or(training.micro_batch);
  out.micro_batch = micro_batch;
  const int p = static_cast<int>(plan.stages.size());
  const int v = plan.virtual_stages;
  const int dp = plan.stages.front().dp;
  auto reject = [&](std::string reason) {
    out.feasible = false;
    out.reasons.push_back(std::move(reason));
  };

  // Structure: one data-parallel degree, a whole number of micro-batches.
  for (const auto& stage : plan.stages) {
    if (stage.dp != dp) {
      reject("stages have different data-parallel degrees (" + std::to_string(dp) + " and " +
             std::to_string(stage.dp) + "); every stage of one pipeline needs the same dp");
      break;
    }
  }
  if (training.global_batch % (dp * micro_batch) != 0) {
    reject("global batch " + std::to_string(training.global_batch) +
           " is not a multiple of dp x micro-batch (" + std::to_string(dp * micro_batch) + ")");
  }
  const int m = std::max(1, training.global_batch / (dp * micro_batch));
  out.micro_batches = m;
  if (plan.schedule == Schedule::interleaved && m % p != 0) {
    reject("the interleaved schedule needs the micro-batch count (" + std::to_string(m) +
           ") to be a multiple of the pipeline stages (" + std::to_string(p) + ")");
  }

  // Capacity of each island.
  std::map<std::string, int> used;
  for (const auto& stage : plan.stages) used[stage.island] += stage.tp * stage.dp;
  for (const auto& [name, chips] : used) {
    const Island& island = *cluster.find_island(name);
    if (chips > island.chip_count()) {
      reject("island " + name + " has " + std::to_string(island.chip_count()) +
             " chips; the plan places " + std::to_string(chips) + " there");
    }
  }

  const double e = bytes_per_element(training.dtype);
  const double tokens = static_cast<double>(micro_batch) * training.seq_len;
  std::set<std::string> seen_assumptions;
  auto assume = [&](const std::vector<std::string>& notes) {
    for (const auto& note : notes) {
      if (seen_assumptions.insert(note).second) out.assumptions.push_back(note);
    }
  };

  double peak_sum = 0;
  std::vector<IslandLinks> stage_links;  // the links each stage's chips see, by stage
  stage_links.reserve(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) {
    const PlanStage& stage = plan.stages[static_cast<std::size_t>(i)];
    const Island& island = *cluster.find_island(stage.island);
    const ChipProfile& chip = cluster.chip_of(island);
    StageEstimate se;
    se.island = island.name;
    se.chip = chip.id;
    se.first_layer = stage.first_layer;
    se.num_layers = stage.num_layers;
    se.tp = stage.tp;
    se.dp = stage.dp;
    const std::string where = "stage " + std::to_string(i) + " (" + island.name + ")";
    out.chips += stage.tp * stage.dp;

    if (chip.role == ChipRole::inference) {
      reject(where + ": " + chip.vendor + " " + chip.model + " is an inference-only chip");
    }
    if (model.heads % stage.tp != 0 ||
        (model.kv_heads % stage.tp != 0 && stage.tp % model.kv_heads != 0)) {
      reject(where + ": tp " + std::to_string(stage.tp) + " does not divide the " +
             std::to_string(model.heads) + " attention heads (" + std::to_string(model.kv_heads) +
             " key/value heads)");
    }
    if (stage.tp > island.chips_per_node) {
      assume({where + ": tp " + std::to_string(stage.tp) +
              " spans nodes; its collectives cross the network"});
    }

    const auto resolved = models::resolve_rates(chip, training.dtype, options.defaults);
    assume(resolved.assumptions);
    for (const auto& problem : resolved.problems) reject(where + ": " + problem);

    const models::LayerSlice slice{micro_batch,
                                   training.seq_len,
                                   stage.tp,
                                   training.sequence_parallel,
                                   training.flash_attention,
                                   training.dtype};
    const auto layer = models::layer_ops(model, slice);
    std::vector<models::Op> extra;
    if (i == 0) {
      auto ops = models::embedding_ops(model, slice);
      extra.insert(extra.end(), ops.begin(), ops.end());
    }
    if (i == p - 1) {
      auto ops = models::head_ops(model, slice);
      extra.insert(extra.end(), ops.begin(), ops.end());
    }
    std::set<OpClass> missing;
    for (const std::vector<models::Op>* ops :
         std::array<const std::vector<models::Op>*, 2>{&layer, &extra}) {
      for (const auto& op : *ops) {
        const OpCoverage coverage = chip.coverage(op.op_class);
        if (coverage.support == Support::missing) missing.insert(op.op_class);
        if (coverage.support == Support::fallback) {
          std::ostringstream note;
          note << "chip " << chip.id << ": " << to_string(op.op_class) << " runs as a fallback, "
               << coverage.slowdown << "x slower";
          assume({note.str()});
        }
      }
    }
    for (OpClass op : missing) {
      reject(where + ": chip " + chip.id + " lacks operator class " + std::string(to_string(op)));
    }

    std::vector<std::string> link_notes;
    const IslandLinks& links =
        stage_links.emplace_back(island_links(cluster, island, options, link_notes));
    assume(link_notes);
    const int stage_chips = stage.tp * stage.dp;
    const int nodes_spanned = ceil_div(stage_chips, island.chips_per_node);
    // Traffic between nodes under different leaves shares oversubscribed uplinks.
    const double leaf_scale =
        nodes_spanned > island.nodes_per_leaf ? 1.0 / cluster.fabric.oversubscription : 1.0;

    if (resolved.rates) {
      const models::ChipRates& rates = *resolved.rates;
      double layer_fwd = 0, layer_bwd = 0, core_attention_fwd = 0;
      for (const auto& op : layer) {
        const double f = models::forward_time(op, rates);
        layer_fwd += f;
        layer_bwd += models::backward_time(op, rates);
        if (op.core_attention) core_attention_fwd += f;
      }
      double extra_fwd = 0, extra_bwd = 0;
      for (const auto& op : extra) {
        extra_fwd += models::forward_time(op, rates);
        extra_bwd += models::backward_time(op, rates);
      }
      double recompute = 0;
      if (training.recompute == Recompute::full)
        recompute = layer_fwd;
      else if (training.recompute == Recompute::selective)
        recompute = core_attention_fwd;
      se.forward_s = stage.num_layers * layer_fwd + extra_fwd;
      se.backward_s = stage.num_layers * (layer_bwd + recompute) + extra_bwd;

      // Tensor parallelism: two all-reduces forward and two backward per layer (with sequence
      // parallelism, all-gathers and reduce-scatters of the same volume), plus the recomputed
      // forward's under full recompute; the embedding and the head add one each way.
      if (stage.tp > 1) {
        const CollectiveGroup group = make_group(links, stage.tp, 1, leaf_scale);
        const double activation = tokens * model.hidden * e;
        const double all_reduce =
            models::best_collective(Collective::all_reduce, activation, group).time;
        const double per_layer = (training.recompute == Recompute::full ? 6.0 : 4.0) * all_reduce;
        double boundary = 0;
        if (i == 0) boundary += 2.0 * all_reduce;
        if (i == p - 1) boundary += 2.0 * all_reduce;
        se.tp_comm_s = stage.num_layers * per_layer + boundary;
      }
      peak_sum += stage_chips * rates.peak_flops;
    }

    models::StageShape shape;
    shape.num_layers = stage.num_layers;
    shape.has_embedding = i == 0;
    shape.has_head = i == p - 1;
    shape.tp = stage.tp;
    shape.dp = stage.dp;
    shape.pipeline_stages = p;
    shape.stage_index = i;
    shape.virtual_stages = v;
    shape.micro_batches = m;
    shape.micro_batch = micro_batch;
    shape.recompute = training.recompute;
    shape.zero_stage = training.zero_stage;
    se.memory = models::stage_memory(model, training, shape);
    if (chip.memory_capacity) {
      se.memory_capacity = *chip.memory_capacity;
      se.fits = se.memory.total() <= se.memory_capacity;
      if (!se.fits) {
        reject(where + ": needs " + gib(se.memory.total()) + " per chip (weights " +
               gib(se.memory.weights) + ", gradients " + gib(se.memory.gradients) + ", optimizer " +
               gib(se.memory.optimizer) + ", activations " +
               gib(se.memory.activations + se.memory.head) + "), " + chip.id + " has " +
               gib(se.memory_capacity));
      }
    } else {
      reject(where + ": memory capacity of " + chip.id +
             " is unknown, so the fit cannot be checked");
    }

    if (resolved.rates) {
      const models::ChipRates& rates = *resolved.rates;
      // Optimizer step: Adam reads gradients, master weights and both moments, writes them
      // back and writes the low-precision weights (docs/models/estimator.md#optimizer).
      const double shard = training.zero_stage >= 1 ? stage.dp : 1.0;
      const bool mixed = training.dtype != DType::fp32;
      const double bytes_per_param =
          training.optimizer == Optimizer::sgd ? (mixed ? 18.0 : 12.0) : (mixed ? 34.0 : 28.0);
      se.optimizer_s = se.memory.parameters / shard * bytes_per_param /
                       (rates.memory_bandwidth * rates.memory_efficiency);

      // Data-parallel gradient reduction (reduce-scatter with a sharded optimizer, then an
      // all-gather of the updated weights; all-reduce otherwise).
      if (stage.dp > 1) {
        const CollectiveGroup group = make_group(links, stage.dp, stage.tp, leaf_scale);
        const double grad_bytes =
            se.memory.parameters * (training.fp32_grad_accumulation ? 4.0 : e);
        if (training.zero_stage >= 1) {
          se.dp_sync_s =
              models::best_collective(Collective::reduce_scatter, grad_bytes, group).time +
              models::best_collective(Collective::all_gather, se.memory.parameters * e, group).time;
        } else {
          se.dp_sync_s = models::best_collective(Collective::all_reduce, grad_bytes, group).time;
        }
      }
    }
    out.stages.push_back(std::move(se));
  }

  // Stage boundaries: each chip of the sending stage sends its 1/tp share of the activations
  // (the receiving stage gathers); gradients come back the same way.
  for (int i = 0; i + 1 < p; ++i) {
    const PlanStage& a = plan.stages[static_cast<std::size_t>(i)];
    const PlanStage& b = plan.stages[static_cast<std::size_t>(i + 1)];
    const Island& ia = *cluster.find_island(a.island);
    const Island& ib = *cluster.find_island(b.island);
    const double per_chip = tokens * model.hidden * e / std::min(a.tp, b.tp);
    const IslandLinks& la = stage_links[static_cast<std::size_t>(i)];
    const IslandLinks& lb = stage_links[static_cast<std::size_t>(i + 1)];
    double bandwidth = 0;
    double latency = 0;
    const bool same_island = ia.name == ib.name;
    if (same_island && a.tp * a.dp < ia.chips_per_node) {
      bandwidth = la.intra.bus_bandwidth;  // both stages share a node
      latency = la.intra.latency;
    } else {
      bandwidth = std::min(la.nic_per_chip, lb.nic_per_chip);
      latency = std::max(la.inter.latency, lb.inter.latency) + 2.0 * cluster.fabric.switch_latency;
      const int senders = std::min(a.tp, b.tp) * a.dp;
      if (!same_island) {
        out.stages[static_cast<std::size_t>(i)].cross_island_boundary = true;
        if (!cluster.zones_connected(ia.zone, ib.zone)) {
          reject("stages " + std::to_string(i) + " and " + std::to_string(i + 1) + ": zones " +
                 ia.zone + " and " + ib.zone + " have no link between them");
        } else if (ia.zone != ib.zone) {
          const ZoneLink* link = cluster.zone_link(ia.zone, ib.zone);
          bandwidth = std::min(bandwidth, link->bandwidth / senders);
          latency += link->latency;
        }
        bandwidth /= cluster.fabric.oversubscription;
      }
    }
    const double hop = bandwidth > 0 ? latency + per_chip / bandwidth : 0.0;
    // Forward sends activations, backward returns their gradients; interleaving crosses each
    // boundary once per model chunk.
    const double time = 2.0 * hop * v;
    out.stages[static_cast<std::size_t>(i)].p2p_s += time;
    out.stages[static_cast<std::size_t>(i + 1)].p2p_s += time;
  }

  if (!out.stages.empty()) {
    double max_tau = 0, sum_tau = 0;
    for (int i = 0; i < p; ++i) {
      StageEstimate& se = out.stages[static_cast<std::size_t>(i)];
      se.micro_batch_s = se.forward_s + se.backward_s + se.tp_comm_s + se.p2p_s;
      max_tau = std::max(max_tau, se.micro_batch_s);
      sum_tau += se.micro_batch_s;
    }
    // 1F1B: the bottleneck stage runs m micro-batches; the others fill and drain around it.
    // Interleaving divides the fill and drain by the chunk count.
    const double pipeline = m * max_tau + (sum_tau - max_tau) / v;
    out.bubble_s = pipeline - m * max_tau;

    // Where the step's time goes, seen on the bottleneck stage.
    const auto bottleneck = std::max_element(
        out.stages.begin(), out.stages.end(),
        [](const auto& x, const auto& y) { return x.micro_batch_s < y.micro_batch_s; });
    out.compute_s = m * (bottleneck->forward_s + bottleneck->backward_s);
    out.exposed.tensor_parallel = m * bottleneck->tp_comm_s;
    const double p2p = m * bottleneck->p2p_s;
    const bool cross =
        bottleneck->cross_island_boundary ||
        (bottleneck != out.stages.begin() && std::prev(bottleneck)->cross_island_boundary);
    (cross ? out.exposed.cross_island : out.exposed.pipeline) = p2p;

    // Gradient reduction starts when a stage's last backward ends; stages nearer the end of the
    // pipeline finish first and hide theirs behind the earlier stages' remaining backward
    // passes. With overlap_grad_reduce, it also overlaps the stage's own last backward pass.
    double dp_exposed = 0;
    double slack = 0;
    for (int i = 0; i < p; ++i) {
      const StageEstimate& se = out.stages[static_cast<std::size_t>(i)];
      double hidden = slack;
      if (training.overlap_grad_reduce) hidden += se.backward_s;
      dp_exposed = std::max(dp_exposed, se.dp_sync_s - hidden);
      slack += se.backward_s / v;
    }
    out.exposed.data_parallel = std::max(0.0, dp_exposed);
    for (const auto& se : out.stages) out.optimizer_s = std::max(out.optimizer_s, se.optimizer_s);
    out.step_time_s = pipeline + out.exposed.data_parallel + out.optimizer_s;
  }

  const double layer_flops = models::layer_model_flops(model, 1, training.seq_len);
  const double head_flops = models::head_model_flops(model, 1, training.seq_len);
  out.model_flops_per_step =
      3.0 * training.global_batch * (model.layers * layer_flops + head_flops);
  if (out.step_time_s > 0) {
    out.tokens_per_s =
        static_cast<double>(training.global_batch) * training.seq_len / out.step_time_s;
    if (peak_sum > 0) out.mfu = out.model_flops_per_step / (out.step_time_s * peak_sum);
    out.bubble_fraction = out.bubble_s / out.step_time_s;
  }
  return out;
}

}  // namespace hetplan::sim
