// Alpha-beta models of collective communication (docs/models/collectives.md).
//
// Sizes follow nccl-tests: `bytes` is the buffer size of the operation as nccl-tests prints it
// (all-reduce: the buffer; all-gather: the gathered output; reduce-scatter: the input;
// all-to-all: each rank's send buffer; broadcast and send/recv: the message). Bus bandwidth is
// nccl-tests' busbw, so a link model measured with nccl-tests plugs in directly.
#pragma once

#include <string_view>

namespace hetplan::models {

enum class Collective { all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv };
enum class CollectiveAlgorithm { ring, tree, hierarchical };

std::string_view to_string(Collective collective);
std::string_view to_string(CollectiveAlgorithm algorithm);

// One level of the fabric as a collective sees it: achievable bus bandwidth per rank and the
// latency of one algorithm step.
struct LinkLevel {
  double bus_bandwidth = 0;  // B/s per rank
  double latency = 0;        // s per step
};

// A group of ranks spread over nodes: ranks_per_node ranks in each node share `intra`;
// nodes are joined by `inter`.
struct CollectiveGroup {
  int ranks = 1;
  int ranks_per_node = 1;
  LinkLevel intra;
  LinkLevel inter;
  // When a node's ranks of the group span several of its fast groups (intra is then the link
  // between them): the ranks of the group inside one fast group and their link. An all-to-all
  // sends to those peers over it (0: no such split).
  int ranks_per_fast_group = 0;
  LinkLevel fast;

  int nodes() const { return (ranks + ranks_per_node - 1) / ranks_per_node; }
};

// nccl-tests' bus-bandwidth factor: busbw = algbw x factor.
double bus_factor(Collective collective, int ranks);

// Time of one collective with one algorithm.
double collective_time(Collective collective, CollectiveAlgorithm algorithm, double bytes,
                       const CollectiveGroup& group);

struct CollectiveChoice {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  double time = 0;
};
// The fastest algorithm for this collective, as the collective libraries' tuners pick.
CollectiveChoice best_collective(Collective collective, double bytes, const CollectiveGroup& group);

// An all-to-all whose cross-node part is forwarded (the flex dispatcher across nodes,
// flex_forwarded_traffic): each rank sends `node_bytes` over the intra-node link and
// `network_bytes` over its share of the node's NICs at once, and the slower decides; the
// latency is the flat exchange's, n - 1 steps of the slower level's alpha.
double forwarded_all_to_all_time(double node_bytes, double network_bytes,
                                 const CollectiveGroup& group);

}  // namespace hetplan::models
