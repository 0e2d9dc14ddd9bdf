// Export of a plan to what the cluster runs: Volcano Jobs and HyperNodes, kube-scheduler's
// configuration and Jobs, plan JSON, launch arguments for Megatron-LM / MindSpeed-LLM, node
// labels. Pure functions from a plan and its scenario to file contents; the CLI writes them
// (atomically). docs/export.md.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan.hpp"
#include "core/sha256.hpp"
#include "core/scenario.hpp"
#include "sim/estimator.hpp"
#include "validation/ladder.hpp"

namespace hetplan::exporters {

// Device-plugin resource names per chip family, as the vendors' stock plugins register them by
// default (huawei.com/Ascend910, hygon.com/dcu, cambricon.com/mlu without
// --enable-device-type, nvidia.com/gpu), and the RDMA shared-device plugin's default resource.
// An island's own names (cluster file, `resources:`; the inventory import records what its
// nodes advertise) come before these, and export overrides (ExportInput::overrides) before both.
struct ResourceNames {
  std::map<std::string, std::string> device;           // chip profile family -> resource name
  std::string rdma = "rdma/hca_shared_devices_a";      // the RDMA device resource RoCE pods request
};
ResourceNames default_resource_names();

struct ExportInput {
  const Scenario* scenario = nullptr;
  const Plan* plan = nullptr;
  const sim::Estimate* estimate = nullptr;     // of plan on scenario (sim::estimate_step)
  validation::PlanValidation validation;      // from the ladder; exports refuse unvalidated plans
  bool allow_unvalidated = false;             // export anyway, stamped as unvalidated
  std::map<std::string, std::string> inputs;  // input file -> sha256, for provenance
  ResourceNames resources = default_resource_names();
  // Export-time overrides, KEY=NAME: KEY a chip family or an island of the plan sets its device
  // resource (an island's before its family's), `rdma` the RDMA resource of every island.
  std::map<std::string, std::string> overrides;
  // Container images: per island (ISLAND=IMAGE), else `image` when set, else the island's own
  // (cluster file), else kDefaultImage.
  std::map<std::string, std::string> island_images;
  std::string image;
};

inline constexpr const char* kDefaultImage = "hetplan/trainer:latest";

// Checks ExportInput::overrides and island_images against the plan: an unknown key is an
// InputError naming `option` and listing the keys that are valid.
void check_export_overrides(const ExportInput& input, const std::string& option_resource,
                            const std::string& option_image);

// What a stage's pods request and run, resolved as ExportInput describes; the RDMA resource is
// empty when the island says `none`.
std::string device_resource(const ExportInput& input, const Island& island);
std::string rdma_resource(const ExportInput& input, const Island& island);
std::string island_image(const ExportInput& input, const Island& island);

// MindCluster's ring-controller.atlas value for an Ascend chip ("ascend-910", "ascend-910b"), or
// empty for chips that are not Ascend training chips.
std::string ascend_ring_controller(const ChipProfile& chip);

struct ExportedFile {
  std::string name;  // file name, relative to the output folder
  std::string text;
};

// Volcano (volcano.cpp): one Volcano Job (batch.volcano.sh/v1alpha1) running the plan as a gang,
// "volcano-<job name>.yaml": a task per pipeline stage on its island's nodes, the rank layout in
// HETPLAN_* variables (docs/export.md, "Volcano"). Passes check_validation_gate first (throws
// UnvalidatedPlan) and check_plan_references (InputError); throws std::invalid_argument for a
// plan it cannot express (no stages, a chip family without a device resource name, an island
// label Kubernetes refuses, a tensor-parallel group that spans nodes unevenly).
std::vector<ExportedFile> export_volcano(const ExportInput& input);

// The cluster's fabric as Volcano HyperNodes (volcano.cpp, topology.volcano.sh/v1alpha1),
// "hypernodes-<cluster>.yaml": a tier-1 HyperNode per leaf switch of every island (its nodes by
// name, or by the hetplan.io/leaf label labels.sh writes where the cluster file does not name
// them), a tier-2 one per zone and a tier-3 one per set of zones joined by zone links
// (docs/export.md#placement). Throws std::invalid_argument for a name Kubernetes refuses.
ExportedFile export_hypernodes(const Cluster& cluster);

// kube-scheduler with the hetplan extender (kube_scheduler.cpp): "kube-scheduler-config.yaml",
// a KubeSchedulerConfiguration whose profile kSchedulerName consults the extender at
// kExtenderUrl for exactly requested_resources(input), and "kube-<job name>.yaml", a headless
// Service and an Indexed batch/v1 Job per stage whose pods name that profile. Throws as
// export_volcano does.
inline constexpr const char* kSchedulerName = "hetplan-scheduler";
inline constexpr const char* kExtenderUrl = "http://127.0.0.1:8888/hetplan";
std::vector<ExportedFile> export_kube_scheduler(const ExportInput& input);

// The extended resources the exported pods of the plan request (device-plugin and RDMA), sorted,
// each once.
std::vector<std::string> requested_resources(const ExportInput& input);

// Thrown when a plan that the validation ladder has not validated is exported without
// allow_unvalidated; the message names what the ladder lacks.
struct UnvalidatedPlan : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The validation gate every export passes first: throws UnvalidatedPlan naming the missing
// items when input.validation.validated is false and input.allow_unvalidated is not set.
void check_validation_gate(const ExportInput& input);

// Plan JSON (plan_json.cpp): "plan.json", the plan as `hetplan/plan/v1` (every key the plan
// loader reads, so `hetplan eval --plan plan.json` reads it back) plus an `export` object with
// provenance: generator, scenario, input hashes, validation and the estimate (six significant
// digits). Its JSON Schema: docs/schemas/plan-v1.schema.json.
ExportedFile export_plan_json(const ExportInput& input);

// Lower-case hex SHA-256 of bytes (core/sha256.hpp, shared with the validation records).
using ::hetplan::sha256_hex;

// SHA-256 of every input file a scenario was loaded from: the scenario, its cluster, its
// workload, every chip profile the cluster uses, the reference plan when it has one and every
// validation record of its validation_records folder when it names one. Keys are
// paths relative to the scenario file's folder (the scenario itself by its file name), so the
// hashes do not depend on where the checkout lies. Throws InputError when a file cannot be read.
// A workload's hf_config file is not included: Workload does not keep its path.
std::map<std::string, std::string> input_hashes(const Scenario& scenario,
                                                const std::string& scenario_path);

// Launch arguments (launch.cpp): per island of the plan, in pipeline order, "launch-<island>.sh",
// a shell-sourceable file setting HETPLAN_* variables with the island's Megatron-LM (NVIDIA,
// Hygon DCU, Cambricon MLU and others) or MindSpeed-LLM (Ascend) arguments, and comments with the
// island's stages and ranks.
std::vector<ExportedFile> export_megatron(const ExportInput& input);

// Node labels (launch.cpp): "labels.sh", one `kubectl label node` command per node the plan's
// placement uses (core/placement.hpp), with the island's labels and the node's leaf switch
// (hetplan.io/leaf), on the cluster file's node names or, with hetplan.io/node, placeholders
// "<island>-node-NN".
ExportedFile export_labels(const ExportInput& input);

// The plan as a plan file in `folder` records it (`hetplan plan --out`, the GUI's export): it
// names its scenario, relative to the folder, and the SHA-256 of the scenario file's text, so
// that `hetplan export` reads it back without --scenario and notices a scenario that changed.
Plan plan_naming_scenario(const Plan& plan, const std::string& scenario_path,
                          const std::string& scenario_sha256, const std::string& folder);

// What `hetplan export --to` names.
enum class ExportTarget { volcano, json, megatron, labels, kube_scheduler };
std::optional<ExportTarget> export_target(std::string_view name);  // "volcano", "json", ...
std::vector<std::string> export_target_names();                    // every target, in order
std::string_view to_string(ExportTarget target);

// The input of an export of `plan` as `hetplan export` makes it, for every front end: the plan's
// validation from the ladder (none: "no validation records"), and the hashes of the scenario's
// files and of the plan file itself under its file name (`plan_file_name`, `plan_text`: the
// plan as the file that holds it says). Images, overrides and allow_unvalidated stay for the
// caller to set.
ExportInput plan_export_input(const Scenario& scenario, const std::string& scenario_path,
                              const Plan& plan, const sim::Estimate& estimate,
                              const std::optional<validation::LadderReport>& ladder,
                              const std::string& plan_file_name, std::string_view plan_text);

// The files of one target (throws as the target's exporter does); volcano: the Job and the
// HyperNodes of its cluster.
std::vector<ExportedFile> export_plan(const ExportInput& input, ExportTarget target);

}  // namespace hetplan::exporters
