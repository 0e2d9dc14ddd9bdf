#include "validation/training_run.hpp"

#include <filesystem>

#include "core/sha256.hpp"
#include "formats/loaders.hpp"
#include "importers/training_logs.hpp"

namespace hetplan::validation {

void check_log_layout(const importers::TrainingLog& log, const Plan& plan,
                      const std::string& log_path) {
  const int pp = static_cast<int>(plan.stages.size());
  const int dp = plan.stages.front().dp;
  long long chips = 0;
  for (const auto& stage : plan.stages) chips += static_cast<long long>(stage.tp) * stage.dp;
  if ((log.pp && *log.pp != pp) || (log.dp && *log.dp != dp) ||
      (log.world_size && *log.world_size != chips)) {
    auto stated = [](const std::optional<int>& value) {
      return value ? std::to_string(*value) : std::string("?");
    };
    throw InputError({log_path, 0, 0}, "layout",
                     "expected the plan's layout (" + std::to_string(chips) + " chips, pp " +
                         std::to_string(pp) + ", dp " + std::to_string(dp) +
                         "), got a log of world " + stated(log.world_size) + ", pp " +
                         stated(log.pp) + ", dp " + stated(log.dp));
  }
}

TrainingRun training_log_run(const std::string& log_path, const std::string& scenario_path,
                             const std::string& plan_path) {
  // One read: the log hashed is the log measured.
  const std::string text = formats::read_text_file(log_path);
  const importers::TrainingLog log = importers::parse_training_log(text, log_path);
  const importers::IterationSummary summary = importers::summarize(log);
  if (summary.count == 0) {
    throw InputError({log_path, 0, 0}, "iterations",
                     "expected iteration lines after the first (warm-up) without skipped or NaN "
                     "iterations, got none");
  }
  Scenario scenario = formats::load_scenario(scenario_path);
  Plan plan = formats::load_plan(plan_path);
  formats::require_one_pipeline(plan, "a training run");
  formats::check_plan_references(plan, scenario.cluster, scenario.workload);
  check_log_layout(log, plan, log_path);
  TrainingRun run;
  run.id = std::filesystem::path(log_path).filename().string();
  run.source = log_path;
  run.sha256 = sha256_hex(text);
  run.location = {log_path, 1, 1};
  run.cluster = std::move(scenario.cluster);
  run.workload = std::move(scenario.workload);
  run.plan = std::move(plan);
  run.metric = "step_time_s";
  run.measured = summary.median_elapsed_s;
  return run;
}

}  // namespace hetplan::validation
