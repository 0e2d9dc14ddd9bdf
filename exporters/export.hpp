// Export of a plan to what the cluster runs: Volcano Jobs, plan JSON for a scheduler extender,
// launch arguments for Megatron-LM / MindSpeed-LLM, node labels. Pure functions from a plan and
// its scenario to file contents; the CLI writes them (atomically). docs/export.md.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/scenario.hpp"
#include "sim/estimator.hpp"
#include "validation/ladder.hpp"

namespace hetplan::exporters {

// Device-plugin resource names per chip family; defaults are the vendors' native plugins
// (huawei.com/Ascend910, hygon.com/dcu, cambricon.com/mlu370, nvidia.com/gpu), overridable
// (e.g. for HAMi).
struct ResourceNames {
  std::map<std::string, std::string> device;  // chip profile family -> resource name
  std::string rdma = "rdma/hca";              // the RDMA device resource RoCE pods request
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
  std::string image = "hetplan/trainer:latest";  // container image of the training job
};

struct ExportedFile {
  std::string name;  // file name, relative to the output folder
  std::string text;
};

}  // namespace hetplan::exporters
