#include "sweep/job.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <set>
#include <stdexcept>

#include "exporters/export.hpp"
#include "core/input_file.hpp"
#include "formats/loaders.hpp"
#include "formats/yaml_edit.hpp"

#include <yaml-cpp/yaml.h>

namespace hetplan::sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::size_t kConfigMapBytes = 1 << 20;  // Kubernetes' limit on a ConfigMap's data

using formats::yaml_quoted;  // any text goes in whole

// A DNS-1123 label: lower-case letters, digits and '-', starting and ending alphanumeric.
bool dns_label(const std::string& name, std::size_t longest) {
  if (name.empty() || name.size() > longest) return false;
  if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos)
    return false;
  return name.front() != '-' && name.back() != '-';
}

// The deepest folder that holds every one of `files`.
fs::path common_folder(const std::vector<fs::path>& files) {
  fs::path common = files.front().parent_path();
  for (const fs::path& file : files) {
    fs::path folder = file.parent_path();
    fs::path shared;
    auto a = common.begin();
    auto b = folder.begin();
    for (; a != common.end() && b != folder.end() && *a == *b; ++a, ++b) shared /= *a;
    common = shared;
  }
  return common;
}

// A carried file's text with every absolute path it writes to a carried file (or to a folder
// holding one) rewritten relative to the file, so that the pods read the copy in the ConfigMap;
// an absolute path to anything else is refused at its place. Plain files (a config.json) are
// carried as they are.
std::string relocated(const std::string& text, const fs::path& file, const fs::path& root,
                      const std::set<fs::path>& carried) {
  const std::string extension = file.extension().string();
  if (extension != ".yaml" && extension != ".yml") return text;
  YAML::Node document;
  try {
    document = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return text;  // the loaders read it already; nothing to find in what they did not
  }
  struct Found {
    formats::YamlPath path;
    YAML::Mark mark;
    std::string value;
  };
  std::vector<Found> absolute;
  std::function<void(const YAML::Node&, formats::YamlPath&)> walk = [&](const YAML::Node& node,
                                                                       formats::YamlPath& at) {
    if (node.IsScalar()) {
      const std::string value = node.Scalar();
      if (!value.empty() && value.front() == '/') absolute.push_back({at, node.Mark(), value});
    } else if (node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i) {
        at.emplace_back(i);
        walk(node[i], at);
        at.pop_back();
      }
    } else if (node.IsMap()) {
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) continue;
        at.emplace_back(entry.first.Scalar());
        walk(entry.second, at);
        at.pop_back();
      }
    }
  };
  formats::YamlPath at;
  walk(document, at);
  std::string out = text;
  for (const Found& found : absolute) {
    const fs::path target = fs::path(found.value).lexically_normal();
    bool reachable = carried.count(target) > 0;
    // A folder holding carried files (a cluster's profiles), within the carried tree.
    if (!reachable && !target.lexically_relative(root).empty() &&
        *target.lexically_relative(root).begin() != "..") {
      for (const fs::path& other : carried) {
        const fs::path inside = other.lexically_relative(target);
        if (!inside.empty() && *inside.begin() != "..") reachable = true;
      }
    }
    if (!reachable) {
      throw InputError({file.string(), static_cast<int>(found.mark.line) + 1,
                        static_cast<int>(found.mark.column) + 1},
                       formats::to_string(found.path),
                       "expected a relative path or one to a file the sweep's ConfigMap carries "
                       "(its pods read nothing else), got " + hetplan::quoted(found.value));
    }
    const std::string relative = target.lexically_relative(file.parent_path()).generic_string();
    out = formats::set_yaml_value(out, found.path, yaml_quoted(relative), file.string());
  }
  return out;
}

}  // namespace

std::vector<JobInput> job_inputs(const Sweep& sweep) {
  const Scenario base = formats::load_scenario(sweep.scenario);
  const fs::path scenario_folder = fs::absolute(sweep.scenario).lexically_normal().parent_path();
  std::vector<fs::path> files{fs::absolute(sweep.file).lexically_normal()};
  for (const auto& [relative, hash] : exporters::input_hashes(base, sweep.scenario))
    files.push_back((scenario_folder / relative).lexically_normal());
  // One entry per file, in a fixed order (the sweep first, then by path).
  std::set<fs::path> seen;
  std::vector<fs::path> unique;
  for (const auto& file : files)
    if (seen.insert(file).second) unique.push_back(file);
  std::sort(unique.begin() + 1, unique.end());
  const fs::path root = common_folder(unique);
  std::vector<JobInput> out;
  for (std::size_t i = 0; i < unique.size(); ++i) {
    std::string key = std::to_string(i);
    if (key.size() < 2) key = "0" + key;
    std::string leaf = unique[i].filename().string();
    for (char& c : leaf)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
    std::string text = formats::read_text_file(unique[i].string());
    try {
      (void)yaml_quoted(text);
    } catch (const std::invalid_argument&) {  // a ConfigMap's data is UTF-8
      throw InputError({unique[i].string(), 0, 0}, "",
                       "expected UTF-8 text to carry in the sweep's ConfigMap");
    }
    text = relocated(text, unique[i], root, seen);
    out.push_back({"f" + key + "-" + leaf, unique[i].lexically_relative(root).generic_string(),
                   std::move(text)});
  }
  return out;
}

std::vector<JobFile> sweep_job(const Sweep& sweep, const JobOptions& options) {
  const SourceLocation where{"sweep job", 0, 0};
  const std::string name = options.name.empty() ? sweep.name : options.name;
  // "-inputs" and "-merge" follow it; a Job's pods add their index to its name.
  if (!dns_label(name, 52))
    throw InputError(where, "--name",
                     "expected a Kubernetes name of at most 52 lower-case letters, digits and '-' "
                     "(the sweep's name, or --name), got " + hetplan::quoted(name));
  if (options.image.empty() || options.image.find_first_of(" \t\r\n\"") != std::string::npos)
    throw InputError(where, "--image", "expected a container image reference, got " + hetplan::quoted(options.image));
  if (!dns_label(options.results_claim, 253))
    throw InputError(where, "--results-claim",
                     "expected a PersistentVolumeClaim's name, got " + hetplan::quoted(options.results_claim));
  if (!options.namespace_name.empty() && !dns_label(options.namespace_name, 63))
    throw InputError(where, "--namespace", "expected a namespace's name, got " + hetplan::quoted(options.namespace_name));
  if (!options.scheduler.empty() && !dns_label(options.scheduler, 253))
    throw InputError(where, "--scheduler", "expected a scheduler's name, got " + hetplan::quoted(options.scheduler));
  if (options.cpus < 1 || options.cpus > 1024)
    throw InputError(where, "--cpus", "expected 1 to 1024 CPUs a pod, got " + std::to_string(options.cpus));
  const std::size_t total = points(sweep).size();
  if (options.shards < 1 || options.shards > total)
    throw InputError(where, "--shards",
                     "expected 1 to " + std::to_string(total) + " shards (the sweep's points), got " +
                         std::to_string(options.shards));

  const std::vector<JobInput> inputs = job_inputs(sweep);
  std::size_t bytes = 0;
  for (const auto& input : inputs) bytes += input.key.size() + input.text.size();
  if (bytes > kConfigMapBytes)
    throw InputError({sweep.file, 0, 0}, "inputs",
                     "expected the sweep and its scenario's files to fit a ConfigMap (1 MiB), got " +
                         std::to_string(bytes) + " bytes");
  const std::string sweep_path = "/inputs/" + inputs.front().path;
  const std::string shards = std::to_string(options.shards);
  const std::string results = "/results/" + name;

  auto metadata = [&](const std::string& object) {
    std::string text = "metadata:\n  name: " + object + "\n";
    if (!options.namespace_name.empty()) text += "  namespace: " + options.namespace_name + "\n";
    text += "  labels: {app.kubernetes.io/name: hetplan-sweep, hetplan.io/sweep: " + name + "}\n";
    return text;
  };
  const std::string header = "# hetplan sweep job for " + yaml_quoted(sweep.file) + " (" +
                             std::to_string(total) + " points in " + shards + " shards).\n";

  std::string configmap = header + "# The sweep and every file its base scenario reads.\n";
  configmap += "apiVersion: v1\nkind: ConfigMap\n" + metadata(name + "-inputs") + "data:\n";
  for (const auto& input : inputs)
    configmap += "  " + input.key + ": " + yaml_quoted(input.text) + "\n";

  auto pod_spec = [&](const std::string& indent, bool with_inputs) {
    std::string text;
    text += indent + "restartPolicy: Never\n";
    if (!options.scheduler.empty()) text += indent + "schedulerName: " + options.scheduler + "\n";
    text += indent + "volumes:\n";
    text += indent + "  - name: results\n";
    text += indent + "    persistentVolumeClaim: {claimName: " + options.results_claim + "}\n";
    if (!with_inputs) return text;
    text += indent + "  - name: inputs\n";
    text += indent + "    configMap:\n";
    text += indent + "      name: " + name + "-inputs\n";
    text += indent + "      items:\n";
    for (const auto& input : inputs)
      text += indent + "        - {key: " + input.key + ", path: " + yaml_quoted(input.path) + "}\n";
    return text;
  };
  auto container = [&](const std::string& indent, const std::string& container_name,
                       const std::vector<std::string>& args) {
    std::string text = indent + "- name: " + container_name + "\n";
    text += indent + "  image: " + yaml_quoted(options.image) + "\n";
    text += indent + "  command: [\"hetplan\"]\n";
    text += indent + "  args: [";
    for (std::size_t i = 0; i < args.size(); ++i) text += (i ? ", " : "") + yaml_quoted(args[i]);
    text += "]\n";
    return text;
  };

  std::string job = header;
  job += "# Pod i runs shard i of " + shards + " into " + results + "/shard-i on the claim " +
         options.results_claim + "; a restarted pod resumes its shard. Then merge-job.yaml.\n";
  job += "apiVersion: batch/v1\nkind: Job\n" + metadata(name);
  job += "spec:\n  completionMode: Indexed\n  completions: " + shards + "\n  parallelism: " + shards + "\n";
  job += "  backoffLimit: " + std::to_string(std::max<std::size_t>(6, 2 * options.shards)) + "\n";
  job += "  template:\n    metadata:\n      labels: {app.kubernetes.io/name: hetplan-sweep, hetplan.io/sweep: " +
         name + "}\n    spec:\n";
  job += pod_spec("      ", true);
  job += "      containers:\n";
  job += container("        ", "sweep",
                   {"sweep", sweep_path, "--shard", "$(SHARD)/" + shards, "--jobs",
                    std::to_string(options.cpus), "--out", results + "/shard-$(SHARD)", "--resume"});
  job += "          env:\n";
  job += "            - name: SHARD\n";
  job += "              valueFrom: {fieldRef: {fieldPath: \"metadata.annotations['batch.kubernetes.io/job-completion-index']\"}}\n";
  job += "          resources: {requests: {cpu: \"" + std::to_string(options.cpus) + "\"}}\n";
  job += "          volumeMounts:\n";
  job += "            - {name: inputs, mountPath: /inputs, readOnly: true}\n";
  job += "            - {name: results, mountPath: /results}\n";

  std::vector<std::string> merge_args{"sweep", "merge"};
  for (std::size_t i = 0; i < options.shards; ++i)
    merge_args.push_back(results + "/shard-" + std::to_string(i));
  merge_args.push_back("--out");
  merge_args.push_back(results + "/merged");
  std::string merge = header;
  merge += "# After every pod of job.yaml completed: the shards merged into " + results +
           "/merged, then its report.\n";
  merge += "apiVersion: batch/v1\nkind: Job\n" + metadata(name + "-merge");
  merge += "spec:\n  completions: 1\n  backoffLimit: 2\n  template:\n    metadata:\n"
           "      labels: {app.kubernetes.io/name: hetplan-sweep, hetplan.io/sweep: " + name +
           "}\n    spec:\n";
  merge += pod_spec("      ", false);
  const std::string mounts = "          volumeMounts:\n            - {name: results, mountPath: /results}\n";
  merge += "      initContainers:\n";
  merge += container("        ", "merge", merge_args) + mounts;
  merge += "      containers:\n";
  merge += container("        ", "report", {"sweep", "report", results + "/merged"}) + mounts;
  return {{"configmap.yaml", configmap}, {"job.yaml", job}, {"merge-job.yaml", merge}};
}

}  // namespace hetplan::sweep
