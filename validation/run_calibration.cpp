#include "validation/run_calibration.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "sim/estimator.hpp"

namespace hetplan::validation {
namespace {

// Calibrated versions "<id>.<label>" are the same chip.
std::string base_chip(const std::string& id) { return id.substr(0, id.find('.')); }

bool is_factor(InStepTerm term) {
  return term == InStepTerm::gemm || term == InStepTerm::attention ||
         term == InStepTerm::communication;
}

// The terms in the fit's coordinates (logarithms of factors, overheads in seconds) as the
// profile states them.
void set_term(InStepTerms& terms, InStepTerm term, double x) {
  switch (term) {
    case InStepTerm::gemm:
      terms.gemm = std::exp(x);
      break;
    case InStepTerm::attention:
      terms.attention = std::exp(x);
      break;
    case InStepTerm::communication:
      terms.communication = std::exp(x);
      break;
    case InStepTerm::layer_overhead:
      terms.layer_overhead = std::max(0.0, x);
      break;
    case InStepTerm::moe_layer_overhead:
      terms.moe_layer_overhead = std::max(0.0, x);
      break;
  }
}

std::string fixed(double x, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, x);
  return text;
}

// What kind of run tells two terms apart: the quantity one of them grows with and the other
// does not (docs/models/in-step.md#separating).
std::string separating_run(InStepTerm a, InStepTerm b) {
  auto has = [&](InStepTerm t) { return a == t || b == t; };
  if (has(InStepTerm::moe_layer_overhead) && !has(InStepTerm::gemm) &&
      !has(InStepTerm::attention) && !has(InStepTerm::communication))
    return "a dense model's run on the same chip (it has no mixture-of-experts layers)";
  if (has(InStepTerm::attention))
    return "a run at another sequence length (attention grows with it faster than the rest of "
           "the layer)";
  if (has(InStepTerm::communication))
    return "a run with another tensor- or expert-parallel size (its collectives change, the "
           "compute per token does not)";
  return "a run with another micro-batch size or hidden size (an overhead is per layer and "
         "micro-batch, the GEMMs grow with the tokens and the width)";
}

std::string term_name(InStepTerm term) {
  return "efficiency.in_step." + std::string(to_string(term));
}

}  // namespace

std::string_view to_string(InStepTerm term) {
  switch (term) {
    case InStepTerm::gemm:
      return "gemm";
    case InStepTerm::attention:
      return "attention";
    case InStepTerm::communication:
      return "communication";
    case InStepTerm::layer_overhead:
      return "layer_overhead";
    case InStepTerm::moe_layer_overhead:
      return "moe_layer_overhead";
  }
  return "?";
}

std::optional<InStepTerm> in_step_term_named(std::string_view name) {
  for (const InStepTerm term : kInStepTerms)
    if (to_string(term) == name) return term;
  return std::nullopt;
}

TermPrior in_step_prior(InStepTerm term) {
  // docs/models/in-step.md#priors.
  switch (term) {
    case InStepTerm::gemm:
      return {0.0, 0.18};
    case InStepTerm::attention:
      return {0.0, 0.3};
    case InStepTerm::communication:
      return {0.0, 0.22};
    case InStepTerm::layer_overhead:
      return {0.0, 1e-3};
    case InStepTerm::moe_layer_overhead:
      return {0.0, 3e-3};
  }
  return {};
}

std::vector<std::string> TrainingRun::chips() const {
  std::vector<std::string> out;
  auto add = [&](const std::string& island_name) {
    const Island* island = cluster.find_island(island_name);
    if (!island) return;
    const std::string& chip = cluster.chip_of(*island).id;
    if (std::find(out.begin(), out.end(), chip) == out.end()) out.push_back(chip);
  };
  for (const auto& stage : plan.stages) add(stage.island);
  for (const auto& group : plan.replica_groups)
    for (const auto& stage : group.stages) add(stage.island);
  return out;
}

namespace {

std::vector<std::string> fit_chips(const ChipProfile& base, const RunFitOptions& options) {
  std::vector<std::string> chips;
  for (const auto& id : options.chips) chips.push_back(base_chip(id));
  if (chips.empty()) chips.push_back(base_chip(base.id));
  return chips;
}

bool in_group(const std::string& id, const std::vector<std::string>& chips) {
  return std::find(chips.begin(), chips.end(), base_chip(id)) != chips.end();
}

}  // namespace

bool run_counts(const TrainingRun& run, const ChipProfile& base, const RunFitOptions& options) {
  const auto chips = fit_chips(base, options);
  for (const auto& id : run.chips())
    if (in_group(id, chips)) return true;
  return false;
}

double predicted_step(const TrainingRun& run, const InStepTerms& terms,
                      const std::vector<std::string>& chips) {
  Cluster cluster = run.cluster;
  for (auto& chip : cluster.chips) {
    if (!in_group(chip.id, chips)) continue;
    std::vector<RunReference> keep = std::move(chip.efficiency.in_step.runs);
    chip.efficiency.in_step = terms;
    chip.efficiency.in_step.runs = std::move(keep);
  }
  sim::EstimateOptions quiet;
  quiet.notes = false;
  const sim::Estimate estimate = sim::estimate_step(cluster, run.workload, run.plan, quiet);
  const double step = estimate.step_time_s;
  return std::isfinite(step) && step > 0 ? step : 0.0;
}

RunCalibration calibrate_from_runs(const ChipProfile& base, const std::vector<TrainingRun>& runs,
                                   const RunFitOptions& options) {
  const std::vector<std::string> chips = fit_chips(base, options);
  const SourceLocation where{"calibrate", 0, 0};
  RunCalibration out;

  // The runs that count, on base itself where they name its chip (a calibrated version's other
  // figures count as the version says), and that the model can price at the priors.
  std::vector<TrainingRun> on_base;
  for (const auto& run : runs) {
    if (!run_counts(run, base, options)) continue;
    TrainingRun copy = run;
    for (auto& chip : copy.cluster.chips) {
      if (base_chip(chip.id) != base_chip(base.id)) continue;
      const std::string id = chip.id;  // the islands name it so
      chip = base;
      chip.id = id;
    }
    on_base.push_back(std::move(copy));
  }
  std::vector<const TrainingRun*> used;
  const InStepTerms none{};
  std::vector<double> before;
  for (const auto& run : on_base) {
    const double step = predicted_step(run, none, chips);
    if (step <= 0 || !(run.measured_step_s() > 0)) {
      out.notes.push_back("run " + run.id + " (" + run.source +
                          ") left out: the model cannot price its step");
      continue;
    }
    used.push_back(&run);
    before.push_back(step);
  }
  if (used.empty()) {
    std::string ids;
    for (const auto& id : chips) ids += (ids.empty() ? "" : ", ") + id;
    throw InputError(where, "--from-runs",
                     "expected at least one run on " + ids + " that the model can price, got " +
                         std::to_string(runs.size()) + " run(s), none of them");
  }
  const int n = static_cast<int>(used.size());

  // The candidate terms and their priors, in the fit's coordinates.
  std::vector<InStepTerm> candidates = options.terms;
  const bool asked = !candidates.empty();
  if (!asked) candidates.assign(kInStepTerms.begin(), kInStepTerms.end());
  const int c = static_cast<int>(candidates.size());
  Eigen::VectorXd mu(c), sigma(c);
  for (int j = 0; j < c; ++j) {
    const TermPrior prior = in_step_prior(candidates[static_cast<std::size_t>(j)]);
    mu(j) = prior.value;
    sigma(j) = prior.sigma;
  }
  const double s = options.run_sigma;

  // Residuals (log predicted - log measured, over one run's spread) and their Jacobian at x, by
  // forward differences a hundredth of each prior's width (the model is smooth in every term).
  auto terms_at = [&](const std::vector<int>& active, const Eigen::VectorXd& x) {
    InStepTerms terms;
    for (std::size_t a = 0; a < active.size(); ++a)
      set_term(terms, candidates[static_cast<std::size_t>(active[a])], x(static_cast<int>(a)));
    return terms;
  };
  auto residuals = [&](const std::vector<int>& active, const Eigen::VectorXd& x) {
    const InStepTerms terms = terms_at(active, x);
    Eigen::VectorXd r(n);
    for (int i = 0; i < n; ++i) {
      const double step = predicted_step(*used[static_cast<std::size_t>(i)], terms, chips);
      r(i) = step > 0 ? (std::log(step) - std::log(used[static_cast<std::size_t>(i)]->measured_step_s())) / s
                      : 1e6;
    }
    return r;
  };
  auto jacobian = [&](const std::vector<int>& active, const Eigen::VectorXd& x,
                      const Eigen::VectorXd& r) {
    Eigen::MatrixXd jac(n, static_cast<int>(active.size()));
    for (std::size_t a = 0; a < active.size(); ++a) {
      const double h = 1e-2 * sigma(active[a]);
      Eigen::VectorXd moved = x;
      moved(static_cast<int>(a)) += h;
      jac.col(static_cast<int>(a)) = (residuals(active, moved) - r) / h;
    }
    return jac;
  };

  // Which terms the runs inform: their information (the runs' precision on the term over its
  // prior's) at the priors.
  std::vector<int> all(static_cast<std::size_t>(c));
  for (int j = 0; j < c; ++j) all[static_cast<std::size_t>(j)] = j;
  const Eigen::VectorXd r0 = residuals(all, mu);
  const Eigen::MatrixXd j0 = jacobian(all, mu, r0);
  std::vector<double> information(static_cast<std::size_t>(c));
  std::vector<int> active;
  for (int j = 0; j < c; ++j) {
    information[static_cast<std::size_t>(j)] = j0.col(j).squaredNorm() * sigma(j) * sigma(j);
    const InStepTerm term = candidates[static_cast<std::size_t>(j)];
    // A term asked for is fitted wherever a run moves it at all; otherwise only where the runs
    // say more of it than its prior does.
    const double needed = asked ? 1e-6 : 1.0;
    if (information[static_cast<std::size_t>(j)] >= needed) {
      active.push_back(j);
    } else if (asked) {
      throw InputError(where, "--terms",
                       "expected terms the runs inform, got " + term_name(term) +
                           ", which no run's step depends on");
    }
  }
  // Terms the runs cannot tell apart: every run moves them alike (the correlation of their
  // columns of the Jacobian).
  auto worst_pair = [&](const std::vector<int>& set) {
    std::pair<int, int> pair{-1, -1};
    double worst = 0;
    for (std::size_t a = 0; a < set.size(); ++a) {
      for (std::size_t b = a + 1; b < set.size(); ++b) {
        const Eigen::VectorXd u = j0.col(set[a]), v = j0.col(set[b]);
        const double corr = std::fabs(u.dot(v)) / std::sqrt(u.squaredNorm() * v.squaredNorm());
        if (corr > worst) {
          worst = corr;
          pair = {set[a], set[b]};
        }
      }
    }
    return std::pair{pair, worst};
  };
  constexpr double kInseparable = 0.98;
  for (;;) {
    const auto [pair, corr] = worst_pair(active);
    if (pair.first < 0 || corr < kInseparable) break;
    const InStepTerm a = candidates[static_cast<std::size_t>(pair.first)];
    const InStepTerm b = candidates[static_cast<std::size_t>(pair.second)];
    if (!options.keep_inseparable) {
      throw InputError(
          where, "--from-runs",
          "expected runs that separate " + term_name(a) + " from " + term_name(b) +
              " (every run moves them alike: correlation " + fixed(corr, 3) + "), got " +
              std::to_string(n) + " run(s) that do not; add " + separating_run(a, b) +
              ", or fit one of them (--terms)");
    }
    const int drop = information[static_cast<std::size_t>(pair.first)] <
                             information[static_cast<std::size_t>(pair.second)]
                         ? pair.first
                         : pair.second;
    active.erase(std::find(active.begin(), active.end(), drop));
    out.notes.push_back(term_name(candidates[static_cast<std::size_t>(drop)]) +
                        " kept at its prior: the runs move it as they move " +
                        term_name(candidates[static_cast<std::size_t>(
                            drop == pair.first ? pair.second : pair.first)]));
  }

  // Gauss-Newton with a Levenberg-Marquardt damping, toward the priors: minimise
  // |r(x)|^2 + sum ((x - mu) / sigma)^2, overheads held at zero or above.
  const int a = static_cast<int>(active.size());
  Eigen::VectorXd x(a), prior(a), width(a), precision(a);
  for (int k = 0; k < a; ++k) {
    x(k) = mu(active[static_cast<std::size_t>(k)]);
    prior(k) = x(k);
    width(k) = sigma(active[static_cast<std::size_t>(k)]);
    precision(k) = 1.0 / (width(k) * width(k));
  }
  auto objective = [&](const Eigen::VectorXd& r, const Eigen::VectorXd& at) {
    return r.squaredNorm() + (at - prior).cwiseAbs2().dot(precision);
  };
  Eigen::VectorXd r = residuals(active, x);
  double value = objective(r, x);
  double damping = 1e-3;
  Eigen::MatrixXd jac = a > 0 ? jacobian(active, x, r) : Eigen::MatrixXd(n, 0);
  for (int iteration = 0; iteration < 50 && a > 0; ++iteration) {
    Eigen::MatrixXd normal = jac.transpose() * jac;
    normal.diagonal() += precision;
    const Eigen::VectorXd gradient =
        jac.transpose() * r + precision.cwiseProduct(x - prior);
    Eigen::MatrixXd damped = normal;
    damped.diagonal() += damping * normal.diagonal();
    Eigen::VectorXd next = x - damped.ldlt().solve(gradient);
    for (int k = 0; k < a; ++k)
      if (!is_factor(candidates[static_cast<std::size_t>(active[static_cast<std::size_t>(k)])]))
        next(k) = std::max(0.0, next(k));
    const Eigen::VectorXd r_next = residuals(active, next);
    const double value_next = objective(r_next, next);
    if (value_next < value) {
      const double step = (next - x).cwiseQuotient(width).cwiseAbs().maxCoeff();
      x = next;
      r = r_next;
      const bool done = value - value_next < 1e-10 * (1 + value) || step < 1e-6;
      value = value_next;
      damping = std::max(1e-6, damping / 3);
      if (done) break;
      jac = jacobian(active, x, r);
    } else {
      damping *= 10;
      if (damping > 1e8) break;
    }
  }

  // The posterior widths, from the curvature at the fit.
  Eigen::MatrixXd curvature = jac.transpose() * jac;
  curvature.diagonal() += precision;
  const Eigen::MatrixXd covariance =
      a > 0 ? Eigen::MatrixXd(curvature.ldlt().solve(Eigen::MatrixXd::Identity(a, a)))
            : Eigen::MatrixXd(0, 0);

  // The new version.
  ChipProfile& p = out.profile;
  p = base;
  p.id = base_chip(base.id) + (base.id.find('.') != std::string::npos
                                   ? base.id.substr(base.id.find('.'))
                                   : std::string()) +
         "." + options.label;
  // As the profile states them: a factor to four decimals, an overhead to the
  // microsecond (what the runs can tell is far coarser, docs/models/in-step.md#fit).
  for (int k = 0; k < a; ++k) {
    if (is_factor(candidates[static_cast<std::size_t>(active[static_cast<std::size_t>(k)])])) {
      x(k) = std::log(std::round(std::exp(x(k)) * 1e4) / 1e4);
    } else {
      x(k) = std::round(x(k) * 1e6) / 1e6;
    }
  }
  p.efficiency.in_step = terms_at(active, x);
  const std::string source = "runs-" + options.label;
  std::string citation = "hetplan calibrate --from-runs, fitted by least squares toward the "
                         "priors of docs/models/in-step.md to " +
                         std::to_string(n) + " training run(s):";
  std::set<std::string> sources;
  for (const auto* run : used) {
    citation += " " + run->id;
    sources.insert(run->source);
    p.efficiency.in_step.runs.push_back({run->id, run->source, run->sha256});
  }
  citation += " (from";
  for (const auto& file : sources) citation += " " + file;
  citation += ")";
  p.sources[source] = citation;
  for (const InStepTerm term : kInStepTerms) {
    const std::string path = term_name(term);
    p.cited_by.erase(path);
    p.cited_by.erase(path + ".value");
  }
  for (int k = 0; k < a; ++k)
    p.cited_by[term_name(candidates[static_cast<std::size_t>(active[static_cast<std::size_t>(k)])])] =
        source;
  p.evidence.level = EvidenceLevel::runs;
  // A band is measured by cross-validation (docs/models/uncertainty.md), not by this fit.
  p.evidence.step.reset();
  for (auto it = p.cited_by.begin(); it != p.cited_by.end();)
    it = it->first.rfind("evidence.step", 0) == 0 ? p.cited_by.erase(it) : std::next(it);

  for (int j = 0; j < c; ++j) {
    FittedTerm fitted;
    fitted.term = candidates[static_cast<std::size_t>(j)];
    fitted.information = information[static_cast<std::size_t>(j)];
    const auto at = std::find(active.begin(), active.end(), j);
    if (at != active.end()) {
      const int k = static_cast<int>(at - active.begin());
      fitted.fitted = true;
      fitted.value = is_factor(fitted.term) ? std::exp(x(k)) : x(k);
      fitted.sigma = std::sqrt(std::max(0.0, covariance(k, k)));
    } else {
      fitted.value = is_factor(fitted.term) ? 1.0 : 0.0;
      fitted.sigma = sigma(j);
      fitted.note = information[static_cast<std::size_t>(j)] < 1.0
                        ? "the runs say less of it than its prior (information " +
                              fixed(information[static_cast<std::size_t>(j)], 2) + ")"
                        : "not separable from another term by these runs";
    }
    out.terms.push_back(fitted);
  }
  const InStepTerms fitted_terms = p.efficiency.in_step;
  for (int i = 0; i < n; ++i) {
    const TrainingRun& run = *used[static_cast<std::size_t>(i)];
    out.runs.push_back({run.id, run.source, run.measured_step_s(),
                        before[static_cast<std::size_t>(i)],
                        predicted_step(run, fitted_terms, chips)});
  }
  return out;
}

}  // namespace hetplan::validation
