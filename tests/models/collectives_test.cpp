#include "models/collectives.hpp"

#include <gtest/gtest.h>

namespace hetplan::models {
namespace {

TEST(Collectives, BusFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_gather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::reduce_scatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::all_to_all, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::send_recv, 2), 1.0);
}

CollectiveGroup one_node(int ranks) {
  CollectiveGroup group;
  group.ranks = ranks;
  group.ranks_per_node = ranks;
  group.intra = {100e9, 2e-6};
  group.inter = {25e9, 5e-6};
  return group;
}

TEST(Collectives, RingAllReduceInsideANode) {
  // 2 (n - 1) steps of latency plus 2 (n - 1) / n of the buffer at the bus bandwidth.
  const double expected = 14 * 2e-6 + 1.75 * 1e9 / 100e9;
  EXPECT_DOUBLE_EQ(
      collective_time(Collective::all_reduce, CollectiveAlgorithm::ring, 1e9, one_node(8)),
      expected);
}

TEST(Collectives, OneRankCostsNothing) {
  EXPECT_DOUBLE_EQ(
      collective_time(Collective::all_reduce, CollectiveAlgorithm::ring, 1e9, one_node(1)), 0.0);
}

TEST(Collectives, HierarchicalAllReduceAcrossTwoNodes) {
  CollectiveGroup group = one_node(16);
  group.ranks_per_node = 8;
  const double s = 1e9;
  // Reduce-scatter in the node, all-reduce of s/8 across 2 nodes per rail, all-gather back.
  const double expected = (7 * 2e-6 + 0.875 * s / 100e9) + (2 * 5e-6 + 1.0 * (s / 8) / 25e9) +
                          (7 * 2e-6 + 0.875 * s / 100e9);
  EXPECT_DOUBLE_EQ(
      collective_time(Collective::all_reduce, CollectiveAlgorithm::hierarchical, s, group),
      expected);
}

TEST(Collectives, FlatRingAcrossNodesRunsAtTheSlowestLink) {
  CollectiveGroup group = one_node(16);
  group.ranks_per_node = 8;
  const double expected = 30 * 5e-6 + 2.0 * 15 / 16 * 1e9 / 25e9;
  EXPECT_DOUBLE_EQ(collective_time(Collective::all_reduce, CollectiveAlgorithm::ring, 1e9, group),
                   expected);
}

TEST(Collectives, BestPicksHierarchicalForLargeMultiNodeBuffers) {
  CollectiveGroup group = one_node(64);
  group.ranks_per_node = 8;
  const auto choice = best_collective(Collective::all_reduce, 4e9, group);
  EXPECT_EQ(choice.algorithm, CollectiveAlgorithm::hierarchical);
  EXPECT_DOUBLE_EQ(choice.time, collective_time(Collective::all_reduce,
                                                CollectiveAlgorithm::hierarchical, 4e9, group));
}

TEST(Collectives, SmallMessagesPreferTheTree) {
  CollectiveGroup group = one_node(512);
  group.ranks_per_node = 8;
  EXPECT_EQ(best_collective(Collective::all_reduce, 1024, group).algorithm,
            CollectiveAlgorithm::tree);
}

}  // namespace
}  // namespace hetplan::models

namespace hetplan::models {
namespace {

// An all-to-all over 16 ranks on 2 nodes of 8 (intra 100 GB/s, NICs 25 GB/s per rank): each
// rank's 64 MB buffer goes 1/16 to each peer at once, 7/16 inside its node and 8/16 across;
// the network part is the slower, 32 MB at 25 GB/s = 1.28 ms, after 15 steps of the network's
// 5 us. Every algorithm gives the same exchange.
TEST(Collectives, AllToAllAcrossNodesIsOneExchange) {
  CollectiveGroup group;
  group.ranks = 16;
  group.ranks_per_node = 8;
  group.intra = {100e9, 2e-6};
  group.inter = {25e9, 5e-6};
  const double bytes = 64e6;
  const double expected = 15 * 5e-6 + 8.0 / 16 * 64e6 / 25e9;
  for (auto algorithm :
       {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical}) {
    EXPECT_DOUBLE_EQ(collective_time(Collective::all_to_all, algorithm, bytes, group), expected);
  }
  // With a network as fast as the node's link the intra-node part (7/16) is not the slower.
  group.inter = {100e9, 5e-6};
  EXPECT_DOUBLE_EQ(best_collective(Collective::all_to_all, bytes, group).time,
                   15 * 5e-6 + 8.0 / 16 * 64e6 / 100e9);
  // Inside one node: (n - 1) / n of the buffer at the bus bandwidth.
  group.ranks_per_node = 16;
  EXPECT_DOUBLE_EQ(best_collective(Collective::all_to_all, bytes, group).time,
                   15 * 2e-6 + 15.0 / 16 * 64e6 / 100e9);
}

// A node whose chips are linked in fast groups of 4 (100 GB/s inside a group, 31.5 GB/s
// between groups): an all-to-all over 4 ranks two chips apart (a tensor-parallel size of 2)
// has 2 ranks in each group. Each rank sends a quarter of its 64 MB buffer to each peer: one
// peer in its group over the fast link (16 MB at 100 GB/s), two in the other group between
// groups (32 MB at 31.5 GB/s), the slower part, after 3 steps of the slower latency.
TEST(Collectives, AllToAllAcrossFastGroupsOfANode) {
  CollectiveGroup group;
  group.ranks = 4;
  group.ranks_per_node = 4;
  group.intra = {31.5e9, 3e-6};
  group.fast = {100e9, 2e-6};
  group.ranks_per_fast_group = 2;
  const double bytes = 64e6;
  EXPECT_DOUBLE_EQ(best_collective(Collective::all_to_all, bytes, group).time,
                   3 * 3e-6 + 2.0 / 4 * 64e6 / 31.5e9);
  // Without the split every peer is priced between groups: 3/4 of the buffer.
  group.ranks_per_fast_group = 0;
  EXPECT_DOUBLE_EQ(best_collective(Collective::all_to_all, bytes, group).time,
                   3 * 3e-6 + 3.0 / 4 * 64e6 / 31.5e9);
  // Across two such nodes (8 ranks, 4 a node, NICs 25 GB/s): 1/8 inside the group, 2/8 between
  // groups, 4/8 over the network, which decides.
  group.ranks = 8;
  group.ranks_per_fast_group = 2;
  group.inter = {25e9, 5e-6};
  EXPECT_DOUBLE_EQ(best_collective(Collective::all_to_all, bytes, group).time,
                   7 * 5e-6 + 4.0 / 8 * 64e6 / 25e9);
}

}  // namespace
}  // namespace hetplan::models
