// Running a sweep: the points of a shard on a pool of threads, each a plan search on its own
// copy of the base scenario; results summarised as one JSON line per point and a CSV.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/version.hpp"
#include "exporters/export.hpp"
#include "formats/rounded_json.hpp"
#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "planner/search.hpp"
#include "sim/goodput.hpp"
#include "sim/twin/runner.hpp"
#include "sim/twin_input.hpp"
#include "sweep/sweep.hpp"

namespace hetplan::sweep {
namespace {

using nlohmann::ordered_json;

ordered_json optional_number(const std::optional<double>& value) {
  return value ? ordered_json(*value) : ordered_json(nullptr);
}

ordered_json plan_summary(const planner::RankedPlan& ranked, const Scenario& scenario) {
  ordered_json out;
  std::optional<double> goodput;  // tokens/s after failures and checkpoints
  out["mode"] = std::string(planner::to_string(ranked.mode));
  out["plan"] = ranked.mode == planner::Mode::resource_pool ? ordered_json(nullptr)
                                                            : ordered_json(ranked.plan.name);
  out["islands"] = ranked.islands;
  out["chips"] = ranked.chips;
  out["tokens_per_s"] = ranked.tokens_per_s;
  out["tokens_per_s_per_chip"] = ranked.chips > 0 ? ranked.tokens_per_s / ranked.chips : 0.0;
  if (ranked.mode == planner::Mode::resource_pool) {
    out["jobs"] = ranked.jobs.size();
  } else {
    out["step_time_s"] = ranked.estimate.step_time_s;
    out["mfu"] = ranked.estimate.mfu;
    // Tokens/s after failures and checkpoints, from the scenario's reliability section.
    std::vector<std::string> notes;
    if (const auto step = sim::plan_goodput(scenario, ranked.plan, ranked.tokens_per_s,
                                            ranked.estimate.step_time_s, notes))
      goodput = step->goodput_tokens_per_s;
    out["goodput_tokens_per_s"] = optional_number(goodput);
  }
  out["cost_per_million_tokens"] = optional_number(ranked.cost_per_million_tokens);
  // How sure: the evidence level and the 80% interval of each figure (docs/models/uncertainty.md);
  // null where a chip of the plan states no band.
  if (ranked.mode != planner::Mode::resource_pool) {
    const sim::Estimate& e = ranked.estimate;
    out["evidence"] = std::string(to_string(e.evidence));
    out["memory_tight"] = e.memory_tight();
    if (e.step_band) {
      auto pair = [](const sim::Interval& i) { return ordered_json{{"low", i.low}, {"high", i.high}}; };
      ordered_json interval;
      interval["tokens_per_s"] = pair(sim::rate_interval(ranked.tokens_per_s, *e.step_band));
      interval["step_time_s"] = pair(sim::scaled_interval(e.step_time_s, *e.step_band));
      interval["mfu"] = pair(sim::rate_interval(e.mfu, *e.step_band));
      interval["goodput_tokens_per_s"] =
          goodput ? pair(sim::rate_interval(*goodput, *e.step_band)) : ordered_json(nullptr);
      interval["cost_per_million_tokens"] =
          ranked.cost_per_million_tokens
              ? pair(sim::scaled_interval(*ranked.cost_per_million_tokens, *e.step_band))
              : ordered_json(nullptr);
      out["interval_80"] = std::move(interval);
    } else {
      out["interval_80"] = nullptr;
    }
  }
  return out;
}

ordered_json summarise(const planner::SearchResult& result, std::size_t top,
                       const Scenario& scenario) {
  ordered_json out;
  out["objective"] = std::string(to_string(result.objective));
  const planner::RankedPlan* best = planner::best_job(result);
  out["best"] = best ? plan_summary(*best, scenario) : ordered_json(nullptr);
  ordered_json islands = ordered_json::array();
  const planner::RankedPlan* best_single = nullptr;
  for (const auto& baseline : result.islands) {
    ordered_json island;
    island["island"] = baseline.island;
    if (baseline.best) {
      island["best"] = plan_summary(*baseline.best, scenario);
      if (!best_single || baseline.best->tokens_per_s > best_single->tokens_per_s)
        best_single = &*baseline.best;
    } else {
      island["best"] = nullptr;
      island["why_not"] = baseline.why_not;
    }
    islands.push_back(std::move(island));
  }
  out["single_island"] = std::move(islands);
  out["resource_pool"] = result.resource_pool ? plan_summary(*result.resource_pool, scenario) : ordered_json(nullptr);
  out["task_level"] = result.task_level ? plan_summary(*result.task_level, scenario) : ordered_json(nullptr);
  // How much faster one job spanning islands runs than the best island alone (tokens/s).
  out["task_level_gain"] = result.task_level && best_single && best_single->tokens_per_s > 0
                               ? ordered_json(result.task_level->tokens_per_s / best_single->tokens_per_s - 1)
                               : ordered_json(nullptr);
  ordered_json ranked = ordered_json::array();
  for (std::size_t k = 0; k < result.ranked.size() && k < top; ++k)
    ranked.push_back(plan_summary(result.ranked[k], scenario));
  out["ranked"] = std::move(ranked);
  out["search"] = {{"evaluations", result.evaluations},
                   {"pruned", result.pruned},
                   {"settings", result.settings}};
  if (result.max_pipeline_islands > 0)
    out["search"]["max_pipeline_islands"] = result.max_pipeline_islands;
  return out;
}

// The best `count` jobs of the ranking (the pool is not one job) through the twin, in worker
// processes: each with its rank, the twin's step and tokens/s, and how far the estimate is from
// the twin; a simulation that fails records its one-line error.
ordered_json simulate_best(const planner::SearchResult& result, std::size_t count,
                           const Scenario& scenario, const std::string& worker) {
  const std::vector<std::size_t> chosen = planner::runnable_jobs(result, count);
  std::vector<sim::TwinInput> inputs;
  const sim::TwinOptions twin = sim::twin_options(scenario);
  for (const std::size_t k : chosen) {
    const planner::RankedPlan& ranked = result.ranked[k];
    inputs.push_back(sim::make_twin_input(scenario.cluster, scenario.workload, ranked.plan,
                                          ranked.estimate, twin));
  }
  const auto outcomes = sim::twin::run_workers(inputs, {worker}, 1);
  ordered_json out = ordered_json::array();
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const planner::RankedPlan& ranked = result.ranked[chosen[i]];
    ordered_json entry;
    entry["rank"] = chosen[i] + 1;
    entry["plan"] = ranked.plan.name;
    if (const auto& simulated = outcomes[i].result) {
      entry["step_time_s"] = simulated->step_time_s;
      entry["tokens_per_s"] = simulated->tokens_per_s;
      entry["estimate_step_time_s"] = ranked.estimate.step_time_s;
      // Relative: (estimate - twin) / twin.
      entry["estimate_vs_twin"] = simulated->step_time_s > 0
                                      ? ordered_json(ranked.estimate.step_time_s / simulated->step_time_s - 1)
                                      : ordered_json(nullptr);
    } else {
      entry["error"] = outcomes[i].error;
    }
    out.push_back(std::move(entry));
  }
  return out;
}

// Everything a point's result depends on except its values: the base files' bytes (by their
// hashes), the sweep's settings and the program.
std::string inputs_digest(const Sweep& sweep, const Scenario& base) {
  std::string digest = "hetplan sweep point v1; hetplan " + std::string(version()) + "; top " +
                       std::to_string(sweep.top) + "; twin " + std::to_string(sweep.twin);
  // Only when set, so that the points of sweeps without a cap keep their keys.
  if (sweep.max_pipeline_islands > 0)
    digest += "; max_pipeline_islands " + std::to_string(sweep.max_pipeline_islands);
  digest += "\n";
  for (const auto& [path, hash] : exporters::input_hashes(base, sweep.scenario))
    digest += path + " " + hash + "\n";
  return digest;
}

// A value as its point's key holds it: a number (alone or before a unit) in one spelling, so
// that "4", "4.0" and "4e0", or two steps of a range that print alike, are one point.
std::string canonical_value(const std::string& text) {
  double number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || !std::isfinite(number)) return text;
  std::string rest(end, text.data() + text.size());
  const auto first = rest.find_first_not_of(' ');
  rest = first == std::string::npos ? "" : " " + rest.substr(first);
  char spelled[40];
  const auto written = std::to_chars(spelled, spelled + sizeof spelled, number == 0 ? 0.0 : number);
  return std::string(spelled, written.ptr) + rest;  // the shortest spelling that reads back
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_value(const ordered_json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return csv_field(value.get<std::string>());
  return value.dump();
}

}  // namespace

SweepResult run_sweep(const Sweep& sweep, const SweepOptions& options) {
  const Scenario base = [&] {
    try {
      return formats::load_scenario(sweep.scenario);
    } catch (const InputError& error) {
      throw InputError(sweep.scenario_location, "scenario", error.what());
    }
  }();
  check(sweep, base);
  if (sweep.twin > 0 && options.twin_worker.empty())
    throw InputError({sweep.file, 0, 0}, "twin", "expected the twin's worker (hetplan-twin) to run it");
  const std::string digest = inputs_digest(sweep, base);
  const std::vector<Point> all = points(sweep);
  const std::size_t shards = std::max<std::size_t>(1, options.shard.count);
  std::vector<Point> mine;
  for (const Point& point : all) {
    if (point.index % shards == options.shard.index) mine.push_back(point);
  }
  if (options.started) options.started(exporters::sha256_hex(digest));
  // Each point's key: the inputs and its values, a number in one spelling.
  auto key_of = [&](const Point& point) {
    std::string key_text = digest;
    for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
      key_text += sweep.axes[a].path + " = " +
                  canonical_value(sweep.axes[a].values[point.values[a]].text) + "\n";
    }
    return exporters::sha256_hex(key_text);
  };
  // Points of one key are searched once: the first runs, the others take its result.
  std::vector<std::string> keys(mine.size());
  std::vector<std::size_t> unique;             // the first point of each key (in `mine`)
  std::vector<std::size_t> slot(mine.size());  // each point's key's place in `unique`
  {
    std::map<std::string, std::size_t> seen;
    for (std::size_t i = 0; i < mine.size(); ++i) {
      keys[i] = key_of(mine[i]);
      const auto [at, added] = seen.emplace(keys[i], unique.size());
      if (added) unique.push_back(i);
      slot[i] = at->second;
    }
  }

  SweepResult out;
  out.total_points = all.size();
  std::vector<std::optional<PointResult>> results(unique.size());
  std::atomic<std::size_t> next{0};
  std::mutex report;
  SweepProgress progress;
  progress.total = unique.size();

  auto values_of = [&](const Point& point) {
    ordered_json values = ordered_json::object();
    for (std::size_t a = 0; a < sweep.axes.size(); ++a)
      values[sweep.axes[a].path] = sweep.axes[a].values[point.values[a]].text;
    return values;
  };
  auto run_point = [&](const Point& point, const std::string& key) {
    PointResult r;
    r.index = point.index;
    const ordered_json values = values_of(point);
    r.key = key;
    if (options.earlier) {
      if (auto line = options.earlier(r.key)) {
        r.line = std::move(*line);
        // The key holds the inputs, not the point's place in this sweep (or its name).
        r.line["sweep"] = sweep.name;
        r.line["points"] = all.size();
        r.line["index"] = point.index;
        r.ok = r.line.value("status", "") == "ok";
        r.reused = true;
        return r;
      }
    }
    r.line["sweep"] = sweep.name;
    r.line["points"] = all.size();
    r.line["index"] = point.index;
    r.line["key"] = r.key;
    r.line["values"] = values;
    try {
      Scenario scenario = base;
      apply(sweep, point, scenario);
      planner::SearchOptions search;
      search.top = std::max<std::size_t>(sweep.top, 1);
      search.threads = 1;  // the points already run side by side, one per job
      search.max_pipeline_islands = sweep.max_pipeline_islands;
      const planner::SearchResult found = planner::search_plans(scenario, search);
      r.line["status"] = "ok";
      const ordered_json summary = summarise(found, sweep.top, scenario);
      for (const auto& [name, value] : summary.items()) r.line[name] = value;
      if (sweep.twin > 0) r.line["twin"] = simulate_best(found, sweep.twin, scenario, options.twin_worker);
      r.ok = true;
    } catch (const InputError& error) {
      r.line["status"] = "failed";
      r.line["error"] = error.what();
    } catch (const std::exception& error) {
      r.line["status"] = "failed";
      r.line["error"] = std::string("internal error: ") + error.what();
    }
    r.line = formats::rounded(std::move(r.line));
    return r;
  };

  const auto started = std::chrono::steady_clock::now();
  std::atomic<bool> out_of_time{false};
  auto work = [&] {
    for (;;) {
      if (options.stop && options.stop->stop_requested()) return;
      // A budget starts no new point once spent; the points running then finish, so every
      // result is a whole search (and the same bytes as without a budget).
      if (options.max_seconds > 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() >=
              options.max_seconds) {
        out_of_time = true;
        return;
      }
      const std::size_t i = next.fetch_add(1);
      if (i >= unique.size()) return;
      PointResult r = run_point(mine[unique[i]], keys[unique[i]]);
      std::lock_guard lock(report);
      ++progress.done;
      if (!r.ok) ++progress.failed;
      if (r.reused) ++progress.reused;
      if (options.finished && !r.reused) options.finished(r);
      results[i] = std::move(r);
      if (options.observer) options.observer->on_point(progress);
    }
  };
  const int jobs = std::max(1, std::min<int>(options.jobs, static_cast<int>(std::max<std::size_t>(1, unique.size()))));
  std::vector<std::thread> workers;
  for (int j = 1; j < jobs; ++j) workers.emplace_back(work);
  work();
  for (auto& worker : workers) worker.join();
  // Every point of the shard in order, a repeated one with its first's result under its own
  // index and values.
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const std::optional<PointResult>& first = results[slot[i]];
    if (!first) {
      out.stopped = true;
      continue;
    }
    PointResult r = *first;
    if (unique[slot[i]] != i) {
      r.index = mine[i].index;
      r.reused = false;
      r.line["index"] = mine[i].index;
      r.line["values"] = values_of(mine[i]);
    }
    out.points.push_back(std::move(r));
  }
  if (out.stopped) out.stopped_by = out_of_time ? "the time budget ran out" : "stopped on request";
  return out;
}

std::string results_jsonl(const std::vector<PointResult>& points) {
  std::string out;
  for (const PointResult& point : points) {
    out += point.line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out += "\n";
  }
  return out;
}

std::vector<std::string> axis_paths(const Sweep& sweep) {
  std::vector<std::string> paths;
  for (const Axis& axis : sweep.axes) paths.push_back(axis.path);
  return paths;
}

std::string results_csv(const std::vector<std::string>& axis_paths,
                        const std::vector<PointResult>& points) {
  std::ostringstream out;
  out << "index";
  for (const std::string& path : axis_paths) out << "," << csv_field(path);
  out << ",status,best_mode,best_plan,best_chips,best_tokens_per_s,best_tokens_per_s_per_chip,"
         "best_step_time_s,best_mfu,best_goodput_tokens_per_s,best_cost_per_million_tokens,"
         "best_evidence,best_tokens_per_s_low,best_tokens_per_s_high,"
         "resource_pool_tokens_per_s,"
         "task_level_tokens_per_s,task_level_gain,twin_step_time_s,twin_tokens_per_s,error";
  // Each island alone, in the order the points name them.
  std::vector<std::string> islands;
  for (const PointResult& point : points) {
    if (!point.line.contains("single_island") || !point.line["single_island"].is_array()) continue;
    for (const auto& island : point.line["single_island"]) {
      const std::string name = island.value("island", "");
      if (std::find(islands.begin(), islands.end(), name) == islands.end()) islands.push_back(name);
    }
  }
  for (const std::string& island : islands) {
    out << "," << csv_field("single_" + island + "_tokens_per_s") << ","
        << csv_field("single_" + island + "_goodput_tokens_per_s");
  }
  out << "\n";
  for (const PointResult& point : points) {
    const ordered_json& line = point.line;
    out << point.index;
    const ordered_json values = line.contains("values") ? line["values"] : ordered_json::object();
    for (const std::string& path : axis_paths)
      out << "," << csv_value(values.contains(path) ? values[path] : ordered_json());
    out << "," << csv_value(line.value("status", ordered_json()));
    const ordered_json best = line.contains("best") ? line["best"] : ordered_json();
    for (const char* field : {"mode", "plan", "chips", "tokens_per_s", "tokens_per_s_per_chip",
                              "step_time_s", "mfu", "goodput_tokens_per_s",
                              "cost_per_million_tokens", "evidence"}) {
      out << "," << csv_value(best.is_object() && best.contains(field) ? best[field] : ordered_json());
    }
    // The 80% interval of the best plan's tokens/s.
    const ordered_json interval = best.is_object() && best.contains("interval_80") &&
                                          best["interval_80"].is_object()
                                      ? best["interval_80"]["tokens_per_s"]
                                      : ordered_json();
    for (const char* end : {"low", "high"})
      out << "," << csv_value(interval.is_object() ? interval[end] : ordered_json());
    for (const char* mode : {"resource_pool", "task_level"}) {
      const ordered_json plan = line.contains(mode) ? line[mode] : ordered_json();
      out << "," << csv_value(plan.is_object() ? plan["tokens_per_s"] : ordered_json());
    }
    out << "," << csv_value(line.value("task_level_gain", ordered_json()));
    // The twin's figures for the best job, where the sweep ran the twin.
    const ordered_json twin = line.contains("twin") && line["twin"].is_array() && !line["twin"].empty()
                                  ? line["twin"][0]
                                  : ordered_json();
    for (const char* field : {"step_time_s", "tokens_per_s"})
      out << "," << csv_value(twin.is_object() && twin.contains(field) ? twin[field] : ordered_json());
    out << "," << csv_value(line.value("error", ordered_json()));
    for (const std::string& island : islands) {
      ordered_json alone;
      if (line.contains("single_island") && line["single_island"].is_array()) {
        for (const auto& entry : line["single_island"]) {
          if (entry.value("island", "") == island && entry.contains("best")) alone = entry["best"];
        }
      }
      for (const char* field : {"tokens_per_s", "goodput_tokens_per_s"})
        out << "," << csv_value(alone.is_object() && alone.contains(field) ? alone[field] : ordered_json());
    }
    out << "\n";
  }
  return out.str();
}

std::vector<PointResult> merge_results(const std::vector<std::pair<std::string, std::string>>& parts) {
  std::map<std::size_t, PointResult> merged;
  std::optional<std::pair<std::string, std::size_t>> sweep_of;  // name, points
  for (const auto& [name, text] : parts) {
    std::istringstream lines(text);
    std::string line;
    int number = 0;
    while (std::getline(lines, line)) {
      ++number;
      if (line.empty()) continue;
      const SourceLocation at{name, number, 1};
      ordered_json point;
      try {
        point = ordered_json::parse(line);
      } catch (const nlohmann::json::exception&) {
        throw InputError(at, "line", "expected one JSON object per line (a sweep point)");
      }
      if (!point.is_object() || !point.contains("index") || !point["index"].is_number_unsigned() ||
          !point.contains("sweep") || !point["sweep"].is_string() || !point.contains("points") ||
          !point["points"].is_number_unsigned() || !point.contains("key") || !point["key"].is_string())
        throw InputError(at, "line", "expected a sweep point with sweep, points, index and key");
      const std::pair<std::string, std::size_t> which{point["sweep"].get<std::string>(),
                                                      point["points"].get<std::size_t>()};
      if (sweep_of && *sweep_of != which)
        throw InputError(at, "sweep",
                         "expected points of sweep " + sweep_of->first + " (" +
                             std::to_string(sweep_of->second) + " points), got " + which.first +
                             " (" + std::to_string(which.second) + " points)");
      sweep_of = which;
      PointResult r;
      r.index = point["index"].get<std::size_t>();
      if (r.index >= which.second)
        throw InputError(at, "index", "expected an index below " + std::to_string(which.second));
      r.key = point["key"].get<std::string>();
      r.ok = point.value("status", "") == "ok";
      r.line = std::move(point);
      auto [found, added] = merged.emplace(r.index, r);
      if (!added && found->second.line != r.line)
        throw InputError(at, "index", "point " + std::to_string(r.index) +
                                          " is given twice with different results");
    }
  }
  std::vector<PointResult> out;
  for (auto& [index, r] : merged) out.push_back(std::move(r));
  return out;
}

}  // namespace hetplan::sweep
