#include "cli/calibration_report.hpp"

#include <cmath>
#include <cstdio>

#include "cli/report.hpp"

namespace hetplan::cli {

std::string fits_text(const validation::Calibration& calibration) {
  std::string out = "fits                                   points   rms err   max err  parameters\n";
  for (const auto& fit : calibration.fits) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-36s %6d %8.1f%% %8.1f%%  ", fit.what.c_str(), fit.points,
                  100 * fit.rms_relative_error, 100 * fit.max_relative_error);
    out += line;
    for (std::size_t i = 0; i < fit.parameters.size(); ++i)
      out += (i ? ", " : "") + fit.parameters[i];
    out += "\n";
  }
  for (const auto& note : calibration.notes) out += "  note: " + note + "\n";
  return out;
}

std::string checks_text(const std::vector<validation::StepCheck>& checks) {
  std::string out = "held-out checks (measured, never fitted)   measured s  predicted s    error\n";
  for (const auto& check : checks) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-52s %10.4f %12.4f %+7.1f%%%s\n", check.what.c_str(),
                  check.measured_s, check.predicted_s, 100 * check.error,
                  check.feasible ? "" : "  (infeasible)");
    out += line;
    for (const auto& reason : check.reasons) out += "    reason: " + reason + "\n";
  }
  return out;
}

nlohmann::ordered_json calibration_json(const validation::Calibration& calibration,
                                        const std::vector<validation::StepCheck>& checks) {
  nlohmann::ordered_json j;
  j["profile"] = calibration.profile.id;
  j["fits"] = nlohmann::ordered_json::array();
  for (const auto& fit : calibration.fits) {
    j["fits"].push_back({{"what", fit.what},
                         {"points", fit.points},
                         {"rms_relative_error", round6(fit.rms_relative_error)},
                         {"max_relative_error", round6(fit.max_relative_error)},
                         {"parameters", fit.parameters}});
  }
  j["notes"] = calibration.notes;
  j["checks"] = nlohmann::ordered_json::array();
  for (const auto& check : checks) {
    j["checks"].push_back({{"what", check.what},
                           {"measured_s", round6(check.measured_s)},
                           {"predicted_s", round6(check.predicted_s)},
                           {"error", round6(check.error)},
                           {"feasible", check.feasible},
                           {"reasons", check.reasons}});
  }
  return j;
}

namespace {

// A term's value as the profile states it, and its posterior width in the same unit (a factor's
// width is relative: its log's standard deviation).
std::string term_value(const validation::FittedTerm& term) {
  char text[96];
  const bool factor = term.term == validation::InStepTerm::gemm ||
                      term.term == validation::InStepTerm::attention ||
                      term.term == validation::InStepTerm::communication;
  if (factor) {
    std::snprintf(text, sizeof text, "%.3f x (+-%.0f%%)", term.value, 100 * term.sigma);
  } else {
    std::snprintf(text, sizeof text, "%.2f ms (+-%.2f ms)", 1e3 * term.value, 1e3 * term.sigma);
  }
  return text;
}

}  // namespace

std::string run_fit_text(const validation::RunCalibration& calibration) {
  std::string out = "in-step terms (efficiency.in_step)  value                  information\n";
  for (const auto& term : calibration.terms) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-33s %-22s %8.2f  %s\n",
                  std::string(validation::to_string(term.term)).c_str(),
                  term.fitted ? term_value(term).c_str() : "prior (unknown)", term.information,
                  term.fitted ? "fitted" : term.note.c_str());
    out += line;
  }
  out += "runs                                              measured s  before s   error   after s   error\n";
  for (const auto& run : calibration.runs) {
    char line[320];
    const std::string name = run.id + " (" + run.source + ")";
    std::snprintf(line, sizeof line, "  %-48s %10.4f %9.4f %+6.1f%% %9.4f %+6.1f%%\n",
                  name.c_str(), run.measured_step_s, run.before_s,
                  100 * (run.before_s / run.measured_step_s - 1), run.after_s,
                  100 * (run.after_s / run.measured_step_s - 1));
    out += line;
  }
  for (const auto& note : calibration.notes) out += "  note: " + note + "\n";
  return out;
}

nlohmann::ordered_json run_fit_json(const validation::RunCalibration& calibration) {
  nlohmann::ordered_json j;
  j["profile"] = calibration.profile.id;
  j["terms"] = nlohmann::ordered_json::array();
  for (const auto& term : calibration.terms) {
    nlohmann::ordered_json t{{"term", std::string(validation::to_string(term.term))},
                             {"fitted", term.fitted},
                             {"information", round6(term.information)}};
    if (term.fitted) {
      t["value"] = round6(term.value);
      t["sigma"] = round6(term.sigma);
    } else {
      t["note"] = term.note;
    }
    j["terms"].push_back(std::move(t));
  }
  j["runs"] = nlohmann::ordered_json::array();
  for (const auto& run : calibration.runs) {
    j["runs"].push_back({{"id", run.id},
                         {"source", run.source},
                         {"measured_step_s", round6(run.measured_step_s)},
                         {"before_s", round6(run.before_s)},
                         {"after_s", round6(run.after_s)}});
  }
  j["notes"] = calibration.notes;
  return j;
}

}  // namespace hetplan::cli
