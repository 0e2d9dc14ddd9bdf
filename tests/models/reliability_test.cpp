// Checkpoint intervals and goodput (docs/models/reliability.md): Young (CACM 1974), Daly (FGCS
// 2006) and the numeric optimum of Daly's expected wall time for exponential failures,
//   T_wall / T_solve = M e^{R/M} (e^{(τ+δ)/M} − 1) / τ.
#include "models/reliability.hpp"
#include "tests/support/llama.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace hetplan::models {
namespace {

constexpr double kHour = 3600.0;

double relative_difference(double a, double b) {
  return std::abs(a - b) / std::abs(b);
}

TEST(CheckpointInterval, YoungDalyAndOptimumAgreeWhenTheWriteIsShort) {
  const double write = 60, mtbf = 10 * kHour;  // δ / M = 1/600
  const double best = best_interval(write, 600, mtbf);
  EXPECT_DOUBLE_EQ(young_interval(write, mtbf), std::sqrt(2 * 60 * 36000.0));
  EXPECT_LT(relative_difference(young_interval(write, mtbf), best), 0.02);
  EXPECT_LT(relative_difference(daly_interval(write, mtbf), best), 0.001);
}

TEST(CheckpointInterval, YoungDriftsWhenTheWriteIsASizeableFractionOfTheMtbf) {
  const double write = 1800, mtbf = kHour;  // δ = M / 2
  const double best = best_interval(write, 600, mtbf);
  // sqrt(2 δ M) = M = 3600 s; Daly: 3600 (1 + 0.5/3 + 0.25/9) − 1800 = 2500 s.
  EXPECT_DOUBLE_EQ(young_interval(write, mtbf), 3600);
  EXPECT_NEAR(daly_interval(write, mtbf), 2500, 1e-9);
  EXPECT_GT(relative_difference(young_interval(write, mtbf), best), 0.2);
  EXPECT_LT(relative_difference(daly_interval(write, mtbf), best), 0.02);
  // Young's interval wastes a visible share of the machine against the optimum.
  EXPECT_GT(useful_fraction(best, write, 600, mtbf) -
                useful_fraction(young_interval(write, mtbf), write, 600, mtbf),
            0.01);
}

TEST(CheckpointInterval, DalyIsTheMtbfWhenTheWriteTakesTwiceAsLong) {
  EXPECT_EQ(daly_interval(7200, 3600), 3600);
  EXPECT_EQ(daly_interval(9000, 3600), 3600);
}

TEST(CheckpointInterval, BestIntervalMaximisesTheUsefulFraction) {
  for (const double write : {10.0, 60.0, 600.0, 3000.0}) {
    SCOPED_TRACE(write);
    const double mtbf = 5 * kHour, restore = 900;
    const double best = best_interval(write, restore, mtbf);
    const double at_best = useful_fraction(best, write, restore, mtbf);
    EXPECT_GT(at_best, useful_fraction(best * 1.05, write, restore, mtbf));
    EXPECT_GT(at_best, useful_fraction(best / 1.05, write, restore, mtbf));
    EXPECT_GE(at_best, useful_fraction(young_interval(write, mtbf), write, restore, mtbf));
    EXPECT_GE(at_best, useful_fraction(daly_interval(write, mtbf), write, restore, mtbf));
  }
}

TEST(CheckpointInterval, BestIntervalDoesNotDependOnTheRestoreTime) {
  EXPECT_DOUBLE_EQ(best_interval(60, 0, 10 * kHour), best_interval(60, 3600, 10 * kHour));
}

TEST(UsefulFraction, MatchesDalysExpectedWallTimeByHand) {
  // τ = 3600 s, δ = 600 s, R = 1200 s, M = 7200 s:
  //   T_wall / T_solve = 7200 e^{1200/7200} (e^{4200/7200} − 1) / 3600
  //                    = 2 e^{1/6} (e^{7/12} − 1) = 2 × 1.1813604 × 0.7920082 = 1.8712792,
  // so the useful fraction is 0.5343938. The first-order model, 1 / (1 + δ/τ + (τ+δ)/(2M) + R/M),
  // would give 0.6154.
  EXPECT_NEAR(useful_fraction(3600, 600, 1200, 7200), 0.5343938, 1e-7);
}

TEST(UsefulFraction, FallsWhenTheMtbfFalls) {
  const double write = 120, restore = 900;
  double previous = 1.0;
  for (const double mtbf_hours : {100.0, 20.0, 5.0, 1.0}) {
    SCOPED_TRACE(mtbf_hours);
    const double mtbf = mtbf_hours * kHour;
    const double at_fixed = useful_fraction(kHour, write, restore, mtbf);
    const double at_best =
        useful_fraction(best_interval(write, restore, mtbf), write, restore, mtbf);
    EXPECT_LT(at_best, previous);
    EXPECT_GE(at_best, at_fixed);
    previous = at_best;
  }
}

TEST(UsefulFraction, WithoutFailuresOnlyTheCheckpointWriteCosts) {
  const double infinite = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(useful_fraction(900, 100, 600, infinite), 0.9);
  EXPECT_EQ(useful_fraction(0, 100, 600, kHour), 0.0);
}

TEST(UsefulFraction, StaysFiniteWhenFailuresOutpaceTheCheckpoints) {
  const double fraction = useful_fraction(1e6, 1e5, 1e5, 1.0);
  EXPECT_EQ(fraction, 0.0);
}

using test::llama2_7b;

TEST(CheckpointBytes, PerParameterByDtypeAndOptimizer) {
  // Llama-2-7B: 6,738,415,616 parameters (tests/models/parameters_test.cpp).
  const double p = 6738415616.0;
  TrainingSettings training;
  training.dtype = DType::bf16;
  training.optimizer = Optimizer::adamw;
  // bf16 weights 2 + fp32 master 4 + two fp32 moments 8.
  EXPECT_DOUBLE_EQ(checkpoint_bytes(llama2_7b(), training), 14 * p);
  training.dtype = DType::fp32;  // the weights are the master copy: 4 + 8
  EXPECT_DOUBLE_EQ(checkpoint_bytes(llama2_7b(), training), 12 * p);
  training.optimizer = Optimizer::sgd;  // 4 + one momentum 4
  EXPECT_DOUBLE_EQ(checkpoint_bytes(llama2_7b(), training), 8 * p);
  training.dtype = DType::fp16;  // 2 + 4 + 4
  EXPECT_DOUBLE_EQ(checkpoint_bytes(llama2_7b(), training), 10 * p);
}

TEST(CheckpointBytes, SmallShapeByHand) {
  // 1 layer, h = 8, 2 heads, ffn 16, vocab 10, GeLU, LayerNorm, biases, untied head:
  //   layer: 4h² + 2 h ffn + (3h + h + ffn + h) biases + 2 × 2h norms = 256 + 256 + 56 + 32 = 600
  //   embedding: vocab × h = 80; head: vocab × h + final norm 2h = 96.
  ModelShape m;
  m.layers = 1;
  m.hidden = 8;
  m.heads = 2;
  m.kv_heads = 2;
  m.ffn = 16;
  m.vocab = 10;
  m.activation = Activation::gelu;
  m.norm = Norm::layernorm;
  m.linear_bias = true;
  ASSERT_DOUBLE_EQ(m.total_parameters(), 776);
  TrainingSettings training;
  training.dtype = DType::bf16;
  training.optimizer = Optimizer::adam;
  EXPECT_DOUBLE_EQ(checkpoint_bytes(m, training), 776 * 14);
}

Cluster two_islands() {
  Cluster cluster;
  cluster.name = "two";
  cluster.chips.resize(2);
  cluster.chips[0].id = "chip-a";
  cluster.chips[1].id = "chip-b";
  Island a;
  a.name = "a";
  a.chip = 0;
  a.nodes = 8;
  Island b;
  b.name = "b";
  b.chip = 1;
  b.nodes = 4;
  cluster.islands = {a, b};
  return cluster;
}

TEST(FailureRate, SumsNodesOverTheirMtbf) {
  Reliability reliability;
  reliability.node_mtbf = {{"chip-a", 2000 * kHour}, {"chip-b", 1000 * kHour}};
  const FailureRate rate = failure_rate(reliability, two_islands(), {{"a", 8}, {"b", 2}});
  EXPECT_DOUBLE_EQ(rate.per_s, 8 / (2000 * kHour) + 2 / (1000 * kHour));
  EXPECT_TRUE(rate.unknown_mtbf.empty());
}

TEST(FailureRate, UnknownMtbfIsReportedNotInvented) {
  Reliability reliability;
  reliability.node_mtbf = {{"chip-a", 2000 * kHour}};
  const FailureRate rate = failure_rate(reliability, two_islands(), {{"a", 4}, {"b", 4}});
  EXPECT_DOUBLE_EQ(rate.per_s, 4 / (2000 * kHour));
  ASSERT_EQ(rate.unknown_mtbf.size(), 1u);
  EXPECT_EQ(rate.unknown_mtbf[0], "chip-b");
  // An island the job does not use is not reported.
  EXPECT_TRUE(failure_rate(reliability, two_islands(), {{"a", 4}, {"b", 0}}).unknown_mtbf.empty());
}

GoodputInput example_input() {
  GoodputInput input;
  input.tokens_per_s = 1e6;
  input.step_time_s = 7.0;
  input.checkpoint_bytes = 1.2e12;  // 1.2 TB
  input.failure_rate_per_s = 1 / (10 * kHour);
  input.write_bandwidth = 20e9;  // δ = 60 s
  input.read_bandwidth = 40e9;   // 30 s
  input.restart_time_s = 600;    // R = 630 s
  return input;
}

TEST(Goodput, UsesTheBestIntervalInWholeSteps) {
  const Goodput out = goodput(example_input());
  EXPECT_DOUBLE_EQ(out.mtbf_s, 10 * kHour);
  EXPECT_DOUBLE_EQ(out.checkpoint_write_s, 60);
  EXPECT_DOUBLE_EQ(out.restore_s, 630);
  const double best = best_interval(60, 630, 10 * kHour);
  EXPECT_EQ(out.interval_steps, static_cast<int>(std::round(best / 7.0)));
  EXPECT_DOUBLE_EQ(out.interval_s, out.interval_steps * 7.0);
  EXPECT_DOUBLE_EQ(out.young_interval_s, young_interval(60, 10 * kHour));
  EXPECT_DOUBLE_EQ(out.daly_interval_s, daly_interval(60, 10 * kHour));
  EXPECT_DOUBLE_EQ(out.useful_fraction, useful_fraction(out.interval_s, 60, 630, 10 * kHour));
  EXPECT_GT(out.useful_fraction, 0.9);
  EXPECT_LT(out.useful_fraction, 1.0);
  EXPECT_DOUBLE_EQ(out.goodput_tokens_per_s, 1e6 * out.useful_fraction);
}

TEST(Goodput, GivenIntervalIsRoundedToSteps) {
  GoodputInput input = example_input();
  input.interval_s = kHour;  // 514.29 steps of 7 s
  const Goodput out = goodput(input);
  EXPECT_EQ(out.interval_steps, 514);
  EXPECT_DOUBLE_EQ(out.interval_s, 514 * 7.0);
  input.interval_s = 1.0;  // shorter than a step: one step
  EXPECT_EQ(goodput(input).interval_steps, 1);
}

TEST(Goodput, ZeroFailureRateLosesNothingWithoutCheckpoints) {
  GoodputInput input = example_input();
  input.failure_rate_per_s = 0;
  const Goodput out = goodput(input);
  EXPECT_EQ(out.useful_fraction, 1.0);
  EXPECT_EQ(out.goodput_tokens_per_s, 1e6);
  EXPECT_EQ(out.interval_steps, 0);
  EXPECT_EQ(out.mtbf_s, 0.0);
  EXPECT_TRUE(std::isfinite(out.young_interval_s) && std::isfinite(out.daly_interval_s));
}

TEST(Goodput, ZeroFailureRateWithAnIntervalPaysOnlyTheWrites) {
  GoodputInput input = example_input();
  input.failure_rate_per_s = 0;
  input.interval_s = 700;  // 100 steps, then a 60 s write
  const Goodput out = goodput(input);
  EXPECT_EQ(out.interval_steps, 100);
  EXPECT_DOUBLE_EQ(out.useful_fraction, 700.0 / 760.0);
  EXPECT_TRUE(std::isfinite(out.mtbf_s));
}

}  // namespace
}  // namespace hetplan::models
