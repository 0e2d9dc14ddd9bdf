// hetplan: the command-line front end. Parses arguments, calls the libraries, prints. Input
// errors print one line and exit with code 2.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/report.hpp"
#include "core/error.hpp"
#include "formats/loaders.hpp"
#include "sim/estimator.hpp"
#include "validation/published_runs.hpp"

namespace {

constexpr int kInputErrorExit = 2;

int run_eval(const std::string& scenario_path, const std::string& plan_path, bool json) {
  hetplan::Scenario scenario = hetplan::formats::load_scenario(scenario_path);
  hetplan::Plan plan;
  if (!plan_path.empty()) {
    plan = hetplan::formats::load_plan(plan_path);
    hetplan::formats::check_plan_references(plan, scenario.cluster, scenario.workload);
  } else if (scenario.reference_plan) {
    plan = *scenario.reference_plan;
  } else {
    throw hetplan::InputError({scenario_path, 0, 0}, "plan",
                              "expected --plan PLAN, or a `plan:` in the scenario");
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

int run_check(const std::vector<std::string>& files) {
  for (const auto& file : files) {
    const auto report = hetplan::formats::check_file(file);
    std::cout << file << ": ok (" << report.kind << ") " << report.summary << "\n";
  }
  return 0;
}

int run_validate(const std::string& folder, const std::string& profiles, bool json) {
  const auto report = hetplan::validation::validate_published_runs(folder, profiles);
  if (json) {
    std::cout << hetplan::validation::report_json(report).dump(2) << "\n";
  } else {
    std::cout << hetplan::validation::report_text(report);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hetplan: plan and simulate LLM training on mixed-vendor accelerator clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "hetplan 0.1.0");

  std::string scenario_path, plan_path;
  bool json = false;
  auto* eval = app.add_subcommand("eval", "Estimate one training step of a plan (analytic model)");
  eval->add_option("scenario", scenario_path, "Scenario file (hetplan/scenario/v1)")->required();
  eval->add_option("--plan", plan_path,
                   "Plan file (hetplan/plan/v1); default: the scenario's plan");
  eval->add_flag("--json", json, "Print JSON instead of a table");

  std::vector<std::string> files;
  auto* check = app.add_subcommand("check", "Validate input files and say what they describe");
  check->add_option("files", files, "Files to check")->required();

  std::string folder, profiles = "profiles";
  auto* validate = app.add_subcommand(
      "validate", "Predict published training runs and report the error of each prediction");
  validate->add_option("--published", folder, "Folder of published-run files (*.yaml)")->required();
  validate->add_option("--profiles", profiles, "Folder of chip profiles")->capture_default_str();
  validate->add_flag("--json", json, "Print JSON instead of a table");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : kInputErrorExit;
  }

  try {
    if (*eval) return run_eval(scenario_path, plan_path, json);
    if (*check) return run_check(files);
    if (*validate) return run_validate(folder, profiles, json);
  } catch (const hetplan::InputError& error) {
    std::cout.flush();
    std::cerr << "error: " << error.what() << "\n";
    return kInputErrorExit;
  } catch (const std::exception& error) {
    std::cerr << "internal error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
