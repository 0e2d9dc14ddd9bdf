// Failures, checkpoints and goodput (docs/models/reliability.md).
//
// Node failures are a Poisson process: the job fails at rate λ = Σ over its nodes of
// 1 / MTBF(chip), and M = 1/λ is the job's mean time between failures. The job writes a
// checkpoint every τ seconds of computation, which takes δ seconds; after a failure it restarts
// and reads the last checkpoint back, which takes R seconds, and redoes the work since that
// checkpoint. Intervals after Young (CACM 1974) and Daly (FGCS 2006); the expected wall time is
// Daly's exact model for exponential failures.
//
// All times are seconds, sizes bytes, bandwidths bytes per second.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.hpp"
#include "core/scenario.hpp"
#include "core/workload.hpp"

namespace hetplan::models {

// Bytes of one training checkpoint: the weights in the training dtype, plus for Adam and AdamW
// two fp32 moments (for SGD one fp32 momentum), plus fp32 master weights when the training dtype
// is not fp32. Per parameter, with e the training dtype's bytes:
//   Adam/AdamW: e + 8 (+ 4 master weights unless fp32): bf16/fp16 14, fp8 13, fp32 12
//   SGD:        e + 4 (+ 4 master weights unless fp32): bf16/fp16 10, fp8 9,  fp32 8
// Gradients and activations are not saved.
double checkpoint_bytes(const ModelShape& model, const TrainingSettings& training);

// The job's failure rate over the nodes it uses.
struct FailureRate {
  double per_s = 0;  // λ: failures per second, over the nodes whose chip has a known MTBF
  // Chip profile ids of used nodes without a `node_mtbf` entry (sorted, each once): they add
  // nothing to per_s, and the caller must say that their failures are not counted.
  std::vector<std::string> unknown_mtbf;
};

// λ = Σ over islands of nodes_used / node_mtbf(chip of the island). nodes_used_by_island maps
// island names of `cluster` to the nodes the job uses there (entries with 0 nodes add nothing).
FailureRate failure_rate(const Reliability& reliability, const Cluster& cluster,
                         const std::map<std::string, int>& nodes_used_by_island);

// Young's first-order optimum interval: sqrt(2 δ M). An infinite M gives an infinite interval.
double young_interval(double write_s, double mtbf_s);

// Daly's higher-order estimate:
//   sqrt(2 δ M) [1 + (1/3) sqrt(δ / (2M)) + (1/9) δ / (2M)] − δ   for δ < 2M,
//   M                                                              otherwise.
double daly_interval(double write_s, double mtbf_s);

// The fraction of wall time spent on useful steps with a checkpoint every interval_s seconds of
// computation: the inverse of Daly's expected wall time per unit of work,
//   T_wall / T_solve = M e^{R/M} (e^{(τ+δ)/M} − 1) / τ.
// An infinite mtbf_s (no failures) gives τ / (τ + δ). In [0, 1]; 0 for interval_s <= 0.
double useful_fraction(double interval_s, double write_s, double restore_s, double mtbf_s);

// The interval that maximises useful_fraction: a golden-section search on log τ, 100
// iterations, over [min(M (1 − e^{−δ/M}), Daly), max(M, Daly)], which holds the optimum (it
// solves τ = M (1 − e^{−(τ+δ)/M}), and useful_fraction rises before it and falls after).
// Deterministic. Does not depend on restore_s (e^{R/M} is a constant factor), which is taken
// for symmetry with useful_fraction. Infinite mtbf_s: infinite; write_s <= 0: 0.
double best_interval(double write_s, double restore_s, double mtbf_s);

struct GoodputInput {
  double tokens_per_s = 0;           // throughput without failures or checkpoints
  double step_time_s = 0;            // one training step, > 0
  double checkpoint_bytes = 0;       // checkpoint_bytes(...)
  double failure_rate_per_s = 0;     // FailureRate::per_s; 0: no failures
  double write_bandwidth = 0;        // B/s, > 0
  double read_bandwidth = 0;         // B/s, > 0
  double restart_time_s = 0;         // detect, reschedule, reload the job (not the checkpoint read)
  std::optional<double> interval_s;  // absent: the best interval
};

struct Goodput {
  double mtbf_s = 0;                // M = 1/λ; 0 when the failure rate is 0 (no failures)
  double checkpoint_write_s = 0;    // δ
  double restore_s = 0;             // R: checkpoint read plus restart time
  double interval_s = 0;            // τ used: a whole number of steps; 0 when no checkpoints
  int interval_steps = 0;           // τ in steps; 0 when no checkpoints are needed
  double young_interval_s = 0;      // 0 when the failure rate is 0
  double daly_interval_s = 0;       // 0 when the failure rate is 0
  double useful_fraction = 1;       // of wall time
  double goodput_tokens_per_s = 0;  // tokens_per_s × useful_fraction
};

// The interval used is input.interval_s or best_interval, rounded to a whole number of steps
// (at least one). With a zero failure rate nothing is lost to failures: the fraction is
// τ / (τ + δ) with a given interval, and 1 without one (no checkpoints are needed). Every field
// is finite.
Goodput goodput(const GoodputInput& input);

}  // namespace hetplan::models
