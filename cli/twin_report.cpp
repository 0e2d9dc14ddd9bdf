#include "cli/twin_report.hpp"

#include "sim/goodput.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "cli/report.hpp"
#include "sim/twin/json.hpp"

namespace hetplan::cli {



namespace {

nlohmann::ordered_json breakdown_json(const sim::TwinBreakdown& b) {
  return rounded(sim::twin::to_json(b));
}

std::string percent(double fraction) { return fixed(100 * fraction, 1) + " %"; }

std::string hours(double seconds) { return fixed(seconds / 3600, 2) + " h"; }

}  // namespace

std::string simulation_text(const Simulated& s) {
  const sim::TwinResult& r = s.result;
  const sim::TwinBreakdown& b = r.breakdown;
  std::string out;
  out += "plan " + r.plan + ": simulated one step of " + std::to_string(r.ranks) +
         " ranks on the fabric (" + std::to_string(r.flows) + " flows, seed " +
         std::to_string(s.seed) + ")\n";
  if (r.simulated_ranks < r.ranks)
    out += "alike replicas folded: " + std::to_string(r.simulated_ranks) + " of the " +
           std::to_string(r.ranks) + " ranks simulated, standing for all\n";
  out += "step time      " + fixed(r.step_time_s, 3) + " s   (analytic " +
         fixed(s.analytic_step_time_s, 3) + " s, " +
         (r.step_time_s >= s.analytic_step_time_s ? "+" : "") +
         fixed(100 * (r.step_time_s / s.analytic_step_time_s - 1), 1) + " %)\n";
  out += "tokens/s       " + fixed(r.tokens_per_s, 0) + "\n";
  out += "MFU            " + percent(r.mfu) + "\n";
  out += "where the step goes, on the last stage replica to finish (stage " +
         std::to_string(r.critical_stage) + ", dp " + std::to_string(r.critical_replica) + "):\n";
  const std::pair<const char*, double> parts[] = {
      {"compute", b.compute_s},
      {"tensor parallel", b.tensor_parallel_s},
      {"pipeline sends", b.pipeline_s},
      {"cross-island sends", b.cross_island_s},
      {"data parallel (exposed)", b.data_parallel_s},
      {"expert parallel", b.expert_parallel_s},
      {"pipeline bubble", b.bubble_s},
      {"stragglers", b.stragglers_s},
      {"optimizer", b.optimizer_s}};
  for (const auto& [name, seconds] : parts) {
    char line[96];
    std::snprintf(line, sizeof line, "  %-24s %10.3f s  %5.1f %%\n", name, seconds,
                  r.step_time_s > 0 ? 100 * seconds / r.step_time_s : 0.0);
    out += line;
  }
  out += "per stage, on its last replica to finish (s):\n";
  char head[176];
  std::snprintf(head, sizeof head, "  %-5s %-16s %9s %9s %9s %9s %9s %9s %9s %9s\n", "stage",
                "island", "finish", "compute", "sends", "x-island", "bubble", "dp sync",
                "ep a2a", "straggle");
  out += head;
  for (std::size_t i = 0; i < r.stage_breakdown.size(); ++i) {
    const sim::TwinBreakdown& sb = r.stage_breakdown[i];
    char line[224];
    std::snprintf(line, sizeof line,
                  "  %-5zu %-16s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", i,
                  i < s.stage_islands.size() ? s.stage_islands[i].c_str() : "?",
                  i < r.stage_finish_s.size() ? r.stage_finish_s[i] : 0.0,
                  sb.compute_s + sb.tensor_parallel_s, sb.pipeline_s, sb.cross_island_s,
                  sb.bubble_s, sb.data_parallel_s, sb.expert_parallel_s, sb.stragglers_s);
    out += line;
  }
  out += "most loaded links (time at full rate during the step):\n";
  if (r.links.empty()) out += "  none: no traffic left the chips' nodes\n";
  for (const auto& link : r.links) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-44s %8.3f s  %5.1f %%  %.1f GB/s\n", link.name.c_str(),
                  link.busy_s, 100 * link.utilization, link.speed / 1e9);
    out += line;
  }
  if (s.goodput) {
    const models::Goodput& g = *s.goodput;
    out += "goodput        " + fixed(g.goodput_tokens_per_s, 0) + " tokens/s (" +
           percent(g.useful_fraction) + " of the time is useful)\n";
    if (g.mtbf_s > 0) {
      out += "  job MTBF " + hours(g.mtbf_s) + ", checkpoint write " +
             fixed(g.checkpoint_write_s, 1) + " s, restore " + fixed(g.restore_s, 1) + " s\n";
      out += "  checkpoint every " + std::to_string(g.interval_steps) + " steps (" +
             hours(g.interval_s) + "; Young " + hours(g.young_interval_s) + ", Daly " +
             hours(g.daly_interval_s) + ")\n";
    }
  }
  for (const auto& note : s.notes) out += "note: " + note + "\n";
  return out;
}

nlohmann::ordered_json simulation_json(const Simulated& s) {
  const sim::TwinResult& r = s.result;
  const sim::TwinBreakdown& b = r.breakdown;
  nlohmann::ordered_json out;
  out["plan"] = r.plan;
  out["seed"] = s.seed;
  out["step_time_s"] = round6(r.step_time_s);
  out["tokens_per_s"] = round6(r.tokens_per_s);
  out["mfu"] = round6(r.mfu);
  out["goodput_tokens_per_s"] =
      s.goodput ? nlohmann::ordered_json(round6(s.goodput->goodput_tokens_per_s)) : nullptr;
  out["breakdown"] = breakdown_json(b);
  out["critical"] = {{"stage", r.critical_stage}, {"replica", r.critical_replica}};
  out["analytic"] = {{"step_time_s", round6(s.analytic_step_time_s)},
                     {"tokens_per_s", round6(s.analytic_tokens_per_s)}};
  nlohmann::ordered_json finishes = nlohmann::ordered_json::array();
  for (double finish : r.stage_finish_s) finishes.push_back(round6(finish));
  out["stage_finish_s"] = finishes;
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < r.stage_breakdown.size(); ++i) {
    nlohmann::ordered_json stage;
    stage["stage"] = i;
    stage["island"] = i < s.stage_islands.size() ? s.stage_islands[i] : "";
    stage["finish_s"] = i < r.stage_finish_s.size() ? round6(r.stage_finish_s[i]) : 0.0;
    stage["first_finish_s"] =
        i < r.stage_first_finish_s.size() ? round6(r.stage_first_finish_s[i]) : 0.0;
    stage["breakdown"] = breakdown_json(r.stage_breakdown[i]);
    stages.push_back(stage);
  }
  out["stages"] = stages;
  out["links"] = nlohmann::ordered_json::array();
  for (const auto& link : r.links) {
    out["links"].push_back({{"name", link.name},
                            {"kind", sim::to_string(link.kind)},
                            {"bytes", round6(link.bytes)},
                            {"speed", round6(link.speed)},
                            {"busy_s", round6(link.busy_s)},
                            {"utilization", round6(link.utilization)}});
  }
  if (s.goodput) {
    const models::Goodput& g = *s.goodput;
    out["goodput"] = {{"useful_fraction", round6(g.useful_fraction)},
                      {"mtbf_s", round6(g.mtbf_s)},
                      {"checkpoint_write_s", round6(g.checkpoint_write_s)},
                      {"restore_s", round6(g.restore_s)},
                      {"checkpoint_interval_s", round6(g.interval_s)},
                      {"checkpoint_interval_steps", g.interval_steps},
                      {"young_interval_s", round6(g.young_interval_s)},
                      {"daly_interval_s", round6(g.daly_interval_s)}};
  } else {
    out["goodput"] = nullptr;
  }
  out["ranks"] = r.ranks;
  out["simulated_ranks"] = r.simulated_ranks;
  out["flows"] = r.flows;
  out["notes"] = s.notes;
  return out;
}

namespace {

double ranking_rate(const Simulated& s) {
  return s.goodput ? s.goodput->goodput_tokens_per_s : s.result.tokens_per_s;
}

}  // namespace

void rank_by_simulation(std::vector<RankedSimulation>& plans) {
  std::stable_sort(plans.begin(), plans.end(), [](const auto& a, const auto& b) {
    const double ra = ranking_rate(a.simulated);
    const double rb = ranking_rate(b.simulated);
    if (ra != rb) return ra > rb;
    return a.analytic_rank < b.analytic_rank;
  });
}

std::string ranked_simulations_text(const std::vector<RankedSimulation>& plans) {
  std::string out = "\nsimulated on the fabric (best " + std::to_string(plans.size()) +
                    " one-job plans, ranked again by simulated " +
                    (!plans.empty() && plans.front().simulated.goodput ? "goodput" : "tokens/s") +
                    "):\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-4s %-8s %12s %12s %8s %12s  %s\n", "sim", "analytic",
                "analytic t/s", "simulated", "diff", "goodput", "plan / busiest link");
  out += line;
  for (std::size_t k = 0; k < plans.size(); ++k) {
    const Simulated& s = plans[k].simulated;
    const std::string goodput = s.goodput ? fixed(s.goodput->goodput_tokens_per_s, 0) : "-";
    std::snprintf(line, sizeof line, "  %-4zu %-8zu %12.0f %12.0f %+7.1f%% %12s  %s\n", k + 1,
                  plans[k].analytic_rank, s.analytic_tokens_per_s, s.result.tokens_per_s,
                  100 * (s.result.tokens_per_s / s.analytic_tokens_per_s - 1), goodput.c_str(),
                  s.result.plan.c_str());
    out += line;
    if (!s.result.links.empty()) {
      const auto& link = s.result.links.front();
      out += std::string(64, ' ') + link.name + ", busy " + fixed(100 * link.utilization, 1) +
             " % of the step\n";
    }
  }
  return out;
}

nlohmann::ordered_json ranked_simulations_json(const std::vector<RankedSimulation>& plans) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < plans.size(); ++k) {
    nlohmann::ordered_json entry;
    entry["rank"] = k + 1;
    entry["analytic_rank"] = plans[k].analytic_rank;
    entry["simulation"] = simulation_json(plans[k].simulated);
    out.push_back(entry);
  }
  return out;
}

}  // namespace hetplan::cli
