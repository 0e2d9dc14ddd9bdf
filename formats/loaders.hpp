// Loaders for hetplan's input files. Each reads one file strictly (unknown keys, wrong types,
// out-of-range values and dangling references are InputErrors naming file:line:column and the
// field) and returns the core type. docs/formats/ documents every format.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/calibration.hpp"
#include "core/chip.hpp"
#include "core/cluster.hpp"
#include "core/ladder.hpp"
#include "core/plan.hpp"
#include "core/scenario.hpp"
#include "core/workload.hpp"

namespace hetplan::formats {

inline constexpr std::string_view kChipSchema = "hetplan/chip/v1";
inline constexpr std::string_view kClusterSchema = "hetplan/cluster/v1";
inline constexpr std::string_view kWorkloadSchema = "hetplan/workload/v1";
inline constexpr std::string_view kScenarioSchema = "hetplan/scenario/v1";
inline constexpr std::string_view kPlanSchema = "hetplan/plan/v1";
inline constexpr std::string_view kCalibrationBundleSchema = "hetplan/calibration-bundle/v1";
inline constexpr std::string_view kValidationRecordSchema = "hetplan/validation-record/v1";
inline constexpr std::string_view kLadderEvidenceSchema = "hetplan/ladder-evidence/v1";

// From text (file_name is used in messages and to resolve relative paths).
ChipProfile parse_chip(const std::string& text, const std::string& file_name);
Plan parse_plan(const std::string& text, const std::string& file_name);
CalibrationBundle parse_calibration_bundle(const std::string& text, const std::string& file_name);
ValidationRecord parse_validation_record(const std::string& text, const std::string& file_name);
// The output of validation/probe/hetplan_boundary.py.
LadderEvidence parse_ladder_evidence(const std::string& text, const std::string& file_name);
// The record as a hetplan/validation-record/v1 document that parse_validation_record reads back
// (each entry's evidence written as it is, relative to the record's folder); each line of
// `comment` becomes a `# ` line at the top.
std::string validation_record_yaml(const ValidationRecord& record, const std::string& comment = {});

// Whether text is a validation record's date: YYYY-MM-DD (docs/formats/validation-record.md).
bool is_record_date(std::string_view text);
// Whether text is a probe's time stamp: YYYY-MM-DDTHH:MM:SSZ.
bool is_utc_time(std::string_view text);
// A Hugging Face config.json (or any YAML/JSON mapping in that shape).
ModelShape parse_hf_config(const std::string& text, const std::string& file_name);

class Field;
// A list of Megatron-Core's recompute module names (core_attn, mla_up_proj, moe_act, layernorm,
// mlp, moe, shared_experts) as TrainingSettings::recompute_modules bits; an unknown or repeated
// name is an input error at it.
unsigned read_recompute_modules(const Field& list);
// A list of operators run as PyTorch's reference operators (rmsnorm, swiglu, rope) as
// TrainingSettings::unfused bits; an unknown or repeated name, or one the model does not have
// (rmsnorm beside a LayerNorm, swiglu beside another activation, rope beside learned
// positions), is an input error at it.
unsigned read_unfused(const Field& list, const ModelShape& model);
// How the loss is computed (none, native, te: kCrossEntropyFusionNames); another name is an
// input error at it.
CrossEntropyFusion read_cross_entropy_fusion(const Field& field);

// A whole input file (size-limited). Throws InputError naming the file when it cannot be read.
std::string read_text_file(const std::string& path);

// From files.
ChipProfile load_chip(const std::string& path);
// Loads the cluster and every chip profile its islands name (from its `profiles:` folders).
Cluster load_cluster(const std::string& path);
Workload load_workload(const std::string& path);
Plan load_plan(const std::string& path);
Scenario load_scenario(const std::string& path);
CalibrationBundle load_calibration_bundle(const std::string& path);
// Every *.yaml validation record in a folder, in file-name order.
std::vector<ValidationRecord> load_validation_records(const std::string& folder);

// Checks a plan against the cluster and workload it is meant for: islands exist, layer ranges
// cover the model in order, each a multiple of the virtual stages. Throws InputError at the plan's
// field. Whether the plan can run (capacity, memory, operators) is the estimator's verdict.
// With replica groups: each group's stages so, and the groups' samples make the global batch.
void check_plan_references(const Plan& plan, const Cluster& cluster, const Workload& workload);

// For the commands that take one pipeline only: throws InputError at `replica_groups` when the
// plan has replica groups on different islands, naming `command`.
void require_one_pipeline(const Plan& plan, std::string_view command);

// What `hetplan check` found in one file.
struct CheckReport {
  std::string kind;     // "chip", "cluster", "workload", "scenario", "plan", "hf-config"
  std::string summary;  // one line: what the file describes
};
// Detects the kind of file from its `schema:` (or a Hugging Face `model_type`) and loads it.
CheckReport check_file(const std::string& path);

}  // namespace hetplan::formats
