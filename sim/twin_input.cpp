#include "sim/twin_input.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <set>

#include "sim/seeded.hpp"

namespace hetplan::sim {

std::string_view to_string(TwinLinkKind kind) {
  switch (kind) {
    case TwinLinkKind::nic:
      return "nic";
    case TwinLinkKind::intra:
      return "intra-node";
    case TwinLinkKind::cross_group:
      return "cross-group";
    case TwinLinkKind::leaf_uplink:
      return "leaf-uplink";
    case TwinLinkKind::zone_link:
      return "zone-link";
  }
  return "?";
}

TwinInput make_twin_input(const Cluster& cluster, const Workload& workload, const Plan& plan,
                          const Estimate& estimate, const TwinOptions& options) {
  const StepSettings settings = step_settings(workload, plan);
  const TrainingSettings& training = settings.training;
  TwinInput in;
  in.plan = plan.name;
  in.link_latency = cluster.fabric.link_latency;
  in.switch_latency = cluster.fabric.switch_latency;
  in.micro_batches = estimate.micro_batches;
  in.chunks = settings.virtual_stages;
  in.activation_bytes = static_cast<double>(settings.micro_batch) * training.seq_len *
                        workload.model.hidden * bytes_per_element(storage_dtype(training.dtype));
  in.overlap_grad_reduce = training.overlap_grad_reduce;
  in.overlap_param_gather = training.overlap_param_gather;
  in.tokens_per_step = static_cast<double>(training.global_batch) * training.seq_len;
  in.model_flops_per_step = estimate.model_flops_per_step;
  in.seed = options.seed;
  in.jitter = options.jitter;
  in.trace_path = options.trace_path;

  // Islands in the order stages first use them; stages take consecutive chips of theirs.
  std::map<std::string, int> island_index;
  std::vector<int> next_chip;
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    const PlanStage& stage = plan.stages[s];
    const Island& island = *cluster.find_island(stage.island);
    auto [it, added] = island_index.emplace(island.name, static_cast<int>(in.islands.size()));
    const StageKernel kernel = make_stage_kernel(cluster, workload.model, settings, island,
                                                 stage.tp, stage.dp, options.estimate, stage.ep);
    if (added) {
      const IslandLinks& links = kernel.links;
      TwinIsland& ti = in.islands.emplace_back();
      ti.name = island.name;
      ti.zone = island.zone;
      ti.chips_per_node = island.chips_per_node;
      ti.nics = island.nic_count;
      ti.nic_speed = island.nic_speed;
      ti.nodes_per_leaf = cluster.fabric.topology == FabricTopology::single_switch
                              ? island.nodes
                              : std::max(1, island.nodes_per_leaf);
      const double oversubscription = cluster.fabric.topology == FabricTopology::single_switch
                                          ? 1.0
                                          : std::max(1.0, cluster.fabric.oversubscription);
      ti.uplink_speed = ti.nodes_per_leaf * island.nic_count * island.nic_speed / oversubscription;
      ti.intra_efficiency = links.intra_efficiency;
      ti.network_efficiency = links.network_efficiency;
      ti.intra_speed = links.intra.bus_bandwidth / links.intra_efficiency;
      ti.cross_group_speed = links.intra_cross.bus_bandwidth / links.intra_efficiency;
      ti.intra_group = std::max(1, links.group_size);
      next_chip.push_back(0);
    }
    const int index = it->second;
    TwinStage& ts = in.stages.emplace_back();
    ts.island = index;
    ts.first_chip = next_chip[static_cast<std::size_t>(index)];
    ts.tp = stage.tp;
    ts.dp = stage.dp;
    ts.ep = stage.ep;
    next_chip[static_cast<std::size_t>(index)] += stage.tp * stage.dp;
    const StageEstimate& se = estimate.stages.at(s);
    ts.forward_s = se.forward_s;
    ts.backward_s = se.backward_s;
    ts.tp_s = se.tp_comm_s;
    ts.optimizer_s = se.optimizer_s;
    // The all-to-alls as the estimator prices them: its count of them, each of the kernel's
    // send buffer, over the kernel's expert-parallel group (an all-to-all's time is the same for
    // every algorithm, and its latency term is (ep - 1) steps).
    if (kernel.a2a_bytes > 0) {
      ts.a2a_bytes = kernel.a2a_bytes;
      ts.a2a_forward = se.ep_forward_all_to_alls;
      ts.a2a_backward = se.ep_backward_all_to_alls;
      ts.a2a_latency_s = models::collective_time(
          models::Collective::all_to_all, models::CollectiveAlgorithm::ring, 0.0, kernel.ep_group);
    }
    in.peak_flops += static_cast<double>(stage.tp) * stage.dp * kernel.peak_flops;
    if (stage.dp > 1) {
      // As the estimator synchronises them: the dense parameters over every replica, then the
      // routed experts' over the replicas that hold the same experts.
      auto lower_sync = [&](double parameters, const models::CollectiveGroup& group, bool experts) {
        for (const SyncCollective& sync : dp_sync_collectives(training, parameters)) {
          TwinCollective& tc = ts.dp_sync.emplace_back();
          tc.kind = sync.kind;
          tc.bytes = sync.bytes;
          tc.algorithm = models::best_collective(sync.kind, sync.bytes, group).algorithm;
          tc.latency_s = models::collective_time(sync.kind, tc.algorithm, 0.0, group);
          tc.experts = experts;
        }
      };
      const double experts = se.memory.expert_parameters;
      lower_sync(se.memory.parameters - experts, kernel.dp_group, false);
      if (experts > 0 && kernel.expert_dp_group.ranks > 1)
        lower_sync(experts, kernel.expert_dp_group, stage.ep > 1);
    }
  }
  for (std::size_t i = 0; i < in.islands.size(); ++i) {
    TwinIsland& ti = in.islands[i];
    ti.nodes = (next_chip[i] + ti.chips_per_node - 1) / ti.chips_per_node;
  }

  std::set<std::string> zones;
  for (const auto& island : in.islands) zones.insert(island.zone);
  for (const ZoneLink& link : cluster.fabric.zone_links) {
    if (zones.count(link.zone_a) && zones.count(link.zone_b))
      in.zone_links.push_back({link.zone_a, link.zone_b, link.bandwidth, link.latency});
  }
  for (const StragglerSpec& slow : options.stragglers) {
    auto it = island_index.find(slow.island);
    if (it == island_index.end()) continue;
    in.stragglers.push_back({it->second, slow.node, slow.slowdown});
  }
  if (options.straggler_fraction > 0 && options.straggler_slowdown > 1) {
    for (std::size_t i = 0; i < in.islands.size(); ++i) {
      const std::uint64_t island_key = name_hash(in.islands[i].name);
      for (int node = 0; node < in.islands[i].nodes; ++node) {
        const std::uint64_t draw =
            mix(mix(options.seed ^ island_key) ^ static_cast<std::uint64_t>(node));
        if (unit_interval(draw) < options.straggler_fraction)
          in.stragglers.push_back({static_cast<int>(i), node, options.straggler_slowdown});
      }
    }
  }
  return in;
}

namespace {

bool positive(double x) { return std::isfinite(x) && x > 0; }
bool non_negative(double x) { return std::isfinite(x) && x >= 0; }

// Limits that keep one simulation within this machine's reach; a plan past them is refused
// with a message rather than left to exhaust memory.
constexpr int kMaxRanks = 1 << 17;
constexpr int kMaxIslands = 1024;
constexpr long long kMaxLinks = 1 << 21;  // NICs, intra-node and cross-group links together
constexpr long long kMaxTransfers = 50'000'000;
constexpr long long kMaxAllToAllFlows = 50'000'000;

// The product of non-negative factors, saturated just past `limit`: each factor can reach 2^30
// here, and their product overflows 64 bits.
long long saturated_product(std::initializer_list<long long> factors, long long limit) {
  long long product = 1;
  for (const long long factor : factors) {
    if (factor <= 0) return 0;
    if (product > limit / factor)
      product = limit + 1;
    else
      product *= factor;
  }
  return product;
}

}  // namespace

std::vector<std::string> check_twin_input(const TwinInput& in) {
  std::vector<std::string> problems;
  auto bad = [&](std::string what) { problems.push_back(std::move(what)); };
  if (!non_negative(in.link_latency) || !non_negative(in.switch_latency))
    bad("fabric latencies must be finite and non-negative");
  if (in.islands.empty()) bad("no islands");
  if (in.stages.empty()) bad("no stages");
  if (in.micro_batches < 1) bad("micro_batches must be at least 1");
  if (in.chunks < 1) bad("chunks must be at least 1");
  if (in.chunks > 1 && !in.stages.empty() &&
      in.micro_batches % static_cast<int>(in.stages.size()) != 0)
    bad("the interleaved schedule needs micro_batches to be a multiple of the stage count");
  if (!positive(in.activation_bytes)) bad("activation_bytes must be positive");
  if (!positive(in.tokens_per_step)) bad("tokens_per_step must be positive");
  if (!non_negative(in.model_flops_per_step) || !non_negative(in.peak_flops))
    bad("flops must be finite and non-negative");
  if (!(in.jitter >= 0 && in.jitter <= 1)) bad("jitter must be in [0, 1]");

  if (in.islands.size() > static_cast<std::size_t>(kMaxIslands))
    bad("more than " + std::to_string(kMaxIslands) + " islands");
  std::set<std::string> zones;
  std::set<std::string> names;
  long long links = 0;
  std::vector<std::string> too_large;  // reported last: later checks still make sense
  for (std::size_t i = 0; i < in.islands.size(); ++i) {
    const TwinIsland& ti = in.islands[i];
    const std::string where = "island " + std::to_string(i) + " (" + ti.name + "): ";
    if (ti.name.empty() || !names.insert(ti.name).second) bad(where + "names must be unique");
    if (ti.zone.empty()) bad(where + "zone is empty");
    zones.insert(ti.zone);
    if (ti.nodes < 1 || ti.chips_per_node < 1 || ti.nics < 1 || ti.nodes_per_leaf < 1 ||
        ti.intra_group < 1)
      bad(where + "nodes, chips per node, NICs, nodes per leaf and the intra group must be >= 1");
    if (ti.chips_per_node > 1024 || ti.nics > 1024)
      bad(where + "chips per node and NICs must be at most 1024");
    // The platform builds every node up to the last one a stage uses.
    if (ti.nodes > 0 && ti.chips_per_node > 0 &&
        static_cast<long long>(ti.nodes - 1) * ti.chips_per_node >= kMaxRanks)
      too_large.push_back(where + std::to_string(ti.nodes) +
                          " nodes are more than a plan of at most " + std::to_string(kMaxRanks) +
                          " ranks reaches");
    else if (ti.nodes > 0)
      links += static_cast<long long>(ti.nodes) *
               (std::max(0, ti.nics) + 2LL * std::max(0, ti.chips_per_node));
    if (!positive(ti.nic_speed) || !positive(ti.uplink_speed) || !positive(ti.intra_speed) ||
        !positive(ti.cross_group_speed))
      bad(where + "link speeds must be finite and positive");
    if (!(ti.intra_efficiency > 0 && ti.intra_efficiency <= 1) ||
        !(ti.network_efficiency > 0 && ti.network_efficiency <= 1))
      bad(where + "efficiencies must be in (0, 1]");
  }
  if (links > kMaxLinks)
    too_large.push_back("the platform would have " + std::to_string(links) +
                        " links; the limit is " + std::to_string(kMaxLinks));
  if (!problems.empty()) {
    problems.insert(problems.end(), too_large.begin(), too_large.end());
    return problems;
  }

  std::set<std::pair<std::string, std::string>> linked;
  for (const TwinZoneLink& link : in.zone_links) {
    if (!zones.count(link.zone_a) || !zones.count(link.zone_b) || link.zone_a == link.zone_b)
      bad("zone link " + link.zone_a + " - " + link.zone_b + " joins unknown or equal zones");
    else if (!linked.insert(std::minmax(link.zone_a, link.zone_b)).second)
      bad("zone link " + link.zone_a + " - " + link.zone_b + " is given twice");
    if (!positive(link.speed) || !non_negative(link.latency))
      bad("zone link " + link.zone_a + " - " + link.zone_b + ": bad speed or latency");
  }
  auto connected = [&](const std::string& a, const std::string& b) {
    return a == b || linked.count(std::minmax(a, b)) > 0;
  };

  long long ranks = 0;
  long long a2a_flows = 0;  // saturated just past its limit
  const int p = static_cast<int>(in.stages.size());
  for (int s = 0; s < p; ++s) {
    const TwinStage& ts = in.stages[static_cast<std::size_t>(s)];
    const std::string where = "stage " + std::to_string(s) + ": ";
    if (ts.island < 0 || ts.island >= static_cast<int>(in.islands.size())) {
      bad(where + "island index out of range");
      continue;
    }
    const TwinIsland& ti = in.islands[static_cast<std::size_t>(ts.island)];
    if (ts.tp < 1 || ts.dp < 1 || ts.tp > kMaxRanks || ts.dp > kMaxRanks) {
      bad(where + "tp and dp must be in [1, " + std::to_string(kMaxRanks) + "]");
      continue;
    }
    if (ts.first_chip < 0 ||
        static_cast<long long>(ts.first_chip) + static_cast<long long>(ts.tp) * ts.dp >
            static_cast<long long>(ti.nodes) * ti.chips_per_node)
      bad(where + "its chips lie outside island " + ti.name);
    if (ts.dp != in.stages.front().dp) bad(where + "every stage needs the same dp");
    if (ts.ep < 1 || ts.dp % ts.ep != 0) {
      bad(where + "ep " + std::to_string(ts.ep) + " must divide dp " + std::to_string(ts.dp));
    } else if (ts.ep > 1 && ts.a2a_bytes > 0) {
      // Each exchange: every replica sends to the ep - 1 others of its group, per tensor rank.
      a2a_flows += saturated_product(
          {static_cast<long long>(ts.dp) * ts.tp, ts.ep - 1LL, 2LL * std::max(0, in.chunks),
           static_cast<long long>(std::max(0, in.micro_batches))},
          kMaxAllToAllFlows);
      a2a_flows = std::min(a2a_flows, kMaxAllToAllFlows + 1);
    }
    if (!non_negative(ts.a2a_bytes) || !non_negative(ts.a2a_latency_s))
      bad(where + "all-to-all bytes and latency must be finite and non-negative");
    if (ts.a2a_forward < 0 || ts.a2a_backward < 0)
      bad(where + "all-to-all counts must be non-negative");
    if (ts.ep == 1 && ts.a2a_bytes > 0 && ts.a2a_forward + ts.a2a_backward > 0)
      bad(where + "all-to-alls without expert parallelism (ep 1)");
    ranks += static_cast<long long>(ts.tp) * ts.dp;
    if (!non_negative(ts.forward_s) || !non_negative(ts.backward_s) || !non_negative(ts.tp_s) ||
        !non_negative(ts.optimizer_s))
      bad(where + "times must be finite and non-negative");
    if (ts.dp == 1 && !ts.dp_sync.empty()) bad(where + "gradient synchronisation without dp");
    for (const TwinCollective& c : ts.dp_sync) {
      if (!non_negative(c.bytes) || !non_negative(c.latency_s))
        bad(where + "collective bytes and latency must be finite and non-negative");
      if (c.kind != models::Collective::all_reduce &&
          c.kind != models::Collective::reduce_scatter &&
          c.kind != models::Collective::all_gather)
        bad(where + "gradient synchronisation uses all-reduce, reduce-scatter or all-gather");
    }
    if (s + 1 < p || (in.chunks > 1 && p > 1)) {
      const TwinStage& next = in.stages[static_cast<std::size_t>((s + 1) % p)];
      if (next.island >= 0 && next.island < static_cast<int>(in.islands.size()) &&
          !connected(ti.zone, in.islands[static_cast<std::size_t>(next.island)].zone))
        bad(where + "its boundary crosses zones with no link between them");
    }
  }
  if (ranks > kMaxRanks) bad("the plan has " + std::to_string(ranks) + " ranks; the limit is " +
                             std::to_string(kMaxRanks));
  // dp x stages x chunks x 2 directions x micro-batches.
  const long long transfers =
      saturated_product({2, static_cast<long long>(in.stages.empty() ? 0 : in.stages[0].dp),
                         static_cast<long long>(p), static_cast<long long>(in.chunks),
                         static_cast<long long>(in.micro_batches)},
                        kMaxTransfers);
  if (transfers > kMaxTransfers)
    bad("the step has more than " + std::to_string(kMaxTransfers) +
        " stage-boundary transfers (dp x stages x chunks x 2 x micro-batches)");
  if (a2a_flows > kMaxAllToAllFlows)
    bad("the step has more than " + std::to_string(kMaxAllToAllFlows) +
        " all-to-all flows (dp x tp x (ep - 1) x chunks x 2 x micro-batches, over the stages)");
  for (const TwinStraggler& slow : in.stragglers) {
    if (slow.island < 0 || slow.island >= static_cast<int>(in.islands.size()) || slow.node < 0 ||
        !(slow.slowdown >= 1 && slow.slowdown <= 100))
      bad("straggler: island index, node or slowdown (1..100) out of range");
  }
  problems.insert(problems.end(), too_large.begin(), too_large.end());
  return problems;
}

TwinOptions twin_options(const Scenario& scenario, std::optional<std::uint64_t> seed) {
  TwinOptions options;
  if (scenario.simulation) {
    options.jitter = scenario.simulation->jitter;
    for (const Straggler& slow : scenario.simulation->stragglers)
      options.stragglers.push_back({slow.island, slow.node, slow.slowdown});
    if (scenario.simulation->seed) options.seed = *scenario.simulation->seed;
    if (const auto& random = scenario.simulation->random_stragglers) {
      options.straggler_fraction = random->fraction;
      options.straggler_slowdown = random->slowdown;
    }
  }
  if (seed) options.seed = *seed;
  return options;
}

}  // namespace hetplan::sim
