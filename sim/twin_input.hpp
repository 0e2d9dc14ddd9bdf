// What the digital twin simulates and what it reports (docs/twin.md).
//
// A TwinInput is a plan lowered onto its cluster: the fabric the plan's chips use, its stages
// with their per-micro-batch times from the cost models, the gradient synchronisation of each
// stage, and the variability to inject. It is self-contained plain data, so that it can cross
// a process boundary as JSON: the flow-level simulation runs in a worker process
// (sim/twin/), one SimGrid engine per process. check_twin_input validates everything the
// worker relies on before any of it reaches SimGrid.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.hpp"
#include "core/plan.hpp"
#include "core/scenario.hpp"
#include "core/workload.hpp"
#include "models/collectives.hpp"
#include "sim/estimator.hpp"

namespace hetplan::sim {

// One island as the platform builds it. Chips are numbered node by node; a node's chips use
// its NICs in equal consecutive shares (chip c uses NIC c * nics / chips_per_node).
struct TwinIsland {
  std::string name;
  std::string zone;
  int nodes = 0;  // nodes the platform builds (those the plan reaches)
  int chips_per_node = 1;
  int nics = 1;            // per node
  double nic_speed = 0;    // B/s each, each direction
  int nodes_per_leaf = 1;  // nodes under one leaf switch group
  double uplink_speed = 0;  // B/s of one leaf group's uplinks together, each direction
  double intra_speed = 0;   // B/s per chip inside its group of a node (nominal)
  int intra_group = 1;      // chips per fast group of a node
  double cross_group_speed = 0;  // B/s per chip between groups of a node
  double intra_efficiency = 1;   // achievable share of intra-node bandwidth for collectives
  double network_efficiency = 1;  // achievable share of NIC bandwidth for collectives
};

// One collective of a stage's gradient synchronisation, with the algorithm the collective
// library's tuner picks (the analytic model's choice) and its latency term.
struct TwinCollective {
  models::Collective kind = models::Collective::all_reduce;
  models::CollectiveAlgorithm algorithm = models::CollectiveAlgorithm::ring;
  double bytes = 0;      // nccl-tests' buffer size, all model chunks together
  double latency_s = 0;  // the algorithm's latency term (steps x alpha), added analytically
  // The routed experts' gradients: over the expert data-parallel groups (the ranks ep x etp
  // apart; with etp = tp, replicas r, r + ep, r + 2 ep, ... with the same tp rank), which hold
  // the same experts, rather than over all replicas.
  bool experts = false;
};

struct TwinStage {
  int island = 0;      // index into TwinInput::islands
  int first_chip = 0;  // the island's first chip this stage uses; replica d, tp rank j is chip
                       // first_chip + d * tp + j
  int tp = 1;
  int dp = 1;
  // Expert parallelism: replicas d of one group d / ep exchange their routed tokens, tensor
  // rank with tensor rank (Megatron's expert-parallel groups); ep divides dp. With expert tensor
  // parallelism etp other than tp (0: as tp) the groups are ranks etp apart in blocks of
  // ep x etp ranks (Megatron-Core's expert rank order), which must hold whole replicas or lie
  // inside one (check_twin_input).
  int ep = 1;
  int etp = 0;
  double a2a_bytes = 0;      // one all-to-all's send buffer per chip (nccl-tests' size)
  // The flex dispatcher across nodes (StageKernel::a2a_node_bytes, a2a_network_bytes): when
  // a2a_network_bytes > 0 an all-to-all sends, per chip, a2a_node_bytes shared among the group's
  // other chips on its node and a2a_network_bytes shared among the chips of its index in the
  // group on the other nodes, instead of a2a_bytes / ep to every peer.
  double a2a_node_bytes = 0;
  double a2a_network_bytes = 0;
  int a2a_forward = 0;       // all-to-alls of one micro-batch's forward pass, all chunks
  int a2a_backward = 0;      // of its backward pass, with those of recomputed forwards
  double a2a_latency_s = 0;  // one all-to-all's latency term (steps x alpha), added analytically
  // Under the combined 1F1B schedule (TwinInput::combined): the share of a paired forward and
  // backward operation's all-to-alls hidden behind their compute (StageKernel::ep_overlap); 0:
  // each operation's all-to-alls follow its compute.
  double a2a_overlap = 0;

  double forward_s = 0;   // one micro-batch, all chunks, compute only
  double backward_s = 0;  // one micro-batch, all chunks, incl. recompute
  double tp_s = 0;        // tensor-parallel collectives of one micro-batch (analytic)
  double optimizer_s = 0;
  std::vector<TwinCollective> dp_sync;  // in order
  // Each model chunk's share of the stage's compute, its all-to-alls and its gradients, by its
  // layers, when the plan's chunks differ in size (PlanStage::chunk_layers): one per chunk,
  // adding up to 1. Empty: 1 / chunks each.
  std::vector<double> chunk_share;
};

// The replicas of a stage that exchange routed tokens together: those holding one block of
// ep x etp consecutive ranks (Megatron-Core's expert groups: etp innermost, then ep), one
// replica when a replica's tensor ranks hold whole blocks; ep replicas with etp = tp.
inline int exchange_replicas(const TwinStage& st) {
  return std::max(1, st.ep * expert_tp(st.etp, st.tp) / st.tp);
}

struct TwinZoneLink {
  std::string zone_a;
  std::string zone_b;
  double speed = 0;    // B/s each direction
  double latency = 0;  // s
};

// A zone's spine tier when it limits (fabric.spine_oversubscription above 1): one link that
// every flow between two leaves of the zone crosses, at `speed` B/s.
struct TwinSpine {
  std::string zone;
  double speed = 0;
};

// A slow node: every chip of it computes `slowdown` times slower.
struct TwinStraggler {
  int island = 0;
  int node = 0;
  double slowdown = 1;
};

struct TwinInput {
  std::string plan;  // the plan's name, for messages and the trace
  // Fabric.
  double link_latency = 0;    // s per cable
  double switch_latency = 0;  // s per switch traversed
  std::vector<TwinIsland> islands;
  std::vector<TwinZoneLink> zone_links;
  std::vector<TwinSpine> spines;  // zones whose spine limits; the others' spines do not
  // The step.
  std::vector<TwinStage> stages;  // in pipeline order
  int micro_batches = 1;          // per pipeline replica
  int chunks = 1;                 // model chunks per stage (interleaved schedule when > 1)
  double activation_bytes = 0;    // one micro-batch's activations at a stage boundary
  bool overlap_grad_reduce = false;
  // The distributed optimizer's weight all-gather runs during the next step's first forward
  // pass (otherwise after the optimizer step, exposed).
  bool overlap_param_gather = false;
  // Megatron-Core's combined 1F1B schedule (the workload's overlap.ep_comm where the plan allows
  // it): one more warm-up forward operation, then each forward operation beside the backward
  // operation that follows it, their all-to-alls running during their compute
  // (docs/twin.md#the-step).
  bool combined = false;
  double tokens_per_step = 0;
  double model_flops_per_step = 0;
  double peak_flops = 0;  // all chips of the plan together
  // Variability.
  std::uint64_t seed = 0;
  double jitter = 0;  // coefficient of variation of each compute operation per chip
  std::vector<TwinStraggler> stragglers;
  // The tensor-parallel ranks of a replica as one host with their links together, and their
  // flows to another replica's as one (docs/twin.md#speed): the same step with fewer flows.
  // False: one host and one flow per chip (to check that nothing moves).
  bool chip_blocks = true;
  // Periods of alike replicas simulated twice instead of every one (docs/twin.md#folding): the
  // same step with fewer flows. False: every replica (to check that nothing moves).
  bool fold_replicas = true;
  // Output.
  std::string trace_path;  // empty: no trace
};

// The platform's link kinds, for the report.
enum class TwinLinkKind { nic, intra, cross_group, leaf_uplink, zone_link, spine, gradient_path };
std::string_view to_string(TwinLinkKind kind);

struct TwinLinkLoad {
  std::string name;  // e.g. "ascend-910b leaf 1 uplink (up)"
  TwinLinkKind kind = TwinLinkKind::nic;
  double bytes = 0;     // carried during the step
  double speed = 0;     // B/s
  double busy_s = 0;    // bytes / speed: time at full rate
  double utilization = 0;  // busy_s / step time
};

// Where the critical rank's step time goes; the parts add up to the step time.
struct TwinBreakdown {
  double compute_s = 0;          // nominal forward and backward compute
  double tensor_parallel_s = 0;  // tensor-parallel collectives (analytic)
  double pipeline_s = 0;         // stage-boundary sends inside an island
  double cross_island_s = 0;     // stage-boundary sends between islands
  double data_parallel_s = 0;    // gradient synchronisation not hidden by the backward pass,
                                 // and the weights' all-gather after the optimizer step
  double expert_parallel_s = 0;  // expert-parallel all-to-alls (dispatch and combine)
  double bubble_s = 0;           // waiting for the neighbour stages (fill, drain, delays)
  double stragglers_s = 0;       // slow chips: own slowdown and waiting for slow replicas
  double optimizer_s = 0;
  double total() const {
    return compute_s + tensor_parallel_s + pipeline_s + cross_island_s + data_parallel_s +
           expert_parallel_s + bubble_s + stragglers_s + optimizer_s;
  }
};

struct TwinResult {
  std::string plan;
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  TwinBreakdown breakdown;
  int critical_stage = 0;    // the stage replica that finished last
  int critical_replica = 0;
  std::vector<double> stage_finish_s;        // per stage, the latest finish over its replicas
  std::vector<double> stage_first_finish_s;  // per stage, the earliest finish over its replicas
  std::vector<TwinBreakdown> stage_breakdown;  // per stage, of its last replica to finish
  std::vector<TwinLinkLoad> links;     // the most loaded links, most loaded first
  std::int64_t ranks = 0;
  std::int64_t simulated_ranks = 0;  // the ranks simulated: fewer than `ranks` when folded
  std::int64_t flows = 0;            // network flows simulated
};

// Several jobs on one fabric: a resource pool's jobs, each lowered on its own by
// make_twin_input, simulated together (docs/twin.md#pool). Their islands are merged by name
// (the same island in two jobs must be described alike) and their chips must not overlap.
// Every job starts at time 0 and repeats its step while another job has not finished its first,
// at most `max_steps` times, so that every job keeps its traffic on the fabric until the longest
// first step has ended.
// One declared gradient path between two replica groups (jobs of the pool), as the exchange
// uses it: each node of each end has a link of the path at `speed`; a device RDMA path also
// crosses the fabric's tiers between the two islands (leaf uplinks, limiting spines, the zone
// link).
struct TwinGradientPath {
  int group_a = 0;  // job indices
  int group_b = 0;
  double speed = 0;    // B/s per node, each direction
  double latency = 0;  // s per message
  bool fabric = false;  // device RDMA: over the fabric's tiers as well
};

// The gradient exchange between replica groups on different islands
// (docs/twin.md#replica-groups): once every group (job) has finished its step, the groups'
// partial sums cross the declared paths node with node, over the fewest nodes of any group
// (lane k: the k-th node each group's stages use). Each node has one port for all its paths, at
// its widest path's speed. A ring sends 2 (G - 1) / G of a lane's share from each group to the
// next in one round; a parameter server takes each other group's share (push), then sends the
// sum back (pull). The latency terms are added analytically.
struct TwinGradientExchange {
  bool parameter_server = false;
  int server = 0;    // the serving group, with a parameter server
  double bytes = 0;  // the model's gradients, in the precision they are reduced in
  std::vector<TwinGradientPath> paths;  // the pairs the exchange joins
  // Zone links a device RDMA path crosses that no group's own fabric holds.
  std::vector<TwinZoneLink> zone_links;
};

struct TwinPoolInput {
  std::vector<TwinInput> jobs;
  int max_steps = 64;
  // Replica groups of one job: each job (group) runs one step, then they exchange gradients.
  std::optional<TwinGradientExchange> exchange;
};

// The exchange as simulated: from the end of the last group's step to the end of its last flow.
struct TwinExchangeResult {
  double start_s = 0;
  double end_s = 0;
  std::int64_t flows = 0;
  std::vector<TwinLinkLoad> links;  // its most loaded links, busy over the exchange
};

// A link that carried more than one job's traffic during the simulated window.
struct TwinSharedLink {
  TwinLinkLoad load;               // over the window: all jobs' bytes, busy_s / window_s
  std::vector<double> job_bytes;  // per job, in job order
};

// The window is [0, the end of the last job's first step): every job runs throughout it.
struct TwinPoolResult {
  std::vector<TwinResult> jobs;     // each job's first step, beside the others (links empty)
  std::vector<int> steps;           // each job's steps that started inside the window (>= 1)
  std::vector<double> mean_step_s;  // their mean step time: the job's contended step
  double window_s = 0;
  std::vector<TwinSharedLink> links;  // shared links, most loaded first: the bytes of the flows
                                      // that started inside the window, busy over the window
  std::optional<TwinExchangeResult> exchange;  // with the input's exchange
};

// The pool's jobs on one fabric: one TwinInput per job whose islands are the union of all
// jobs' (in first-seen order) and whose stages and stragglers point into it. Throws
// std::invalid_argument naming the conflict when two jobs describe one island differently, give
// one zone link or spine two ways, or place stages on the same chips.
std::vector<TwinInput> merge_pool(const TwinPoolInput& pool);

// check_twin_input for every job, then merge_pool's conditions and the counts of the whole.
std::vector<std::string> check_twin_pool(const TwinPoolInput& pool);

// A pool's jobs alone and together, as the front ends show them beside the three states.
struct PooledJob {
  std::string plan;
  std::string island;  // the island of its first stage
  double tokens_per_step = 0;
  double alone_step_s = 0;     // simulated alone
  double together_step_s = 0;  // the mean step beside the others (TwinPoolResult::mean_step_s)
  int steps = 0;               // the steps that mean is over
  double alone_tokens_per_s() const { return alone_step_s > 0 ? tokens_per_step / alone_step_s : 0; }
  double together_tokens_per_s() const {
    return together_step_s > 0 ? tokens_per_step / together_step_s : 0;
  }
  double slowdown() const { return alone_step_s > 0 ? together_step_s / alone_step_s : 1; }
};

struct PoolSimulation {
  // False when no two jobs can meet on a link that limits (the twin gives each its islands' own
  // NICs, leaves and uplinks, so only a zone's limiting spine is shared): nothing is simulated,
  // as together each job runs its step alone (TwinPool.JobsThatShareNothingRunAsAlone).
  bool shares_a_limiting_link = true;
  std::vector<PooledJob> jobs;
  std::vector<TwinSharedLink> links;  // job_bytes in the order of `jobs`
  double window_s = 0;
  double alone_tokens_per_s() const;
  double together_tokens_per_s() const;
};

// The zones whose limiting spine carries traffic of two or more of the pool's jobs' islands.
std::vector<std::string> shared_spines(const TwinPoolInput& pool);

// `alone` and `together` simulated from `pool` (one result per job, in job order).
PoolSimulation pool_simulation(const TwinPoolInput& pool, const std::vector<TwinResult>& alone,
                               const TwinPoolResult& together);

// A slow node named by its island, as scenarios write it.
struct StragglerSpec {
  std::string island;
  int node = 0;
  double slowdown = 1;
};

// Options of the lowering: variability and output.
struct TwinOptions {
  std::uint64_t seed = 0;
  double jitter = 0;
  std::vector<StragglerSpec> stragglers;  // on islands the plan does not use: ignored
  // Slow nodes drawn among the nodes the plan uses: each is slow with probability
  // `straggler_fraction`, by a draw keyed on (seed, island name, node).
  double straggler_fraction = 0;
  double straggler_slowdown = 1;
  std::string trace_path;
  EstimateOptions estimate;
};

// Variability from the scenario's `simulation:` section; `seed` (the command line's) wins over
// the scenario's, which wins over 0.
TwinOptions twin_options(const Scenario& scenario, std::optional<std::uint64_t> seed = std::nullopt);

// Lowers a plan and its analytic estimate onto the cluster. The estimate must be feasible
// (the twin simulates plans that can run); the plan must have passed the reference checks.
TwinInput make_twin_input(const Cluster& cluster, const Workload& workload, const Plan& plan,
                          const Estimate& estimate, const TwinOptions& options = {});

// Everything the simulation relies on, checked: counts, ranges, finite positive speeds, chips
// inside their islands, expert-parallel groups that divide the replicas, zone links for every
// cross-zone boundary and synchronisation. Returns the problems, empty when the input is sound.
std::vector<std::string> check_twin_input(const TwinInput& input);

}  // namespace hetplan::sim
