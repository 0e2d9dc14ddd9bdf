#include "models/collectives.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace hetplan::models {

std::string_view to_string(Collective collective) {
  switch (collective) {
    case Collective::all_reduce:
      return "all-reduce";
    case Collective::reduce_scatter:
      return "reduce-scatter";
    case Collective::all_gather:
      return "all-gather";
    case Collective::all_to_all:
      return "all-to-all";
    case Collective::broadcast:
      return "broadcast";
    case Collective::send_recv:
      return "send/recv";
  }
  return "?";
}

std::string_view to_string(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::ring:
      return "ring";
    case CollectiveAlgorithm::tree:
      return "tree";
    case CollectiveAlgorithm::hierarchical:
      return "hierarchical";
  }
  return "?";
}

double bus_factor(Collective collective, int ranks) {
  const double n = ranks;
  switch (collective) {
    case Collective::all_reduce:
      return 2.0 * (n - 1) / n;
    case Collective::reduce_scatter:
    case Collective::all_gather:
    case Collective::all_to_all:
      return (n - 1) / n;
    case Collective::broadcast:
    case Collective::send_recv:
      return 1.0;
  }
  return 1.0;
}

namespace {

// Number of sequential latency-bound steps of a ring over n ranks.
double ring_steps(Collective collective, int n) {
  switch (collective) {
    case Collective::all_reduce:
      return 2.0 * (n - 1);
    case Collective::reduce_scatter:
    case Collective::all_gather:
    case Collective::all_to_all:
    case Collective::broadcast:
      return n - 1;
    case Collective::send_recv:
      return 1.0;
  }
  return 1.0;
}

// One flat level: n ranks all with the same link.
double flat_time(Collective collective, double bytes, int n, const LinkLevel& link) {
  if (n <= 1 && collective != Collective::send_recv) return 0.0;
  return ring_steps(collective, n) * link.latency +
         bus_factor(collective, n) * bytes / link.bus_bandwidth;
}

LinkLevel slowest(const LinkLevel& a, const LinkLevel& b) {
  return {std::min(a.bus_bandwidth, b.bus_bandwidth), std::max(a.latency, b.latency)};
}

// ceil(log2(n)) for n >= 1, in integers: the steps of a binary tree over n (no libm call on the
// planner's scoring path).
double ceil_log2(int n) {
  return static_cast<double>(std::bit_width(static_cast<unsigned>(n - 1)));
}

}  // namespace

double collective_time(Collective collective, CollectiveAlgorithm algorithm, double bytes,
                       const CollectiveGroup& group) {
  const int n = group.ranks;
  if (n <= 1 && collective != Collective::send_recv) return 0.0;
  const int nodes = group.nodes();
  const int local = std::min(group.ranks_per_node, n);
  const int fast = group.ranks_per_fast_group > 0 ? std::min(group.ranks_per_fast_group, local) : 0;
  if (collective == Collective::all_to_all && (nodes > 1 || (fast > 0 && fast < local))) {
    // Every rank sends bytes / n to each peer at once: the peers of its fast group over their
    // link, the other peers in its node over the link between fast groups, the others over
    // its share of the node's NICs; the slowest part decides. The same for every algorithm (an
    // all-to-all is one exchange, not a ring).
    const double near = fast > 0 ? (fast - 1.0) / n * bytes / group.fast.bus_bandwidth : 0.0;
    const double in_node =
        (local - std::max(fast, 1)) / static_cast<double>(n) * bytes / group.intra.bus_bandwidth;
    const double inter = static_cast<double>(n - local) / n * bytes / group.inter.bus_bandwidth;
    double latency = group.intra.latency;
    if (nodes > 1) latency = std::max(latency, group.inter.latency);
    if (fast > 0) latency = std::max(latency, group.fast.latency);
    return ring_steps(collective, n) * latency + std::max({near, in_node, inter});
  }
  if (nodes <= 1) {
    if (algorithm == CollectiveAlgorithm::tree && collective == Collective::all_reduce) {
      return 2.0 * ceil_log2(n) * group.intra.latency +
             bus_factor(collective, n) * bytes / group.intra.bus_bandwidth;
    }
    return flat_time(collective, bytes, n, group.intra);
  }
  switch (algorithm) {
    case CollectiveAlgorithm::ring:
      // One ring through every rank: each step waits for the slowest link it crosses.
      return flat_time(collective, bytes, n, slowest(group.intra, group.inter));
    case CollectiveAlgorithm::tree: {
      if (collective != Collective::all_reduce) {
        return flat_time(collective, bytes, n, slowest(group.intra, group.inter));
      }
      // Double binary tree across nodes (latency logarithmic in nodes), chains inside a node.
      return 2.0 * ceil_log2(nodes) * group.inter.latency +
             2.0 * (local - 1) * group.intra.latency +
             bus_factor(collective, n) * bytes /
                 std::min(group.intra.bus_bandwidth, group.inter.bus_bandwidth);
    }
    case CollectiveAlgorithm::hierarchical: {
      // Inside each node first, then across nodes per rail on 1/local of the data, then back.
      switch (collective) {
        case Collective::all_reduce:
          return flat_time(Collective::reduce_scatter, bytes, local, group.intra) +
                 flat_time(Collective::all_reduce, bytes / local, nodes, group.inter) +
                 flat_time(Collective::all_gather, bytes, local, group.intra);
        case Collective::reduce_scatter:
          return flat_time(Collective::reduce_scatter, bytes, local, group.intra) +
                 flat_time(Collective::reduce_scatter, bytes / local, nodes, group.inter);
        case Collective::all_gather:
          return flat_time(Collective::all_gather, bytes / local, nodes, group.inter) +
                 flat_time(Collective::all_gather, bytes, local, group.intra);
        case Collective::broadcast:
          return flat_time(Collective::broadcast, bytes, nodes, group.inter) +
                 flat_time(Collective::broadcast, bytes, local, group.intra);
        case Collective::all_to_all:
        case Collective::send_recv:
          return flat_time(collective, bytes, n, slowest(group.intra, group.inter));
      }
    }
  }
  return 0.0;
}

CollectiveChoice best_collective(Collective collective, double bytes,
                                 const CollectiveGroup& group) {
  CollectiveChoice best{CollectiveAlgorithm::ring,
                        collective_time(collective, CollectiveAlgorithm::ring, bytes, group)};
  for (auto algorithm : {CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical}) {
    const double time = collective_time(collective, algorithm, bytes, group);
    if (time < best.time) best = {algorithm, time};
  }
  return best;
}

double forwarded_all_to_all_time(double node_bytes, double network_bytes,
                                 const CollectiveGroup& group) {
  // With fast groups inside a node (ranks_per_fast_group), `intra` is the link between them: the
  // slower in-node path carries the forwarded copies.
  return collective_time(Collective::all_to_all, CollectiveAlgorithm::ring, 0.0, group) +
         std::max(node_bytes / group.intra.bus_bandwidth,
                  network_bytes / group.inter.bus_bandwidth);
}

}  // namespace hetplan::models
