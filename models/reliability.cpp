#include "models/reliability.hpp"

#include <algorithm>
#include <cassert>
#include <climits>
#include <cmath>

namespace hetplan::models {

double checkpoint_bytes(const ModelShape& model, const TrainingSettings& training) {
  const double weights = bytes_per_element(storage_dtype(training.dtype));
  const double master = training.dtype == DType::fp32 ? 0.0 : 4.0;
  double states = 0;  // fp32 optimizer states per parameter
  switch (training.optimizer) {
    case Optimizer::adam:
    case Optimizer::adamw:
      states = 8.0;  // first and second moment
      break;
    case Optimizer::sgd:
      states = 4.0;  // momentum
      break;
  }
  return model.total_parameters() * (weights + master + states);
}

FailureRate failure_rate(const Reliability& reliability, const Cluster& cluster,
                         const std::map<std::string, int>& nodes_used_by_island) {
  FailureRate out;
  for (const auto& [name, nodes] : nodes_used_by_island) {
    const Island* island = cluster.find_island(name);
    assert(island && "nodes_used_by_island names an island of the cluster");
    assert(nodes >= 0);
    if (!island || nodes <= 0) continue;
    const std::string& chip = cluster.chip_of(*island).id;
    const auto mtbf = reliability.node_mtbf.find(chip);
    if (mtbf == reliability.node_mtbf.end()) {
      if (std::find(out.unknown_mtbf.begin(), out.unknown_mtbf.end(), chip) ==
          out.unknown_mtbf.end()) {
        out.unknown_mtbf.push_back(chip);
      }
      continue;
    }
    out.per_s += nodes / mtbf->second;
  }
  std::sort(out.unknown_mtbf.begin(), out.unknown_mtbf.end());
  return out;
}

double young_interval(double write_s, double mtbf_s) {
  return std::sqrt(2.0 * write_s * mtbf_s);
}

double daly_interval(double write_s, double mtbf_s) {
  if (std::isinf(mtbf_s)) return mtbf_s;
  if (write_s >= 2.0 * mtbf_s) return mtbf_s;
  const double ratio = write_s / (2.0 * mtbf_s);
  return std::sqrt(2.0 * write_s * mtbf_s) * (1.0 + std::sqrt(ratio) / 3.0 + ratio / 9.0) - write_s;
}

double useful_fraction(double interval_s, double write_s, double restore_s, double mtbf_s) {
  if (!(interval_s > 0) || !(mtbf_s > 0)) return 0.0;
  if (std::isinf(mtbf_s)) return interval_s / (interval_s + write_s);
  // expm1 keeps the precision when (τ + δ) ≪ M, where e^x − 1 would cancel.
  const double wall_per_work = mtbf_s * std::exp(restore_s / mtbf_s) *
                               std::expm1((interval_s + write_s) / mtbf_s) / interval_s;
  if (!std::isfinite(wall_per_work)) return 0.0;
  return std::min(1.0, 1.0 / wall_per_work);
}

double best_interval(double write_s, double restore_s, double mtbf_s) {
  if (!(write_s > 0) || !(mtbf_s > 0)) return 0.0;
  if (std::isinf(mtbf_s)) return mtbf_s;
  const double daly = daly_interval(write_s, mtbf_s);
  // The optimum solves τ = M (1 − e^{−(τ+δ)/M}), so it lies in [M (1 − e^{−δ/M}), M].
  double low = std::log(std::min(-mtbf_s * std::expm1(-write_s / mtbf_s), daly));
  double high = std::log(std::max(mtbf_s, daly));
  const double inverse_phi = (std::sqrt(5.0) - 1.0) / 2.0;
  // useful_fraction without its constant factor e^{−R/M}, so the result does not move with
  // restore_s even in the last bits.
  (void)restore_s;
  auto value = [&](double log_interval) {
    return useful_fraction(std::exp(log_interval), write_s, 0.0, mtbf_s);
  };
  double left = high - inverse_phi * (high - low);
  double right = low + inverse_phi * (high - low);
  double left_value = value(left);
  double right_value = value(right);
  for (int iteration = 0; iteration < 100; ++iteration) {
    if (left_value < right_value) {
      low = left;
      left = right;
      left_value = right_value;
      right = low + inverse_phi * (high - low);
      right_value = value(right);
    } else {
      high = right;
      right = left;
      right_value = left_value;
      left = high - inverse_phi * (high - low);
      left_value = value(left);
    }
  }
  return std::exp((low + high) / 2.0);
}

Goodput goodput(const GoodputInput& input) {
  assert(input.step_time_s > 0 && input.write_bandwidth > 0 && input.read_bandwidth > 0);
  Goodput out;
  out.checkpoint_write_s = input.checkpoint_bytes / input.write_bandwidth;
  out.restore_s = input.checkpoint_bytes / input.read_bandwidth + input.restart_time_s;
  const bool failures = input.failure_rate_per_s > 0;
  if (!failures && !input.interval_s) {
    // Nothing fails, so nothing needs a checkpoint.
    out.useful_fraction = 1.0;
    out.goodput_tokens_per_s = input.tokens_per_s;
    return out;
  }
  if (failures) {
    out.mtbf_s = 1.0 / input.failure_rate_per_s;
    out.young_interval_s = young_interval(out.checkpoint_write_s, out.mtbf_s);
    out.daly_interval_s = daly_interval(out.checkpoint_write_s, out.mtbf_s);
  }
  const double wanted = input.interval_s
                            ? *input.interval_s
                            : best_interval(out.checkpoint_write_s, out.restore_s, out.mtbf_s);
  const double steps =
      std::clamp(std::round(wanted / input.step_time_s), 1.0, static_cast<double>(INT_MAX));
  out.interval_steps = static_cast<int>(steps);
  out.interval_s = steps * input.step_time_s;
  out.useful_fraction =
      failures ? useful_fraction(out.interval_s, out.checkpoint_write_s, out.restore_s, out.mtbf_s)
               : out.interval_s / (out.interval_s + out.checkpoint_write_s);
  out.goodput_tokens_per_s = input.tokens_per_s * out.useful_fraction;
  return out;
}

}  // namespace hetplan::models
