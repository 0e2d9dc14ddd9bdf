// The plan as JSON for a scheduler extender (and for `hetplan eval --plan`): every key of
// `hetplan/plan/v1` plus an `export` object with provenance. docs/export.md#plan-json; schema
// docs/schemas/plan-v1.schema.json.
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "exporters/export.hpp"
#include "core/units.hpp"
#include "formats/loaders.hpp"

namespace hetplan::exporters {
namespace {

// `file` as a key: relative to `base` (an absolute, normal folder) when it can be.
std::string relative_key(const std::string& file, const std::filesystem::path& base) {
  const std::filesystem::path absolute = std::filesystem::absolute(file).lexically_normal();
  const std::filesystem::path relative = absolute.lexically_relative(base);
  return relative.empty() ? absolute.generic_string() : relative.generic_string();
}

}  // namespace

void check_validation_gate(const ExportInput& input) {
  if (input.validation.validated || input.allow_unvalidated) return;
  std::string missing;
  for (const auto& item : input.validation.missing) missing += (missing.empty() ? "" : "; ") + item;
  if (missing.empty()) missing = "(no step named)";
  const std::string name = input.plan ? "plan \"" + input.plan->name + "\"" : "the plan";
  throw UnvalidatedPlan(name + " is not validated on the validation ladder; missing: " + missing +
                        " (--allow-unvalidated exports it anyway, marked unvalidated)");
}

ExportedFile export_plan_json(const ExportInput& input) {
  if (!input.scenario || !input.plan || !input.estimate) {
    throw std::invalid_argument("export_plan_json: scenario, plan and estimate are required");
  }
  check_validation_gate(input);
  const Plan& plan = *input.plan;

  nlohmann::ordered_json j;
  j["schema"] = std::string(formats::kPlanSchema);
  j["name"] = plan.name;
  j["schedule"] = to_string(plan.schedule);
  j["virtual_stages"] = plan.virtual_stages;
  if (plan.micro_batch) j["micro_batch"] = *plan.micro_batch;
  if (plan.recompute) j["recompute"] = to_string(*plan.recompute);
  if (plan.recompute_layers) j["recompute_layers"] = *plan.recompute_layers;
  if (plan.zero_stage) j["zero_stage"] = *plan.zero_stage;
  if (plan.dtype) j["dtype"] = to_string(*plan.dtype);
  auto& stages = j["stages"] = nlohmann::ordered_json::array();
  for (const PlanStage& s : plan.stages) {
    nlohmann::ordered_json stage{{"island", s.island},
                                 {"first_layer", s.first_layer},
                                 {"num_layers", s.num_layers},
                                 {"tp", s.tp},
                                 {"dp", s.dp}};
    if (s.ep > 1) stage["ep"] = s.ep;
    if (s.etp > 0 && s.etp != s.tp) stage["etp"] = s.etp;
    if (s.recompute) stage["recompute"] = to_string(*s.recompute);
    if (s.recompute_layers) stage["recompute_layers"] = *s.recompute_layers;
    if (!s.chunk_layers.empty()) stage["chunk_layers"] = s.chunk_layers;
    stages.push_back(std::move(stage));
  }

  nlohmann::ordered_json provenance;
  provenance["generator"] = "hetplan";
  provenance["scenario"] = input.scenario->name;
  provenance["inputs"] = nlohmann::ordered_json::object();
  for (const auto& [file, hash] : input.inputs) provenance["inputs"][file] = hash;
  provenance["validation"] = {{"validated", input.validation.validated},
                              {"missing", input.validation.missing}};
  provenance["estimate"] = {{"step_time_s", round6(input.estimate->step_time_s)},
                            {"tokens_per_s", round6(input.estimate->tokens_per_s)},
                            {"chips", input.estimate->chips}};
  j["export"] = std::move(provenance);
  return {"plan.json", j.dump(2) + "\n"};
}

std::map<std::string, std::string> input_hashes(const Scenario& scenario,
                                                const std::string& scenario_path) {
  const std::filesystem::path base =
      std::filesystem::absolute(scenario_path).lexically_normal().parent_path();
  std::map<std::string, std::string> hashes;
  auto add = [&](const std::string& file) {
    if (file.empty()) return;
    hashes[relative_key(file, base)] = sha256_hex(formats::read_text_file(file));
  };
  add(scenario_path);
  add(scenario.cluster.location.file);
  add(scenario.workload.location.file);
  add(scenario.workload.model_file);  // a config.json: its shape is the model's
  for (const ChipProfile& chip : scenario.cluster.chips) add(chip.location.file);
  if (scenario.reference_plan) add(scenario.reference_plan->location.file);
  if (scenario.validation_records) {
    for (const ValidationRecord& record :
         formats::load_validation_records(*scenario.validation_records))
      add(record.file);
  }
  return hashes;
}

}  // namespace hetplan::exporters
