// Data parallelism across chip types (docs/models/mixed-data-parallel.md): the sample-weighted
// gradient keeps the global batch's mean (a worked example by hand), the batch shares make the
// replicas finish together (a hand-computed case) and are optimal against brute force, and
// shares that cannot add up are refused.
#include "models/batch_balance.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "tests/support/batch_brute_force.hpp"

namespace hetplan::models {
namespace {

// Two A replicas of 3 sequences and one B replica of 2: a global batch of 8. With per-sample
// gradients 1, 2, ..., 8 (scalars), the replicas' own means are 2 (1, 2, 3), 5 (4, 5, 6) and
// 7.5 (7, 8). Weighted by samples, 3/8 * 2 + 3/8 * 5 + 2/8 * 7.5 = 4.5, the mean of 1..8; an
// all-reduce that averages the replicas alike gives (2 + 5 + 7.5) / 3 = 4.83, a different
// gradient (the scale of B's samples grows by 4/3 and A's shrinks).
TEST(BatchBalance, SampleWeightedGradientsKeepTheGlobalMean) {
  const std::vector<ReplicaGroup> groups = {{.replicas = 2, .micro_batch = 3},
                                            {.replicas = 1, .micro_batch = 2}};
  const std::vector<double> weights = gradient_weights(groups, {1, 1});
  ASSERT_EQ(weights.size(), 3u);
  EXPECT_DOUBLE_EQ(weights[0], 3.0 / 8);
  EXPECT_DOUBLE_EQ(weights[1], 3.0 / 8);
  EXPECT_DOUBLE_EQ(weights[2], 2.0 / 8);
  const std::vector<double> means = {2.0, 5.0, 7.5};
  double weighted = 0, alike = 0;
  for (std::size_t r = 0; r < means.size(); ++r) {
    weighted += weights[r] * means[r];
    alike += means[r] / 3;
  }
  EXPECT_DOUBLE_EQ(weighted, 4.5);
  EXPECT_NEAR(alike, 14.5 / 3, 1e-12);
  EXPECT_GT(std::abs(alike - 4.5), 0.3);
}

// Fast replicas take 2 s plus 1 s per micro-batch, slow ones 2 s plus 3 s; two of each, one
// sequence per micro-batch, 16 sequences: fast + slow counts add up to 8. Alike (4 and 4) the
// slow ones take 14 s; 6 and 2 make both 8 s, and no other split does better (7 and 1: 9 s;
// 5 and 3: 11 s).
TEST(BatchBalance, SharesMakeTheReplicasFinishTogether) {
  const std::vector<ReplicaGroup> groups = {
      {.replicas = 2, .micro_batch = 1, .fixed_s = 2, .per_micro_batch_s = 1},
      {.replicas = 2, .micro_batch = 1, .fixed_s = 2, .per_micro_batch_s = 3}};
  const BatchShares shares = balance_batch(groups, 16);
  ASSERT_TRUE(shares.feasible);
  EXPECT_EQ(shares.micro_batches, (std::vector<int>{6, 2}));
  EXPECT_DOUBLE_EQ(shares.step_s, 8.0);
  const std::vector<double> weights = gradient_weights(groups, shares.micro_batches);
  EXPECT_EQ(weights, (std::vector<double>{6.0 / 16, 6.0 / 16, 2.0 / 16, 2.0 / 16}));
}

// Every choice of counts, tried.
BatchShares brute_force(const std::vector<ReplicaGroup>& groups, int global_batch) {
  return test::brute_force_batch(groups, global_batch);
}

TEST(BatchBalance, OptimalAgainstBruteForce) {
  std::mt19937 random(20261202);
  auto uniform_int = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(random); };
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(random); };
  int feasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<ReplicaGroup> groups(static_cast<std::size_t>(uniform_int(1, 3)));
    for (ReplicaGroup& g : groups) {
      g.replicas = uniform_int(1, 3);
      g.micro_batch = uniform_int(1, 2);
      g.multiple = uniform_int(1, 2);
      g.fixed_s = uniform(0, 5);
      g.per_micro_batch_s = uniform(0.1, 3);
      g.max_micro_batches = uniform_int(1, 12);
    }
    const int batch = uniform_int(1, 48);
    const BatchShares expected = brute_force(groups, batch);
    const BatchShares got = balance_batch(groups, batch);
    ASSERT_EQ(got.feasible, expected.feasible) << "trial " << trial;
    if (!got.feasible) continue;
    ++feasible;
    EXPECT_EQ(got.step_s, expected.step_s) << "trial " << trial;
    // What it chose adds up, within every cap, and takes the step it says.
    long long samples = 0;
    double step = 0;
    ASSERT_EQ(got.micro_batches.size(), groups.size());
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const int m = got.micro_batches[g];
      EXPECT_GE(m, groups[g].multiple);
      EXPECT_LE(m, groups[g].max_micro_batches);
      EXPECT_EQ(m % groups[g].multiple, 0);
      samples += static_cast<long long>(groups[g].replicas) * groups[g].micro_batch * m;
      step = std::max(step, groups[g].step_s(m));
    }
    EXPECT_EQ(samples, batch) << "trial " << trial;
    EXPECT_EQ(step, got.step_s);
  }
  // The draw must reach both outcomes for the comparison to mean anything.
  EXPECT_GT(feasible, 50);
  EXPECT_LT(feasible, 400);
}

TEST(BatchBalance, SharesThatCannotAddUpAreRefused) {
  // Groups of 2 and 4 sequences per step unit never make 7.
  EXPECT_FALSE(balance_batch({{.replicas = 2}, {.replicas = 4}}, 7).feasible);
  // Caps too low: at most 3 micro-batches on one replica for 8 sequences.
  EXPECT_FALSE(balance_batch({{.replicas = 1, .max_micro_batches = 3}}, 8).feasible);
  // A group with no replica, a step that is not a number, no groups, no batch.
  EXPECT_FALSE(balance_batch({{.replicas = 0}}, 8).feasible);
  EXPECT_FALSE(balance_batch({{.replicas = 1, .per_micro_batch_s = std::nan("")}}, 8).feasible);
  EXPECT_FALSE(balance_batch({}, 8).feasible);
  EXPECT_FALSE(balance_batch({{.replicas = 1}}, 0).feasible);
}

// 14 GB of gradients (7B parameters in bf16) between a group of 4 nodes and one of 2, over a
// host-staged path of 100 Gbps (12.5 GB/s) per node and 30 us: the 2-node group's nodes hold
// 7 GB each and send and receive 2 (2 - 1) / 2 of it: 7 GB / 12.5 GB/s = 0.56 s, plus two steps
// of 30 us. Three groups of 2 nodes: 2 * 2 / 3 * 7 GB / 12.5 GB/s = 0.7467 s plus four steps.
TEST(BatchBalance, CrossGroupExchangeByHand) {
  EXPECT_NEAR(cross_group_exchange_s(14e9, {4, 2}, 12.5e9, 30e-6), 0.56 + 60e-6, 1e-12);
  EXPECT_NEAR(cross_group_exchange_s(14e9, {2, 2, 2}, 12.5e9, 30e-6),
              4.0 / 3 * 7e9 / 12.5e9 + 120e-6, 1e-12);
  EXPECT_EQ(cross_group_exchange_s(14e9, {8}, 12.5e9, 30e-6), 0);
  EXPECT_TRUE(std::isinf(cross_group_exchange_s(14e9, {2, 0}, 12.5e9, 30e-6)));
  EXPECT_TRUE(std::isinf(cross_group_exchange_s(14e9, {2, 2}, 0, 30e-6)));
}

}  // namespace
}  // namespace hetplan::models
