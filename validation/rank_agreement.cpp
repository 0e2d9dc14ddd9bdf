#include "validation/rank_agreement.hpp"

#include <cstdio>
#include <map>

namespace hetplan::validation {
namespace {

int sign(double x) {
  return (x > 0) - (x < 0);
}

// Whether a larger value of the metric is better.
bool higher_is_better(const std::string& metric) {
  return metric != "step_time_s" && metric != "step_time_ms";
}

}  // namespace

std::vector<GroupAgreement> rank_agreement(const ValidationReport& report) {
  std::vector<GroupAgreement> out;
  std::vector<std::pair<std::string, std::string>> order;  // groups in file order
  std::map<std::pair<std::string, std::string>, std::vector<const CaseResult*>> groups;
  for (const auto& c : report.cases) {
    if (c.metric == "out_of_memory" || !c.feasible) continue;
    const auto key = std::make_pair(c.file, c.metric);
    if (!groups.contains(key)) order.push_back(key);
    groups[key].push_back(&c);
  }
  for (const auto& key : order) {
    const auto& cases = groups[key];
    if (cases.size() < 2) continue;
    GroupAgreement g;
    g.file = key.first;
    g.metric = key.second;
    g.cases = static_cast<int>(cases.size());
    int concordant = 0, discordant = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      for (std::size_t j = i + 1; j < cases.size(); ++j) {
        const int s = sign(cases[i]->predicted - cases[j]->predicted) *
                      sign(cases[i]->measured - cases[j]->measured);
        ++g.pairs;
        if (s > 0) ++concordant;
        if (s < 0) ++discordant;
      }
    }
    g.pairs_agreeing = concordant;
    g.kendall_tau = g.pairs ? static_cast<double>(concordant - discordant) / g.pairs : 0;
    const bool up = higher_is_better(g.metric);
    auto better = [&](double a, double b) { return up ? a > b : a < b; };
    const CaseResult* measured = cases.front();
    const CaseResult* predicted = cases.front();
    for (const CaseResult* c : cases) {
      if (better(c->measured, measured->measured)) measured = c;
      if (better(c->predicted, predicted->predicted)) predicted = c;
    }
    g.measured_best = measured->id;
    g.predicted_best = predicted->id;
    g.best_agrees = measured == predicted;
    out.push_back(std::move(g));
  }
  return out;
}

std::string rank_agreement_text(const std::vector<GroupAgreement>& groups) {
  std::string out =
      "rank agreement (the cases of one published-run file: alternative plans or model sizes on "
      "the same hardware)\n"
      "file                          metric                 cases  kendall tau  pairs agreeing  "
      "best measured / predicted\n";
  for (const auto& g : groups) {
    char line[512];
    std::snprintf(line, sizeof line, "%-29s %-22s %5d  %+11.2f  %6d of %-5d  %s / %s%s\n",
                  g.file.c_str(), g.metric.c_str(), g.cases, g.kendall_tau, g.pairs_agreeing,
                  g.pairs, g.measured_best.c_str(), g.predicted_best.c_str(),
                  g.best_agrees ? "" : "  (differs)");
    out += line;
  }
  return out;
}

}  // namespace hetplan::validation
