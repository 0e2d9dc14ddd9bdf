// A plan for the default kube-scheduler with the hetplan extender: the scheduler's configuration
// (a profile of its own that consults the extender for exactly the resources the pods request)
// and the workload (an Indexed batch/v1 Job per stage whose pods name that profile, and a
// headless Service for their host names). docs/export.md, "kube-scheduler".
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "exporters/export.hpp"
#include "exporters/manifest.hpp"
#include "formats/loaders.hpp"

namespace hetplan::exporters {
namespace {

using manifest::Json;
using manifest::Task;

constexpr const char* kWho = "export_kube_scheduler";

std::string scheduler_config(const std::vector<std::string>& resources) {
  Json config;
  config["apiVersion"] = "kubescheduler.config.k8s.io/v1";
  config["kind"] = "KubeSchedulerConfiguration";
  config["clientConnection"]["kubeconfig"] = "/etc/kubernetes/scheduler.conf";
  config["leaderElection"]["leaderElect"] = true;
  config["leaderElection"]["resourceName"] = kSchedulerName;
  config["leaderElection"]["resourceNamespace"] = "kube-system";
  config["profiles"] = Json::array({{{"schedulerName", kSchedulerName}}});
  Json extender;
  extender["urlPrefix"] = kExtenderUrl;
  extender["filterVerb"] = "filter";
  extender["prioritizeVerb"] = "prioritize";
  extender["weight"] = 5;
  extender["enableHTTPS"] = false;
  extender["httpTimeout"] = "5s";
  extender["nodeCacheCapable"] = false;
  extender["ignorable"] = false;
  extender["managedResources"] = Json::array();
  for (const std::string& name : resources) {
    extender["managedResources"].push_back({{"name", name}, {"ignoredByScheduler", false}});
  }
  config["extenders"] = Json::array({extender});

  std::string text =
      "# A kube-scheduler configuration that consults the hetplan extender (docs/extender.md),\n"
      "# written by `hetplan export --to kube-scheduler` (docs/export.md, \"kube-scheduler\").\n"
      "# Run the extender beside the scheduler (same pod, loopback only), from the plan alone:\n"
      "#   hetplan extender --plan PLAN --listen 127.0.0.1:8888\n"
      "# and the scheduler with --config pointing at this file. The profile has a scheduler name\n"
      "# of its own: it places only the pods that ask for it (spec.schedulerName: " +
      std::string(kSchedulerName) +
      ").\n"
      "# Volcano's scheduler never calls an extender.\n"
      "# - weight: the extender's scores 0..10 are scaled to 0..100 and multiplied by it.\n"
      "# - nodeCacheCapable false: the scheduler sends full Node objects, so the extender sees\n"
      "#   current labels (true: names only, answered from its node cache).\n"
      "# - ignorable false: when the extender is down, the plan's pods stay pending instead of\n"
      "#   being placed without the plan's constraints.\n"
      "# - managedResources: only pods that request one of these are sent to the extender: the\n"
      "#   device-plugin and RDMA resources the exported pods request, no more and no fewer; the\n"
      "#   scheduler still checks the nodes' capacity for them (ignoredByScheduler false).\n";
  manifest::write_yaml(text, config);
  return text;
}

}  // namespace

std::vector<std::string> requested_resources(const ExportInput& input) {
  std::set<std::string> names;
  for (const Task& task : manifest::layout_tasks(input, kWho)) {
    names.insert(task.device);
    if (!task.rdma.empty()) names.insert(task.rdma);
  }
  return {names.begin(), names.end()};
}

std::vector<ExportedFile> export_kube_scheduler(const ExportInput& input) {
  if (!input.scenario || !input.plan) {
    throw std::invalid_argument(std::string(kWho) + ": scenario and plan are required");
  }
  check_validation_gate(input);
  const Scenario& scenario = *input.scenario;
  const Plan& plan = *input.plan;
  if (plan.stages.empty()) {
    throw std::invalid_argument(std::string(kWho) + ": plan \"" + plan.name +
                                "\" has no stages (a resource-pool result is one plan per job)");
  }
  formats::check_plan_references(plan, scenario.cluster, scenario.workload);

  const std::vector<Task> tasks = manifest::layout_tasks(input, kWho);
  const std::string name = manifest::job_name(plan, tasks);
  const manifest::Stamp stamp = manifest::stamp(input, name, tasks);
  Json annotations = stamp.annotations;
  if (input.estimate) {
    annotations["hetplan.io/predicted-step-seconds"] =
        manifest::six_digits(input.estimate->step_time_s);
    annotations["hetplan.io/predicted-tokens-per-second"] =
        manifest::six_digits(input.estimate->tokens_per_s);
  }
  if (!input.inputs.empty()) {
    std::vector<std::string> hashes;
    for (const auto& [file, hash] : input.inputs) hashes.push_back(file + " sha256:" + hash);
    annotations["hetplan.io/inputs"] = manifest::join(hashes, "; ");
  }

  // A headless Service named after the plan: each pod is <job>-<task>-<index>.<service>.
  Json service;
  service["apiVersion"] = "v1";
  service["kind"] = "Service";
  service["metadata"]["name"] = name;
  service["metadata"]["labels"] = stamp.labels;
  service["metadata"]["annotations"] = annotations;
  service["spec"]["clusterIP"] = "None";
  service["spec"]["selector"]["hetplan.io/plan"] = name;
  service["spec"]["publishNotReadyAddresses"] = true;  // rendezvous before readiness

  const std::string script = manifest::launch_script(
      tasks,
      "# Placeholder launcher written by hetplan: replace train.py with the trainer. The rank\n"
      "# layout is in the HETPLAN_* variables (docs/export.md, \"kube-scheduler\"); each pod is\n"
      "# <job>-<index>.<service> (an Indexed Job under a headless Service). torchrun numbers the\n"
      "# ranks node_rank * nproc_per_node + local_rank.\n",
      "JOB_COMPLETION_INDEX", name + "-" + tasks.front().name + "-0." + name);

  std::string text = "# The pods of plan \"" + manifest::comment_text(plan.name) +
                     "\" of scenario \"" + manifest::comment_text(scenario.name) +
                     "\", written by hetplan:\n"
                     "# a headless Service and an Indexed Job per pipeline stage, for "
                     "kube-scheduler's profile\n# " +
                     kSchedulerName +
                     " and the extender (docs/export.md, \"kube-scheduler\"). Start the "
                     "scheduler with\n# kube-scheduler-config.yaml and the extender with this "
                     "plan, label the nodes (labels.sh),\n# then: kubectl apply -f <this file>\n"
                     "# No gang: each pod starts when the scheduler places it; the trainer waits "
                     "for every rank.\n";
  if (!input.validation.validated) {
    text += "# UNVALIDATED: " + manifest::comment_text(stamp.unvalidated) + "\n";
  }
  text += "---\n";
  manifest::write_yaml(text, service);
  for (const Task& task : tasks) {
    Json labels = stamp.labels;
    labels["hetplan.io/stage"] = std::to_string(task.stage);
    labels["hetplan.io/island"] = manifest::label_value(task.island->name);

    Json pod = manifest::pod_spec(task, manifest::trainer_container(input, tasks, task, script));
    pod["schedulerName"] = kSchedulerName;
    pod["subdomain"] = name;

    Json job;
    job["apiVersion"] = "batch/v1";
    job["kind"] = "Job";
    job["metadata"]["name"] = name + "-" + task.name;
    job["metadata"]["labels"] = labels;
    job["metadata"]["annotations"] = stamp.annotations;
    job["spec"]["completionMode"] = "Indexed";
    job["spec"]["completions"] = task.replicas;
    job["spec"]["parallelism"] = task.replicas;
    job["spec"]["template"]["metadata"]["labels"] = labels;
    job["spec"]["template"]["metadata"]["annotations"] = stamp.annotations;
    job["spec"]["template"]["spec"] = pod;
    text += "---\n";
    manifest::write_yaml(text, job);
  }
  return {ExportedFile{"kube-scheduler-config.yaml", scheduler_config(requested_resources(input))},
          ExportedFile{"kube-" + name + ".yaml", text}};
}

}  // namespace hetplan::exporters
