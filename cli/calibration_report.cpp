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

}  // namespace hetplan::cli
