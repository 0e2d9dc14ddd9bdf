#include "validation/cross_validation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numbers>
#include <set>

#include "sim/estimator.hpp"

namespace hetplan::validation {
namespace {

// Student's t quantile of probability p (above one half) with nu degrees of freedom: exact for
// one and two, Cornish-Fisher's expansion in 1/nu about the normal quantile beyond (within
// 0.2% from three on).
double student_t_quantile(double p, int nu) {
  if (nu == 1) return std::tan(std::numbers::pi * (p - 0.5));
  if (nu == 2) return (2 * p - 1) / std::sqrt(2 * p * (1 - p));
  // The normal quantile (Acklam's rational approximation, central region, to 1e-9).
  const double q = p - 0.5, r = q * q;
  const double z = q * (((((-3.969683028665376e+01 * r + 2.209460984245205e+02) * r -
                           2.759285104469687e+02) * r + 1.383577518672690e+02) * r -
                         3.066479806614716e+01) * r + 2.506628277459239e+00) /
                   (((((-5.447609879822406e+01 * r + 1.615858368580409e+02) * r -
                       1.556989798598866e+02) * r + 6.680131188771972e+01) * r -
                     1.328068155288572e+01) * r + 1.0);
  const double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
  const double v = nu;
  return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v);
}

const ChipProfile* profile_of(const TrainingRun& run, const std::string& id) {
  for (const auto& chip : run.cluster.chips)
    if (chip.id == id) return &chip;
  return nullptr;
}

// The fullest stage's predicted peak memory, GiB (0 when the estimator cannot price the run).
// The in-step terms are times: memory does not depend on them.
double predicted_memory_gib(const TrainingRun& run) {
  sim::EstimateOptions quiet;
  quiet.notes = false;
  const sim::Estimate estimate = sim::estimate_step(run.cluster, run.workload, run.plan, quiet);
  double most = 0;
  for (const auto& stage : estimate.stages) most = std::max(most, stage.memory.total());
  return std::isfinite(most) ? most / (1024.0 * 1024.0 * 1024.0) : 0.0;
}

}  // namespace

bool same_silicon(const ChipProfile& a, const ChipProfile& b) {
  if (a.id == b.id) return true;
  if (a.family != b.family || a.peak_flops.size() != b.peak_flops.size()) return false;
  for (const auto& [dtype, peak] : a.peak_flops) {
    const auto other = b.peak_flops.find(dtype);
    if (other == b.peak_flops.end() || !peak || !other->second || *peak != *other->second)
      return false;
  }
  return true;
}

std::optional<Band> prediction_band(const std::vector<double>& log_residuals) {
  const int n = static_cast<int>(log_residuals.size());
  if (n < 2) return std::nullopt;
  double mean = 0;
  for (const double e : log_residuals) mean += e;
  mean /= n;
  double variance = 0;
  for (const double e : log_residuals) variance += (e - mean) * (e - mean);
  variance /= n - 1;
  const double half = student_t_quantile(0.9, n - 1) * std::sqrt(variance * (1.0 + 1.0 / n));
  return Band{std::exp(mean - half), std::exp(mean + half)};
}

CrossValidation cross_validate(std::vector<TrainingRun> runs, const RunFitOptions& options) {
  CrossValidation out;
  // The profiles as the runs have them, less what earlier calibrations from runs put there.
  for (auto& run : runs) {
    for (auto& chip : run.cluster.chips) {
      chip.efficiency.in_step = {};
      chip.evidence = {};
    }
  }
  // One group of profile ids per silicon, in the order the runs first use them.
  std::vector<std::vector<std::string>> groups;
  std::map<std::string, std::size_t> group_of;
  std::vector<const ChipProfile*> representative;
  for (const auto& run : runs) {
    for (const auto& id : run.chips()) {
      if (group_of.contains(id)) continue;
      const ChipProfile* profile = profile_of(run, id);
      std::size_t g = 0;
      while (g < groups.size() && !same_silicon(*representative[g], *profile)) ++g;
      if (g == groups.size()) {
        groups.emplace_back();
        representative.push_back(profile);
      }
      groups[g].push_back(id);
      group_of[id] = g;
    }
  }
  RunFitOptions fit_options = options;
  fit_options.keep_inseparable = true;
  fit_options.terms.clear();
  auto fit = [&](std::size_t g, const std::string& left_out) -> std::optional<RunCalibration> {
    std::vector<TrainingRun> kept;
    for (const auto& run : runs) {
      if (run.source == left_out) continue;
      if (group_of.at(run.first_chip()) == g) kept.push_back(run);
    }
    if (kept.empty()) return std::nullopt;
    RunFitOptions o = fit_options;
    o.chips = groups[g];
    return calibrate_from_runs(*representative[g], kept, o);
  };

  // Every silicon fitted to all of its runs (what the bundled profiles state).
  std::vector<std::optional<RunCalibration>> full(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) full[g] = fit(g, "");

  std::vector<std::string> sources;
  for (const auto& run : runs)
    if (std::find(sources.begin(), sources.end(), run.source) == sources.end())
      sources.push_back(run.source);
  std::map<std::pair<std::string, std::size_t>, std::optional<RunCalibration>> held_out_fits;
  for (const auto& source : sources) {
    std::set<std::size_t> used;
    for (const auto& run : runs)
      if (run.source == source) used.insert(group_of.at(run.first_chip()));
    for (const std::size_t g : used) held_out_fits[{source, g}] = fit(g, source);
  }

  for (const auto& run : runs) {
    const std::size_t g = group_of.at(run.first_chip());
    CrossValidatedRun r;
    r.source = run.source;
    r.id = run.id;
    r.chip = run.first_chip();
    r.metric = run.metric;
    r.measured = run.measured;
    const double before = predicted_step(run, InStepTerms{}, groups[g]);
    const auto& held = held_out_fits.at({run.source, g});
    const double held_step =
        held ? predicted_step(run, held->profile.efficiency.in_step, groups[g]) : before;
    const double in_step = full[g] ? predicted_step(run, full[g]->profile.efficiency.in_step,
                                                    groups[g])
                                   : before;
    r.before = run.metric_of(before);
    r.held_out = run.metric_of(held_step);
    r.in_sample = run.metric_of(in_step);
    r.error_before = (r.before - r.measured) / r.measured;
    r.error = (r.held_out - r.measured) / r.measured;
    r.error_in_sample = (r.in_sample - r.measured) / r.measured;
    r.log_residual = std::log(run.measured_step_s() / held_step);
    r.before_log_residual = std::log(run.measured_step_s() / before);
    if (run.measured_memory_gib) {
      const double predicted = predicted_memory_gib(run);
      if (predicted > 0) r.memory_log_residual = std::log(*run.measured_memory_gib / predicted);
    }
    out.runs.push_back(r);
  }

  // Bands: each run's from the other sources' held-out residuals, so that whether it falls
  // inside is itself a held-out check.
  auto band_without = [&](std::size_t g, const std::string& left_out, bool* own) {
    std::vector<double> chip_residuals, all;
    std::set<std::string> chip_sources;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].source == left_out) continue;
      all.push_back(out.runs[i].log_residual);
      if (group_of.at(runs[i].first_chip()) == g) {
        chip_residuals.push_back(out.runs[i].log_residual);
        chip_sources.insert(runs[i].source);
      }
    }
    *own = static_cast<int>(chip_residuals.size()) >= kOwnBandRuns && chip_sources.size() >= 2;
    return prediction_band(*own ? chip_residuals : all);
  };
  for (std::size_t i = 0; i < runs.size(); ++i) {
    bool own = false;
    CrossValidatedRun& r = out.runs[i];
    r.band = band_without(group_of.at(runs[i].first_chip()), runs[i].source, &own);
    if (!r.band) continue;
    ++out.banded;
    const double ratio = std::exp(r.log_residual);
    r.inside = ratio >= r.band->low && ratio <= r.band->high;
    out.inside += r.inside ? 1 : 0;
  }
  std::vector<double> all;
  for (const auto& r : out.runs) all.push_back(r.log_residual);
  out.pooled_band = prediction_band(all);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    ChipTerms terms;
    terms.chip = groups[g].front();
    terms.shares.assign(groups[g].begin() + 1, groups[g].end());
    if (full[g]) terms.fit = *full[g];
    std::set<std::string> chip_sources;
    for (const auto& run : runs) {
      if (group_of.at(run.first_chip()) != g) continue;
      ++terms.runs;
      chip_sources.insert(run.source);
    }
    terms.sources = static_cast<int>(chip_sources.size());
    terms.band = band_without(g, "", &terms.own_band);
    out.chips.push_back(std::move(terms));
  }
  return out;
}

ValidationReport held_out_report(const CrossValidation& cv) {
  ValidationReport report;
  double sum = 0;
  for (const auto& r : cv.runs) {
    CaseResult c;
    const std::string file = r.source.substr(r.source.find('/') + 1);
    c.file = file.substr(0, file.rfind('.'));
    c.id = r.id;
    c.metric = r.metric;
    c.measured = r.measured;
    c.predicted = r.held_out;
    c.error = r.error;
    sum += std::fabs(r.error);
    if (std::fabs(r.error) > std::fabs(report.worst_error)) {
      report.worst_error = r.error;
      report.worst_case = r.id;
    }
    report.cases.push_back(c);
  }
  report.mean_absolute_error = cv.runs.empty() ? 0 : sum / static_cast<double>(cv.runs.size());
  return report;
}

std::vector<SetSummary> summarize_sets(const CrossValidation& cv) {
  std::vector<SetSummary> sets;
  auto add = [](SetSummary& set, const CrossValidatedRun& r) {
    ++set.runs;
    set.before += std::fabs(r.error_before);
    set.held_out += std::fabs(r.error);
    set.in_sample += std::fabs(r.error_in_sample);
    set.banded += r.band ? 1 : 0;
    set.inside += r.inside ? 1 : 0;
  };
  SetSummary all;
  all.set = "all";
  for (const auto& r : cv.runs) {
    const std::string name = r.source.substr(0, r.source.rfind('/'));
    auto set = std::find_if(sets.begin(), sets.end(),
                            [&](const SetSummary& s) { return s.set == name; });
    if (set == sets.end()) {
      sets.push_back({});
      sets.back().set = name;
      set = std::prev(sets.end());
    }
    add(*set, r);
    add(all, r);
  }
  sets.push_back(all);
  for (auto& set : sets) {
    if (set.runs == 0) continue;
    set.before /= set.runs;
    set.held_out /= set.runs;
    set.in_sample /= set.runs;
  }
  return sets;
}

std::string cross_validation_text(const CrossValidation& cv) {
  std::string out =
      "source                                   case                             chip                    "
      "measured  before   error  held-out   error  band          \n";
  char line[512];
  auto number = [](double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", x);
    return std::string(text);
  };
  for (const auto& r : cv.runs) {
    std::string band = "-";
    if (r.band) {
      char text[64];
      std::snprintf(text, sizeof text, "%+.0f%%..%+.0f%% %s", 100 * (r.band->low - 1),
                    100 * (r.band->high - 1), r.inside ? "in" : "OUT");
      band = text;
    }
    std::snprintf(line, sizeof line, "%-40s %-32s %-22s %9s %9s %+6.1f%% %9s %+6.1f%%  %s\n",
                  r.source.c_str(), r.id.c_str(), r.chip.c_str(), number(r.measured).c_str(),
                  number(r.before).c_str(), 100 * r.error_before, number(r.held_out).c_str(),
                  100 * r.error, band.c_str());
    out += line;
  }
  out += "\nset                          runs  mean abs error: before  held out  in sample   inside "
         "80% band\n";
  for (const auto& set : summarize_sets(cv)) {
    std::snprintf(line, sizeof line, "%-28s %5d  %22.1f%% %8.1f%% %9.1f%%   %d of %d\n",
                  set.set.c_str(), set.runs, 100 * set.before, 100 * set.held_out,
                  100 * set.in_sample, set.inside, set.banded);
    out += line;
  }
  for (const auto& note : cv.notes) out += "note: " + note + "\n";
  return out;
}

nlohmann::ordered_json cross_validation_json(const CrossValidation& cv) {
  auto band_json = [&](const std::optional<Band>& band) {
    return band ? nlohmann::ordered_json{{"low", band->low}, {"high", band->high}}
                : nlohmann::ordered_json();
  };
  nlohmann::ordered_json j;
  j["runs"] = nlohmann::ordered_json::array();
  for (const auto& r : cv.runs) {
    j["runs"].push_back({{"source", r.source},
                         {"id", r.id},
                         {"chip", r.chip},
                         {"metric", r.metric},
                         {"measured", r.measured},
                         {"before", r.before},
                         {"held_out", r.held_out},
                         {"in_sample", r.in_sample},
                         {"error_before", r.error_before},
                         {"error", r.error},
                         {"error_in_sample", r.error_in_sample},
                         {"band", band_json(r.band)},
                         {"inside", r.inside}});
  }
  j["sets"] = nlohmann::ordered_json::array();
  for (const auto& set : summarize_sets(cv)) {
    j["sets"].push_back({{"set", set.set},
                         {"runs", set.runs},
                         {"mean_absolute_error_before", set.before},
                         {"mean_absolute_error_held_out", set.held_out},
                         {"mean_absolute_error_in_sample", set.in_sample},
                         {"inside_band", set.inside},
                         {"banded", set.banded}});
  }
  j["chips"] = nlohmann::ordered_json::array();
  for (const auto& chip : cv.chips) {
    nlohmann::ordered_json terms = nlohmann::ordered_json::object();
    for (const auto& t : chip.fit.terms)
      if (t.fitted) terms[std::string(to_string(t.term))] = t.value;
    j["chips"].push_back({{"chip", chip.chip},
                          {"shares", chip.shares},
                          {"runs", chip.runs},
                          {"sources", chip.sources},
                          {"terms", terms},
                          {"band", band_json(chip.band)},
                          {"own_band", chip.own_band}});
  }
  j["notes"] = cv.notes;
  return j;
}

}  // namespace hetplan::validation
