#include "sim/twin_input.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

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
    case TwinLinkKind::spine:
      return "spine";
    case TwinLinkKind::gradient_path:
      return "gradient-path";
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
  in.combined = training.overlap_ep_comm &&
                ep_overlap_refusal(settings, static_cast<int>(plan.stages.size())).empty();
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
    const StageKernel kernel =
        make_stage_kernel(cluster, workload.model, settings, island, stage.tp, stage.dp,
                          options.estimate, stage.ep, expert_tp(stage));
    if (added) {
      const IslandLinks& links = kernel.links;
      TwinIsland& ti = in.islands.emplace_back();
      ti.name = island.name;
      ti.zone = island.zone;
      ti.chips_per_node = island.chips_per_node;
      ti.nics = island.nic_count;
      ti.nic_speed = island.nic_speed;
      ti.nodes_per_leaf = cluster.leaf_nodes(island);
      ti.uplink_speed = cluster.leaf_uplink_capacity(island);
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
    ts.etp = expert_tp(stage) == stage.tp ? 0 : expert_tp(stage);
    next_chip[static_cast<std::size_t>(index)] += stage.tp * stage.dp;
    const StageEstimate& se = estimate.stages.at(s);
    ts.forward_s = se.forward_s;
    ts.backward_s = se.backward_s;
    ts.tp_s = se.tp_comm_s;
    ts.optimizer_s = se.optimizer_s;
    if (!stage.chunk_layers.empty() && stage.num_layers > 0) {
      for (const int layers : stage.chunk_layers)
        ts.chunk_share.push_back(static_cast<double>(layers) / stage.num_layers);
    }
    // The all-to-alls as the estimator prices them: its count of them, each of the kernel's
    // send buffer, over the kernel's expert-parallel group (an all-to-all's time is the same for
    // every algorithm, and its latency term is (ep - 1) steps).
    if (kernel.a2a_bytes > 0) {
      ts.a2a_bytes = kernel.a2a_bytes;
      ts.a2a_node_bytes = kernel.a2a_node_bytes;
      ts.a2a_network_bytes = kernel.a2a_network_bytes;
      ts.a2a_forward = se.ep_forward_all_to_alls;
      ts.a2a_backward = se.ep_backward_all_to_alls;
      ts.a2a_latency_s = models::collective_time(
          models::Collective::all_to_all, models::CollectiveAlgorithm::ring, 0.0, kernel.ep_group);
      if (in.combined) ts.a2a_overlap = kernel.ep_overlap;
    }
    in.peak_flops += static_cast<double>(stage.tp) * stage.dp * kernel.peak_flops;
    if (stage.dp > 1 || kernel.expert_dp_group.ranks > 1) {
      // As the estimator synchronises them: the dense parameters over every replica, then the
      // routed experts' over the ranks that hold the same experts (with etp below tp, ranks of
      // one replica may hold the same experts: then even without data parallelism).
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
      if (stage.dp > 1) lower_sync(se.memory.parameters - experts, kernel.dp_group, false);
      if (experts > 0 && kernel.expert_dp_group.ranks > 1)
        lower_sync(experts, kernel.expert_dp_group, stage.ep > 1 || expert_tp(stage) != stage.tp);
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
  for (const std::string& zone : zones) {
    if (const double spine = cluster.spine_capacity(zone); spine > 0) in.spines.push_back({zone, spine});
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
// A message's bytes: SimGrid counts a payload in 64 bits; an exabyte is past any step's message.
constexpr double kMaxMessageBytes = 1e18;
bool message_bytes(double x) {
  return non_negative(x) && x <= kMaxMessageBytes;
}

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
  if (!positive(in.activation_bytes) || in.activation_bytes > kMaxMessageBytes)
    bad("activation_bytes must be positive, at most 1e18");
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
    // A profile's bus efficiency reaches 1.5 (NVLink SHARP), and a run-fitted communication
    // term of 0.1 divides it (docs/models/in-step.md): at most 15.
    if (!(ti.intra_efficiency > 0 && ti.intra_efficiency <= 15) ||
        !(ti.network_efficiency > 0 && ti.network_efficiency <= 15))
      bad(where + "efficiencies must be in (0, 15]");
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
  std::set<std::string> spined;
  for (const TwinSpine& spine : in.spines) {
    if (!zones.count(spine.zone) || !spined.insert(spine.zone).second)
      bad("spine of zone " + spine.zone + ": unknown zone, or given twice");
    if (!positive(spine.speed)) bad("spine of zone " + spine.zone + ": bad speed");
  }

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
    const long long etp = expert_tp(ts.etp, ts.tp);
    const long long expert_block = static_cast<long long>(ts.ep) * etp;
    if (ts.etp < 0 || ts.etp > kMaxRanks) {
      bad(where + "etp must be in [0, " + std::to_string(kMaxRanks) + "] (0: as tp)");
    } else if (ts.ep < 1 || (static_cast<long long>(ts.tp) * ts.dp) % expert_block != 0) {
      bad(where + "ep " + std::to_string(ts.ep) + " x etp " + std::to_string(etp) +
          " must divide tp x dp " + std::to_string(static_cast<long long>(ts.tp) * ts.dp));
    } else if (expert_block % ts.tp != 0 && ts.tp % expert_block != 0) {
      // Megatron-Core allows it; the twin's exchanges take whole replicas or parts of one.
      bad(where + "expert groups of ep x etp = " + std::to_string(expert_block) +
          " ranks that straddle replicas of tp " + std::to_string(ts.tp) + " are not simulated");
    } else if (ts.ep > 1 && ts.a2a_bytes > 0) {
      // Each exchange: every replica sends to the ep - 1 others of its group, per tensor rank;
      // forwarded, to the group's other chips on its node and to one chip on each other node
      // the group spans (one node more when it does not start on a node's first chip).
      long long peers = ts.ep - 1LL;
      if (ts.a2a_network_bytes > 0) {
        const long long local = std::clamp<long long>(ti.chips_per_node / etp, 1, ts.ep);
        peers = std::min(peers, (local - 1) + (ts.ep + local - 1) / local);
      }
      a2a_flows += saturated_product(
          {static_cast<long long>(ts.dp) * ts.tp, peers, 2LL * std::max(0, in.chunks),
           static_cast<long long>(std::max(0, in.micro_batches))},
          kMaxAllToAllFlows);
      a2a_flows = std::min(a2a_flows, kMaxAllToAllFlows + 1);
    }
    if (!message_bytes(ts.a2a_bytes) || !message_bytes(ts.a2a_node_bytes) ||
        !message_bytes(ts.a2a_network_bytes) || !non_negative(ts.a2a_latency_s))
      bad(where + "all-to-all bytes (at most 1e18) and latency must be finite and non-negative");
    if (ts.a2a_forward < 0 || ts.a2a_backward < 0)
      bad(where + "all-to-all counts must be non-negative");
    if (!(ts.a2a_overlap >= 0 && ts.a2a_overlap <= 1))
      bad(where + "all-to-all overlap must be a share from 0 to 1");
    if (ts.a2a_overlap > 0 && !in.combined)
      bad(where + "all-to-all overlap without the combined schedule");
    if (ts.ep == 1 && ts.a2a_bytes > 0 && ts.a2a_forward + ts.a2a_backward > 0)
      bad(where + "all-to-alls without expert parallelism (ep 1)");
    ranks += static_cast<long long>(ts.tp) * ts.dp;
    if (!non_negative(ts.forward_s) || !non_negative(ts.backward_s) || !non_negative(ts.tp_s) ||
        !non_negative(ts.optimizer_s))
      bad(where + "times must be finite and non-negative");
    if (ts.dp == 1 && !ts.dp_sync.empty()) bad(where + "gradient synchronisation without dp");
    if (!ts.chunk_share.empty()) {
      double total = 0;
      bool valid = ts.chunk_share.size() == static_cast<std::size_t>(in.chunks);
      for (const double share : ts.chunk_share) {
        valid &= non_negative(share) && share <= 1.0;
        total += share;
      }
      if (!valid || std::abs(total - 1.0) > 1e-9)
        bad(where + "chunk shares must be one per chunk, each in [0, 1], adding up to 1");
    }
    for (const TwinCollective& c : ts.dp_sync) {
      if (!message_bytes(c.bytes) || !non_negative(c.latency_s))
        bad(where + "collective bytes (at most 1e18) and latency must be finite and non-negative");
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
        " all-to-all flows (dp x tp x each chip's peers in an exchange, ep - 1 or fewer when"
        " forwarded, x chunks x 2 x micro-batches, over the stages)");
  for (const TwinStraggler& slow : in.stragglers) {
    if (slow.island < 0 || slow.island >= static_cast<int>(in.islands.size()) || slow.node < 0 ||
        !(slow.slowdown >= 1 && slow.slowdown <= 100))
      bad("straggler: island index, node or slowdown (1..100) out of range");
  }
  problems.insert(problems.end(), too_large.begin(), too_large.end());
  return problems;
}

namespace {

bool same_fabric(const TwinIsland& a, const TwinIsland& b) {
  return a.zone == b.zone && a.chips_per_node == b.chips_per_node && a.nics == b.nics &&
         a.nic_speed == b.nic_speed && a.nodes_per_leaf == b.nodes_per_leaf &&
         a.uplink_speed == b.uplink_speed && a.intra_speed == b.intra_speed &&
         a.intra_group == b.intra_group && a.cross_group_speed == b.cross_group_speed &&
         a.intra_efficiency == b.intra_efficiency && a.network_efficiency == b.network_efficiency;
}

constexpr std::size_t kMaxPoolJobs = 64;
constexpr int kMaxPoolSteps = 1000;

}  // namespace

std::vector<TwinInput> merge_pool(const TwinPoolInput& pool) {
  std::vector<TwinIsland> islands;
  std::map<std::string, int> index;
  std::vector<TwinZoneLink> zone_links;
  std::vector<TwinSpine> spines;
  std::vector<std::vector<int>> remap(pool.jobs.size());
  auto add_zone_link = [&](const TwinZoneLink& link, const std::string& who) {
    auto same_ends = [&](const TwinZoneLink& l) {
      return std::minmax(l.zone_a, l.zone_b) == std::minmax(link.zone_a, link.zone_b);
    };
    const auto have = std::find_if(zone_links.begin(), zone_links.end(), same_ends);
    if (have == zone_links.end()) {
      zone_links.push_back(link);
    } else if (have->speed != link.speed || have->latency != link.latency) {
      throw std::invalid_argument(who + ": zone link " + link.zone_a + " - " + link.zone_b +
                                  " is described differently by an earlier job");
    }
  };
  for (std::size_t j = 0; j < pool.jobs.size(); ++j) {
    const TwinInput& job = pool.jobs[j];
    const std::string who = "job " + std::to_string(j) + " (" + job.plan + ")";
    if (job.link_latency != pool.jobs.front().link_latency ||
        job.switch_latency != pool.jobs.front().switch_latency)
      throw std::invalid_argument(who + ": its fabric latencies differ from job 0's");
    for (const TwinIsland& ti : job.islands) {
      const auto [it, added] = index.emplace(ti.name, static_cast<int>(islands.size()));
      if (added) {
        islands.push_back(ti);
      } else {
        TwinIsland& have = islands[static_cast<std::size_t>(it->second)];
        if (!same_fabric(have, ti))
          throw std::invalid_argument(who + ": island " + ti.name +
                                      " is described differently by an earlier job");
        have.nodes = std::max(have.nodes, ti.nodes);
      }
      remap[j].push_back(it->second);
    }
    for (const TwinZoneLink& link : job.zone_links) add_zone_link(link, who);
    for (const TwinSpine& spine : job.spines) {
      const auto have = std::find_if(spines.begin(), spines.end(),
                                     [&](const TwinSpine& s) { return s.zone == spine.zone; });
      if (have == spines.end()) {
        spines.push_back(spine);
      } else if (have->speed != spine.speed) {
        throw std::invalid_argument(who + ": the spine of zone " + spine.zone +
                                    " is described differently by an earlier job");
      }
    }
  }
  if (pool.exchange) {
    for (const TwinZoneLink& link : pool.exchange->zone_links)
      add_zone_link(link, "the gradient exchange");
  }
  // A chip belongs to one job: the stages' chip ranges on each island must not overlap
  // across jobs.
  struct Range {
    long long first = 0, end = 0;
    std::size_t job = 0;
  };
  std::vector<std::vector<Range>> used(islands.size());
  for (std::size_t j = 0; j < pool.jobs.size(); ++j) {
    for (const TwinStage& st : pool.jobs[j].stages) {
      const int island = remap[j].at(static_cast<std::size_t>(st.island));
      const long long first = st.first_chip;
      used[static_cast<std::size_t>(island)].push_back(
          {first, first + static_cast<long long>(st.tp) * st.dp, j});
    }
  }
  for (std::size_t i = 0; i < used.size(); ++i) {
    auto& ranges = used[i];
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& a, const Range& b) { return a.first < b.first; });
    for (std::size_t k = 1; k < ranges.size(); ++k) {
      if (ranges[k].first < ranges[k - 1].end && ranges[k].job != ranges[k - 1].job)
        throw std::invalid_argument("jobs " + std::to_string(ranges[k - 1].job) + " and " +
                                    std::to_string(ranges[k].job) + " use the same chips of island " +
                                    islands[i].name);
    }
  }
  std::vector<TwinInput> out;
  for (std::size_t j = 0; j < pool.jobs.size(); ++j) {
    TwinInput job = pool.jobs[j];
    job.islands = islands;
    job.zone_links = zone_links;
    job.spines = spines;
    for (TwinStage& st : job.stages) st.island = remap[j].at(static_cast<std::size_t>(st.island));
    for (TwinStraggler& slow : job.stragglers)
      slow.island = remap[j].at(static_cast<std::size_t>(slow.island));
    out.push_back(std::move(job));
  }
  return out;
}

namespace {

std::vector<std::string> check_exchange(const TwinGradientExchange& exchange,
                                        const std::vector<TwinInput>& jobs) {
  std::vector<std::string> problems;
  const int groups = static_cast<int>(jobs.size());
  if (!message_bytes(exchange.bytes))
    problems.push_back("bytes must be finite, non-negative and at most 1e18");
  if (exchange.parameter_server && (exchange.server < 0 || exchange.server >= groups))
    problems.push_back("the server must be one of the groups");
  if (exchange.paths.empty() || exchange.paths.size() > jobs.size())
    problems.push_back("it needs 1 to " + std::to_string(jobs.size()) + " paths, got " +
                       std::to_string(exchange.paths.size()));
  for (std::size_t p = 0; p < exchange.paths.size(); ++p) {
    const TwinGradientPath& path = exchange.paths[p];
    const std::string which = "path " + std::to_string(p) + ": ";
    if (path.group_a < 0 || path.group_a >= groups || path.group_b < 0 ||
        path.group_b >= groups || path.group_a == path.group_b) {
      problems.push_back(which + "its ends must be two different groups");
      continue;
    }
    if (!positive(path.speed)) problems.push_back(which + "speed must be finite and positive");
    if (!non_negative(path.latency) || path.latency > 1)
      problems.push_back(which + "latency must be in [0, 1] s");
    const TwinInput& a = jobs[static_cast<std::size_t>(path.group_a)];
    const TwinInput& b = jobs[static_cast<std::size_t>(path.group_b)];
    const std::string& zone_a = a.islands[static_cast<std::size_t>(a.stages.front().island)].zone;
    const std::string& zone_b = b.islands[static_cast<std::size_t>(b.stages.front().island)].zone;
    const bool linked = std::any_of(a.zone_links.begin(), a.zone_links.end(), [&](const TwinZoneLink& l) {
      return std::minmax(l.zone_a, l.zone_b) == std::minmax(zone_a, zone_b);
    });
    if (path.fabric && zone_a != zone_b && !linked)
      problems.push_back(which + "no zone link joins zones " + zone_a + " and " + zone_b);
  }
  // The exchange's platform: per lane a host and a port per group and two links per path.
  long long lanes = std::numeric_limits<int>::max();
  for (const TwinInput& job : jobs)
    lanes = std::min<long long>(lanes, job.islands[static_cast<std::size_t>(job.stages.front().island)].nodes);
  const long long links = lanes * (groups + 2 * static_cast<long long>(exchange.paths.size()));
  if (links > kMaxLinks)
    problems.push_back("its " + std::to_string(links) + " links are over the limit of " +
                       std::to_string(kMaxLinks));
  // Each group is one island's pipeline, and every pair the algorithm needs has a path.
  auto joined = [&](int a, int b) {
    return std::any_of(exchange.paths.begin(), exchange.paths.end(), [&](const TwinGradientPath& p) {
      return std::minmax(p.group_a, p.group_b) == std::minmax(a, b);
    });
  };
  for (int g = 0; g < groups; ++g) {
    const TwinInput& job = jobs[static_cast<std::size_t>(g)];
    for (const TwinStage& st : job.stages) {
      if (st.island != job.stages.front().island)
        problems.push_back("group " + std::to_string(g) + " spans islands");
    }
    const int next = exchange.parameter_server ? exchange.server : (g + 1) % groups;
    if (next != g && !joined(g, next))
      problems.push_back("no path joins groups " + std::to_string(g) + " and " +
                         std::to_string(next));
  }
  return problems;
}

}  // namespace

std::vector<std::string> check_twin_pool(const TwinPoolInput& pool) {
  std::vector<std::string> problems;
  if (pool.jobs.size() < 2 || pool.jobs.size() > kMaxPoolJobs)
    problems.push_back("a pool needs 2 to " + std::to_string(kMaxPoolJobs) + " jobs, got " +
                       std::to_string(pool.jobs.size()));
  if (pool.max_steps < 1 || pool.max_steps > kMaxPoolSteps)
    problems.push_back("max_steps must be in [1, " + std::to_string(kMaxPoolSteps) + "]");
  for (std::size_t j = 0; j < pool.jobs.size(); ++j) {
    const TwinInput& job = pool.jobs[j];
    const std::string who = "job " + std::to_string(j) + " (" + job.plan + "): ";
    for (const std::string& problem : check_twin_input(job)) problems.push_back(who + problem);
    if (!job.trace_path.empty()) problems.push_back(who + "the jobs of a pool write no trace");
  }
  if (!problems.empty()) return problems;
  std::vector<TwinInput> merged;
  try {
    merged = merge_pool(pool);
  } catch (const std::invalid_argument& conflict) {
    problems.push_back(conflict.what());
    return problems;
  }
  long long ranks = 0;
  for (const TwinInput& job : pool.jobs)
    for (const TwinStage& st : job.stages) ranks += static_cast<long long>(st.tp) * st.dp;
  if (ranks > kMaxRanks)
    problems.push_back("the pool has " + std::to_string(ranks) + " ranks; the limit is " +
                       std::to_string(kMaxRanks));
  // The merged fabric is checked as a whole (its size above all).
  for (const std::string& problem : check_twin_input(merged.front()))
    problems.push_back("the pool's fabric: " + problem);
  if (pool.exchange) {
    for (const std::string& problem : check_exchange(*pool.exchange, merged))
      problems.push_back("the gradient exchange: " + problem);
  }
  return problems;
}

double PoolSimulation::alone_tokens_per_s() const {
  double sum = 0;
  for (const PooledJob& job : jobs) sum += job.alone_tokens_per_s();
  return sum;
}

double PoolSimulation::together_tokens_per_s() const {
  double sum = 0;
  for (const PooledJob& job : jobs) sum += job.together_tokens_per_s();
  return sum;
}

std::vector<std::string> shared_spines(const TwinPoolInput& pool) {
  // A job's input names the limiting spine of each zone its islands are in, once.
  std::map<std::string, int> jobs_in;  // zone with a limiting spine -> jobs with islands there
  for (const TwinInput& job : pool.jobs)
    for (const TwinSpine& spine : job.spines) ++jobs_in[spine.zone];
  std::vector<std::string> out;
  for (const auto& [zone, jobs] : jobs_in)
    if (jobs >= 2) out.push_back(zone);
  return out;
}

PoolSimulation pool_simulation(const TwinPoolInput& pool, const std::vector<TwinResult>& alone,
                               const TwinPoolResult& together) {
  PoolSimulation out;
  out.window_s = together.window_s;
  out.links = together.links;
  for (std::size_t j = 0; j < pool.jobs.size(); ++j) {
    const TwinInput& in = pool.jobs[j];
    PooledJob& job = out.jobs.emplace_back();
    job.plan = in.plan;
    job.island = in.islands.at(static_cast<std::size_t>(in.stages.front().island)).name;
    job.tokens_per_step = in.tokens_per_step;
    job.alone_step_s = alone.at(j).step_time_s;
    job.together_step_s = together.mean_step_s.at(j);
    job.steps = together.steps.at(j);
  }
  return out;
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
