#include "cli/plan_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/report.hpp"

namespace hetplan::cli {
namespace {


// The least free memory of any stage, in bytes (negative: over capacity).
double headroom(const sim::Estimate& e) {
  double least = 0;
  bool first = true;
  for (const auto& s : e.stages) {
    const double free = s.memory_usable - s.memory.total();
    if (first || free < least) least = free;
    first = false;
  }
  return least;
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : separator) + part;
  return out;
}

validation::PlanValidation validation_of(const planner::RankedPlan& r,
                                        const validation::LadderReport* ladder) {
  if (!ladder || r.mode != planner::Mode::resource_pool)
    return validation::plan_validation(ladder, r.plan);
  validation::PlanValidation out;
  for (const auto& job : r.jobs) {
    const auto v = validation::plan_validation(*ladder, job.plan);
    out.missing.insert(out.missing.end(), v.missing.begin(), v.missing.end());
  }
  out.validated = out.missing.empty();
  return out;
}

nlohmann::ordered_json plan_json(const planner::RankedPlan& r,
                                 const validation::LadderReport* ladder) {
  nlohmann::ordered_json j;
  j["mode"] = std::string(to_string(r.mode));
  j["islands"] = r.islands;
  j["chips"] = r.chips;
  j["software_stacks"] = r.software_stacks;
  j["tokens_per_s"] = round6(r.tokens_per_s);
  if (r.cost_per_million_tokens)
    j["cost_per_million_tokens"] = round6(*r.cost_per_million_tokens);
  else
    j["cost_per_million_tokens"] = nullptr;
  j["notes"] = r.notes;
  const auto validation = validation_of(r, ladder);
  j["validation"] = {{"validated", validation.validated}, {"missing", validation.missing}};
  if (r.mode == planner::Mode::resource_pool) {
    j["jobs"] = nlohmann::ordered_json::array();
    for (const auto& job : r.jobs) j["jobs"].push_back(plan_json(job, ladder));
    return j;
  }
  j["name"] = r.plan.name;
  j["memory_headroom_gib"] = round6(headroom(r.estimate) / (1ull << 30));
  j["estimate"] = estimate_json(r.estimate, r.plan);
  return j;
}

std::string row(std::size_t rank, const planner::RankedPlan& r, bool priced,
                const validation::LadderReport* ladder) {
  char line[512];
  const std::string name =
      r.mode == planner::Mode::resource_pool ? "pool: " + join(r.islands, " + ") : r.plan.name;
  if (r.mode == planner::Mode::resource_pool) {
    std::snprintf(line, sizeof line, "%-4zu %-13s %-60s %6d %8s %10.0f %15s %6s %7s %8s %8s  %-15s",
                  rank, std::string(to_string(r.mode)).c_str(), name.c_str(), r.chips, "-",
                  r.tokens_per_s, "-", "-", "-", "-", "-", "-");
  } else {
    const sim::Estimate& e = r.estimate;
    // The 80% interval of tokens/s and the evidence behind it (docs/models/uncertainty.md).
    std::string interval = tokens_interval_text(e, r.tokens_per_s);
    if (interval.empty()) interval = "?";
    std::snprintf(line, sizeof line,
                  "%-4zu %-13s %-60s %6d %8.2f %10.0f %15s %5.1f%% %6.1f%% %8.2f %8.1f%s %-15s",
                  rank, std::string(to_string(r.mode)).c_str(), name.c_str(), r.chips,
                  e.step_time_s, r.tokens_per_s, interval.c_str(), 100 * e.mfu,
                  100 * e.bubble_fraction, e.exposed.total(), headroom(e) / (1ull << 30),
                  e.memory_tight() ? "!" : " ", std::string(to_string(e.evidence)).c_str());
  }
  std::string out = line;
  if (priced) {
    char cost[32];
    std::snprintf(cost, sizeof cost, "  %9s",
                  r.cost_per_million_tokens ? fixed(*r.cost_per_million_tokens, 3).c_str() : "-");
    out += cost;
  }
  out += validation_of(r, ladder).validated ? "  validated" : "  UNVALIDATED";
  return out + "\n";
}

std::string signed_percent(double fraction) {
  if (std::abs(fraction) < 5e-4) fraction = 0;  // no "-0.0%"
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", 100 * fraction);
  return text;
}

}  // namespace

std::string pool_simulation_text(const sim::PoolSimulation& pool) {
  if (!pool.shares_a_limiting_link) {
    return "         on one fabric (twin): the jobs share no link that limits (each island has its "
           "own leaves, and no oversubscribed spine joins them), so each runs as alone\n";
  }
  const double alone = pool.alone_tokens_per_s();
  const double together = pool.together_tokens_per_s();
  std::string out = "         on one fabric (twin): " + fixed(together, 0) + " tokens/s together, " +
                    fixed(alone, 0) + " alone (" +
                    (alone > 0 ? signed_percent(together / alone - 1) : std::string("-")) + ")\n";
  for (const sim::PooledJob& job : pool.jobs) {
    out += "           " + job.island + ": step " + fixed(job.alone_step_s, 3) + " s alone, " +
           fixed(job.together_step_s, 3) + " s together (" + signed_percent(job.slowdown() - 1) +
           ", mean of " + std::to_string(job.steps) + (job.steps == 1 ? " step" : " steps") +
           ")\n";
  }
  if (pool.links.empty()) {
    out += "           no link limits more than one job\n";
  }
  for (std::size_t k = 0; k < pool.links.size() && k < 3; ++k) {
    const sim::TwinSharedLink& link = pool.links[k];
    double total = 0;
    for (double b : link.job_bytes) total += b;
    std::string shares;
    for (std::size_t j = 0; j < link.job_bytes.size() && j < pool.jobs.size(); ++j) {
      if (link.job_bytes[j] <= 0) continue;
      shares += (shares.empty() ? "" : ", ") + pool.jobs[j].island + " " +
                fixed(100 * link.job_bytes[j] / total, 0) + "%";
    }
    out += "           shared: " + link.load.name + ", busy " +
           fixed(100 * link.load.utilization, 1) + "% (" + shares + ")\n";
  }
  return out;
}

nlohmann::ordered_json pool_simulation_json(const sim::PoolSimulation& pool) {
  nlohmann::ordered_json j;
  j["shares_a_limiting_link"] = pool.shares_a_limiting_link;
  if (!pool.shares_a_limiting_link) return j;
  j["tokens_per_s_alone"] = round6(pool.alone_tokens_per_s());
  j["tokens_per_s_together"] = round6(pool.together_tokens_per_s());
  j["window_s"] = round6(pool.window_s);
  j["jobs"] = nlohmann::ordered_json::array();
  for (const sim::PooledJob& job : pool.jobs) {
    nlohmann::ordered_json e;
    e["plan"] = job.plan;
    e["island"] = job.island;
    e["step_s_alone"] = round6(job.alone_step_s);
    e["step_s_together"] = round6(job.together_step_s);
    e["slowdown"] = round6(job.slowdown());
    e["steps"] = job.steps;
    e["tokens_per_s_alone"] = round6(job.alone_tokens_per_s());
    e["tokens_per_s_together"] = round6(job.together_tokens_per_s());
    j["jobs"].push_back(e);
  }
  j["shared_links"] = nlohmann::ordered_json::array();
  for (const sim::TwinSharedLink& link : pool.links) {
    nlohmann::ordered_json e;
    e["name"] = link.load.name;
    e["kind"] = std::string(to_string(link.load.kind));
    e["bytes"] = round6(link.load.bytes);
    e["utilization"] = round6(link.load.utilization);
    e["job_bytes"] = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < link.job_bytes.size() && k < pool.jobs.size(); ++k)
      e["job_bytes"][pool.jobs[k].island] = round6(link.job_bytes[k]);
    j["shared_links"].push_back(e);
  }
  return j;
}

std::string search_text(const planner::SearchResult& result, const Scenario& scenario,
                        const validation::LadderReport* ladder, const sim::PoolSimulation* pool) {
  const bool priced = scenario.prices.has_value();
  std::string out = "scenario " + scenario.name + ": " + scenario.workload.name + " on " +
                    scenario.cluster.name + ", objective " +
                    std::string(to_string(result.objective)) + "\n";
  out += "searched " + std::to_string(result.settings) + " settings, scored " +
         std::to_string(result.evaluations) + " plans, " + std::to_string(result.pruned) +
         " more pruned by a bound\n";
  if (result.max_pipeline_islands > 0) {
    out += "task-level pipelines span at most " + std::to_string(result.max_pipeline_islands) +
           " islands (--max-pipeline-islands): plans across more were not searched\n";
  }
  if (!result.stopped.empty()) {
    out += "search stopped early (" + result.stopped + ") after " +
           std::to_string(result.settings) + " of " + std::to_string(result.settings_total) +
           " settings: these are the best plans found until then, not necessarily the best\n";
  }
  out += "\n";
  out += "rank mode          plan                                                          chips   step s   tokens/s    80% tokens/s    MFU  bubble  comm s  free GiB  evidence       ";
  if (priced) out += "  cost/Mtok " + scenario.prices->currency;
  out += "  ladder\n";
  for (std::size_t k = 0; k < result.ranked.size(); ++k) out += row(k + 1, result.ranked[k], priced, ladder);
  for (const auto& r : result.ranked) {
    for (const auto& note : r.notes)
      out += "  note (" + (r.mode == planner::Mode::resource_pool ? std::string("pool") : r.plan.name) +
             "): " + note + "\n";
  }

  out += "\nthree states\n";
  for (const auto& baseline : result.islands) {
    if (baseline.best)
      out += row(0, *baseline.best, priced, ladder).replace(0, 4, "    ");
    else
      out += "     single-island " + baseline.island + ": none (" + baseline.why_not + ")\n";
  }
  if (result.resource_pool) {
    out += row(0, *result.resource_pool, priced, ladder).replace(0, 4, "    ");
    if (pool) out += pool_simulation_text(*pool);
  }
  if (result.task_level)
    out += row(0, *result.task_level, priced, ladder).replace(0, 4, "    ");
  else
    out += "     task-level: none\n";
  if (!result.mixed_data_parallel.empty() || !result.mixed_data_parallel_refused.empty()) {
    out += "\ndata parallelism across chip types (replica groups exchanging gradients over a "
           "declared path)\n";
    for (const auto& mixed : result.mixed_data_parallel) {
      const sim::MixedDataParallelStep& step = mixed.step;
      char line[512];
      const auto verdict = validation::plan_validation(ladder, mixed.plan);
      std::snprintf(line, sizeof line, "     %-60s %6d %8.3f %10.0f  [%s]  %s\n",
                    mixed.plan.name.c_str(), step.chips, step.step_time_s, step.tokens_per_s,
                    mixed.flag.c_str(), verdict.validated ? "validated" : "UNVALIDATED");
      out += line;
      for (const auto& missing : verdict.missing) out += "       ladder: " + missing + "\n";
      out += "       exposed cross-vendor exchange " + fixed(step.exchange_s, 3) + " s (" +
             fixed(step.exchange_bytes / (1ull << 30), 1) + " GiB of gradients at " +
             fixed(step.path_bandwidth * 8 / 1e9, 1) + " Gbps per node) after the slowest group's " +
             fixed(step.slowest_group_s, 3) + " s\n";
      for (const auto& group : step.groups) {
        std::snprintf(line, sizeof line,
                      "       %-20s %4d replicas x %4d micro-batches of %d, weight %.7g, "
                      "%.3f s\n",
                      group.island.c_str(), group.replicas, group.micro_batches,
                      group.micro_batch, group.gradient_weight, group.estimate.step_time_s);
        out += line;
      }
    }
    for (const auto& refused : result.mixed_data_parallel_refused)
      out += "     refused " + refused + "\n";
  }

  out += "\nrejected candidates by pass\n";
  for (const auto& pass : result.passes) {
    char line[128];
    std::snprintf(line, sizeof line, "  %-18s %8zu", pass.name.c_str(), pass.rejected);
    out += line;
    if (!pass.examples.empty()) out += "  e.g. " + pass.examples.front();
    out += "\n";
  }
  out += "\nvalidation ladder\n";
  if (const planner::RankedPlan* best = planner::best_job(result)) {
    const auto v = validation_of(*best, ladder);
    if (v.validated) {
      out += "  " + best->plan.name + ": every island and boundary it uses has passed its step\n";
    } else {
      out += "  " + best->plan.name + " is unvalidated; an export would refuse it:\n";
      for (const auto& missing : v.missing) out += "    " + missing + "\n";
    }
  }
  out += "\nwhy\n";
  for (const auto& sentence : planner::explain(result)) out += "  " + sentence + "\n";
  return out;
}

nlohmann::ordered_json search_json(const planner::SearchResult& result, const Scenario& scenario,
                                   const validation::LadderReport* ladder,
                                   const sim::PoolSimulation* pool) {
  nlohmann::ordered_json j;
  j["scenario"] = scenario.name;
  j["objective"] = std::string(to_string(result.objective));
  if (scenario.prices) j["currency"] = scenario.prices->currency;
  j["search"] = {{"settings", result.settings},
                 {"evaluations", result.evaluations},
                 {"pruned", result.pruned}};
  // Only when set, and only when it stopped early, so that a complete search's report is
  // unchanged.
  if (result.max_pipeline_islands > 0)
    j["search"]["max_pipeline_islands"] = result.max_pipeline_islands;
  if (!result.stopped.empty()) {
    j["search"]["settings_total"] = result.settings_total;
    j["search"]["stopped"] = result.stopped;
  }
  j["ranked"] = nlohmann::ordered_json::array();
  for (const auto& r : result.ranked) j["ranked"].push_back(plan_json(r, ladder));
  nlohmann::ordered_json states;
  states["islands_alone"] = nlohmann::ordered_json::array();
  for (const auto& baseline : result.islands) {
    nlohmann::ordered_json b;
    b["island"] = baseline.island;
    if (baseline.best)
      b["best"] = plan_json(*baseline.best, ladder);
    else
      b["why_not"] = baseline.why_not;
    states["islands_alone"].push_back(b);
  }
  states["resource_pool"] =
      result.resource_pool ? plan_json(*result.resource_pool, ladder) : nlohmann::ordered_json();
  if (result.resource_pool && pool) states["resource_pool"]["simulated"] = pool_simulation_json(*pool);
  states["task_level"] = result.task_level ? plan_json(*result.task_level, ladder) : nlohmann::ordered_json();
  j["three_states"] = states;
  if (!result.mixed_data_parallel.empty() || !result.mixed_data_parallel_refused.empty()) {
    nlohmann::ordered_json mixed = nlohmann::ordered_json::array();
    for (const auto& found : result.mixed_data_parallel) {
      nlohmann::ordered_json m = replica_groups_json(found.step, found.plan);
      m["islands"] = found.islands;
      const auto verdict = validation::plan_validation(ladder, found.plan);
      m["validation"] = {{"validated", verdict.validated}, {"missing", verdict.missing}};
      mixed.push_back(std::move(m));
    }
    j["mixed_data_parallel"] = {{"plans", mixed}, {"refused", result.mixed_data_parallel_refused}};
  }
  nlohmann::ordered_json rejected = nlohmann::ordered_json::object();
  for (const auto& pass : result.passes) {
    rejected[pass.name] = {{"count", pass.rejected}, {"examples", pass.examples}};
  }
  j["rejected"] = rejected;
  j["explanation"] = planner::explain(result);
  return j;
}

}  // namespace hetplan::cli
