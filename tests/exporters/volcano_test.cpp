// Volcano Jobs: the default scenario's top plans exported and checked against the Job CRD's
// openAPIV3Schema (tests/exporters/data, a copy of the Volcano CRD; with valijson) plus what the API server and
// Volcano's admission check beyond it; the gang size, node selection, device resources, rank
// layout, names, quoting, the validation gate and byte-identical output.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "exporters/export.hpp"
#include "formats/loaders.hpp"
#include "importers/k8s_inventory.hpp"
#include "tests/exporters/kube_check.hpp"
#include "planner/search.hpp"
#include "sim/estimator.hpp"
#include "validation/ladder.hpp"


namespace hetplan::exporters {
namespace {

using nlohmann::json;
using namespace kube_check;

const std::string kScenarioPath = HETPLAN_SOURCE_DIR "/scenarios/default.yaml";
const std::string kJobCrd = HETPLAN_SOURCE_DIR "/tests/exporters/data/batch.volcano.sh_jobs.yaml";

struct Planned {
  Plan plan;
  sim::Estimate estimate;
};

struct Fixture {
  Scenario scenario;
  std::vector<Planned> top;  // the top three plans of one job (no resource pool)
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture out;
    out.scenario = formats::load_scenario(kScenarioPath);
    const planner::SearchResult result = planner::search_plans(out.scenario);
    for (const planner::RankedPlan& ranked : result.ranked) {
      if (ranked.mode == planner::Mode::resource_pool || ranked.plan.stages.empty()) continue;
      out.top.push_back({ranked.plan, ranked.estimate});
      if (out.top.size() == 3) break;
    }
    return out;
  }();
  return f;
}

ExportInput input_for(const Scenario& scenario, const Plan& plan, const sim::Estimate* estimate) {
  ExportInput input;
  input.scenario = &scenario;
  input.plan = &plan;
  input.estimate = estimate;
  input.validation.validated = true;
  input.inputs = {{"default.yaml", std::string(64, 'a')}};
  return input;
}

ExportInput input_for(const Planned& planned) {
  return input_for(fixture().scenario, planned.plan, &planned.estimate);
}

// A hand-written plan over the default cluster: 40 layers on Ascend 910B with tp 16 (two nodes
// per replica), 32 on Hygon DCU with tp 8, 8 on Cambricon MLU370 with tp 4.
Plan three_island_plan() {
  Plan plan;
  plan.name = "hand-three-islands";
  plan.micro_batch = 2;
  plan.stages = {{"ascend-910b", 0, 40, 16, 2, {}, {}},
                 {"dcu-k100", 40, 32, 8, 2, {}, {}},
                 {"mlu370", 72, 8, 4, 2, {}, {}}};
  return plan;
}

std::string export_text(const ExportInput& input) {
  const std::vector<ExportedFile> files = export_volcano(input);
  EXPECT_EQ(files.size(), 1u);
  return files.empty() ? std::string() : files.front().text;
}

// What Volcano's job admission (pkg/webhooks/admission/jobs/validate) and the pod validation
// check that the CRD schema does not: task names unique DNS-1123 labels, every pod's host name
// "<job>-<task>-<index>" a DNS label, minAvailable within the total replicas; label and
// node-selector keys.
void admission_errors(const json& job, std::vector<std::string>& errors) {
  const std::string name = job["metadata"].value("name", "");
  if (!std::regex_match(name, kDns1035Label) || name.size() > 63) {
    errors.push_back("metadata.name: not a DNS-1035 label of at most 63: " + name);
  }
  const auto keys_ok = [&](const json& map, const std::string& path) {
    if (!map.is_object()) return;
    for (const auto& [key, value] : map.items()) {
      if (!label_key_ok(key)) errors.push_back(path + ": bad label key " + key);
    }
  };
  keys_ok(job["metadata"].value("labels", json::object()), "metadata.labels");
  std::set<std::string> task_names;
  std::int64_t replicas = 0;
  const json& spec = job["spec"];
  for (const json& task : spec.value("tasks", json::array())) {
    const std::string task_name = task.value("name", "");
    if (!task_names.insert(task_name).second) errors.push_back("duplicate task " + task_name);
    if (task.contains("replicas") && task["replicas"].is_number_integer()) {
      const auto count = task["replicas"].get<std::int64_t>();
      replicas += count;
      const std::string pod =
          name + "-" + task_name + "-" + std::to_string(std::max<std::int64_t>(0, count - 1));
      if (!std::regex_match(pod, kDnsLabel) || pod.size() > 63) {
        errors.push_back("pod host name " + pod + " is not a DNS label of at most 63");
      }
    }
    const json& metadata = task["template"].value("metadata", json::object());
    keys_ok(metadata.value("labels", json::object()), task_name + ".template.metadata.labels");
    keys_ok(task["template"]["spec"].value("nodeSelector", json::object()),
            task_name + ".template.spec.nodeSelector");
  }
  if (spec.contains("minAvailable") && spec["minAvailable"].is_number_integer() &&
      spec["minAvailable"].get<std::int64_t>() > replicas) {
    errors.push_back("spec.minAvailable exceeds the total replicas");
  }
}

#ifdef HETPLAN_HAVE_VALIJSON

const Schema& job_schema() {
  static const Schema* const loaded = [] {
    auto* out = new Schema;
    out->raw = crd_schema(kJobCrd);
    json& template_meta = out->raw["properties"]["spec"]["properties"]["tasks"]["items"]
                                  ["properties"]["template"]["properties"]["metadata"];
    template_meta["properties"]["labels"]["additionalProperties"] = label_value_schema();
    populate(*out);
    return out;
  }();
  return *loaded;
}

#endif

// Every reason the API server (with the CRD), Volcano's admission or kubectl would refuse the
// Job; empty when it would be accepted.
std::vector<std::string> job_errors(const json& job) {
#ifdef HETPLAN_HAVE_VALIJSON
  std::vector<std::string> errors = schema_errors(job_schema(), job);
#else
  std::vector<std::string> errors = {"valijson is not installed (apt-get install libvalijson-dev)"};
#endif
  if (job.is_object() && job.contains("metadata") && job.contains("spec")) {
    admission_errors(job, errors);
  }
  return errors;
}

const json& env_of(const json& task) {
  return task["template"]["spec"]["containers"][0]["env"];
}

std::string env_value(const json& task, const std::string& name) {
  for (const json& entry : env_of(task)) {
    if (entry["name"] == name) return entry["value"];
  }
  ADD_FAILURE() << "no " << name;
  return "";
}

// ---- tests -----------------------------------------------------------------------------------

TEST(Volcano, TopPlansPassTheJobCrdSchema) {
  ASSERT_EQ(fixture().top.size(), 3u);
  for (const Planned& planned : fixture().top) {
    SCOPED_TRACE(planned.plan.name);
    const std::string text = export_text(input_for(planned));
    const json job = parse_yaml(text);
    EXPECT_EQ(job["apiVersion"], "batch.volcano.sh/v1alpha1");
    EXPECT_EQ(job["kind"], "Job");
    const json& annotations = job["metadata"]["annotations"];
    EXPECT_NEAR(std::stod(annotations["hetplan.io/predicted-tokens-per-second"].get<std::string>()),
                planned.estimate.tokens_per_s, planned.estimate.tokens_per_s * 1e-5);
    EXPECT_EQ(job_errors(job), std::vector<std::string>{}) << joined(job_errors(job)) << text;
  }
}

TEST(Volcano, HandPlanPassesTheJobCrdSchema) {
  const Plan plan = three_island_plan();
  const json job = parse_yaml(export_text(input_for(fixture().scenario, plan, nullptr)));
  EXPECT_EQ(job_errors(job), std::vector<std::string>{}) << joined(job_errors(job));
}

// The validator is real: each of these breaks the Job the way a bug in the exporter could, and
// each is refused.
TEST(Volcano, BrokenJobsAreRefused) {
  const std::string text = export_text(input_for(fixture().top.front()));
  const json good = parse_yaml(text);
  ASSERT_TRUE(job_errors(good).empty()) << joined(job_errors(good));

  const auto replace_first = [&](const std::string& from, const std::string& to) {
    std::string broken = text;
    const auto at = broken.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) broken.replace(at, from.size(), to);
    return parse_yaml(broken);
  };
  const auto refused = [](const json& job, const std::string& expected) {
    const std::vector<std::string> errors = job_errors(job);
    EXPECT_FALSE(errors.empty()) << expected;
    EXPECT_TRUE(mentions(errors, expected))
        << "expected an error mentioning " << expected << ", got:\n"
        << joined(errors);
  };

  // A string where the schema wants an integer.
  const std::string replicas =
      "  replicas: " + std::to_string(good["spec"]["tasks"][0]["replicas"].get<int>()) + "\n";
  refused(replace_first(replicas, "  replicas: two\n"),
          "[replicas]: Value type not permitted by 'type' constraint");
  // An annotation that YAML reads as a boolean.
  refused(replace_first("hetplan.io/validated: \"true\"", "hetplan.io/validated: true"),
          "[annotations][hetplan.io/validated]: Value type not permitted");
  // A required field missing: a container without a name.
  json broken = good;
  broken["spec"]["tasks"][0]["template"]["spec"]["containers"][0].erase("name");
  refused(broken, "[containers][0]: Missing required property 'name'");
  // An unknown field (a typo) that the API server would drop or refuse.
  broken = good;
  broken["spec"]["minAvailabel"] = 3;
  refused(broken,
          "could not be validated using 'properties' or 'additionalProperties' "
          "constraints: 'minAvailabel'");
  // A policy event Volcano does not know.
  broken = good;
  broken["spec"]["policies"][0]["event"] = "PodEvict";
  refused(broken, "[policies][0][event]: Failed to match against any enum values");
  // Two env entries with one name (env is a list map keyed by name).
  broken = good;
  auto& env = broken["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["env"];
  env.push_back(env[0]);
  refused(broken, "containers[0].env: duplicate entry in a list of type map");
  // A replica count that does not fit int32.
  broken = good;
  broken["spec"]["tasks"][0]["replicas"] = 4294967296LL;
  refused(broken, ".spec.tasks[0].replicas: out of int32 range");
  // A gang larger than the job.
  broken = good;
  broken["spec"]["minAvailable"] = 100000;
  refused(broken, "minAvailable exceeds");
  // A label value Kubernetes refuses.
  broken = good;
  broken["spec"]["tasks"][0]["template"]["metadata"]["labels"]["hetplan.io/island"] = "bad value!";
  refused(broken, "[hetplan.io/island]: Failed to match regex");
}

TEST(Volcano, MinAvailableIsEveryPod) {
  for (const Planned& planned : fixture().top) {
    SCOPED_TRACE(planned.plan.name);
    const json job = parse_yaml(export_text(input_for(planned)));
    long long pods = 0;
    long long expected = 0;
    for (const json& task : job["spec"]["tasks"]) pods += task["replicas"].get<long long>();
    for (const PlanStage& stage : planned.plan.stages) {
      const Island* island = fixture().scenario.cluster.find_island(stage.island);
      const int per_replica = (stage.tp + island->chips_per_node - 1) / island->chips_per_node;
      expected += static_cast<long long>(stage.dp) * per_replica;
    }
    EXPECT_EQ(job["spec"]["minAvailable"], pods);
    EXPECT_EQ(pods, expected);
    EXPECT_EQ(job["spec"]["schedulerName"], "volcano");
    EXPECT_EQ(job["spec"]["queue"], "default");
    EXPECT_EQ(job["spec"]["plugins"], json({{"env", json::array()}, {"svc", json::array()}}));
    EXPECT_EQ(job["spec"]["policies"],
              json::parse(R"([{"event": "PodEvicted", "action": "RestartJob"}])"));
  }
}

TEST(Volcano, EveryTaskSelectsItsIslandsNodes) {
  for (const Planned& planned : fixture().top) {
    SCOPED_TRACE(planned.plan.name);
    const json job = parse_yaml(export_text(input_for(planned)));
    ASSERT_EQ(job["spec"]["tasks"].size(), planned.plan.stages.size());
    for (std::size_t i = 0; i < planned.plan.stages.size(); ++i) {
      const Island& island = *fixture().scenario.cluster.find_island(planned.plan.stages[i].island);
      const json& selector = job["spec"]["tasks"][i]["template"]["spec"]["nodeSelector"];
      for (const char* label :
           {"accelerator.vendor", "accelerator.model", "runtime.version", "fabric.zone"}) {
        ASSERT_TRUE(island.labels.count(label)) << label;
        EXPECT_EQ(selector.value(label, ""), island.labels.at(label)) << label;
      }
    }
  }
}

TEST(Volcano, DeviceResourcePerIsland) {
  const Plan plan = three_island_plan();
  const json job = parse_yaml(export_text(input_for(fixture().scenario, plan, nullptr)));
  const json& tasks = job["spec"]["tasks"];
  ASSERT_EQ(tasks.size(), 3u);
  // The stock plugins' default names: Cambricon's registers cambricon.com/mlu unless it runs
  // with --enable-device-type; the RDMA shared-device plugin's default resource.
  const std::vector<std::string> devices = {"huawei.com/Ascend910", "hygon.com/dcu",
                                            "cambricon.com/mlu"};
  const std::vector<int> chips = {8, 8, 4};
  for (std::size_t i = 0; i < 3; ++i) {
    const json& resources = tasks[i]["template"]["spec"]["containers"][0]["resources"];
    const json expected = {{devices[i], chips[i]}, {"rdma/hca_shared_devices_a", 1}};
    EXPECT_EQ(resources["limits"], expected) << i;
    EXPECT_EQ(resources["requests"], expected) << i;
    EXPECT_EQ(tasks[i]["template"]["spec"]["containers"][0]["securityContext"],
              json::parse(R"({"capabilities": {"add": ["IPC_LOCK"]}})"));
  }

  // Overridden names (e.g. HAMi's) are used as given; an empty RDMA name requests none.
  ExportInput input = input_for(fixture().scenario, plan, nullptr);
  input.resources.device["ascend"] = "huawei.com/ascend910b";
  input.resources.rdma.clear();
  const json overridden = parse_yaml(export_text(input));
  EXPECT_EQ(
      overridden["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["limits"],
      json({{"huawei.com/ascend910b", 8}}));

  input.resources.device.erase("mlu");
  try {
    export_volcano(input);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "export_volcano: stage 2 (island \"mlu370\"): no device-plugin resource name for "
                 "chip family \"mlu\" (chip cambricon-mlu370-x8); resources.device names ascend, "
                 "dcu, nvidia; give the island resources.device in the cluster file or "
                 "--resource mlu370=NAME");
  }
}

TEST(Volcano, TensorParallelGroupsWiderThanANode) {
  const Plan plan = three_island_plan();
  const json job = parse_yaml(export_text(input_for(fixture().scenario, plan, nullptr)));
  const json& tasks = job["spec"]["tasks"];
  // tp 16 on 8-chip nodes: two pods of 8 chips per replica, dp 2: four pods.
  EXPECT_EQ(tasks[0]["replicas"], 4);
  EXPECT_EQ(env_value(tasks[0], "HETPLAN_PODS_PER_REPLICA"), "2");
  EXPECT_EQ(env_value(tasks[0], "HETPLAN_CHIPS_PER_POD"), "8");
  EXPECT_EQ(tasks[1]["replicas"], 2);
  EXPECT_EQ(tasks[2]["replicas"], 2);
  EXPECT_EQ(job["spec"]["minAvailable"], 8);

  Plan uneven = plan;
  uneven.stages[0].tp = 12;
  try {
    export_volcano(input_for(fixture().scenario, uneven, nullptr));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "export_volcano: stage 0 (island \"ascend-910b\"): tp 12 spans nodes of 8 chips "
                 "unevenly; a tensor-parallel group wider than a node must fill whole nodes");
  }
}

TEST(Volcano, RankLayoutInTheEnvironment) {
  const Plan plan = three_island_plan();
  const json job = parse_yaml(export_text(input_for(fixture().scenario, plan, nullptr)));
  const json& task = job["spec"]["tasks"][1];
  EXPECT_EQ(task["name"], "s01-dcu-k100");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"HETPLAN_STAGE", "1"},
      {"HETPLAN_STAGES", "3"},
      {"HETPLAN_FIRST_LAYER", "40"},
      {"HETPLAN_NUM_LAYERS", "32"},
      {"HETPLAN_TP", "8"},
      {"HETPLAN_DP", "2"},
      {"HETPLAN_ISLAND", "dcu-k100"},
      {"HETPLAN_MICRO_BATCH", "2"},
      {"HETPLAN_GLOBAL_BATCH", "512"},
      {"HETPLAN_SCHEDULE", "1f1b"},
      {"HETPLAN_VIRTUAL_STAGES", "1"},
      {"HETPLAN_MICRO_BATCH_WEIGHT", "1"},
      {"HETPLAN_CHIPS_PER_POD", "8"},
      {"HETPLAN_PODS_PER_REPLICA", "1"},
      {"HETPLAN_POD_OFFSET", "4"},
      {"HETPLAN_PODS", "8"},
      {"HETPLAN_RANK_OFFSET", "32"},
      {"HETPLAN_WORLD_SIZE", "56"}};
  ASSERT_EQ(env_of(task).size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(env_of(task)[i]["name"], expected[i].first);
    EXPECT_EQ(env_of(task)[i]["value"], expected[i].second) << expected[i].first;
  }
  const json& container = task["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["image"], "hetplan/trainer:latest");
  ASSERT_EQ(container["command"].size(), 3u);
  EXPECT_EQ(container["command"][0], "/bin/sh");
  EXPECT_EQ(container["command"][1], "-c");
  const std::string script = container["command"][2];
  EXPECT_NE(script.find("--master-addr=\"$(head -n 1 /etc/volcano/s00_ascend_910b.host)\""),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("--node-rank=\"$((HETPLAN_POD_OFFSET + VC_TASK_INDEX))\""),
            std::string::npos);
  // Pods of 8 and 4 chips: the placeholder says torchrun's ranks do not fit.
  EXPECT_NE(script.find("WARNING: the pods of this Job hold different numbers of chips (4, 8)"),
            std::string::npos)
      << script;
}

TEST(Volcano, UnvalidatedPlansNeedPermissionAndAreStamped) {
  const Planned& planned = fixture().top.front();
  ExportInput input = input_for(planned);
  const validation::LadderReport ladder = validation::ladder_state(fixture().scenario.cluster, {});
  input.validation = validation::plan_validation(ladder, planned.plan);
  ASSERT_FALSE(input.validation.validated);
  ASSERT_FALSE(input.validation.missing.empty());
  try {
    export_volcano(input);
    FAIL() << "expected UnvalidatedPlan";
  } catch (const UnvalidatedPlan& error) {
    EXPECT_NE(std::string(error.what()).find(input.validation.missing.front()), std::string::npos)
        << error.what();
  }

  input.allow_unvalidated = true;
  const std::string text = export_text(input);
  const json job = parse_yaml(text);
  std::string missing;
  for (const auto& item : input.validation.missing) missing += (missing.empty() ? "" : "; ") + item;
  EXPECT_EQ(job["metadata"]["annotations"]["hetplan.io/validated"], "false");
  EXPECT_EQ(job["metadata"]["annotations"]["hetplan.io/unvalidated"], missing);
  for (const json& task : job["spec"]["tasks"]) {
    EXPECT_EQ(task["template"]["metadata"]["annotations"]["hetplan.io/unvalidated"], missing);
    EXPECT_EQ(task["template"]["metadata"]["annotations"]["hetplan.io/validated"], "false");
  }
  EXPECT_NE(text.find("# UNVALIDATED: "), std::string::npos);
  EXPECT_EQ(job_errors(job), std::vector<std::string>{}) << joined(job_errors(job));

  // A validated plan carries no such annotation.
  const json validated = parse_yaml(export_text(input_for(planned)));
  EXPECT_EQ(validated["metadata"]["annotations"]["hetplan.io/validated"], "true");
  EXPECT_FALSE(validated["metadata"]["annotations"].contains("hetplan.io/unvalidated"));
  EXPECT_EQ(validated["metadata"]["annotations"]["hetplan.io/plan"], planned.plan.name);
  EXPECT_EQ(validated["metadata"]["annotations"]["hetplan.io/scenario"], "default");
}

// The file is named after the Job it holds. (That the bytes are the same in any process:
// PlanCli.ExportsAndEstimatesAreTheSameBytesInAnyProcess.)
TEST(Volcano, TheFileIsNamedAfterItsJob) {
  for (const Planned& planned : fixture().top) {
    const std::vector<ExportedFile> files = export_volcano(input_for(planned));
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files[0].name,
              "volcano-" + parse_yaml(files[0].text)["metadata"]["name"].get<std::string>() + ".yaml");
  }
}

// Names: the plan's name becomes a DNS label starting with a letter, cut (with a stable hash)
// so that every pod host name "<job>-<task>-<index>" fits 63 characters.
TEST(Volcano, JobNamesFitPodHostNames) {
  Plan plan = three_island_plan();
  plan.name = "Mix: 910B + DCU/K100 (v2)";
  json job = parse_yaml(export_text(input_for(fixture().scenario, plan, nullptr)));
  EXPECT_EQ(job["metadata"]["name"], "mix-910b-dcu-k100-v2");
  EXPECT_EQ(job["metadata"]["annotations"]["hetplan.io/plan"], plan.name);

  plan.name = "42-stages";
  job = parse_yaml(export_text(input_for(fixture().scenario, plan, nullptr)));
  EXPECT_EQ(job["metadata"]["name"], "hetplan-42-stages");

  plan.name = std::string(80, 'x') + "-one";
  const json one = parse_yaml(export_text(input_for(fixture().scenario, plan, nullptr)));
  plan.name = std::string(80, 'x') + "-two";
  const json two = parse_yaml(export_text(input_for(fixture().scenario, plan, nullptr)));
  const std::string a = one["metadata"]["name"];
  const std::string b = two["metadata"]["name"];
  EXPECT_NE(a, b);
  EXPECT_EQ(a.substr(0, 20), std::string(20, 'x'));
  // The longest pod: the job, "s00-ascend-910b" and index 3.
  EXPECT_EQ(a.size() + 1 + std::string("s00-ascend-910b").size() + 1 + 1, 63u);
  EXPECT_EQ(job_errors(one), std::vector<std::string>{}) << joined(job_errors(one));
  EXPECT_EQ(
      parse_yaml(export_text(input_for(fixture().scenario, plan, nullptr)))["metadata"]["name"], b);
}

// Strings that YAML would read as something else are quoted; they come back as the same string.
TEST(Volcano, AwkwardStringsRoundTrip) {
  Scenario scenario = fixture().scenario;
  const std::vector<std::string> values = {"no", "ON", "null", "012", "0x1F", "1e3", "true", "y"};
  for (std::size_t i = 0; i < values.size(); ++i) {
    scenario.cluster.islands[0].labels["team" + std::to_string(i)] = values[i];
  }
  scenario.name = "a scenario: with \"quotes\"\nand a newline";
  const Plan plan = three_island_plan();
  ExportInput input = input_for(scenario, plan, nullptr);
  input.validation.validated = false;
  input.validation.missing = {"island x: no step # really", "- dash: colon"};
  input.allow_unvalidated = true;
  const std::string text = export_text(input);
  const json job = parse_yaml(text);
  EXPECT_EQ(job_errors(job), std::vector<std::string>{}) << joined(job_errors(job)) << text;
  const json& selector = job["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"];
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(selector["team" + std::to_string(i)], values[i]) << values[i];
  }
  EXPECT_EQ(job["metadata"]["annotations"]["hetplan.io/scenario"], scenario.name);
  EXPECT_EQ(job["metadata"]["annotations"]["hetplan.io/unvalidated"],
            "island x: no step # really; - dash: colon");
  EXPECT_EQ(job["metadata"]["labels"]["hetplan.io/scenario"],
            "a-scenario--with--quotes--and-a-newline");

  // A label the nodes cannot carry is refused.
  scenario.cluster.islands[0].labels["bad key!"] = "x";
  EXPECT_THROW(export_volcano(input), std::invalid_argument);
}

TEST(Volcano, RefusesWhatItCannotExpress) {
  Plan empty;
  empty.name = "pool";
  ExportInput input = input_for(fixture().scenario, empty, nullptr);
  try {
    export_volcano(input);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "export_volcano: plan \"pool\" has no stages (a resource-pool result is one plan "
                 "per job)");
  }
  ExportInput none;
  EXPECT_THROW(export_volcano(none), std::invalid_argument);
  Plan wrong_island = three_island_plan();
  wrong_island.stages[1].island = "nowhere";
  EXPECT_THROW(export_volcano(input_for(fixture().scenario, wrong_island, nullptr)), InputError);
}


// Resource names and images resolve island first: export overrides (island, then family), then
// the cluster file's island, then the family default; RDMA likewise; Ascend jobs and their pods
// carry MindCluster's ring-controller.atlas.
TEST(Volcano, ResourcesImagesAndAscendLabelsPerIsland) {
  Scenario scenario = fixture().scenario;
  for (auto& island : scenario.cluster.islands) {
    if (island.name == "mlu370") {
      island.device_resource = "cambricon.com/mlu370";  // a plugin with --enable-device-type
      island.rdma_resource = "rdma/roce_mlu";
      island.image = "registry.local/neuware-train:1";
    }
  }
  const Plan plan = three_island_plan();
  ExportInput input = input_for(scenario, plan, nullptr);
  input.island_images["dcu-k100"] = "registry.local/dtk-train:24.04";
  const json job = parse_yaml(export_text(input));
  const json& tasks = job["spec"]["tasks"];
  ASSERT_EQ(tasks.size(), 3u);
  auto container = [&](std::size_t i) { return tasks[i]["template"]["spec"]["containers"][0]; };
  EXPECT_EQ(container(2)["resources"]["limits"],
            json({{"cambricon.com/mlu370", 4}, {"rdma/roce_mlu", 1}}));
  EXPECT_EQ(container(0)["image"], kDefaultImage);
  EXPECT_EQ(container(1)["image"], "registry.local/dtk-train:24.04");
  EXPECT_EQ(container(2)["image"], "registry.local/neuware-train:1");
  EXPECT_EQ(job["metadata"]["labels"]["ring-controller.atlas"], "ascend-910b");
  EXPECT_EQ(tasks[0]["template"]["metadata"]["labels"]["ring-controller.atlas"], "ascend-910b");

  // Overrides beat the cluster file: an island's before its family's; rdma for every island.
  input.overrides = {{"mlu", "cambricon.com/mlu"}, {"dcu-k100", "hami.io/dcu"},
                     {"dcu", "hygon.com/dcu"}, {"rdma", "rdma/hca"}};
  const json overridden = parse_yaml(export_text(input));
  const json& t = overridden["spec"]["tasks"];
  EXPECT_EQ(t[1]["template"]["spec"]["containers"][0]["resources"]["limits"],
            json({{"hami.io/dcu", 8}, {"rdma/hca", 1}}));
  EXPECT_EQ(t[2]["template"]["spec"]["containers"][0]["resources"]["limits"],
            json({{"cambricon.com/mlu", 4}, {"rdma/hca", 1}}));
  EXPECT_NO_THROW(check_export_overrides(input, "--resource", "--image"));

  // A key that names nothing of the plan is an error listing what is valid.
  input.overrides = {{"cambricon", "cambricon.com/mlu"}};
  try {
    check_export_overrides(input, "--resource", "--image");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "export: --resource: expected a chip family of the plan (ascend, dcu, mlu), one "
                 "of its islands (ascend-910b, dcu-k100, mlu370) or rdma, got \"cambricon\"");
  }
  input.overrides.clear();
  input.island_images = {{"gpu", "x"}};
  EXPECT_THROW(check_export_overrides(input, "--resource", "--image"), InputError);
}

TEST(Volcano, AscendRingControllerValues) {
  ChipProfile chip;
  chip.family = "ascend";
  chip.id = "ascend-910b";
  EXPECT_EQ(ascend_ring_controller(chip), "ascend-910b");
  chip.id = "ascend-910c";
  EXPECT_EQ(ascend_ring_controller(chip), "ascend-910b");
  chip.id = "ascend-910";
  EXPECT_EQ(ascend_ring_controller(chip), "ascend-910");
  chip.id = "ascend-310p";
  EXPECT_EQ(ascend_ring_controller(chip), "");
  chip.family = "nvidia";
  chip.id = "nvidia-a100";
  EXPECT_EQ(ascend_ring_controller(chip), "");
}


TEST(Inventory, KubernetesQuantitiesAsKubernetesReadsThem) {
  using importers::kubernetes_count;
  EXPECT_EQ(kubernetes_count("8"), 8);
  EXPECT_EQ(kubernetes_count("1k"), 1000);
  EXPECT_EQ(kubernetes_count("2Ki"), 2048);
  EXPECT_EQ(kubernetes_count("1e3"), 1000);
  EXPECT_EQ(kubernetes_count("1.5k"), 1500);
  EXPECT_EQ(kubernetes_count("16Gi"), 16LL << 30);
  EXPECT_EQ(kubernetes_count("3000m"), 3);
  EXPECT_EQ(kubernetes_count("0"), 0);
  EXPECT_FALSE(kubernetes_count("500m"));  // half a device
  EXPECT_FALSE(kubernetes_count("1.5"));
  EXPECT_FALSE(kubernetes_count("-1"));
  EXPECT_FALSE(kubernetes_count("8 "));
  EXPECT_FALSE(kubernetes_count("k"));
  EXPECT_FALSE(kubernetes_count("1Zi"));
  EXPECT_FALSE(kubernetes_count("9e99"));
}

}  // namespace
}  // namespace hetplan::exporters
