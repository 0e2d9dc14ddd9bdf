// hetplan: the command-line front end. Parses arguments, calls the libraries, prints. Input
// errors print one line and exit with code 2.
#include <CLI/CLI.hpp>
#include <atomic>
#include <functional>
#include <cctype>
#include <cmath>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <iostream>
#include <thread>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli/calibration_report.hpp"
#include "cli/import_report.hpp"
#include "cli/plan_report.hpp"
#include "cli/report.hpp"
#include "cli/twin_report.hpp"
#include "core/error.hpp"
#include "core/scratch_files.hpp"
#include "formats/loaders.hpp"
#include "formats/paths.hpp"
#include "exporters/export.hpp"
#include "cli/runs_command.hpp"
#include "cli/sweep_command.hpp"
#include "core/version.hpp"
#include "importers/run_files.hpp"
#include "extender/extender.hpp"
#include "formats/writers.hpp"
#include "importers/k8s_inventory.hpp"
#include "importers/training_logs.hpp"
#include "planner/search.hpp"
#include "sim/estimator.hpp"
#include "sim/twin/runner.hpp"
#include "sim/twin_input.hpp"
#include "validation/calibrate.hpp"
#include "validation/training_run.hpp"
#include "validation/evidence.hpp"
#include "validation/ladder.hpp"
#include "validation/microbench.hpp"
#include "validation/published_runs.hpp"
#include "validation/rank_agreement.hpp"

namespace {

constexpr int kInputErrorExit = 2;
// validate --run and --evidence: the run or check did not pass (its record says it failed).
constexpr int kNotPassedExit = 4;

// Records just written read back, with their evidence holding; anything else is a fault here.
void check_written_records(const std::string& folder, const std::vector<std::string>& written) {
  std::set<std::string> names;
  for (const auto& path : written) names.insert(std::filesystem::path(path).filename().string());
  for (const auto& record : hetplan::validation::load_checked_records(folder)) {
    if (!names.count(std::filesystem::path(record.file).filename().string())) continue;
    for (const auto& entry : record.entries)
      if (!entry.evidence_problem.empty()) throw std::runtime_error(entry.evidence_problem);
  }
}

// The plan given with --plan (checked against the scenario), or the scenario's own.
hetplan::Plan plan_of(const hetplan::Scenario& scenario, const std::string& plan_path) {
  if (!plan_path.empty()) {
    hetplan::Plan plan = hetplan::formats::load_plan(plan_path);
    hetplan::formats::check_plan_references(plan, scenario.cluster, scenario.workload);
    return plan;
  }
  if (scenario.reference_plan) return *scenario.reference_plan;
  throw hetplan::InputError(scenario.location, "plan",
                            "expected --plan PLAN, or a `plan:` in the scenario");
}

int run_eval(const std::string& scenario_path, const std::string& plan_path, bool json) {
  hetplan::Scenario scenario = hetplan::formats::load_scenario(scenario_path);
  const hetplan::Plan plan = plan_of(scenario, plan_path);
  if (plan.has_replica_groups()) {
    const auto step =
        hetplan::sim::estimate_replica_groups(scenario.cluster, scenario.workload, plan);
    if (json) {
      std::cout << hetplan::cli::replica_groups_json(step, plan).dump(2) << "\n";
    } else {
      std::cout << "scenario " << scenario.name << ": " << scenario.workload.name << " on "
                << scenario.cluster.name << "\n";
      std::cout << hetplan::cli::replica_groups_text(step, plan);
    }
    return 0;
  }
  const auto estimate = hetplan::sim::estimate_step(scenario.cluster, scenario.workload, plan);
  if (json) {
    std::cout << hetplan::cli::estimate_json(estimate, plan).dump(2) << "\n";
  } else {
    std::cout << "scenario " << scenario.name << ": " << scenario.workload.name << " on "
              << scenario.cluster.name << "\n";
    std::cout << hetplan::cli::estimate_text(estimate, plan);
  }
  return 0;
}

// A simulation failed in its worker, or its input was refused: not the user's input error.
struct SimulationFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Simulates one step of each plan, each in its own worker process, several at once.
std::vector<hetplan::sim::TwinResult> simulate_plans(
    const std::vector<hetplan::sim::TwinInput>& inputs) {
  for (const auto& input : inputs) {
    const auto problems = hetplan::sim::check_twin_input(input);
    if (!problems.empty()) {
      throw SimulationFailure("plan " + input.plan + " cannot be simulated: " + problems.front());
    }
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto outcomes = hetplan::sim::twin::run_workers(
      inputs, {hetplan::sim::twin::worker_beside_this_executable()}, cores);
  std::vector<hetplan::sim::TwinResult> results;
  for (const auto& outcome : outcomes) {
    if (!outcome.result) throw SimulationFailure(outcome.error);
    results.push_back(*outcome.result);
  }
  return results;
}

// The estimate of a plan that must run (simulate, export, validate --run): one that cannot is bad
// input at the line of the first reason's stage, which the reason then does not repeat (the
// others keep their own stage's line), else at the file that holds the plan.
hetplan::sim::Estimate runnable_estimate(const hetplan::Scenario& scenario,
                                         const hetplan::Plan& plan, const std::string& plan_file) {
  auto estimate = hetplan::sim::estimate_step(scenario.cluster, scenario.workload, plan);
  if (estimate.feasible) return estimate;
  hetplan::SourceLocation where{plan_file};
  for (const auto& stage : plan.stages) {
    const std::string prefix = hetplan::to_string(stage.location) + ": ";
    if (stage.location.line > 0 && estimate.reasons.front().rfind(prefix, 0) == 0) {
      where = stage.location;
      break;
    }
  }
  const std::string lead = where.line > 0 ? hetplan::to_string(where) + ": " : "";
  std::string why;
  for (const auto& reason : estimate.reasons) {
    const bool same = !lead.empty() && reason.rfind(lead, 0) == 0;
    why += (why.empty() ? "" : "; ") + (same ? reason.substr(lead.size()) : reason);
  }
  throw hetplan::InputError(where, "plan",
                            "expected a plan that can run, got one that cannot: " + why);
}

// A plan with replica groups on the twin: each group's pipeline on one fabric with its share of
// the batch, then the exchange between the groups over the declared paths as flows
// (docs/twin.md#replica-groups). `step` is its estimate.
hetplan::sim::ReplicaGroupsSimulation simulate_groups(const hetplan::Scenario& scenario,
                                                      const hetplan::Plan& plan,
                                                      const hetplan::sim::MixedDataParallelStep& step,
                                                      std::optional<std::uint64_t> seed) {
  const hetplan::sim::TwinPoolInput pool = hetplan::sim::replica_group_twin_pool(
      scenario.cluster, scenario.workload, plan, step, hetplan::sim::twin_options(scenario, seed));
  const auto problems = hetplan::sim::check_twin_pool(pool);
  if (!problems.empty()) {
    throw SimulationFailure("plan " + plan.name + " cannot be simulated: " + problems.front());
  }
  // The groups meet in the gradient exchange: one worker simulates them all.
  const auto outcome = hetplan::sim::twin::run_pool_worker(
      pool, {hetplan::sim::twin::worker_beside_this_executable()});
  if (!outcome.result) throw SimulationFailure(outcome.error);
  return hetplan::sim::replica_groups_simulation(scenario.workload, step, *outcome.result);
}

// `hetplan simulate` of a plan with replica groups on different islands.
int simulate_replica_groups(const hetplan::Scenario& scenario, const hetplan::Plan& plan,
                            std::optional<std::uint64_t> seed, bool json) {
  const auto step = hetplan::sim::estimate_replica_groups(scenario.cluster, scenario.workload, plan);
  if (!step.feasible) {
    std::string why;
    for (const auto& reason : step.reasons) why += (why.empty() ? "" : "; ") + reason;
    throw hetplan::InputError(plan.replica_groups.front().location, "replica_groups",
                              "expected a plan that can run, got one that cannot: " + why);
  }
  const auto simulated = simulate_groups(scenario, plan, step, seed);
  if (json) {
    std::cout << hetplan::cli::replica_groups_simulation_json(simulated, step, plan).dump(2)
              << "\n";
  } else {
    std::cout << "scenario " << scenario.name << ": " << scenario.workload.name << " on "
              << scenario.cluster.name << "\n";
    std::cout << hetplan::cli::replica_groups_simulation_text(simulated, step, plan);
  }
  return 0;
}

int run_simulate(const std::string& scenario_path, const std::string& plan_path,
                 const std::string& trace_path, std::optional<std::uint64_t> seed, bool json) {
  const hetplan::Scenario scenario = hetplan::formats::load_scenario(scenario_path);
  const hetplan::Plan plan = plan_of(scenario, plan_path);
  if (plan.has_replica_groups()) {
    if (!trace_path.empty()) {
      throw hetplan::InputError({trace_path, 0, 0}, "--trace",
                                "expected no --trace with a plan of replica groups (a trace "
                                "shows one pipeline)");
    }
    return simulate_replica_groups(scenario, plan, seed, json);
  }
  const auto estimate =
      runnable_estimate(scenario, plan, plan_path.empty() ? scenario_path : plan_path);
  hetplan::sim::TwinOptions options = hetplan::sim::twin_options(scenario, seed);
  std::optional<hetplan::ScratchFile> trace_scratch;  // removed if a signal ends the process
  // The worker writes the trace beside its destination; it replaces the destination only once
  // the simulation has succeeded.
  if (!trace_path.empty()) {
    options.trace_path = trace_path + ".partial-" + std::to_string(::getpid());
    trace_scratch.emplace(options.trace_path);
    // Find out now, not after the simulation, whether the trace can be written there.
    if (!std::ofstream(options.trace_path, std::ios::binary | std::ios::trunc)) {
      throw hetplan::InputError({trace_path, 0, 0}, "--trace",
                                "expected a file hetplan can write, got " +
                                    std::string(std::strerror(errno)));
    }
  }
  const auto input = hetplan::sim::make_twin_input(scenario.cluster, scenario.workload, plan,
                                                   estimate, options);
  std::vector<hetplan::sim::TwinResult> results;
  try {
    results = simulate_plans({input});
  } catch (...) {
    if (!options.trace_path.empty()) std::filesystem::remove(options.trace_path);
    throw;
  }
  if (!trace_path.empty()) {
    std::error_code error;
    std::filesystem::rename(options.trace_path, trace_path, error);
    if (error) {
      std::filesystem::remove(options.trace_path);
      throw hetplan::InputError({trace_path, 0, 0}, "--trace",
                                "expected a file hetplan can write, got " + error.message());
    }
  }
  const auto report =
      hetplan::sim::simulated_step(scenario, plan, estimate, input, results.front());
  if (json) {
    std::cout << hetplan::cli::simulation_json(report).dump(2) << "\n";
  } else {
    std::cout << "scenario " << scenario.name << ": " << scenario.workload.name << " on "
              << scenario.cluster.name << "\n";
    std::cout << hetplan::cli::simulation_text(report);
    if (!trace_path.empty()) std::cout << "trace written to " << trace_path << "\n";
  }
  return 0;
}

// A file of the user's runs where a hetplan document was expected: the one line says what the
// file is and which command reads it, instead of a YAML error about its first odd line.
template <typename Load>
auto load_or_name_run_file(const std::string& path, const std::string& expected, Load&& load) {
  try {
    return load();
  } catch (const hetplan::InputError&) {
    const auto kind = hetplan::importers::recognise_run_file(hetplan::formats::read_text_file(path));
    if (!kind) throw;
    throw hetplan::InputError({path, 1, 1}, "",
                              "expected " + expected + "; this is " + hetplan::importers::describe(*kind));
  }
}

int run_check(const std::vector<std::string>& files) {
  for (const auto& file : files) {
    const auto report = load_or_name_run_file(
        file, "a hetplan document (chip, cluster, workload, scenario or plan) or a Hugging Face config",
        [&] { return hetplan::formats::check_file(file); });
    std::cout << file << ": ok (" << report.kind << ") " << report.summary << "\n";
  }
  return 0;
}

// A temporary folder removed with everything in it when the guard goes, however the command
// ends (an input error thrown half-way included), and by the signal handler on Ctrl-C.
class TemporaryFolder {
 public:
  explicit TemporaryFolder(const std::string& prefix)
      : path_(make(prefix)), scratch_(path_, /*folder=*/true) {}
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  static std::string make(const std::string& prefix) {
    std::string path = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
    if (!mkdtemp(path.data())) {
      throw hetplan::InputError({path, 0, 0}, "--microbench",
                                "expected a temporary folder for the calibrated profiles");
    }
    return path;
  }
  std::string path_;
  hetplan::ScratchFile scratch_;
};

int run_validate(const std::string& folder, const std::string& profiles,
                 const std::string& microbench, const std::string& calibrated_out, bool twin,
                 bool json) {
  hetplan::validation::ValidationReport report;
  if (microbench.empty()) {
    hetplan::validation::ValidationOptions options;
    if (twin) {
      const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      options.twin = {{hetplan::sim::twin::worker_beside_this_executable()}, cores};
    }
    report = hetplan::validation::validate_published_runs(folder, profiles, options);
  } else {
    // Profiles calibrated from the microbenchmarks only: into the folder asked for, kept, or
    // into a temporary one that goes when the command ends.
    std::optional<TemporaryFolder> temporary;
    std::string calibrated = calibrated_out;
    if (calibrated.empty()) {
      temporary.emplace("hetplan-calibrated-");
      calibrated = temporary->path();
    } else {
      // Written into a new or empty folder only: no file of the user's is overwritten.
      std::error_code error;
      if (std::filesystem::exists(calibrated, error) &&
          (!std::filesystem::is_directory(calibrated, error) ||
           !std::filesystem::is_empty(calibrated, error))) {
        throw hetplan::InputError({calibrated, 0, 0}, "--calibrated-out",
                                  "expected a new or empty folder for the calibrated profiles");
      }
    }
    report = hetplan::validation::validate_published_runs_calibrated(folder, profiles, microbench,
                                                                     calibrated)
                 .report;
    if (!temporary) std::cerr << "calibrated profiles written to " << calibrated << "\n";
  }
  const auto agreement = hetplan::validation::rank_agreement(report);
  if (json) {
    auto j = hetplan::validation::report_json(report);
    j["rank_agreement"] = nlohmann::ordered_json::array();
    for (const auto& g : agreement) {
      j["rank_agreement"].push_back({{"file", g.file},
                                     {"metric", g.metric},
                                     {"cases", g.cases},
                                     {"kendall_tau", hetplan::cli::round6(g.kendall_tau)},
                                     {"pairs_agreeing", g.pairs_agreeing},
                                     {"pairs", g.pairs},
                                     {"best_agrees", g.best_agrees},
                                     {"measured_best", g.measured_best},
                                     {"predicted_best", g.predicted_best}});
    }
    std::cout << hetplan::cli::rounded(j).dump(2) << "\n";
  } else {
    std::cout << hetplan::validation::report_text(report) << "\n"
              << hetplan::validation::rank_agreement_text(agreement);
  }
  return 0;
}

int run_ladder(const std::string& scenario_path, const std::string& records, bool json) {
  const hetplan::Scenario scenario = hetplan::formats::load_scenario(scenario_path);
  const auto ladder = hetplan::validation::scenario_ladder(scenario, records);
  if (!ladder) {
    throw hetplan::InputError({scenario_path, 0, 0}, "validation_records",
                              "expected --records DIR or a `validation_records:` in the scenario");
  }
  if (json) {
    auto rung_json = [](const hetplan::validation::RungState& rung) {
      nlohmann::ordered_json r{{"step", std::string(hetplan::to_string(rung.step))},
                               {"status", std::string(hetplan::validation::to_string(rung.status))}};
      if (!rung.date.empty()) r["date"] = rung.date;
      if (!rung.evidence.empty()) r["evidence"] = rung.evidence;
      if (!rung.note.empty()) r["note"] = rung.note;
      if (rung.step == hetplan::LadderStep::scale && !rung.date.empty()) r["chips"] = rung.chips;
      r["refused"] = rung.refused;
      r["commands"] = rung.commands;
      return r;
    };
    auto pairs_json = [&](const std::vector<hetplan::validation::BoundaryLadder>& pairs) {
      auto out = nlohmann::ordered_json::array();
      for (const auto& b : pairs) {
        auto entry = rung_json(b.rung);
        entry.erase("step");
        out.push_back(nlohmann::ordered_json{{"a", b.a}, {"b", b.b}, {"passed", b.passed()}});
        out.back().update(entry);
      }
      return out;
    };
    nlohmann::ordered_json j;
    j["islands"] = nlohmann::ordered_json::array();
    for (const auto& s : ladder->islands) {
      auto rungs = nlohmann::ordered_json::array();
      for (const auto& rung : s.rungs) rungs.push_back(rung_json(rung));
      j["islands"].push_back({{"island", s.island},
                              {"chip", s.chip},
                              {"runtime", s.runtime.name + " " + s.runtime.version},
                              {"step", s.level},
                              {"missing", s.missing},
                              {"scale_chips", s.scale_chips},
                              {"rungs", rungs}});
    }
    j["boundaries"] = pairs_json(ladder->boundaries);
    j["exchanges"] = pairs_json(ladder->exchanges);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "validation ladder of " << scenario.cluster.name << "\n"
              << hetplan::validation::ladder_text(*ladder);
  }
  return 0;
}

// The best `count` one-job plans of a search, simulated on the fabric and ranked again.
std::vector<hetplan::cli::RankedSimulation> simulate_top(
    const hetplan::Scenario& scenario, const hetplan::planner::SearchResult& result,
    std::size_t count) {
  std::vector<const hetplan::planner::RankedPlan*> chosen;
  std::vector<std::size_t> ranks;
  for (const std::size_t k : hetplan::planner::runnable_jobs(result, count)) {
    chosen.push_back(&result.ranked[k]);
    ranks.push_back(k + 1);
  }
  const hetplan::sim::TwinOptions options = hetplan::sim::twin_options(scenario);
  std::vector<hetplan::sim::TwinInput> inputs;
  for (const auto* ranked : chosen) {
    inputs.push_back(hetplan::sim::make_twin_input(scenario.cluster, scenario.workload,
                                                   ranked->plan, ranked->estimate, options));
  }
  const auto results = simulate_plans(inputs);
  std::vector<hetplan::cli::RankedSimulation> out;
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    out.push_back({ranks[k], hetplan::sim::simulated_step(scenario, chosen[k]->plan,
                                                     chosen[k]->estimate, inputs[k],
                                                     results[k])});
  }
  hetplan::cli::rank_by_simulation(out);
  return out;
}

// The resource pool's jobs simulated alone and together on one fabric (docs/twin.md#pool).
hetplan::sim::PoolSimulation simulate_resource_pool(const hetplan::Scenario& scenario,
                                                    const hetplan::planner::RankedPlan& pool) {
  const hetplan::sim::TwinOptions options = hetplan::sim::twin_options(scenario);
  hetplan::sim::TwinPoolInput input;
  for (const auto& job : pool.jobs) {
    input.jobs.push_back(hetplan::sim::make_twin_input(scenario.cluster, scenario.workload,
                                                       job.plan, job.estimate, options));
  }
  const auto problems = hetplan::sim::check_twin_pool(input);
  if (!problems.empty())
    throw SimulationFailure("the resource pool cannot be simulated: " + problems.front());
  if (hetplan::sim::shared_spines(input).empty()) {
    hetplan::sim::PoolSimulation apart;
    apart.shares_a_limiting_link = false;
    return apart;
  }
  const auto alone = simulate_plans(input.jobs);
  const auto together = hetplan::sim::twin::run_pool_worker(
      input, {hetplan::sim::twin::worker_beside_this_executable()});
  if (!together.result) throw SimulationFailure(together.error);
  return hetplan::sim::pool_simulation(input, alone, *together.result);
}

// The search's progress on one stderr line, redrawn at most five times a second, when stderr is
// a terminal (a log or a pipe gets nothing).
class ProgressLine : public hetplan::planner::SearchObserver {
 public:
  ProgressLine() : enabled_(isatty(STDERR_FILENO) != 0) {}
  ~ProgressLine() override {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
  }
  void on_progress(const hetplan::planner::SearchProgress& p) override {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    drawn_ = true;
    std::fprintf(stderr, "\r\033[Ksearching: %zu of %zu settings, %zu plans scored, %zu pruned (%.*s)",
                 p.settings_done, p.settings_total, p.evaluations, p.pruned,
                 static_cast<int>(p.phase.size()), p.phase.data());
    std::fflush(stderr);
  }

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_;
};

// Ctrl-C during a search stops it with the best plans so far; a second one ends the process
// (removing its scratch files first, as every signal does).
hetplan::planner::StopToken* g_search_stop = nullptr;
extern "C" void remove_scratch_and_die(int signal_number);
extern "C" void stop_search_on_signal(int) {
  if (g_search_stop) g_search_stop->request_stop();  // a lock-free atomic store
  std::signal(SIGINT, remove_scratch_and_die);
}

int run_plan(const std::string& scenario_path, std::size_t top, bool json,
             const std::string& out_dir, bool timings, const std::string& records,
             std::size_t simulate, double max_seconds, std::size_t threads,
             int max_pipeline_islands) {
  const hetplan::Scenario scenario = hetplan::formats::load_scenario(scenario_path);
  const auto ladder = hetplan::validation::scenario_ladder(scenario, records);
  hetplan::planner::SearchOptions options;
  options.top = top;
  options.max_seconds = max_seconds;
  options.max_pipeline_islands = max_pipeline_islands;
  options.threads = threads;
  hetplan::planner::StopToken stop;
  options.stop = &stop;
  std::optional<hetplan::planner::SearchResult> searched;
  {
    ProgressLine progress;
    options.observer = &progress;
    g_search_stop = &stop;
    const auto previous = std::signal(SIGINT, stop_search_on_signal);
    searched = hetplan::planner::search_plans(scenario, options);
    std::signal(SIGINT, previous);
    g_search_stop = nullptr;
  }
  const auto& result = *searched;
  const auto simulations = simulate ? simulate_top(scenario, result, simulate)
                                    : std::vector<hetplan::cli::RankedSimulation>{};
  std::optional<hetplan::sim::PoolSimulation> pool;
  if (simulate && result.resource_pool) pool = simulate_resource_pool(scenario, *result.resource_pool);
  // The best replica groups on different islands, simulated beside them.
  std::optional<hetplan::sim::ReplicaGroupsSimulation> groups;
  if (simulate && !result.mixed_data_parallel.empty()) {
    const auto& mixed = result.mixed_data_parallel.front();
    groups = simulate_groups(scenario, mixed.plan, mixed.step, std::nullopt);
  }
  const hetplan::sim::PoolSimulation* pooled = pool ? &*pool : nullptr;

  // A search stopped before it ranked any plan leaves the folder as it was: an empty set would
  // replace an earlier run's plans with nothing that answers the scenario.
  const bool stopped_empty =
      !result.stopped.empty() && result.ranked.empty() && result.mixed_data_parallel.empty();
  if (!out_dir.empty() && stopped_empty) {
    std::cerr << "hetplan: the search stopped before it ranked a plan; " << out_dir
              << " left as it was\n";
  }
  if (!out_dir.empty() && !stopped_empty) {
    const std::string scenario_hash =
        hetplan::exporters::sha256_hex(hetplan::formats::read_text_file(scenario_path));
    std::vector<hetplan::formats::NamedText> files;
    auto add = [&](std::size_t rank, const hetplan::planner::RankedPlan& ranked) {
      char prefix[32];
      std::snprintf(prefix, sizeof prefix, "%02zu-", rank);
      // The figure with its 80% interval and the evidence behind it
      // (docs/models/uncertainty.md).
      const std::string range = hetplan::cli::tokens_interval_text(ranked.estimate, ranked.tokens_per_s);
      const std::string interval = range.empty() ? " (interval unknown)" : " (80%: " + range + ")";
      const std::string comment =
          "Rank " + std::to_string(rank) + " of `hetplan plan " + scenario.name + "` (" +
          std::string(to_string(ranked.mode)) + "), " +
          std::to_string(static_cast<long long>(ranked.tokens_per_s)) + " tokens/s" + interval +
          " on " + std::to_string(ranked.chips) + " chips, evidence " +
          std::string(to_string(ranked.estimate.evidence)) +
          (ranked.estimate.memory_tight() ? ", memory tight" : "") + ".";
      // The plan names the scenario it was made for, so that `hetplan export` needs no
      // --scenario and notices a scenario that changed since.
      const hetplan::Plan recorded =
          hetplan::exporters::plan_naming_scenario(ranked.plan, scenario_path, scenario_hash, out_dir);
      files.push_back({prefix + ranked.plan.name + ".yaml",
                       hetplan::formats::plan_yaml(recorded, comment)});
    };
    for (std::size_t k = 0; k < result.ranked.size(); ++k) {
      const auto& ranked = result.ranked[k];
      if (ranked.mode == hetplan::planner::Mode::resource_pool) {
        for (const auto& job : ranked.jobs) add(k + 1, job);
      } else {
        add(k + 1, ranked);
      }
    }
    // Replica groups on different islands follow the ranked plans, numbered on from them.
    for (std::size_t k = 0; k < result.mixed_data_parallel.size(); ++k) {
      const auto& mixed = result.mixed_data_parallel[k];
      char prefix[32];
      std::snprintf(prefix, sizeof prefix, "%02zu-", result.ranked.size() + k + 1);
      const std::string comment =
          "Replica groups on different islands, from `hetplan plan " + scenario.name + "` (" +
          mixed.flag + "), " + std::to_string(static_cast<long long>(mixed.step.tokens_per_s)) +
          " tokens/s on " + std::to_string(mixed.step.chips) + " chips.";
      const hetplan::Plan recorded = hetplan::exporters::plan_naming_scenario(
          mixed.plan, scenario_path, scenario_hash, out_dir);
      files.push_back({prefix + mixed.plan.name + ".yaml",
                       hetplan::formats::plan_yaml(recorded, comment)});
    }
    // All the ranked plans appear at once, or none of them; an earlier run's ranked plans
    // (NN-*.yaml) go, other files stay.
    const auto ranked_plan = [](const std::string& name) {
      return name.size() > 8 && std::isdigit(static_cast<unsigned char>(name[0])) &&
             std::isdigit(static_cast<unsigned char>(name[1])) && name[2] == '-' &&
             name.ends_with(".yaml");
    };
    try {
      hetplan::formats::write_folder_atomically(out_dir, files, ranked_plan);
    } catch (const std::exception& failure) {
      throw hetplan::InputError({out_dir, 0, 0}, "--out", failure.what());
    }
  }
  if (json) {
    auto report = hetplan::cli::search_json(result, scenario, ladder ? &*ladder : nullptr, pooled);
    if (simulate) report["simulated"] = hetplan::cli::ranked_simulations_json(simulations);
    if (groups) {
      const auto& mixed = result.mixed_data_parallel.front();
      report["mixed_data_parallel"]["simulated"] =
          hetplan::cli::replica_groups_simulation_json(*groups, mixed.step, mixed.plan);
    }
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << hetplan::cli::search_text(result, scenario, ladder ? &*ladder : nullptr, pooled);
    if (simulate) std::cout << hetplan::cli::ranked_simulations_text(simulations);
    if (groups) {
      const auto& mixed = result.mixed_data_parallel.front();
      std::cout << "\nreplica groups on the twin\n"
                << hetplan::cli::replica_groups_simulation_text(*groups, mixed.step, mixed.plan);
    }
  }
  if (timings) {
    // On stderr: timings differ from run to run, the report does not.
    double total = 0;
    for (const auto& phase : result.phases) total += phase.seconds;
    for (const auto& phase : result.phases) {
      std::fprintf(stderr, "%-18s %9.3f s %10zu plans scored\n", phase.name.c_str(),
                   phase.seconds, phase.evaluations);
    }
    std::fprintf(stderr, "%-18s %9.3f s %10zu plans scored, %zu pruned\n", "total", total,
                 result.evaluations, result.pruned);
  }
  return 0;
}

// A label for a calibrated profile version: "cal-" and the first bundle's date.
std::string default_label(const std::vector<hetplan::CalibrationBundle>& bundles) {
  std::string date;
  if (bundles.front().started.empty()) return "cal-imported";
  for (char c : bundles.front().started.substr(0, 10))
    if (std::isdigit(static_cast<unsigned char>(c))) date += c;
  return "cal-" + (date.empty() ? std::string("undated") : date);
}

int run_calibrate(const std::string& profile_path, const std::vector<std::string>& bundle_paths,
                  std::string label, std::string out_path, bool json) {
  const hetplan::ChipProfile base = hetplan::formats::load_chip(profile_path);
  std::vector<hetplan::CalibrationBundle> bundles;
  for (const auto& path : bundle_paths) {
    // A probe bundle, or a collective benchmark log (nccl-tests, rccl-tests, hccl_test).
    const std::string text = hetplan::formats::read_text_file(path);
    if (text.find("hetplan/calibration-bundle/") != std::string::npos) {
      bundles.push_back(hetplan::formats::parse_calibration_bundle(text, path));
    } else {
      bundles.push_back(hetplan::validation::collectives_bundle(
          hetplan::importers::import_collective_log(path), path));
    }
  }
  if (label.empty()) label = default_label(bundles);
  if (label.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") != std::string::npos) {
    throw hetplan::InputError({"calibrate", 0, 0}, "--label",
                              "expected lower-case letters, digits, '.', '_' or '-', got \"" +
                                  label + "\"");
  }
  const auto calibration = hetplan::validation::calibrate(base, bundles, label);
  std::vector<hetplan::validation::StepCheck> checks;
  for (const auto& bundle : bundles) {
    auto more = hetplan::validation::check_bundle(calibration.profile, bundle);
    checks.insert(checks.end(), more.begin(), more.end());
  }
  // A new file next to the base profile, never the base itself.
  if (out_path.empty()) {
    out_path = (std::filesystem::path(profile_path).parent_path() /
                (calibration.profile.id + ".yaml"))
                   .string();
  }
  std::error_code same;
  if (std::filesystem::equivalent(out_path, profile_path, same)) {
    throw hetplan::InputError({out_path, 0, 0}, "--out",
                              "expected a new file; a calibration never edits its base profile");
  }
  std::string comment = "Calibrated version of " + base.id + " (" + profile_path +
                        ") written by `hetplan calibrate` from:";
  for (const auto& path : bundle_paths) comment += "\n  " + path;
  // What was capped, kept or not fitted travels with the profile.
  if (!calibration.notes.empty()) comment += "\nNotes of the calibration:";
  for (const auto& note : calibration.notes) comment += "\n  " + note;
  try {
    hetplan::formats::write_file_atomically(
        out_path, hetplan::formats::chip_yaml(calibration.profile, comment));
  } catch (const std::runtime_error& failure) {
    throw hetplan::InputError({out_path, 0, 0}, "--out", failure.what());
  }
  if (json) {
    auto j = hetplan::cli::calibration_json(calibration, checks);
    j["written"] = out_path;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "calibrated " << base.id << " -> " << calibration.profile.id << ", written to "
              << out_path << "\n";
    std::cout << hetplan::cli::fits_text(calibration);
    if (!checks.empty()) std::cout << hetplan::cli::checks_text(checks);
  }
  return 0;
}

// A run of the plan at scale, from its training log: the measured step against the estimate, and
// for each island of the plan a validation record of the ladder's scale step (docs/validation.md).
// Exits with kNotPassedExit when the run did not pass (the records say it failed).
int run_validate_run(const std::string& log_path, const std::string& scenario_path,
                     const std::string& plan_path, const std::string& records,
                     const std::string& date, double tolerance, bool json) {
  // One read: the log the records hash is the log that was measured.
  const std::string log_text = hetplan::validation::read_evidence_file(log_path);
  const hetplan::importers::TrainingLog log = hetplan::importers::parse_training_log(log_text, log_path);
  const auto summary = hetplan::importers::summarize(log);
  if (summary.count == 0) {
    throw hetplan::InputError({log_path, 0, 0}, "iterations",
                              "expected iteration lines after the first (warm-up) without skipped "
                              "or NaN iterations, got none");
  }
  const hetplan::Scenario scenario = hetplan::formats::load_scenario(scenario_path);
  const hetplan::Plan plan = hetplan::formats::load_plan(plan_path);
  hetplan::formats::require_one_pipeline(plan, "hetplan validate --run");
  hetplan::formats::check_plan_references(plan, scenario.cluster, scenario.workload);
  // The log's layout, where it states one, must be the plan's.
  hetplan::validation::check_log_layout(log, plan, log_path);
  const auto estimate = runnable_estimate(scenario, plan, plan_path);
  const double measured = summary.median_elapsed_s;
  const double predicted = estimate.step_time_s;
  const double error = (predicted - measured) / measured;
  // Its numerics: every loss finite and no interval with a NaN iteration (loss-scale skips under
  // fp16 are normal and do not count).
  int losses = 0;
  bool finite = true;
  std::optional<double> first_loss, last_loss;
  for (const auto& iteration : log.iterations) {
    finite &= iteration.nan_iterations == 0;
    if (!iteration.loss) continue;
    ++losses;
    finite &= std::isfinite(*iteration.loss);
    if (!first_loss) first_loss = iteration.loss;
    last_loss = iteration.loss;
  }
  const bool passed = std::abs(error) <= tolerance && finite;
  const std::string note =
      "measured " + hetplan::cli::fixed(measured, 3) + " s a step, predicted " +
      hetplan::cli::fixed(predicted, 3) + " s: error " + hetplan::cli::fixed(100 * error, 1) +
      "% (tolerance " + hetplan::cli::fixed(100 * tolerance, 0) + "%); " +
      (losses == 0 ? std::string("no loss printed")
                   : std::to_string(losses) + " losses, " + hetplan::cli::fixed(*first_loss, 3) +
                         " to " + hetplan::cli::fixed(*last_loss, 3)) +
      (finite ? "" : ", with a NaN or infinite loss");
  if (!hetplan::formats::is_record_date(date)) {
    throw hetplan::InputError({"validate", 0, 0}, "--date", "expected YYYY-MM-DD, got \"" + date + "\"");
  }
  // One record per island (chip and runtime), in the records folder.
  const std::string folder = !records.empty() ? records : scenario.validation_records.value_or("");
  std::vector<std::string> written;
  if (!folder.empty()) {
    std::error_code created;
    std::filesystem::create_directories(folder, created);
    if (created) {
      throw hetplan::InputError({folder, 0, 0}, "--records",
                                "expected a folder hetplan can create, got " + created.message());
    }
    std::vector<hetplan::formats::NamedText> records_to_write;
    std::map<std::string, long long> chips;
    for (const auto& stage : plan.stages) chips[stage.island] += static_cast<long long>(stage.tp) * stage.dp;
    for (const auto& [name, count] : chips) {
      const hetplan::Island& island = *scenario.cluster.find_island(name);
      hetplan::ValidationRecord record;
      record.chip = scenario.cluster.chip_of(island).id;
      record.runtime = island.runtime;
      hetplan::LadderEntry entry;
      entry.step = hetplan::LadderStep::scale;
      entry.passed = passed;
      entry.date = date;
      entry.evidence = hetplan::validation::relative_to_folder(log_path, folder);
      entry.sha256 = hetplan::sha256_hex(log_text);
      entry.chips = static_cast<int>(std::min<long long>(count, 1 << 24));
      entry.note = note;
      record.entries.push_back(entry);
      records_to_write.push_back(
          {"scale-" + date + "-" + plan.name + "-" + name + ".yaml",
           hetplan::formats::validation_record_yaml(
               record, "Written by hetplan validate --run: " + log.framework + " log of plan " + plan.name + ".")});
    }
    // The records of one run appear together.
    try {
      written = hetplan::formats::write_folder_atomically(folder, records_to_write);
    } catch (const std::exception& failure) {
      throw hetplan::InputError({folder, 0, 0}, "--records", failure.what());
    }
    // What was written reads back as records whose evidence holds.
    check_written_records(folder, written);
  }
  if (json) {
    nlohmann::ordered_json j;
    j["log"] = log_path;
    j["framework"] = log.framework;
    j["iterations"] = summary.count;
    j["measured_step_s"] = hetplan::cli::round6(measured);
    j["predicted_step_s"] = hetplan::cli::round6(predicted);
    j["error"] = hetplan::cli::round6(error);
    j["tolerance"] = tolerance;
    j["finite_losses"] = finite;
    j["passed"] = passed;
    j["records"] = written;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << log_path << ": " << log.framework << ", " << summary.count
              << " iterations after warm-up, median " << hetplan::cli::fixed(measured, 3) << " s a step\n"
              << "plan " << plan.name << ": predicted " << hetplan::cli::fixed(predicted, 3) << " s, error "
              << hetplan::cli::fixed(100 * error, 1) << "% (tolerance " << hetplan::cli::fixed(100 * tolerance, 0)
              << "%)" << (finite ? "" : ", with a NaN or infinite loss") << ": "
              << (passed ? "passed" : "not passed") << "\n";
    for (const auto& path : written) std::cout << "wrote " << path << "\n";
    if (written.empty()) std::cout << "no records folder (scenario validation_records or --records): nothing written\n";
  }
  return passed ? 0 : kNotPassedExit;
}

// `validate --evidence`: the record of a probe's output (a probe bundle, or the boundary probe's
// evidence) for an island, or a pair of islands, of the scenario. Exits with kNotPassedExit when
// the check failed (the record says so).
int run_validate_evidence(const std::string& evidence_path, const std::string& scenario_path,
                          const std::string& island, const std::string& with,
                          const std::string& records, const std::string& date, bool json) {
  const hetplan::Scenario scenario = hetplan::formats::load_scenario(scenario_path);
  const std::string folder = !records.empty() ? records : scenario.validation_records.value_or("");
  if (folder.empty()) {
    throw hetplan::InputError({scenario_path, 0, 0}, "validation_records",
                              "expected --records DIR or a `validation_records:` in the scenario");
  }
  const auto made =
      hetplan::validation::make_evidence_record(evidence_path, scenario, island, with, date, folder);
  std::vector<std::string> written;
  try {
    written = hetplan::formats::write_folder_atomically(
        folder, {{made.file_name, hetplan::formats::validation_record_yaml(
                                      made.record, "Written by hetplan validate --evidence.")}});
  } catch (const std::invalid_argument& failure) {  // a note that is not UTF-8 text
    throw hetplan::InputError({evidence_path, 0, 0}, "", failure.what());
  } catch (const std::exception& failure) {
    throw hetplan::InputError({folder, 0, 0}, "--records", failure.what());
  }
  check_written_records(folder, written);
  const bool passed = made.record.entries.front().passed;
  if (json) {
    nlohmann::ordered_json j;
    j["evidence"] = evidence_path;
    j["step"] = std::string(hetplan::to_string(made.record.entries.front().step));
    j["passed"] = passed;
    j["note"] = made.record.entries.front().note;
    j["records"] = written;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << made.summary << "\n";
    for (const auto& path : written) std::cout << "wrote " << path << "\n";
  }
  return passed ? 0 : kNotPassedExit;
}

int run_validate_bundle(const std::string& profile_path, const std::string& bundle_path,
                        bool json) {
  const hetplan::ChipProfile profile = hetplan::formats::load_chip(profile_path);
  const auto bundle = load_or_name_run_file(
      bundle_path, "a calibration bundle (hetplan/calibration-bundle/v1, as the probe writes it)",
      [&] { return hetplan::formats::load_calibration_bundle(bundle_path); });
  const auto checks = hetplan::validation::check_bundle(profile, bundle);
  if (json) {
    hetplan::validation::Calibration none;
    none.profile = profile;
    std::cout << hetplan::cli::calibration_json(none, checks).dump(2) << "\n";
  } else {
    std::cout << "profile " << profile.id << " against " << bundle_path << "\n";
    std::cout << hetplan::cli::checks_text(checks);
  }
  return 0;
}

int run_inventory_import(const std::string& nodes_path, const std::string& name,
                         const std::string& profiles_folder, const std::string& out_path) {
  const auto inventory = hetplan::importers::import_kubectl_nodes(nodes_path);
  std::vector<hetplan::ChipProfile> profiles;
  for (const auto& island : inventory.islands) {
    const auto path = std::filesystem::path(profiles_folder) / (island.chip_id + ".yaml");
    std::error_code missing;
    if (island.chip_id != "unknown" && std::filesystem::exists(path, missing))
      profiles.push_back(hetplan::formats::load_chip(path.string()));
  }
  // The file names its profiles folder relative to where the cluster file goes.
  std::string written_profiles = profiles_folder;
  if (!out_path.empty()) {
    const auto base = std::filesystem::absolute(out_path).parent_path();
    written_profiles =
        std::filesystem::absolute(profiles_folder).lexically_relative(base).generic_string();
  }
  const std::string text =
      hetplan::importers::cluster_yaml(inventory, name, written_profiles, profiles);
  if (out_path.empty()) {
    std::cout << text;
    return 0;
  }
  try {
    const auto folder = std::filesystem::absolute(out_path).parent_path();
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    hetplan::formats::write_file_atomically(out_path, text);
  } catch (const std::runtime_error& failure) {
    throw hetplan::InputError({out_path, 0, 0}, "--out", failure.what());
  }
  std::cout << "wrote " << out_path << ": " << inventory.islands.size()
            << " islands; check it with `hetplan check " << out_path
            << "` after answering the questions at its top\n";
  return 0;
}

// The scenario of a plan: as given, else the one the plan names, which must not have changed
// since the plan was made (export and the extender alike).
std::string scenario_of_plan(const hetplan::Plan& plan, const std::string& plan_path,
                             const std::string& scenario_path) {
  if (!scenario_path.empty()) return scenario_path;
  if (!plan.scenario) {
    throw hetplan::InputError({plan_path, 0, 0}, "--scenario",
                              "expected --scenario SCENARIO: the plan does not name the "
                              "scenario it was made for (plans from `hetplan plan --out` do)");
  }
  const std::string resolved = hetplan::formats::resolve_relative(plan.scenario->path, plan_path);
  const std::string now = hetplan::exporters::sha256_hex(hetplan::formats::read_text_file(resolved));
  if (now != plan.scenario->sha256) {
    throw hetplan::InputError({plan_path, 0, 0}, "scenario.sha256",
                              "expected " + resolved + " as the plan was made for it (sha256 " +
                                  plan.scenario->sha256.substr(0, 12) + "...), got a changed file (" +
                                  now.substr(0, 12) + "...); plan again, or give --scenario");
  }
  return resolved;
}

struct ExtenderOptions {
  std::string plan, scenario, listen = "127.0.0.1:8888", nodes;
  double request_timeout = hetplan::extender::ExtenderConfig{}.request_timeout;
  std::string tls_cert, tls_key, client_ca;  // files
};

// Serves until SIGTERM or SIGINT, then lets the requests in flight finish (the drain) and
// returns. The signals are taken by a thread of their own (sigwait), not a handler: stopping
// the server takes a lock.
void serve_until_signalled(hetplan::extender::Server& server, const std::function<void()>& serve) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &signals, &previous);  // before the server's threads start
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    const timespec tick{0, 200'000'000};
    while (!done.load()) {
      if (sigtimedwait(&signals, nullptr, &tick) > 0) {
        server.stop();
        return;
      }
    }
  });
  // However serve() ends (returned or thrown): the waiter stops, the signals act as before.
  struct Restore {
    std::atomic<bool>& done;
    std::thread& waiter;
    const sigset_t& previous;
    ~Restore() {
      done = true;
      waiter.join();
      pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    }
  } restore{done, waiter, previous};
  serve();
}

int run_extender(const ExtenderOptions& options) {
  const hetplan::Plan plan = hetplan::formats::load_plan(options.plan);
  hetplan::formats::require_one_pipeline(plan, "hetplan extender");
  const hetplan::Scenario scenario =
      hetplan::formats::load_scenario(scenario_of_plan(plan, options.plan, options.scenario));
  hetplan::formats::check_plan_references(plan, scenario.cluster, scenario.workload);
  const std::string& listen = options.listen;
  const auto colon = listen.rfind(':');
  int port = -1;
  if (colon != std::string::npos && colon > 0) {
    const std::string digits = listen.substr(colon + 1);
    if (!digits.empty() && digits.size() <= 5 &&
        digits.find_first_not_of("0123456789") == std::string::npos)
      port = std::stoi(digits);
  }
  if (port < 0 || port > 65535) {
    throw hetplan::InputError({"extender", 0, 0}, "--listen",
                              "expected HOST:PORT such as 127.0.0.1:8888, got \"" + listen + "\"");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  hetplan::extender::ExtenderConfig config;
  config.request_timeout = options.request_timeout;
  if (!options.tls_cert.empty()) config.tls_certificate = hetplan::formats::read_text_file(options.tls_cert);
  if (!options.tls_key.empty()) config.tls_key = hetplan::formats::read_text_file(options.tls_key);
  if (!options.client_ca.empty()) config.client_ca = hetplan::formats::read_text_file(options.client_ca);
  hetplan::extender::Server server(hetplan::extender::stage_table(scenario.cluster, plan), config);
  if (!options.nodes.empty()) {
    const std::string text = hetplan::formats::read_text_file(options.nodes);
    // The inventory's reader first: it refuses at file:line:column what the cache would take
    // silently (duplicate keys, device counts that are negative or fractional).
    (void)hetplan::importers::parse_kubectl_nodes(text, options.nodes);
    const auto nodes = hetplan::extender::parse_json(text, options.nodes);
    server.node_cache().add_node_list(nodes, {options.nodes, 0, 0});
  }
  const int bound = port == 0 ? server.bind_any_port(host) : -1;
  if (port == 0 && bound < 0) {
    throw hetplan::InputError({"extender", 0, 0}, "--listen",
                              "expected an address this machine can listen on, got \"" + listen +
                                  "\"");
  }
  const bool loopback = host == "127.0.0.1" || host == "::1" || host == "localhost";
  if (!loopback && config.client_ca.empty()) {
    std::cerr << "hetplan extender: warning: listening on " << host
              << " without --client-ca: anyone who can reach the port can rewrite the node "
                 "cache (docs/extender.md#tls)\n";
  }
  // Port 0: any free port, printed so that a caller can find it.
  std::cout << "serving plan " << plan.name << " on " << (config.tls_certificate.empty() ? "http" : "https")
            << "://" << listen.substr(0, colon) << ":" << (port == 0 ? bound : port) << "\n"
            << std::flush;
  bool listened = true;
  serve_until_signalled(server, [&] {
    if (port == 0) {
      server.listen_after_bind();
    } else {
      listened = server.listen(host, port);
    }
  });
  if (!listened) {
    throw hetplan::InputError({"extender", 0, 0}, "--listen",
                              "expected an address this machine can listen on, got \"" + listen +
                                  "\"");
  }
  return 0;
}

// Refusals by the validation gate exit with this code (bad input exits with 2).
constexpr int kRefusedExit = 3;

int run_export(const std::string& plan_path, const std::string& scenario_path,
               const std::string& target, const std::string& out_dir, bool allow_unvalidated,
               const std::string& records, const std::vector<std::string>& images,
               const std::vector<std::string>& resources) {
  const hetplan::Plan plan = hetplan::formats::load_plan(plan_path);
  hetplan::formats::require_one_pipeline(plan, "hetplan export");
  const std::string resolved = scenario_of_plan(plan, plan_path, scenario_path);
  const hetplan::Scenario scenario = hetplan::formats::load_scenario(resolved);
  hetplan::formats::check_plan_references(plan, scenario.cluster, scenario.workload);
  const auto estimate = runnable_estimate(scenario, plan, plan_path);
  const auto ladder = hetplan::validation::scenario_ladder(scenario, records);
  hetplan::exporters::ExportInput input = hetplan::exporters::plan_export_input(
      scenario, resolved, plan, estimate, ladder,
      std::filesystem::path(plan_path).filename().string(),
      hetplan::formats::read_text_file(plan_path));
  input.allow_unvalidated = allow_unvalidated;
  for (const auto& given : images) {
    // IMAGE for every island, or ISLAND=IMAGE. An image reference has no '=' of its own.
    const auto eq = given.find('=');
    if (eq == std::string::npos) {
      input.image = given;
    } else if (eq == 0 || eq + 1 == given.size()) {
      throw hetplan::InputError({"export", 0, 0}, "--image",
                                "expected IMAGE or ISLAND=IMAGE, got \"" + given + "\"");
    } else {
      input.island_images[given.substr(0, eq)] = given.substr(eq + 1);
    }
  }
  for (const auto& resource : resources) {
    // KEY=RESOURCE: a chip family, an island or rdma, e.g. mlu=cambricon.com/mlu370.
    const auto eq = resource.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == resource.size()) {
      throw hetplan::InputError({"export", 0, 0}, "--resource",
                                "expected KEY=RESOURCE (KEY a chip family, an island or rdma) "
                                "such as dcu=hygon.com/dcu, got \"" + resource + "\"");
    }
    input.overrides[resource.substr(0, eq)] = resource.substr(eq + 1);
  }
  hetplan::exporters::check_export_overrides(input, "--resource", "--image");
  std::vector<hetplan::exporters::ExportedFile> files;
  try {
    if (const auto chosen = hetplan::exporters::export_target(target))
      files = hetplan::exporters::export_plan(input, *chosen);
  } catch (const hetplan::exporters::UnvalidatedPlan& refused) {
    std::cerr << "refused: " << refused.what() << "\n";
    return kRefusedExit;
  } catch (const std::invalid_argument& cannot) {
    throw hetplan::InputError({plan_path, 0, 0}, "plan", cannot.what());
  }
  // The files of one export appear together (a Job never without its ConfigMap).
  std::vector<hetplan::formats::NamedText> named;
  for (const auto& file : files) named.push_back({file.name, file.text});
  std::vector<std::string> written;
  try {
    written = hetplan::formats::write_folder_atomically(out_dir, named);
  } catch (const std::exception& failure) {
    throw hetplan::InputError({out_dir, 0, 0}, "--out", failure.what());
  }
  for (const auto& path : written) std::cout << "wrote " << path << "\n";
  if (!input.validation.validated) {
    std::cout << "note: exported unvalidated, as asked; every file says so\n";
  }
  return 0;
}

}  // namespace

// A signal that ends the process first removes the scratch files it was writing (temporaries
// beside a destination, a trace being filled in), then ends it as the signal would have.
extern "C" void remove_scratch_and_die(int signal_number) {
  hetplan::remove_scratch_files();
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

int main(int argc, char** argv) {
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP})
    std::signal(signal_number, remove_scratch_and_die);
  CLI::App app{"hetplan: plan and simulate LLM training on mixed-vendor accelerator clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "hetplan " + std::string(hetplan::version()));

  std::string scenario_path, plan_path, records;
  bool json = false;
  auto* eval = app.add_subcommand("eval", "Estimate one training step of a plan (analytic model)");
  eval->add_option("scenario", scenario_path, "Scenario file (hetplan/scenario/v1)")->required();
  eval->add_option("--plan", plan_path,
                   "Plan file (hetplan/plan/v1); default: the scenario's plan");
  eval->add_flag("--json", json, "Print JSON instead of a table");

  std::string trace_path;
  std::optional<std::uint64_t> seed;
  auto* simulate = app.add_subcommand(
      "simulate", "Simulate one training step of a plan on the cluster's fabric (SimGrid twin)");
  simulate->add_option("scenario", scenario_path, "Scenario file (hetplan/scenario/v1)")
      ->required();
  simulate->add_option("--plan", plan_path,
                       "Plan file (hetplan/plan/v1); default: the scenario's plan");
  simulate->add_option("--trace", trace_path,
                       "Write the step's timeline as Chrome trace JSON (Perfetto, chrome://tracing)");
  simulate->add_option("--seed", seed,
                       "Seed of the jitter (default: the scenario's simulation.seed, else 0)");
  simulate->add_flag("--json", json, "Print JSON instead of a table");

  std::vector<std::string> files;
  auto* check = app.add_subcommand("check", "Validate input files and say what they describe");
  check->add_option("files", files, "Files to check")->required();

  std::string import_path;
  auto* import_file = app.add_subcommand(
      "import", "Say what a training log, profiler trace or collective benchmark log holds");
  import_file->add_option("file", import_path,
                          "A Megatron-LM / MindSpeed-LLM / Megatron-DeepSpeed log, a PyTorch "
                          "profiler trace, or an nccl-tests / hccl_test log")
      ->required();
  import_file->add_flag("--json", json, "Print JSON instead of text");

  std::string folder, profiles = hetplan::formats::bundled_path("profiles");
  auto* validate = app.add_subcommand(
      "validate", "Predict published training runs and report the error of each prediction");
  std::string check_profile, check_bundle, run_log, run_scenario, run_plan_path, run_date;
  double run_tolerance = 0.15;
  auto* published = validate
                        ->add_option("--published", folder,
                                     "Folder of published-run files (*.yaml); without a value, "
                                     "the bundled dev set (validation/published-runs)")
                        ->expected(0, 1);
  auto* bundle_option = validate->add_option(
      "--bundle", check_bundle, "A calibration bundle whose measured layers and steps to predict");
  validate->add_option("--profile", check_profile, "The chip profile to predict them with (with --bundle)");
  published->excludes(bundle_option);
  auto* run_option = validate->add_option(
      "--run", run_log,
      "A training log of the plan at scale: its measured step against the estimate, and a "
      "scale record per island");
  validate->add_option("--scenario", run_scenario,
                       "With --run: the scenario of the plan; with --evidence: of the island");
  validate->add_option("--plan", run_plan_path, "With --run: the plan the log ran");
  validate->add_option("--date", run_date,
                       "With --run or --evidence: the record's date, YYYY-MM-DD (default: today; "
                       "for --evidence, the day it ran)");
  validate->add_option("--tolerance", run_tolerance,
                       "With --run: the largest relative error that passes (default 0.15)")
      ->check(CLI::Range(0.0, 10.0));
  run_option->excludes(published);
  run_option->excludes(bundle_option);
  std::string evidence_path, evidence_island, evidence_with;
  auto* evidence_option = validate->add_option(
      "--evidence", evidence_path,
      "A probe's output (hetplan_probe.py's bundle, hetplan_boundary.py's evidence): its record "
      "for --island (and --with, the other side of a boundary or gradient exchange)");
  validate->add_option("--island", evidence_island, "With --evidence: the island it ran on");
  validate->add_option("--with", evidence_with,
                       "With --evidence of a boundary or gradient exchange: the island of its "
                       "second backend");
  evidence_option->excludes(published);
  evidence_option->excludes(bundle_option);
  evidence_option->excludes(run_option);
  std::string ladder_scenario;
  auto* ladder_option = validate->add_option(
      "--ladder", ladder_scenario,
      "A scenario: show where its cluster stands on the validation ladder");
  validate->add_option("--records", records,
                       "Folder of validation records (with --ladder, --run, --evidence; default: "
                       "the scenario's)");
  ladder_option->excludes(published);
  ladder_option->excludes(bundle_option);
  validate->add_option("--profiles", profiles, "Folder of chip profiles")->capture_default_str();
  std::string microbench;
  auto* microbench_option =
      validate
          ->add_option("--microbench", microbench,
                       "With --published: calibrate the profiles from this folder of "
                       "microbenchmark tables first; without a value, the bundled tables "
                       "(validation/microbench)")
          ->expected(0, 1);
  std::string validate_calibrated_out;
  validate
      ->add_option("--calibrated-out", validate_calibrated_out,
                   "With --microbench: keep the calibrated profiles in this new or empty folder "
                   "(without it they are written to a temporary folder and removed)")
      ->needs(microbench_option);
  bool validate_twin = false;
  validate
      ->add_flag("--twin", validate_twin,
                 "With --published: also simulate each case's plan with the digital twin (no "
                 "jitter, seed 0) and report its error beside the estimator's")
      ->needs(published)
      ->excludes("--microbench");
  validate->add_flag("--json", json, "Print JSON instead of a table");
  hetplan::cli::CrossValidateCommand cross_command;
  auto* cross_option =
      validate
          ->add_option("--cross-validate", cross_command.folders,
                       "Fit every chip's in-step terms to the runs of these published-run "
                       "folders (default: the four bundled ones) leaving each source out in "
                       "turn, and predict it")
          ->expected(0, -1);
  cross_option->excludes(published);
  validate
      ->add_option("--write-profiles", cross_command.write_profiles,
                   "With --cross-validate: write every profile of --profiles into this folder "
                   "with the evidence the runs give it (in-step terms of the runs' chips, every "
                   "profile's 80% bands; docs/models/uncertainty.md)")
      ->needs(cross_option);

  std::string plan_scenario = hetplan::formats::bundled_path("scenarios/default.yaml"), out_dir;
  std::size_t top = 10;
  auto* plan = app.add_subcommand(
      "plan", "Search plans: each island alone, resource-pool and task-level mixing, ranked");
  plan->add_option("scenario", plan_scenario, "Scenario file (default: the bundled default)");
  plan->add_option("--top", top, "How many plans to rank")->check(CLI::Range(1, 1000))
      ->capture_default_str();
  plan->add_flag("--json", json, "Print JSON instead of a table");
  plan->add_option("--out", out_dir, "Write each ranked plan as a plan file into this folder");
  bool timings = false;
  plan->add_flag("--timings", timings, "Print the time of each search phase on stderr");
  double max_seconds = 0;
  plan->add_option("--max-seconds", max_seconds,
                   "Stop the search after this many seconds with the best plans found so far "
                   "(the report says it stopped early)")
      ->check(CLI::Range(0.001, 1e7));
  int max_pipeline_islands = 0;
  plan->add_option("--max-pipeline-islands", max_pipeline_islands,
                   "The most islands one task-level pipeline may span (default: all); bounds the "
                   "search's time on sites of many islands, the same on every machine")
      ->check(CLI::Range(2, 1024));
  std::size_t plan_threads = 0;
  plan->add_option("--threads", plan_threads,
                   "Threads that search side by side (default: one per core); the result is the "
                   "same for any count")
      ->check(CLI::Range(1, 1024));
  plan->add_option("--records", records,
                   "Folder of validation records (default: the scenario's validation_records)");
  std::size_t simulate_count = 0;
  plan->add_option("--simulate-top", simulate_count,
                   "Simulate the best K one-job plans on the fabric and rank them again")
      ->check(CLI::Range(1, 64));

  std::string export_plan, export_scenario, export_target, export_out = ".";
  std::vector<std::string> resource_overrides, images;
  bool allow_unvalidated = false;
  auto* exporting = app.add_subcommand(
      "export", "Write a plan for the scheduler: Volcano Job and HyperNodes, kube-scheduler "
                "configuration and Jobs, plan JSON, launch arguments, labels");
  exporting->add_option("plan", export_plan, "Plan file (YAML or the exported JSON)")->required();
  exporting->add_option("--scenario", export_scenario,
                        "The scenario the plan is for (default: the one the plan file names, "
                        "as `plan --out` writes it)");
  exporting->add_option("--to", export_target, "What to write")
      ->required()
      ->check(CLI::IsMember(hetplan::exporters::export_target_names()));
  exporting->add_option("--out", export_out, "Folder to write into")->capture_default_str();
  exporting->add_flag("--allow-unvalidated", allow_unvalidated,
                      "Export a plan the validation ladder has not validated, stamped as such");
  exporting->add_option("--records", records,
                        "Folder of validation records (default: the scenario's)");
  exporting->add_option("--image", images,
                        "Container image (volcano): IMAGE for every island, or ISLAND=IMAGE; "
                        "default: the island's image in the cluster file");
  exporting->add_option("--resource", resource_overrides,
                        "Resource names (volcano): FAMILY=NAME or ISLAND=NAME for the device "
                        "plugin's resource, rdma=NAME for the RDMA device");

  std::string nodes_path, inventory_name = "imported", inventory_profiles = hetplan::formats::bundled_path("profiles"),
      inventory_out;
  auto* inventory = app.add_subcommand("inventory", "Build a cluster file from Kubernetes");
  auto* import_nodes = inventory->add_subcommand(
      "import", "Turn `kubectl get nodes -o json` into a cluster file, asking for the wiring");
  inventory->require_subcommand(1);
  import_nodes->add_option("nodes", nodes_path, "The output of kubectl get nodes -o json")
      ->required();
  import_nodes->add_option("--name", inventory_name, "The cluster's name")->capture_default_str();
  import_nodes->add_option("--profiles", inventory_profiles, "Chip profile folder");
  import_nodes->add_option("--out", inventory_out, "Cluster file to write (default: stdout)");

  ExtenderOptions extender_options;
  auto* extender = app.add_subcommand(
      "extender", "Serve kube-scheduler's extender protocol (filter, prioritize) for a plan");
  extender->add_option("--plan", extender_options.plan, "The plan whose stage groups to place")
      ->required();
  extender->add_option("--scenario", extender_options.scenario,
                       "The scenario the plan is for (default: the one the plan file names, "
                       "as `plan --out` writes it)");
  extender->add_option("--listen", extender_options.listen, "HOST:PORT (port 0: any free port)")
      ->capture_default_str();
  extender->add_option("--nodes", extender_options.nodes,
                       "kubectl get nodes -o json, to fill the node cache (nodeCacheCapable)");
  extender->add_option("--request-timeout", extender_options.request_timeout,
                       "Seconds a request may take to arrive whole; a slower client gets 408 "
                       "(default 10)");
  extender->add_option("--tls-cert", extender_options.tls_cert,
                       "PEM certificate (chain) to serve HTTPS with; needs --tls-key");
  extender->add_option("--tls-key", extender_options.tls_key, "PEM private key of --tls-cert");
  extender->add_option("--client-ca", extender_options.client_ca,
                       "PEM CA certificates: only clients with a certificate they signed are "
                       "served (kube-scheduler's extender tlsConfig certFile/keyFile)");

  std::string base_profile, label, calibrated_out;
  std::vector<std::string> bundle_paths;
  auto* calibrate = app.add_subcommand(
      "calibrate", "Fit a chip profile to calibration bundles; write it as a new profile version");
  hetplan::cli::CalibrateFromRunsCommand runs_command;
  calibrate->add_option("profile", base_profile, "The chip profile to start from")->required();
  auto* from_bundles = calibrate->add_option(
      "--from", bundle_paths,
      "Calibration bundles (from the probe), or nccl-tests / rccl-tests / hccl_test logs");
  auto* from_runs = calibrate->add_option(
      "--from-runs", runs_command.runs,
      "Fit the in-step terms (efficiency.in_step) to training runs: published-run files or "
      "folders of them (docs/calibration.md#runs)");
  auto* from_logs = calibrate->add_option(
      "--log", runs_command.logs,
      "Fit the in-step terms to a site's training log (Megatron-LM, MindSpeed-LLM, ...) of "
      "--plan on --scenario; repeatable");
  from_bundles->excludes(from_runs)->excludes(from_logs);
  calibrate->add_option("--scenario", runs_command.scenarios,
                        "With --log: the scenario of the run (once for all logs, or once per log)");
  calibrate->add_option("--plan", runs_command.plans,
                        "With --log: the plan the run ran (once for all logs, or once per log)");
  calibrate->add_option("--profiles", runs_command.profiles,
                        "With --from-runs: the profiles the published runs are priced with "
                        "(default: the base profile's folder)");
  calibrate->add_option("--terms", runs_command.terms,
                        "With runs: the terms to fit, comma-separated (gemm, attention, "
                        "communication, layer_overhead, moe_layer_overhead; default: every term "
                        "the runs inform)");
  calibrate->add_option("--chips", runs_command.chips,
                        "With runs: profile ids whose runs count too, sharing the fitted terms "
                        "(the same silicon, e.g. nvidia-a800 with nvidia-a100)");
  calibrate->add_flag("--keep-inseparable", runs_command.keep_inseparable,
                      "With runs: keep a term the runs cannot tell from another at its prior "
                      "instead of refusing the fit");
  calibrate->add_option("--label", label,
                        "Version label (default: cal-<date of the first bundle>; with runs: runs)");
  calibrate->add_option("--out", calibrated_out,
                        "Where to write the new profile (default: next to the base, named by id)");
  calibrate->add_flag("--json", json, "Print JSON instead of a table");

  hetplan::cli::SweepCommand sweep_command;
  std::vector<std::string> merge_folders;
  std::string merge_out;
  auto* sweep = app.add_subcommand(
      "sweep", "Batch what-if: run the plan search at every point of a sweep file, in parallel");
  sweep->add_option("sweep", sweep_command.sweep_file, "Sweep file (hetplan/sweep/v1)");
  sweep->add_option("--jobs", sweep_command.jobs, "Points at once (default: one per hardware thread)")
      ->check(CLI::Range(1, 1024));
  sweep->add_option("--out", sweep_command.out_dir,
                    "Folder for results.jsonl, results.csv and each point's result (default: the "
                    "JSON lines on stdout)");
  sweep->add_flag("--resume", sweep_command.resume,
                  "Reuse the points an earlier run left in --out instead of running them again");
  sweep->add_option("--shard", sweep_command.shard,
                    "I/N: run only the points whose index modulo N is I (merge the shards after)");
  sweep->add_option("--max-seconds", sweep_command.max_seconds,
                    "Start no new point after this many seconds (running points finish; --resume "
                    "runs the rest)")
      ->check(CLI::Range(0.001, 1e7));
  auto* sweep_merge = sweep->add_subcommand("merge", "Merge the results of a sweep's shards");
  sweep_merge->add_option("folders", merge_folders, "The shards' --out folders")->required();
  sweep_merge->add_option("--out", merge_out, "Folder for the merged results")->required();
  hetplan::cli::SweepJobCommand job_command;
  auto* sweep_job = sweep->add_subcommand(
      "job", "Kubernetes manifests that run the sweep as an Indexed Job of N shards, then merge "
             "them and draw the report");
  sweep_job->add_option("sweep", job_command.sweep_file, "Sweep file (hetplan/sweep/v1)")->required();
  sweep_job->add_option("--shards", job_command.shards, "Pods, each running one shard")->required();
  sweep_job->add_option("--image", job_command.image, "Container image with hetplan on its PATH")
      ->required();
  sweep_job->add_option("--out", job_command.out_dir,
                        "Folder for configmap.yaml, job.yaml and merge-job.yaml")
      ->required();
  sweep_job->add_option("--name", job_command.name, "The Job's name (default: the sweep's)");
  sweep_job->add_option("--results-claim", job_command.results_claim,
                        "PersistentVolumeClaim (ReadWriteMany) the pods write their results to")
      ->capture_default_str();
  sweep_job->add_option("--namespace", job_command.namespace_name, "Namespace of the objects");
  sweep_job->add_option("--scheduler", job_command.scheduler,
                        "schedulerName of the pods (e.g. volcano; default: the cluster's default)");
  sweep_job->add_option("--cpus", job_command.cpus, "CPUs a pod requests and its --jobs")
      ->capture_default_str();
  std::string report_folder, report_out;
  auto* sweep_report = sweep->add_subcommand(
      "report", "One HTML page of charts (and each chart as SVG) from a sweep's results");
  sweep_report->add_option("folder", report_folder, "The sweep's --out folder")->required();
  sweep_report->add_option("--out", report_out, "The HTML file (default: FOLDER/report.html)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : kInputErrorExit;
  }

  try {
    if (*eval) return run_eval(scenario_path, plan_path, json);
    if (*simulate) return run_simulate(scenario_path, plan_path, trace_path, seed, json);
    if (*check) return run_check(files);
    if (*import_file) {
      const auto summary = hetplan::cli::import_summary(import_path);
      std::cout << (json ? summary.dump(2) + "\n" : hetplan::cli::import_text(summary));
      return 0;
    }
    if (*validate) {
      if (!ladder_scenario.empty()) return run_ladder(ladder_scenario, records, json);
      if (!check_bundle.empty()) {
        if (check_profile.empty()) {
          throw hetplan::InputError({check_bundle, 0, 0}, "--profile",
                                    "expected --profile PROFILE with --bundle");
        }
        return run_validate_bundle(check_profile, check_bundle, json);
      }
      if (!evidence_path.empty()) {
        if (run_scenario.empty() || evidence_island.empty()) {
          throw hetplan::InputError({evidence_path, 0, 0}, "--evidence",
                                    "expected --scenario SCENARIO and --island ISLAND with --evidence");
        }
        return run_validate_evidence(evidence_path, run_scenario, evidence_island, evidence_with,
                                     records, run_date, json);
      }
      if (!run_log.empty()) {
        if (run_scenario.empty() || run_plan_path.empty()) {
          throw hetplan::InputError({run_log, 0, 0}, "--run",
                                    "expected --scenario SCENARIO and --plan PLAN with --run");
        }
        if (run_date.empty()) {
          const std::time_t now = std::time(nullptr);
          char text[16];
          std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
          run_date = text;
        }
        return run_validate_run(run_log, run_scenario, run_plan_path, records, run_date,
                                run_tolerance, json);
      }
      if (cross_option->count() > 0) {
        cross_command.profiles = profiles;
        cross_command.json = json;
        return hetplan::cli::run_cross_validate(cross_command);
      }
      if (published->count() == 0) {
        throw hetplan::InputError({"validate", 0, 0}, "--published",
                                  "expected --published [DIR] or --bundle BUNDLE --profile PROFILE");
      }
      if (folder.empty()) folder = hetplan::formats::bundled_path("validation/published-runs");
      if (microbench_option->count() > 0 && microbench.empty())
        microbench = hetplan::formats::bundled_path("validation/microbench");
      return run_validate(folder, profiles, microbench, validate_calibrated_out, validate_twin,
                          json);
    }
    if (*extender) {
      return run_extender(extender_options);
    }
    if (*import_nodes) {
      return run_inventory_import(nodes_path, inventory_name, inventory_profiles, inventory_out);
    }
    if (*exporting) {
      return run_export(export_plan, export_scenario, export_target, export_out,
                        allow_unvalidated, records, images, resource_overrides);
    }
    if (*calibrate && (!runs_command.runs.empty() || !runs_command.logs.empty())) {
      runs_command.profile = base_profile;
      if (!label.empty()) runs_command.label = label;
      runs_command.out = calibrated_out;
      runs_command.json = json;
      return hetplan::cli::run_calibrate_from_runs(runs_command);
    }
    if (*calibrate && bundle_paths.empty()) {
      throw hetplan::InputError({"calibrate", 0, 0}, "--from",
                                "expected calibration bundles (--from), training runs "
                                "(--from-runs) or training logs (--log)");
    }
    if (*calibrate) return run_calibrate(base_profile, bundle_paths, label, calibrated_out, json);
    if (*sweep_merge) return hetplan::cli::run_sweep_merge(merge_folders, merge_out);
    if (*sweep_report) return hetplan::cli::run_sweep_report(report_folder, report_out);
    if (*sweep_job) return hetplan::cli::run_sweep_job(job_command);
    if (*sweep) {
      if (sweep_command.sweep_file.empty()) {
        std::cerr << "error: sweep: expected a sweep file (or: hetplan sweep merge DIR... --out DIR, "
                     "hetplan sweep report DIR)\n";
        return kInputErrorExit;
      }
      return hetplan::cli::run_sweep_command(sweep_command);
    }
    if (*plan)
      return run_plan(plan_scenario, top, json, out_dir, timings, records, simulate_count,
                      max_seconds, plan_threads, max_pipeline_islands);
  } catch (const hetplan::InputError& error) {
    std::cout.flush();
    std::cerr << "error: " << error.what() << "\n";
    return kInputErrorExit;
  } catch (const SimulationFailure& error) {
    std::cout.flush();
    std::cerr << "error: " << error.what() << "\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "internal error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
