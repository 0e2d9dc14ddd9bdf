// `hetplan check`: recognise a file by its schema and load it with the matching loader.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "formats/document.hpp"
#include "formats/loaders.hpp"

namespace hetplan::formats {
namespace {

// "32 layers, hidden 4096, 46702M parameters (8 experts, top 2: 12879M active)".
std::string model_summary(const ModelShape& model) {
  std::ostringstream out;
  out << model.layers << " layers, hidden " << model.hidden << ", "
      << static_cast<long long>(model.total_parameters() / 1e6) << "M parameters";
  if (model.moe()) {
    out << " (" << model.experts << " experts, top " << model.experts_per_token;
    if (model.shared_experts > 0) out << ", " << model.shared_experts << " shared";
    out << ": " << static_cast<long long>(model.active_parameters() / 1e6) << "M active)";
  }
  if (model.latent_attention()) out << ", latent attention";
  if (model.mtp_layers > 0)
    out << ", " << static_cast<long long>(model.mtp_parameters() / 1e6) << "M more in "
        << model.mtp_layers << " multi-token prediction module(s)";
  return out.str();
}

}  // namespace

CheckReport check_file(const std::string& path) {
  const std::string text = read_text_file(path);
  const YAML::Node root = parse_document(text, path);
  const std::string schema = schema_of(root);
  std::ostringstream summary;
  if (schema == kChipSchema) {
    const ChipProfile chip = parse_chip(text, path);
    std::size_t unknown = 0;
    for (const auto& [dtype, peak] : chip.peak_flops) unknown += peak ? 0 : 1;
    summary << chip.vendor << " " << chip.model << " (" << to_string(chip.role) << "), "
            << chip.peak_flops.size() << " dtypes (" << unknown << " with unknown peak), "
            << chip.cited_by.size()
            << " cited figures from " << chip.sources.size() << " sources"
            << (chip.efficiency.calibrated ? ", calibrated" : ", uncalibrated priors");
    // Its provenance: the evidence level, the runs its in-step terms were fitted to, its bands
    // (docs/models/uncertainty.md).
    summary << "; evidence " << to_string(chip.evidence_level());
    const auto& runs = chip.efficiency.in_step.runs;
    if (!runs.empty()) {
      std::vector<std::string> files;
      for (const auto& run : runs)
        if (std::find(files.begin(), files.end(), run.file) == files.end()) files.push_back(run.file);
      summary << ", in-step terms fitted to " << runs.size() << " runs from " << files.size()
              << " sources (";
      for (std::size_t i = 0; i < files.size(); ++i) summary << (i ? ", " : "") << files[i];
      summary << ")";
    }
    auto band = [&](const char* what, const std::optional<Band>& b) {
      if (!b) {
        summary << ", " << what << " band unknown";
        return;
      }
      summary << ", 80% " << what << " band " << band_text(*b);
    };
    band("step", chip.evidence.step);
    band("memory", chip.evidence.memory);
    return {"chip", summary.str()};
  }
  if (schema == kClusterSchema) {
    const Cluster cluster = load_cluster(path);
    long long chips = 0;  // 64 bits: islands can sum past 2^31 chips
    for (const auto& island : cluster.islands) chips += island.chip_count();
    summary << cluster.name << ": " << cluster.islands.size() << " islands, " << chips << " chips, "
            << to_string(cluster.fabric.kind) << " " << to_string(cluster.fabric.topology) << ", "
            << cluster.fabric.zones.size() << " zones";
    // Only when the file says so, so that the line of every other cluster stays as it was.
    if (cluster.fabric.spine_oversubscription > 1)
      summary << ", spine " << cluster.fabric.spine_oversubscription << ":1";
    if (!cluster.gradient_paths.empty())
      summary << ", " << cluster.gradient_paths.size() << " gradient path"
              << (cluster.gradient_paths.size() == 1 ? "" : "s");
    return {"cluster", summary.str()};
  }
  if (schema == kWorkloadSchema) {
    const Workload workload = load_workload(path);
    summary << workload.name << ": " << workload.model.model_type << " "
            << model_summary(workload.model) << ", seq " << workload.training.seq_len
            << ", global batch "
            << workload.training.global_batch;
    return {"workload", summary.str()};
  }
  if (schema == kScenarioSchema) {
    const Scenario scenario = load_scenario(path);
    summary << scenario.name << ": cluster " << scenario.cluster.name << ", workload "
            << scenario.workload.name << ", objective " << to_string(scenario.objective)
            << (scenario.reference_plan ? ", with a reference plan" : "");
    if (const auto& simulation = scenario.simulation) {
      summary << ", simulation jitter " << simulation->jitter << " with "
              << simulation->stragglers.size() << " stragglers"
              << (simulation->random_stragglers ? " and random stragglers" : "");
    }
    if (scenario.reliability) {
      summary << ", reliability figures for " << scenario.reliability->node_mtbf.size()
              << " chip types";
    }
    return {"scenario", summary.str()};
  }
  if (schema == kPlanSchema) {
    const Plan plan = parse_plan(text, path);
    if (plan.has_replica_groups()) {
      summary << plan.name << ": " << plan.replica_groups.size()
              << " replica groups of their own pipelines, schedule " << to_string(plan.schedule);
    } else {
      summary << plan.name << ": " << plan.stages.size() << " pipeline stages, schedule "
              << to_string(plan.schedule);
    }
    return {"plan", summary.str()};
  }
  if (schema.empty() && root.IsMap() && root["model_type"]) {
    const ModelShape model = parse_hf_config(text, path);
    summary << model.model_type << ": " << model_summary(model);
    return {"hf-config", summary.str()};
  }
  if (schema.empty()) {
    throw InputError({path, 1, 1}, "schema",
                     "missing required key (expected hetplan/<chip|cluster|workload|scenario|plan>/v1, "
                     "or a Hugging Face config with model_type)");
  }
  MapReader reader(Field(root, "", std::make_shared<const std::string>(path)));
  reader.required("schema").fail_expected(
      "one of hetplan/chip/v1, hetplan/cluster/v1, hetplan/workload/v1, hetplan/scenario/v1 or "
      "hetplan/plan/v1");
}

}  // namespace hetplan::formats
