#include "exporters/export.hpp"

#include <filesystem>

#include <set>

namespace hetplan::exporters {

ResourceNames default_resource_names() {
  ResourceNames names;
  names.device = {{"ascend", "huawei.com/Ascend910"},
                  {"dcu", "hygon.com/dcu"},
                  {"mlu", "cambricon.com/mlu"},
                  {"nvidia", "nvidia.com/gpu"}};
  return names;
}

void check_export_overrides(const ExportInput& input, const std::string& option_resource,
                            const std::string& option_image) {
  const Cluster& cluster = input.scenario->cluster;
  std::set<std::string> families, islands;
  for (const auto& stage : input.plan->stages) {
    const Island* island = cluster.find_island(stage.island);
    if (!island) continue;
    islands.insert(island->name);
    families.insert(cluster.chip_of(*island).family);
  }
  auto list = [](const std::set<std::string>& names) {
    std::string out;
    for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
    return out;
  };
  for (const auto& [key, name] : input.overrides) {
    if (key == "rdma" || families.count(key) || islands.count(key)) continue;
    throw InputError({"export", 0, 0}, option_resource,
                     "expected a chip family of the plan (" + list(families) + "), one of its "
                     "islands (" + list(islands) + ") or rdma, got \"" + key + "\"");
  }
  for (const auto& [key, image] : input.island_images) {
    if (islands.count(key)) continue;
    throw InputError({"export", 0, 0}, option_image,
                     "expected an island of the plan (" + list(islands) + "), got \"" + key + "\"");
  }
}

std::string device_resource(const ExportInput& input, const Island& island) {
  const ChipProfile& chip = input.scenario->cluster.chip_of(island);
  if (auto it = input.overrides.find(island.name); it != input.overrides.end()) return it->second;
  if (auto it = input.overrides.find(chip.family); it != input.overrides.end()) return it->second;
  if (!island.device_resource.empty()) return island.device_resource;
  auto it = input.resources.device.find(chip.family);
  return it == input.resources.device.end() ? std::string() : it->second;
}

std::string rdma_resource(const ExportInput& input, const Island& island) {
  std::string name = input.resources.rdma;
  if (auto it = input.overrides.find("rdma"); it != input.overrides.end())
    name = it->second;
  else if (!island.rdma_resource.empty())
    name = island.rdma_resource;
  return name == "none" ? std::string() : name;
}

std::string island_image(const ExportInput& input, const Island& island) {
  if (auto it = input.island_images.find(island.name); it != input.island_images.end())
    return it->second;
  if (!input.image.empty()) return input.image;
  if (!island.image.empty()) return island.image;
  return kDefaultImage;
}

std::string ascend_ring_controller(const ChipProfile& chip) {
  if (chip.family != "ascend" || chip.role != ChipRole::training) return {};
  // MindCluster's values: ascend-910 for the first Ascend 910, ascend-{xxx}b for the Atlas A2
  // and A3 generations (910B, 910C). Profile ids are lower case.
  const std::string& id = chip.id;
  if (id.find("910b") != std::string::npos || id.find("910c") != std::string::npos)
    return "ascend-910b";
  if (id.find("910") != std::string::npos) return "ascend-910";
  return {};
}

Plan plan_naming_scenario(const Plan& plan, const std::string& scenario_path,
                          const std::string& scenario_sha256, const std::string& folder) {
  Plan recorded = plan;
  recorded.scenario = PlanScenario{std::filesystem::absolute(scenario_path)
                                       .lexically_relative(std::filesystem::absolute(folder))
                                       .generic_string(),
                                   scenario_sha256};
  return recorded;
}

namespace {
constexpr ExportTarget kTargets[] = {ExportTarget::volcano, ExportTarget::json,
                                     ExportTarget::megatron, ExportTarget::labels,
                                     ExportTarget::kube_scheduler};
}  // namespace

std::optional<ExportTarget> export_target(std::string_view name) {
  for (ExportTarget target : kTargets)
    if (to_string(target) == name) return target;
  return std::nullopt;
}

std::vector<std::string> export_target_names() {
  std::vector<std::string> names;
  for (ExportTarget target : kTargets) names.emplace_back(to_string(target));
  return names;
}

std::string_view to_string(ExportTarget target) {
  switch (target) {
    case ExportTarget::volcano: return "volcano";
    case ExportTarget::json: return "json";
    case ExportTarget::megatron: return "megatron";
    case ExportTarget::labels: return "labels";
    case ExportTarget::kube_scheduler: return "kube-scheduler";
  }
  return "?";
}

ExportInput plan_export_input(const Scenario& scenario, const std::string& scenario_path,
                              const Plan& plan, const sim::Estimate& estimate,
                              const std::optional<validation::LadderReport>& ladder,
                              const std::string& plan_file_name, std::string_view plan_text) {
  ExportInput input;
  input.scenario = &scenario;
  input.plan = &plan;
  input.estimate = &estimate;
  input.validation = validation::plan_validation(ladder ? &*ladder : nullptr, plan);
  input.inputs = input_hashes(scenario, scenario_path);
  input.inputs[plan_file_name] = sha256_hex(plan_text);
  return input;
}

std::vector<ExportedFile> export_plan(const ExportInput& input, ExportTarget target) {
  switch (target) {
    case ExportTarget::volcano: {
      std::vector<ExportedFile> files = export_volcano(input);
      files.push_back(export_hypernodes(input.scenario->cluster));
      return files;
    }
    case ExportTarget::json: return {export_plan_json(input)};
    case ExportTarget::megatron: return export_megatron(input);
    case ExportTarget::labels: return {export_labels(input)};
    case ExportTarget::kube_scheduler: return export_kube_scheduler(input);
  }
  return {};
}

}  // namespace hetplan::exporters
