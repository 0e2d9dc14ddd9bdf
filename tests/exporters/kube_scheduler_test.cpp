// The kube-scheduler path: the scheduler's configuration and the stages' Indexed Jobs checked
// against their schemas (tests/exporters/data/kubernetes-objects.schema.json, the pod template
// against the Volcano Job CRD's PodTemplateSpec) and against what kube-scheduler's own validation
// checks; the pods name the profile the configuration defines, the extender manages exactly the
// resources they request, and deploy/ holds the configuration of the bundled plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "exporters/export.hpp"
#include "extender/extender.hpp"
#include "formats/loaders.hpp"
#include "tests/exporters/kube_check.hpp"

namespace hetplan::exporters {
namespace {

using nlohmann::json;
using namespace kube_check;

const std::string kSource = HETPLAN_SOURCE_DIR;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Exported {
  json config;
  std::vector<json> objects;  // the Service, then a Job per stage
};

Exported exported(const ExportInput& input) {
  const std::vector<ExportedFile> files = export_kube_scheduler(input);
  EXPECT_EQ(files.size(), 2u);
  Exported out;
  out.config = parse_yaml(files.at(0).text);
  out.objects = parse_yaml_documents(files.at(1).text);
  return out;
}

// The extended resources a Job's pods request, read off the manifest.
std::set<std::string> requested(const std::vector<json>& objects) {
  std::set<std::string> names;
  for (const json& object : objects) {
    if (object["kind"] != "Job") continue;
    for (const json& container : object["spec"]["template"]["spec"]["containers"])
      for (const auto& [name, count] : container["resources"]["requests"].items())
        names.insert(name);
  }
  return names;
}

std::set<std::string> managed(const json& config) {
  std::set<std::string> names;
  for (const json& resource : config["extenders"][0]["managedResources"])
    names.insert(resource["name"].get<std::string>());
  return names;
}

TEST(KubeScheduler, TheBundledPlanValidatesAndItsPodsNameTheProfile) {
  const Exported out = exported(validated_input(bundled(), reference()));
  EXPECT_EQ(scheduler_config_errors(out.config), std::vector<std::string>{})
      << joined(scheduler_config_errors(out.config));
  ASSERT_EQ(out.objects.size(), 9u);  // the Service and eight stages
  EXPECT_EQ(out.objects[0]["kind"], "Service");
  const std::string profile = out.config["profiles"][0]["schedulerName"];
  EXPECT_EQ(profile, kSchedulerName);
  for (const json& object : out.objects) {
    EXPECT_EQ(kube_object_errors(object), std::vector<std::string>{})
        << joined(kube_object_errors(object));
    if (object["kind"] != "Job") continue;
    const json& pod = object["spec"]["template"];
    EXPECT_EQ(pod["spec"]["schedulerName"], profile);
    EXPECT_EQ(pod["spec"]["subdomain"], out.objects[0]["metadata"]["name"]);
    // The extender finds the pod's stage group by these labels.
    EXPECT_TRUE(pod["metadata"]["labels"].contains(std::string(extender::kStageKey)));
    EXPECT_TRUE(pod["metadata"]["labels"].contains(std::string(extender::kIslandKey)));
    EXPECT_EQ(object["spec"]["completionMode"], "Indexed");
    EXPECT_EQ(object["spec"]["completions"], 4);
  }
  // The Service selects the pods.
  EXPECT_EQ(out.objects[0]["spec"]["selector"]["hetplan.io/plan"],
            out.objects[1]["spec"]["template"]["metadata"]["labels"]["hetplan.io/plan"]);
  // The extender's address is the one `hetplan extender` serves by default.
  const std::string url = out.config["extenders"][0]["urlPrefix"];
  EXPECT_EQ(url.substr(url.rfind('/')), extender::ExtenderConfig{}.prefix);
}

// The extender is asked about exactly the pods that request what the plan's pods request: each
// device-plugin and RDMA resource of the manifest, no other.
TEST(KubeScheduler, ManagedResourcesAreExactlyWhatThePodsRequest) {
  const Exported out = exported(validated_input(bundled(), reference()));
  EXPECT_EQ(managed(out.config), requested(out.objects));
  EXPECT_EQ(managed(out.config),
            (std::set<std::string>{"cambricon.com/mlu", "huawei.com/Ascend910", "hygon.com/dcu",
                                   "rdma/hca_shared_devices_a"}));
  // Overridden names follow.
  ExportInput input = validated_input(bundled(), reference());
  input.overrides = {{"mlu", "cambricon.com/mlu370"}, {"rdma", "none"}};
  const Exported other = exported(input);
  EXPECT_EQ(managed(other.config), requested(other.objects));
  EXPECT_EQ(
      managed(other.config),
      (std::set<std::string>{"cambricon.com/mlu370", "huawei.com/Ascend910", "hygon.com/dcu"}));
  EXPECT_EQ(
      requested_resources(input),
      (std::vector<std::string>{"cambricon.com/mlu370", "huawei.com/Ascend910", "hygon.com/dcu"}));
}

// deploy/ holds what `hetplan export plans/default-reference.yaml --to kube-scheduler` writes for
// the bundled site, so its managed resources cannot drift from what the bundled pods request.
TEST(KubeScheduler, DeployHoldsTheBundledPlansConfiguration) {
  const std::vector<ExportedFile> files =
      export_kube_scheduler(validated_input(bundled(), reference()));
  ASSERT_EQ(files.at(0).name, "kube-scheduler-config.yaml");
  EXPECT_EQ(read(kSource + "/deploy/kube-scheduler-extender.yaml"), files.at(0).text);
}

// The validator is real: each of these is refused.
TEST(KubeScheduler, BrokenManifestsAreRefused) {
  const Exported out = exported(validated_input(bundled(), reference()));
  const auto refused = [](const std::vector<std::string>& errors, const std::string& expected) {
    EXPECT_TRUE(mentions(errors, expected)) << expected << ", got:\n" << joined(errors);
  };
  json config = out.config;
  config["extenders"][0]["managedResources"][0].erase("name");
  refused(scheduler_config_errors(config), "Missing required property 'name'");
  config = out.config;
  config["extenders"][0]["nodeCacheCapabel"] = true;
  refused(scheduler_config_errors(config), "'nodeCacheCapabel'");
  config = out.config;
  config["extenders"][0]["weight"] = 0;
  refused(scheduler_config_errors(config), "weight must be positive");
  config = out.config;
  config["extenders"][0]["managedResources"][0]["name"] = "cpu";
  refused(scheduler_config_errors(config), "not an extended resource name");
  json job = out.objects[1];
  job["spec"]["completionMode"] = "Ordered";
  refused(kube_object_errors(job), "[completionMode]: Failed to match against any enum values");
  job = out.objects[1];
  job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["hygon.com/dcu"] =
      "eight";
  refused(kube_object_errors(job), "[limits]");
  job = out.objects[1];
  job["spec"]["template"]["spec"]["schedulerNam"] = kSchedulerName;
  refused(kube_object_errors(job), "'schedulerNam'");
  json service = out.objects[0];
  service["spec"]["clusterIP"] = false;
  refused(kube_object_errors(service), "[clusterIP]: Value type not permitted");
}

// The gate comes first: an unvalidated plan is refused unless allowed, and then stamped. (That
// the bytes are the same in any process: PlanCli.ExportsAndEstimatesAreTheSameBytesInAnyProcess.)
TEST(KubeScheduler, TheGateFirst) {
  const auto a = export_kube_scheduler(validated_input(bundled(), reference()));
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].name, "kube-default-reference.yaml");
  ExportInput input = validated_input(bundled(), reference());
  input.validation.validated = false;
  input.validation.missing = {"island mlu370: no step"};
  EXPECT_THROW(export_kube_scheduler(input), UnvalidatedPlan);
  input.allow_unvalidated = true;
  const auto stamped = export_kube_scheduler(input);
  EXPECT_NE(stamped[1].text.find("# UNVALIDATED: island mlu370: no step\n"), std::string::npos);
  EXPECT_NE(stamped[1].text.find("hetplan.io/validated: \"false\""), std::string::npos);
}

}  // namespace
}  // namespace hetplan::exporters
