// The layer split against brute force: every composition of the layers on small problems.
#include "planner/layer_split.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>

#include "planner/score.hpp"
#include "tests/support/split_brute_force.hpp"

namespace hetplan::planner {
namespace {

double brute_force(const SplitProblem& problem) {
  return test::brute_force_split(problem);
}

SplitProblem random_problem(std::mt19937& rng) {
  std::uniform_int_distribution<int> stages(1, 5), granularity(1, 2), micro(1, 12), vpp(1, 3);
  std::uniform_real_distribution<double> per_layer(0.5, 4.0), fixed(0.0, 3.0);
  std::uniform_int_distribution<int> coin(0, 3);
  SplitProblem problem;
  problem.granularity = granularity(rng);
  const int p = stages(rng);
  problem.layers = problem.granularity * std::uniform_int_distribution<int>(p, 14)(rng);
  problem.micro_batches = micro(rng);
  problem.virtual_stages = vpp(rng);
  for (int j = 0; j < p; ++j) {
    SplitStage s;
    // A few repeated speeds, as stages of one island share theirs.
    s.per_layer_s = coin(rng) == 0 ? 1.0 : per_layer(rng);
    s.fixed_s = coin(rng) == 0 ? 0.0 : fixed(rng);
    s.max_layers = coin(rng) == 0 ? problem.layers
                                  : std::uniform_int_distribution<int>(0, problem.layers)(rng);
    problem.stages.push_back(s);
  }
  return problem;
}

// Solves 4,000 random problems from `seed` and checks each against brute force; with
// `least_layers`, every stage of a problem also holds at least a random 0 to 4 layers (partial
// recompute's recomputed ones).
void expect_brute_force_optimum(std::uint32_t seed, bool least_layers) {
  std::mt19937 rng(seed);
  int solved = 0, infeasible = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    SplitProblem problem = random_problem(rng);
    const int least = least_layers ? std::uniform_int_distribution<int>(0, 4)(rng) : 0;
    for (auto& s : problem.stages) s.min_layers = least;
    const double expected = brute_force(problem);
    const auto split = solve_split(problem);
    if (!std::isfinite(expected)) {
      EXPECT_FALSE(split) << "trial " << trial;
      ++infeasible;
      continue;
    }
    ASSERT_TRUE(split) << "trial " << trial;
    ++solved;
    EXPECT_NEAR(split->pipeline_s, expected, 1e-9 * expected) << "trial " << trial;
    int total = 0;
    for (std::size_t j = 0; j < split->layers.size(); ++j) {
      EXPECT_GE(split->layers[j], std::max(problem.granularity, least));
      EXPECT_LE(split->layers[j], problem.stages[j].max_layers);
      EXPECT_EQ(split->layers[j] % problem.granularity, 0);
      total += split->layers[j];
    }
    EXPECT_EQ(total, problem.layers);
  }
  // Both kinds of case were exercised.
  EXPECT_GT(solved, 1000);
  EXPECT_GT(infeasible, 100);
}

TEST(LayerSplit, MatchesBruteForceOnRandomSmallProblems) {
  expect_brute_force_optimum(20261129, false);
}

// Partial recompute gives every stage a least layer count (its recomputed layers) and a fixed
// time for them: the same brute force, with random least counts.
TEST(LayerSplit, MatchesBruteForceWithLeastLayersPerStage) {
  expect_brute_force_optimum(20261202, true);
}

// A pipeline's stages come in a few kinds (its middle stages of one island alike): the split
// runs over kinds of stage, so problems made of two or three kinds repeated, with the first
// and last stage sometimes apart (embedding, head), against brute force.
TEST(LayerSplit, MatchesBruteForceWithStagesOfFewKinds) {
  std::mt19937 rng(20261203);
  std::uniform_int_distribution<int> kinds_of(1, 3), stages_of(2, 7), micro(1, 12), vpp(1, 3);
  std::uniform_real_distribution<double> per_layer(0.5, 4.0), fixed(0.0, 3.0);
  std::uniform_int_distribution<int> coin(0, 1);
  int solved = 0, with_repeats = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    SplitProblem problem;
    problem.granularity = 1;
    const int p = stages_of(rng);
    problem.layers = std::uniform_int_distribution<int>(p, 16)(rng);
    problem.micro_batches = micro(rng);
    problem.virtual_stages = vpp(rng);
    std::vector<SplitStage> kinds(static_cast<std::size_t>(kinds_of(rng)));
    for (auto& k : kinds) {
      k.per_layer_s = per_layer(rng);
      k.fixed_s = fixed(rng);
      k.max_layers = std::uniform_int_distribution<int>(1, problem.layers)(rng);
      k.min_layers = coin(rng);
    }
    std::uniform_int_distribution<std::size_t> pick(0, kinds.size() - 1);
    for (int j = 0; j < p; ++j) {
      SplitStage s = kinds[pick(rng)];
      if ((j == 0 || j == p - 1) && coin(rng)) s.fixed_s += fixed(rng);
      problem.stages.push_back(s);
    }
    if (static_cast<int>(kinds.size()) < p) ++with_repeats;
    const double expected = brute_force(problem);
    const auto split = solve_split(problem);
    if (!std::isfinite(expected)) {
      EXPECT_FALSE(split) << "trial " << trial;
      continue;
    }
    ASSERT_TRUE(split) << "trial " << trial;
    ++solved;
    EXPECT_NEAR(split->pipeline_s, expected, 1e-9 * expected) << "trial " << trial;
  }
  EXPECT_GT(solved, 500);
  EXPECT_GT(with_repeats, 1000);
}

// Stage speeds many orders of magnitude apart: a fast stage's tiny per-layer time next to a
// large fixed part makes (bound - fixed) / time lose digits, and its counts at a bound pass any
// int's range. The solver once read one unit too few at the bottleneck and returned that
// failed fill: a split two layers short (trial 530 of this seed: 16 + 2 of 20 layers).
TEST(LayerSplit, StageSpeedsFarApartMatchBruteForce) {
  std::mt19937 rng(20261203);
  std::uniform_real_distribution<double> exponent(-12.0, 3.0), fixed(0.0, 3.0);
  std::uniform_int_distribution<int> stages(2, 4), micro(1, 12), vpp(1, 2);
  int solved = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    SplitProblem problem;
    problem.virtual_stages = vpp(rng);
    problem.granularity = problem.virtual_stages;
    const int p = stages(rng);
    problem.layers = problem.granularity * std::uniform_int_distribution<int>(p, 12)(rng);
    problem.micro_batches = micro(rng);
    for (int j = 0; j < p; ++j)
      problem.stages.push_back({std::pow(10.0, exponent(rng)), fixed(rng), problem.layers});
    const double expected = brute_force(problem);
    const auto split = solve_split(problem);
    ASSERT_TRUE(split) << "trial " << trial;
    EXPECT_NEAR(split->pipeline_s, expected, 1e-9 * expected) << "trial " << trial;
    int total = 0;
    for (int n : split->layers) total += n;
    EXPECT_EQ(total, problem.layers) << "trial " << trial;
    ++solved;
  }
  EXPECT_EQ(solved, 2000);
}

// MindSpeed-LLM with model chunks takes only equal middle stages (core/framework.hpp): the
// best such split against brute force over the splits of that form, on random problems of up
// to six stages.
TEST(LayerSplit, FirstLastSplitMatchesBruteForceOverItsForm) {
  std::mt19937 rng(20260705);
  int solved = 0, constrained = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    SplitProblem problem = random_problem(rng);
    if (trial % 2 == 0) {  // longer pipelines, where the form binds
      problem.stages.resize(std::uniform_int_distribution<std::size_t>(4, 6)(rng),
                            problem.stages.back());
      for (auto& s : problem.stages)
        s.per_layer_s = std::uniform_real_distribution<double>(0.5, 4.0)(rng);
      problem.layers = problem.granularity * std::uniform_int_distribution<int>(6, 16)(rng);
      for (auto& s : problem.stages) s.max_layers = std::max(s.max_layers, problem.layers / 2);
    }
    const double expected = test::brute_force_split(problem, first_last_form);
    Split split;
    const bool found = solve_first_last_split(problem, split);
    if (!std::isfinite(expected)) {
      EXPECT_FALSE(found) << "trial " << trial;
      continue;
    }
    ASSERT_TRUE(found) << "trial " << trial;
    ++solved;
    EXPECT_TRUE(first_last_form(split.layers)) << "trial " << trial;
    EXPECT_NEAR(split.pipeline_s, expected, 1e-9 * expected) << "trial " << trial;
    EXPECT_NEAR(split.pipeline_s, pipeline_time(problem, split.layers), 1e-12 * expected);
    int total = 0;
    for (std::size_t j = 0; j < split.layers.size(); ++j) {
      EXPECT_LE(split.layers[j], problem.stages[j].max_layers);
      EXPECT_EQ(split.layers[j] % problem.granularity, 0);
      total += split.layers[j];
    }
    EXPECT_EQ(total, problem.layers);
    const auto free = solve_split(problem);
    ASSERT_TRUE(free);
    EXPECT_GE(split.pipeline_s, free->pipeline_s * (1 - 1e-12));
    if (!first_last_form(free->layers)) ++constrained;
  }
  EXPECT_GT(solved, 1000);
  EXPECT_GT(constrained, 100);  // the form bound often
}

TEST(LayerSplit, SlowStagesGetFewerLayers) {
  SplitProblem problem;
  problem.layers = 12;
  problem.micro_batches = 8;
  problem.stages = {{1.0, 0.0, 12}, {2.0, 0.0, 12}, {1.0, 0.0, 12}};
  const auto split = solve_split(problem);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->layers, (std::vector<int>{5, 2, 5}));
}

TEST(LayerSplit, MemoryCapMovesLayersElsewhere) {
  SplitProblem problem;
  problem.layers = 12;
  problem.micro_batches = 8;
  problem.stages = {{1.0, 0.0, 3}, {1.0, 0.0, 12}};
  const auto split = solve_split(problem);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->layers, (std::vector<int>{3, 9}));
}

TEST(LayerSplit, TooFewLayersOrTooLittleMemoryHasNoSplit) {
  SplitProblem problem;
  problem.layers = 2;
  problem.stages = {{1.0, 0.0, 4}, {1.0, 0.0, 4}, {1.0, 0.0, 4}};
  EXPECT_FALSE(solve_split(problem));
  problem.layers = 13;
  EXPECT_FALSE(solve_split(problem));
  problem.layers = 6;
  problem.granularity = 4;
  EXPECT_FALSE(solve_split(problem));  // 6 is not a multiple of the chunk size
}

// A first stage whose fixed part is negative (a mixture's dense layers, cheaper than the
// per-layer time counts them, on a stage that must hold them): 4 layers of 1 s on two stages,
// the first at -1.8 s fixed and at least 2 layers, 4 micro-batches. The best split is 3 + 1
// (tau 1.2 and 1: 4 x 1.2 + 1 = 5.8 s). The floor must stay below it: the fluid balance of
// 4 layers over the two stages (2 s each, 8.2 s in all) does not hold when the first stage's
// layers cost 1.8 s less; counted as 1.8 layers fewer it gives 1.1 s, 5.5 s in all.
// The memory cap against a scan of every count, for totals that grow in a line (as a stage's
// memory does), curve up or down, or stay flat for a while: the same count each time.
TEST(MostFittingLayers, MatchesAScanOfEveryCount) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 20000; ++trial) {
    const int step = 1 + static_cast<int>(rng() % 4);
    const int layers = static_cast<int>(rng() % 130);
    const double fixed = 100 * unit(rng);
    const double slope = 10 * unit(rng);
    const double curve = (unit(rng) - 0.5) * 0.2 * slope;  // at most a tenth of the slope
    const int flat_from = static_cast<int>(rng() % 130);   // a plateau after it
    auto total = [&](int n) {
      const double x = n < flat_from ? n : flat_from + (n - flat_from) * 0.25;
      return fixed + slope * x + curve * x * x / 130;
    };
    const double capacity = fixed + slope * layers * 1.2 * unit(rng);
    int scan = 0;
    for (int n = step; n <= layers; n += step)
      if (total(n) <= capacity) scan = n;
    ASSERT_EQ(most_fitting_layers(step, layers, capacity, total), scan)
        << "trial " << trial << ": step " << step << ", " << layers << " layers";
  }
}

// A total that grows by the same bytes per layer is decided by the slope's guess: four checks
// whatever the layer count (a bisection needs eight for 200).
TEST(MostFittingLayers, ALineTakesFourChecks) {
  for (int fitting : {3, 57, 120, 199}) {
    int checks = 0;
    const int found = most_fitting_layers(1, 200, 1000.0 + 5.0 * fitting + 2.5, [&](int n) {
      ++checks;
      return 1000.0 + 5.0 * n;
    });
    EXPECT_EQ(found, fitting);
    EXPECT_LE(checks, 4) << fitting << " layers fit";
  }
  // Every count fits, or none does.
  EXPECT_EQ(most_fitting_layers(2, 200, 1e9, [](int n) { return 1.0 * n; }), 200);
  EXPECT_EQ(most_fitting_layers(2, 200, 0.5, [](int n) { return 1.0 * n; }), 0);
}

TEST(PipelineFloor, ANegativeFixedPartLowersTheBalance) {
  SplitProblem problem;
  problem.layers = 4;
  problem.micro_batches = 4;
  problem.stages = {{1.0, -1.8, 4, 2}, {1.0, 0.0, 4, 0}};
  const auto split = solve_split(problem);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->layers, (std::vector<int>{3, 1}));
  EXPECT_DOUBLE_EQ(split->pipeline_s, 5.8);
  EXPECT_DOUBLE_EQ(brute_force(problem), 5.8);
  PipelineFloor floor;
  for (const SplitStage& s : problem.stages)
    floor.add(s.per_layer_s, s.fixed_s, std::max(1, s.min_layers));
  EXPECT_DOUBLE_EQ(floor.value(4, 4, 1), 5.5);
  EXPECT_LE(floor.value(4, 4, 1), split->pipeline_s);
}

// The least bottleneck of whole layers by brute force over every assignment: each stage (a
// group's `count` stages each) takes 0 to cap layers, all of them placed; a stage with layers
// takes fixed + layers x per_layer. Infinity when the caps cannot hold them.
double brute_force_level(const std::vector<LevelGroup>& groups, int layers) {
  std::vector<const LevelGroup*> stages;
  for (const auto& g : groups)
    for (int c = 0; c < g.count; ++c) stages.push_back(&g);
  double best = std::numeric_limits<double>::infinity();
  std::function<void(std::size_t, int, double)> place = [&](std::size_t j, int left, double level) {
    if (j == stages.size()) {
      if (left == 0) best = std::min(best, level);
      return;
    }
    for (int n = 0; n <= std::min(left, stages[j]->cap); ++n)
      place(j + 1, left - n,
            n > 0 ? std::max(level, stages[j]->fixed + n * stages[j]->per_layer) : level);
  };
  place(0, layers, -std::numeric_limits<double>::infinity());
  return best;
}

// whole_layer_level is the least bottleneck of whole layers (against brute force, on groups of
// alike stages with fixed parts, negative ones too, and caps), whatever level below it it starts
// from: the fluid balance, the answer itself, or far below.
TEST(WholeLayerLevel, IsTheLeastBottleneckOfWholeLayers) {
  std::mt19937 rng(20261204);
  std::uniform_int_distribution<int> group_count(1, 3), count(1, 3), layers(1, 12), coin(0, 3);
  std::uniform_real_distribution<double> per_layer(0.05, 4.0), fixed(-1.0, 3.0);
  int finite = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<LevelGroup> groups(static_cast<std::size_t>(group_count(rng)));
    for (auto& g : groups) {
      g.per_layer = coin(rng) == 0 ? 1.0 : per_layer(rng);
      g.fixed = coin(rng) == 0 ? 0.0 : fixed(rng);
      g.count = count(rng);
      g.cap = coin(rng) == 0 ? std::numeric_limits<int>::max() : layers(rng) / 2;
    }
    const int total = layers(rng);
    const double expected = brute_force_level(groups, total);
    // The fluid balance: sum count (tau - fixed) / per_layer = total.
    double inverse = 0, offset = 0;
    for (const auto& g : groups) {
      inverse += g.count / g.per_layer;
      offset += g.count * g.fixed / g.per_layer;
    }
    const double fluid = (total + offset) / inverse;
    if (!std::isfinite(expected)) {
      EXPECT_TRUE(std::isinf(whole_layer_level(groups, total, -1e9))) << "trial " << trial;
      continue;
    }
    ++finite;
    for (double below : {-1e9, std::min(fluid, expected), expected}) {
      EXPECT_NEAR(whole_layer_level(groups, total, below), expected,
                  1e-12 * std::abs(expected) + 1e-12)
          << "trial " << trial << ", starting from " << below;
    }
  }
  EXPECT_GT(finite, 2000);
}

// The bounds build on it as a lower bound: with one group per stage of a split problem (its
// fixed part and memory cap), the level is never above the bottleneck of the optimal split, and
// never below the fluid balance it starts from.
TEST(WholeLayerLevel, NeverAboveTheOptimalSplitsBottleneck) {
  std::mt19937 rng(20261205);
  int compared = 0, above_fluid = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    SplitProblem problem = random_problem(rng);
    for (auto& s : problem.stages) s.min_layers = 1;
    const auto split = solve_split(problem);
    if (!split) continue;
    std::vector<LevelGroup> groups;
    PipelineFloor floor;
    for (const auto& s : problem.stages) {
      groups.push_back({s.per_layer_s, s.fixed_s, 1, s.max_layers});
      floor.add(s.per_layer_s, s.fixed_s, 1);
    }
    const double fluid = floor.fluid_tau(problem.layers);
    const double level = whole_layer_level(groups, problem.layers, fluid);
    EXPECT_LE(level, split->bottleneck_s * (1 + 1e-12)) << "trial " << trial;
    EXPECT_GE(level, fluid * (1 - 1e-12)) << "trial " << trial;
    above_fluid += level > fluid * (1 + 1e-9) ? 1 : 0;
    ++compared;
  }
  EXPECT_GT(compared, 2000);
  EXPECT_GT(above_fluid, compared / 2);  // whole layers raise the bound on most problems
}

}  // namespace
}  // namespace hetplan::planner
