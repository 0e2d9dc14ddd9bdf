// A held-out site from `kubectl get nodes -o json` to the scheduler, as a user runs it: nine
// nodes with stock Ascend, Hygon and Cambricon device plugins, the RDMA shared-device plugin and
// the site's own labels (tests/importers/data/kubectl-get-nodes-site-labels.README.md), imported,
// its zone link answered, a Llama-70B plan written for it, exported for Volcano and for
// kube-scheduler, labels.sh applied to the nodes, and the extender started from the plan alone,
// which must pass exactly the nodes each stage was placed on. And the bundled site's exports:
// the HyperNodes, the labels the extender scores by, the scheduler configuration in deploy/.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/cli_run.hpp"
#include "tests/support/temp_folder.hpp"

extern char** environ;

namespace {

using hetplan::e2e::hetplan;
using hetplan::e2e::read_text;
using hetplan::e2e::TempFolder;
using nlohmann::json;

const std::string kSource = HETPLAN_SOURCE_DIR;

// The lines of a labels.sh that label a node: node -> its labels.
std::map<std::string, std::map<std::string, std::string>> labels_of(const std::string& script) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::istringstream lines(script);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("kubectl label node ", 0) != 0) continue;
    std::istringstream words(line.substr(19));
    std::string node;
    words >> node;
    auto& labels = out[node];
    for (std::string word; words >> word;) {
      const auto eq = word.find('=');
      if (eq != std::string::npos) labels[word.substr(0, eq)] = word.substr(eq + 1);
    }
  }
  return out;
}

// `hetplan extender` in a process of its own, stopped when this goes.
class Extender {
 public:
  explicit Extender(const std::string& args) {
    int out[2];
    if (pipe(out) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::vector<std::string> words = {HETPLAN_BINARY, "extender"};
    std::istringstream split(args);
    for (std::string word; split >> word;) words.push_back(word);
    std::vector<char*> argv;
    for (auto& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, HETPLAN_BINARY, &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    // "serving plan NAME on 127.0.0.1:PORT", or the error it ends with.
    std::string line;
    char c = 0;
    while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
    close(out[0]);
    first_line_ = line;
    const auto colon = line.rfind(':');
    if (line.rfind("serving plan ", 0) == 0 && colon != std::string::npos)
      port_ = std::stoi(line.substr(colon + 1));
  }
  ~Extender() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
  }
  Extender(const Extender&) = delete;
  Extender& operator=(const Extender&) = delete;

  int port() const { return port_; }
  const std::string& first_line() const { return first_line_; }
  // Sends `signal_number` and returns the exit status once the process has ended.
  int end_with(int signal_number) {
    int status = -1;
    if (pid_ > 0) {
      kill(pid_, signal_number);
      waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    return status;
  }

  // POSTs a JSON body to `path`; the response body, empty on failure.
  std::string post(const std::string& path, const std::string& body) const {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      close(fd);
      return "";
    }
    const std::string request = "POST " + path +
                                " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                "Content-Type: application/json\r\nConnection: close\r\n"
                                "Content-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    for (std::size_t sent = 0; sent < request.size();) {
      const ssize_t n = write(fd, request.data() + sent, request.size() - sent);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    std::string response;
    char buffer[65536];
    for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;)
      response.append(buffer, static_cast<std::size_t>(n));
    close(fd);
    const auto body_at = response.find("\r\n\r\n");
    return body_at == std::string::npos ? "" : response.substr(body_at + 4);
  }

 private:
  pid_t pid_ = -1;
  int port_ = -1;
  std::string first_line_;
};

std::string sha256_of(const std::string& path) {
  FILE* pipe = popen(("sha256sum '" + path + "'").c_str(), "r");
  char digest[65] = {};
  const bool read = pipe && fread(digest, 1, 64, pipe) == 64;
  if (pipe) pclose(pipe);
  return read ? std::string(digest, 64) : "";
}

// Comment text as one line: each line break and the "#" and spaces after it become one space, so
// that a phrase is found wherever the comment was wrapped.
std::string unwrapped(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      out += text[i];
      continue;
    }
    std::size_t next = i + 1;
    if (next < text.size() && text[next] == '#') {
      ++next;
      while (next < text.size() && text[next] == ' ') ++next;
      out += ' ';
      i = next - 1;
    } else {
      out += '\n';
    }
  }
  return out;
}

std::string scalar(const YAML::Node& node) {
  return node ? node.as<std::string>() : std::string("<none>");
}

// The site imported, its zone link answered; a scenario with the bundled Llama-70B workload; a
// plan written by hand that names the scenario: four Ascend stages of one node each, two DCU
// stages of one node, one MLU stage on the MLU node that is not cordoned.
struct HeldOutSite {
  TempFolder folder;
  std::string plan;
  std::string import_output;
  std::string cluster_text;

  HeldOutSite() {
    const std::string site = folder.path() + "/site";
    const auto imported = hetplan(
        "inventory import tests/importers/data/kubectl-get-nodes-site-labels.json "
        "--name site --out " +
        site + "/cluster.yaml");
    import_output = imported.out;
    cluster_text = read_text(site + "/cluster.yaml");
    std::string text = cluster_text;
    const std::string commented = "  # zone_links:\n  #   - {between";
    const auto at = text.find(commented);
    if (at != std::string::npos)
      text.replace(at, commented.size(), "  zone_links:\n    - {between");
    std::ofstream(site + "/cluster.yaml") << text;
    std::ofstream(site + "/scenario.yaml")
        << "schema: hetplan/scenario/v1\nname: site\ncluster: cluster.yaml\nworkload: " << kSource
        << "/workloads/llama-70b-pretrain.yaml\nobjective: throughput\n";
    plan = site + "/plan.yaml";
    std::ofstream(plan)
        << "schema: hetplan/plan/v1\nname: site-llama\nschedule: 1f1b\nmicro_batch: 1\n"
        << "scenario: {path: scenario.yaml, sha256: " << sha256_of(site + "/scenario.yaml") << "}\n"
        << "stages:\n"
        << "  - {island: ascend-910b-313t, first_layer: 0, num_layers: 12, tp: 8, dp: 1}\n"
        << "  - {island: ascend-910b-313t, first_layer: 12, num_layers: 12, tp: 8, dp: 1}\n"
        << "  - {island: ascend-910b-313t, first_layer: 24, num_layers: 12, tp: 8, dp: 1}\n"
        << "  - {island: ascend-910b-313t, first_layer: 36, num_layers: 12, tp: 8, dp: 1}\n"
        << "  - {island: hygon-k100-ai, first_layer: 48, num_layers: 14, tp: 8, dp: 1}\n"
        << "  - {island: hygon-k100-ai, first_layer: 62, num_layers: 14, tp: 8, dp: 1}\n"
        << "  - {island: cambricon-mlu370-x8, first_layer: 76, num_layers: 4, tp: 8, dp: 1}\n";
  }

  hetplan::e2e::CliRun export_to(const std::string& target) const {
    return hetplan("export " + plan + " --allow-unvalidated --to " + target + " --out " +
                   folder.path() + "/out");
  }
};

TEST(SiteCli, TheDevicePluginDecidesTheChipAndTheSiteLabelIsAsked) {
  const HeldOutSite site;
  EXPECT_NE(site.import_output.find("wrote "), std::string::npos) << site.import_output;
  EXPECT_NE(site.cluster_text.find(
                "    chip: ascend-910b-313t  # from huawei.com/Ascend910 and \"910B3\"\n"),
            std::string::npos)
      << site.cluster_text;
  EXPECT_NE(unwrapped(site.cluster_text)
                .find("- island ascend-910b-313t: chip: the site's label "
                      "accelerator.model=ascend-910b disagrees with the device plugin "
                      "(node.kubernetes.io/npu.chip.name=910B3, servertype=Ascend910B-20, "),
            std::string::npos)
      << site.cluster_text;
  // The launch file describes the part the node selector pins: 20 AI cores, the 313T class.
  ASSERT_EQ(site.export_to("megatron").exit_code, 0) << site.export_to("megatron").out;
  const std::string launch =
      unwrapped(read_text(site.folder.path() + "/out/launch-ascend-910b-313t.sh"));
  EXPECT_NE(launch.find("20 AI cores"), std::string::npos) << launch;
  EXPECT_EQ(launch.find("24 AI cores"), std::string::npos) << launch;
  ASSERT_EQ(site.export_to("volcano").exit_code, 0);
  const YAML::Node job = YAML::LoadFile(site.folder.path() + "/out/volcano-site-llama.yaml");
  const YAML::Node selector = job["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"];
  EXPECT_EQ(scalar(selector["accelerator.model"]), "ascend-910b-313t");
  EXPECT_EQ(scalar(selector["node.kubernetes.io/npu.chip.name"]), "910B3");
  EXPECT_EQ(scalar(selector["servertype"]), "Ascend910B-20");
}

TEST(SiteCli, TheExtenderFromThePlanAlonePassesExactlyThePlacedNodes) {
  const HeldOutSite site;
  const auto labels = site.export_to("labels");
  ASSERT_EQ(labels.exit_code, 0) << labels.out;
  json nodes =
      json::parse(read_text(kSource + "/tests/importers/data/kubectl-get-nodes-site-labels.json"));
  for (const auto& [name, node_labels] :
       labels_of(read_text(site.folder.path() + "/out/labels.sh"))) {
    EXPECT_TRUE(node_labels.count("hetplan.io/leaf")) << name;
    for (auto& item : nodes["items"])
      if (item["metadata"]["name"] == name)
        for (const auto& [key, value] : node_labels) item["metadata"]["labels"][key] = value;
  }

  const Extender extender("--plan " + site.plan + " --listen 127.0.0.1:0");
  ASSERT_GT(extender.port(), 0) << extender.first_line();
  const std::vector<std::pair<std::string, std::string>> stages = {
      {"ascend-910b-313t", "a910b-01"},    {"ascend-910b-313t", "a910b-02"},
      {"ascend-910b-313t", "a910b-03"},    {"ascend-910b-313t", "a910b-04"},
      {"hygon-k100-ai", "dcu-k100-01"},    {"hygon-k100-ai", "dcu-k100-02"},
      {"cambricon-mlu370-x8", "mlu370-02"}};  // mlu370-01 is cordoned
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const json pod = {
        {"metadata",
         {{"name", "pod"},
          {"labels",
           {{"hetplan.io/island", stages[s].first}, {"hetplan.io/stage", std::to_string(s)}}}}},
        {"spec", {{"schedulerName", "hetplan-scheduler"}}}};
    const json args = {
        {"Pod", pod}, {"Nodes", {{"items", nodes["items"]}}}, {"NodeNames", nullptr}};
    const std::string answer = extender.post("/hetplan/filter", args.dump());
    ASSERT_FALSE(answer.empty()) << "stage " << s;
    const json result = json::parse(answer);
    std::vector<std::string> passed;
    for (const json& node : result["Nodes"]["items"]) passed.push_back(node["metadata"]["name"]);
    EXPECT_EQ(passed, std::vector<std::string>{stages[s].second})
        << "stage " << s << ": " << answer;
  }
}

// The extender reads the scenario its plan names, not the bundled one: a plan of the site's DCU
// island alone, started with --plan only, serves and passes each stage its node (named in the
// cluster file: no label needed to find it), with the site's runtime and zone labels.
TEST(SiteCli, TheExtenderReadsTheScenarioItsPlanNames) {
  const HeldOutSite site;
  const std::string plan = site.folder.path() + "/site/dcu-plan.yaml";
  std::ofstream(plan)
      << "schema: hetplan/plan/v1\nname: site-dcu\nschedule: 1f1b\nmicro_batch: 1\n"
      << "scenario: {path: scenario.yaml, sha256: "
      << sha256_of(site.folder.path() + "/site/scenario.yaml") << "}\n"
      << "stages:\n"
      << "  - {island: hygon-k100-ai, first_layer: 0, num_layers: 40, tp: 8, dp: 1}\n"
      << "  - {island: hygon-k100-ai, first_layer: 40, num_layers: 40, tp: 8, dp: 1}\n";
  const Extender extender("--plan " + plan + " --listen 127.0.0.1:0");
  ASSERT_GT(extender.port(), 0) << extender.first_line();
  const json nodes =
      json::parse(read_text(kSource + "/tests/importers/data/kubectl-get-nodes-site-labels.json"));
  for (const auto& [stage, expected] : std::vector<std::pair<std::string, std::string>>{
           {"0", "dcu-k100-01"}, {"1", "dcu-k100-02"}}) {
    const json pod = {
        {"metadata",
         {{"name", "pod"},
          {"labels", {{"hetplan.io/island", "hygon-k100-ai"}, {"hetplan.io/stage", stage}}}}}};
    const json args = {
        {"Pod", pod}, {"Nodes", {{"items", nodes["items"]}}}, {"NodeNames", nullptr}};
    const json result = json::parse(extender.post("/hetplan/filter", args.dump()));
    std::vector<std::string> passed;
    for (const json& node : result["Nodes"]["items"]) passed.push_back(node["metadata"]["name"]);
    EXPECT_EQ(passed, std::vector<std::string>{expected})
        << "stage " << stage << ": " << result.dump();
  }
}

TEST(SiteCli, ThePodsForKubeSchedulerNameTheProfileItsConfigurationDefines) {
  const HeldOutSite site;
  const auto run = site.export_to("kube-scheduler");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const YAML::Node config = YAML::LoadFile(site.folder.path() + "/out/kube-scheduler-config.yaml");
  const std::string profile = scalar(config["profiles"][0]["schedulerName"]);
  std::set<std::string> managed;
  for (const auto& resource : config["extenders"][0]["managedResources"])
    managed.insert(scalar(resource["name"]));
  std::set<std::string> requested;
  int jobs = 0;
  for (const YAML::Node& object :
       YAML::LoadAllFromFile(site.folder.path() + "/out/kube-site-llama.yaml")) {
    if (scalar(object["kind"]) != "Job") continue;
    ++jobs;
    const YAML::Node spec = object["spec"]["template"]["spec"];
    EXPECT_EQ(scalar(spec["schedulerName"]), profile);
    for (const auto& entry : spec["containers"][0]["resources"]["requests"])
      requested.insert(entry.first.as<std::string>());
  }
  EXPECT_EQ(jobs, 7);
  EXPECT_EQ(managed, requested);
  EXPECT_EQ(managed, (std::set<std::string>{"cambricon.com/mlu", "huawei.com/Ascend910",
                                            "hygon.com/dcu", "rdma/hca_shared_devices_a"}));
}

// ---- the bundled site ------------------------------------------------------------------------

hetplan::e2e::CliRun export_bundled(const std::string& target, const std::string& out) {
  return hetplan(
      "export plans/default-reference.yaml --scenario scenarios/default.yaml "
      "--allow-unvalidated --to " +
      target + " --out " + out);
}

// deploy/ configures the scheduler profile the exported pods name, and its extender manages
// exactly the resources the bundled plan's pods request, in either export.
TEST(BundledCli, DeployConfiguresWhatTheExportedPodsRequest) {
  TempFolder folder;
  const YAML::Node deploy = YAML::LoadFile(kSource + "/deploy/kube-scheduler-extender.yaml");
  std::set<std::string> managed;
  for (const auto& resource : deploy["extenders"][0]["managedResources"])
    managed.insert(scalar(resource["name"]));
  ASSERT_EQ(export_bundled("volcano", folder.path()).exit_code, 0);
  std::set<std::string> requested;
  const YAML::Node job = YAML::LoadFile(folder.path() + "/volcano-default-reference.yaml");
  for (const auto& task : job["spec"]["tasks"])
    for (const auto& entry : task["template"]["spec"]["containers"][0]["resources"]["requests"])
      requested.insert(entry.first.as<std::string>());
  EXPECT_EQ(managed, requested);

  const auto kube = export_bundled("kube-scheduler", folder.path());
  ASSERT_EQ(kube.exit_code, 0) << kube.out;
  EXPECT_EQ(read_text(folder.path() + "/kube-scheduler-config.yaml"),
            read_text(kSource + "/deploy/kube-scheduler-extender.yaml"));
  for (const YAML::Node& object :
       YAML::LoadAllFromFile(folder.path() + "/kube-default-reference.yaml")) {
    if (scalar(object["kind"]) != "Job") continue;
    EXPECT_EQ(scalar(object["spec"]["template"]["spec"]["schedulerName"]),
              scalar(deploy["profiles"][0]["schedulerName"]));
  }
}

// The Volcano export writes the fabric as HyperNodes, and the Job asks for the tiers of its
// placement; labels.sh writes the leaf each HyperNode selects and the extender scores by.
TEST(BundledCli, ThePlacementReachesVolcanoAndTheLabels) {
  TempFolder folder;
  const auto run = export_bundled("volcano", folder.path());
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("hypernodes-mixed-roce-64.yaml"), std::string::npos) << run.out;
  std::set<std::string> selected_leaves;
  int tiers = 0;
  for (const YAML::Node& object :
       YAML::LoadAllFromFile(folder.path() + "/hypernodes-mixed-roce-64.yaml")) {
    EXPECT_EQ(scalar(object["kind"]), "HyperNode");
    tiers = std::max(tiers, object["spec"]["tier"].as<int>());
    for (const auto& member : object["spec"]["members"])
      if (member["selector"]["labelMatch"])
        selected_leaves.insert(
            scalar(member["selector"]["labelMatch"]["matchLabels"]["hetplan.io/leaf"]));
  }
  EXPECT_EQ(tiers, 3);
  const YAML::Node job = YAML::LoadFile(folder.path() + "/volcano-default-reference.yaml");
  EXPECT_EQ(scalar(job["spec"]["networkTopology"]["mode"]), "hard");
  EXPECT_EQ(job["spec"]["networkTopology"]["highestTierAllowed"].as<int>(), 3);
  for (const auto& task : job["spec"]["tasks"])
    EXPECT_EQ(task["partitionPolicy"]["networkTopology"]["highestTierAllowed"].as<int>(), 1);

  ASSERT_EQ(export_bundled("labels", folder.path()).exit_code, 0);
  const auto labelled = labels_of(read_text(folder.path() + "/labels.sh"));
  EXPECT_EQ(labelled.size(), 32u);  // 20 Ascend, 8 DCU and 4 MLU nodes
  std::set<std::string> leaves;
  for (const auto& [node, labels] : labelled) {
    ASSERT_TRUE(labels.count("hetplan.io/leaf")) << node;
    leaves.insert(labels.at("hetplan.io/leaf"));
    EXPECT_TRUE(selected_leaves.count(labels.at("hetplan.io/leaf"))) << node;
    EXPECT_EQ(labels.at("hetplan.io/node"), node);  // placeholders stand for themselves here
  }
  EXPECT_EQ(leaves, (std::set<std::string>{"ascend-910b-leaf-01", "ascend-910b-leaf-02",
                                           "dcu-k100-leaf-01", "mlu370-leaf-01"}));
}

// SIGTERM (what Kubernetes sends a pod it stops) while a request is half sent: the request is
// answered, then the extender exits 0.
TEST(BundledCli, TheExtenderAnswersTheRequestInFlightBeforeItExitsOnSigterm) {
  Extender extender("--plan " + kSource + "/plans/default-reference.yaml --scenario " + kSource +
                    "/scenarios/default.yaml --listen 127.0.0.1:0");
  ASSERT_GT(extender.port(), 0) << extender.first_line();
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(extender.port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const std::string body = R"({"Pod": {"metadata": {"name": "p"}}, "NodeNames": ["a"]})";
  const std::string request = "POST /hetplan/filter HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Content-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  const std::size_t half = request.size() - 10;
  ASSERT_EQ(write(fd, request.data(), half), static_cast<ssize_t>(half));
  usleep(200 * 1000);
  int status = -1;
  std::thread terminating([&] { status = extender.end_with(SIGTERM); });
  usleep(300 * 1000);
  ASSERT_EQ(write(fd, request.data() + half, 10), 10);
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) answer.append(buffer, static_cast<std::size_t>(n));
  close(fd);
  terminating.join();
  EXPECT_EQ(answer.substr(0, answer.find("\r\n")), "HTTP/1.1 200 OK");
  EXPECT_NE(answer.find("\"NodeNames\":[\"a\"]"), std::string::npos) << answer;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// deploy/extender-tls.yaml starts the extender with flags it has, over TLS with client
// certificates, listening beyond loopback only with them.
TEST(BundledCli, TheTlsDeploymentUsesFlagsTheExtenderHas) {
  const std::string help = hetplan::e2e::hetplan("extender --help").out;
  std::vector<std::string> kinds;
  std::set<std::string> flags;
  for (const YAML::Node& object : YAML::LoadAllFromFile(kSource + "/deploy/extender-tls.yaml")) {
    kinds.push_back(object["kind"].as<std::string>());
    if (kinds.back() != "Deployment") continue;
    const YAML::Node container = object["spec"]["template"]["spec"]["containers"][0];
    for (const auto& arg : container["args"]) {
      const std::string text = arg.as<std::string>();
      const std::string flag = text.substr(0, text.find('='));
      flags.insert(flag);
      EXPECT_NE(help.find(flag + " "), std::string::npos) << flag << " is not a flag of `hetplan extender`";
    }
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"Deployment", "Service"}));
  for (const std::string flag : {"--plan", "--listen", "--tls-cert", "--tls-key", "--client-ca"})
    EXPECT_TRUE(flags.count(flag)) << flag;
}

// A plan that names no scenario needs --scenario, for the extender as for export: no silent
// default.
TEST(BundledCli, TheExtenderNeedsTheScenarioOfAPlanThatNamesNone) {
  const Extender extender("--plan " + kSource +
                          "/plans/default-reference.yaml --listen 127.0.0.1:0");
  EXPECT_EQ(
      extender.first_line(),
      "error: " + kSource +
          "/plans/default-reference.yaml: --scenario: expected --scenario "
          "SCENARIO: the plan does not name the scenario it was made for (plans from `hetplan "
          "plan --out` do)");
  EXPECT_EQ(extender.port(), -1);
}

// The extender's node list is read as `inventory import` reads it: what the cache would take
// silently (a negative device count, a key given twice) is refused at its place before it serves.
TEST(BundledCli, TheExtendersNodeListIsCheckedAsTheInventoryChecksIt) {
  hetplan::test::TempFolder folder;
  std::string nodes = read_text(kSource + "/tests/importers/data/kubectl-get-nodes-ascend-dcu-mlu.json");
  const std::string count = "\"huawei.com/Ascend910\": \"8\"";
  const auto at = nodes.find(count);
  ASSERT_NE(at, std::string::npos);
  nodes.replace(at, count.size(), "\"huawei.com/Ascend910\": \"-3\"");
  const std::string path = folder.file("nodes.json");
  std::ofstream(path) << nodes;
  const Extender extender("--plan " + kSource + "/plans/default-reference.yaml --scenario " +
                          kSource + "/scenarios/default.yaml --listen 127.0.0.1:0 --nodes " + path);
  EXPECT_EQ(extender.first_line(),
            "error: " + path +
                ":171:45: items[1].status.allocatable[\"huawei.com/Ascend910\"]: expected a device "
                "count (a whole Kubernetes quantity such as \"8\" or \"1k\", at most 1000000), got "
                "\"-3\"");
  EXPECT_EQ(extender.port(), -1);
}

}  // namespace
