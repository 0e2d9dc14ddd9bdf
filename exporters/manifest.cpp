// What the Kubernetes exports share: names, the YAML writer, the stages' pods (manifest.hpp).
#include "exporters/manifest.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

#include "formats/loaders.hpp"
#include "sim/estimator.hpp"

namespace hetplan::exporters::manifest {
namespace {

constexpr std::size_t kTaskNameMax = 40;  // leaves room for the job name in pod host names
constexpr std::size_t kHashSuffix = 9;    // "-" and eight hex digits

// ASCII only, whatever the process locale (a GUI sets one).
bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool is_alnum(char c) {
  return is_letter(c) || (c >= '0' && c <= '9');
}
char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool is_dns_label(std::string_view text) {
  return !text.empty() && text.size() <= kDnsLabelMax && is_lower_alnum(text.front()) &&
         is_lower_alnum(text.back()) && std::all_of(text.begin(), text.end(), [](char c) {
           return is_lower_alnum(c) || c == '-';
         });
}

std::string padded(std::size_t value, int width) {
  std::string text = std::to_string(value);
  if (static_cast<int>(text.size()) < width) {
    text.insert(0, static_cast<std::size_t>(width) - text.size(), '0');
  }
  return text;
}

// ---- YAML ------------------------------------------------------------------------------------

// Whether a string can be written unquoted and still reads back as that string under YAML 1.1
// (Kubernetes' parser) and YAML 1.2: starts with a letter or '/', only [A-Za-z0-9._/-], and not
// a word either version reads as a boolean or null.
bool plain_safe(const std::string& text) {
  if (text.empty() || text.size() > 200) return false;
  if (!is_letter(text[0]) && text[0] != '/') return false;
  for (char c : text) {
    if (!is_alnum(c) && c != '.' && c != '_' && c != '/' && c != '-') return false;
  }
  std::string lower;
  for (char c : text) lower += ascii_lower(c);
  static const std::set<std::string> reserved = {"y",   "n",    "yes",   "no",  "on",
                                                 "off", "true", "false", "null"};
  return reserved.count(lower) == 0;
}

std::string double_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\x%02x", byte);
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A multi-line string that a literal block ("|-") keeps byte for byte.
bool literal_block_safe(const std::string& text) {
  if (text.find('\n') == std::string::npos || text.back() == '\n') return false;
  if (text.front() == ' ' || text.front() == '\n') return false;
  return std::none_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\n') || byte == 0x7f;
  });
}

std::string scalar(const Json& value) {
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    return plain_safe(text) ? text : double_quoted(text);
  }
  return value.dump();  // integers, booleans, null
}

void write_sequence(std::string& out, const Json& items, std::size_t indent);
void write_mapping(std::string& out, const Json& map, std::size_t indent,
                   const std::string& first_prefix);

void write_literal(std::string& out, const std::string& text, std::size_t indent) {
  out += " |-\n";
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    if (end > start) out += std::string(indent, ' ') + text.substr(start, end - start);
    out += '\n';
    start = end + 1;
  }
}

// What follows "key:" or "-" for a value whose own lines are indented by `indent`.
void write_after_indicator(std::string& out, const Json& value, std::size_t indent,
                           std::size_t sequence_indent) {
  if (value.is_object() && !value.empty()) {
    out += '\n';
    write_mapping(out, value, indent, "");
  } else if (value.is_array() && !value.empty()) {
    out += '\n';
    write_sequence(out, value, sequence_indent);
  } else if (value.is_object()) {
    out += " {}\n";
  } else if (value.is_array()) {
    out += " []\n";
  } else if (value.is_string() && literal_block_safe(value.get_ref<const std::string&>())) {
    write_literal(out, value.get_ref<const std::string&>(), indent);
  } else {
    out += " " + scalar(value) + "\n";
  }
}

void write_mapping(std::string& out, const Json& map, std::size_t indent,
                   const std::string& first_prefix) {
  bool first = true;
  for (const auto& [key, value] : map.items()) {
    out += (first && !first_prefix.empty()) ? first_prefix : std::string(indent, ' ');
    first = false;
    out += scalar(Json(key)) + ":";
    // Sequences under a key start at the key's column (as kubectl writes them).
    write_after_indicator(out, value, indent + 2, indent);
  }
}

void write_sequence(std::string& out, const Json& items, std::size_t indent) {
  for (const auto& item : items) {
    if (item.is_object() && !item.empty()) {
      write_mapping(out, item, indent + 2, std::string(indent, ' ') + "- ");
    } else {
      out += std::string(indent, ' ') + "-";
      write_after_indicator(out, item, indent + 2, indent + 2);
    }
  }
}

}  // namespace

// 32-bit FNV-1a as eight hex digits: a stable suffix for names that had to be shortened.
std::string short_hash(std::string_view text) {
  std::uint32_t hash = 2166136261u;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  char out[9];
  std::snprintf(out, sizeof out, "%08x", hash);
  return out;
}

// Lower case, [a-z0-9-] only, no runs of '-', alphanumeric at both ends (may be empty).
std::string dns_label(std::string_view text) {
  std::string out;
  for (char c : text) {
    const char lower = ascii_lower(c);
    const char keep = is_lower_alnum(lower) ? lower : '-';
    if (keep == '-' && (out.empty() || out.back() == '-')) continue;
    out += keep;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

// `name` (a DNS label) cut to at most `max` characters; a cut name ends in "-" and a hash of
// `original`, so two long names that share their beginning stay apart.
std::string shorten(const std::string& name, std::size_t max, std::string_view original) {
  if (name.size() <= max) return name;
  std::string cut = name.substr(0, max - kHashSuffix);
  while (!cut.empty() && !is_lower_alnum(cut.back())) cut.pop_back();
  return cut + "-" + short_hash(original);
}

// A Kubernetes label value: at most 63 of [A-Za-z0-9._-], alphanumeric at both ends, or empty.
std::string label_value(std::string_view text) {
  std::string out;
  for (char c : text) out += (is_alnum(c) || c == '.' || c == '_' || c == '-') ? c : '-';
  if (out.size() > kDnsLabelMax) {
    out = out.substr(0, kDnsLabelMax - kHashSuffix) + "-" + short_hash(text);
  }
  const auto first = std::find_if(out.begin(), out.end(), is_alnum);
  out.erase(out.begin(), first);
  while (!out.empty() && !is_alnum(out.back())) out.pop_back();
  return out;
}

bool is_label_value(std::string_view value) {
  return label_value(value) == value;
}

// A label key: an optional DNS-1123 subdomain prefix and "/", then a name of at most 63 of
// [A-Za-z0-9._-], alphanumeric at both ends.
bool is_label_key(std::string_view key) {
  std::string_view name = key;
  if (const auto slash = key.find('/'); slash != std::string_view::npos) {
    const std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty() || prefix.size() > 253) return false;
    for (std::size_t start = 0; start <= prefix.size();) {
      const std::size_t dot = std::min(prefix.find('.', start), prefix.size());
      const std::string_view part = prefix.substr(start, dot - start);
      if (!is_dns_label(part)) return false;
      start = dot + 1;
    }
  }
  return !name.empty() && is_label_value(name);
}

int decimal_digits(long long value) {
  int digits = 1;
  while (value >= 10) {
    value /= 10;
    ++digits;
  }
  return digits;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// Six significant digits, independent of the locale.
std::string six_digits(double value) {
  char out[32];
  const auto result = std::to_chars(out, out + sizeof out, value, std::chars_format::general, 6);
  return std::string(out, result.ptr);
}

std::string comment_text(std::string_view text) {
  std::string out;
  for (char c : text) out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  return out;
}

void write_yaml(std::string& out, const Json& map) {
  write_mapping(out, map, 0, "");
}

// ---- the stages' pods --------------------------------------------------------------------------

namespace {

std::string stage_text(std::size_t index, const PlanStage& stage) {
  return "stage " + std::to_string(index) + " (island \"" + stage.island + "\")";
}

Json env_var(const std::string& name, const std::string& value) {
  Json entry;
  entry["name"] = name;
  entry["value"] = value;
  return entry;
}

}  // namespace

std::vector<Task> layout_tasks(const ExportInput& input, const std::string& who) {
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument(who + ": " + what);
  };
  const Plan& plan = *input.plan;
  const Cluster& cluster = input.scenario->cluster;
  std::vector<Task> tasks;
  const int width = std::max(2, decimal_digits(static_cast<long long>(plan.stages.size()) - 1));
  long long pods = 0;
  long long ranks = 0;
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const PlanStage& stage = plan.stages[i];
    Task task;
    task.stage = i;
    task.island = cluster.find_island(stage.island);
    if (!task.island) fail(stage_text(i, stage) + ": no such island in the cluster");
    const Island& island = *task.island;
    if (stage.tp < 1 || stage.dp < 1 || island.chips_per_node < 1) {
      fail(stage_text(i, stage) + ": expected tp, dp and chips_per_node of at least 1");
    }
    const ChipProfile& chip = cluster.chip_of(island);
    task.device = device_resource(input, island);
    task.rdma = rdma_resource(input, island);
    if (task.device.empty()) {
      std::vector<std::string> known;
      for (const auto& [family, name] : input.resources.device) known.push_back(family);
      fail(stage_text(i, stage) + ": no device-plugin resource name for chip family \"" +
           chip.family + "\" (chip " + chip.id + "); resources.device names " +
           (known.empty() ? "none" : join(known, ", ")) +
           "; give the island resources.device in the cluster file or --resource " + island.name +
           "=NAME");
    }
    if (stage.tp > island.chips_per_node) {
      if (stage.tp % island.chips_per_node != 0) {
        fail(stage_text(i, stage) + ": tp " + std::to_string(stage.tp) + " spans nodes of " +
             std::to_string(island.chips_per_node) +
             " chips unevenly; a tensor-parallel group wider than a node must fill whole nodes");
      }
      task.pods_per_replica = stage.tp / island.chips_per_node;
      task.chips_per_pod = island.chips_per_node;
    } else {
      task.chips_per_pod = stage.tp;
    }
    task.replicas = static_cast<long long>(stage.dp) * task.pods_per_replica;
    task.pod_offset = pods;
    task.rank_offset = ranks;
    pods += task.replicas;
    ranks += static_cast<long long>(stage.tp) * stage.dp;
    if (pods > std::numeric_limits<std::int32_t>::max()) fail("more pods than a Job can hold");
    for (const auto& [key, value] : island.labels) {
      if (!is_label_key(key) || !is_label_value(value)) {
        fail(stage_text(i, stage) + ": island label " + key + "=" + value +
             " is not a Kubernetes label");
      }
    }
    std::string island_part = dns_label(island.name);
    if (island_part.empty()) island_part = "island";
    task.name = shorten("s" + padded(i, width) + "-" + island_part, kTaskNameMax, island.name);
    tasks.push_back(std::move(task));
  }
  return tasks;
}

std::string job_name(const Plan& plan, const std::vector<Task>& tasks) {
  std::string base = dns_label(plan.name);
  if (base.empty() || !is_letter(base[0])) {
    base = base.empty() ? "hetplan" : "hetplan-" + base;
  }
  std::size_t tail = 0;
  for (const Task& task : tasks) {
    const long long last_index =
        std::max(task.replicas - 1, static_cast<long long>(tasks.size()) - 1);
    tail = std::max(
        tail, 1 + task.name.size() + 1 + static_cast<std::size_t>(decimal_digits(last_index)));
  }
  return shorten(base, std::min(kDnsLabelMax, kDnsLabelMax - tail), plan.name);
}

Stamp stamp(const ExportInput& input, const std::string& job, const std::vector<Task>& tasks) {
  const Scenario& scenario = *input.scenario;
  Stamp out;
  const bool stamped = !input.validation.validated;
  out.unvalidated = join(input.validation.missing, "; ");
  if (stamped && out.unvalidated.empty()) out.unvalidated = "not validated (no step named)";
  out.labels["app.kubernetes.io/managed-by"] = "hetplan";
  out.labels["hetplan.io/plan"] = job;
  out.labels["hetplan.io/scenario"] = label_value(scenario.name);
  // MindCluster (Ascend Device Plugin, Volcano's Ascend plugin) finds its jobs and pods by
  // ring-controller.atlas; a job with Ascend stages carries it (docs/export.md).
  std::string ring_controller;
  for (const Task& task : tasks) {
    const std::string value = ascend_ring_controller(scenario.cluster.chip_of(*task.island));
    if (!value.empty() && ring_controller.empty()) ring_controller = value;
  }
  if (!ring_controller.empty()) out.labels["ring-controller.atlas"] = ring_controller;
  out.annotations["hetplan.io/plan"] = input.plan->name;
  out.annotations["hetplan.io/scenario"] = scenario.name;
  out.annotations["hetplan.io/validated"] = input.validation.validated ? "true" : "false";
  if (stamped) out.annotations["hetplan.io/unvalidated"] = out.unvalidated;
  return out;
}

Json trainer_container(const ExportInput& input, const std::vector<Task>& tasks, const Task& task,
                       const std::string& script) {
  const Plan& plan = *input.plan;
  const PlanStage& stage = plan.stages[task.stage];
  const Island& island = *task.island;
  const sim::StepSettings settings = sim::step_settings(input.scenario->workload, plan);
  long long total_pods = 0;
  long long world_size = 0;
  for (const Task& other : tasks) {
    total_pods += other.replicas;
    world_size += static_cast<long long>(plan.stages[other.stage].tp) * plan.stages[other.stage].dp;
  }

  Json env = Json::array();
  const auto add = [&env](const std::string& key, const std::string& value) {
    env.push_back(env_var(key, value));
  };
  add("HETPLAN_STAGE", std::to_string(task.stage));
  add("HETPLAN_STAGES", std::to_string(plan.stages.size()));
  add("HETPLAN_FIRST_LAYER", std::to_string(stage.first_layer));
  add("HETPLAN_NUM_LAYERS", std::to_string(stage.num_layers));
  add("HETPLAN_TP", std::to_string(stage.tp));
  add("HETPLAN_DP", std::to_string(stage.dp));
  add("HETPLAN_ISLAND", island.name);
  add("HETPLAN_MICRO_BATCH", std::to_string(settings.micro_batch));
  add("HETPLAN_GLOBAL_BATCH", std::to_string(settings.training.global_batch));
  add("HETPLAN_SCHEDULE", std::string(to_string(plan.schedule)));
  add("HETPLAN_VIRTUAL_STAGES", std::to_string(plan.virtual_stages));
  add("HETPLAN_MICRO_BATCH_WEIGHT", "1");  // uniform local batches
  add("HETPLAN_CHIPS_PER_POD", std::to_string(task.chips_per_pod));
  add("HETPLAN_PODS_PER_REPLICA", std::to_string(task.pods_per_replica));
  add("HETPLAN_POD_OFFSET", std::to_string(task.pod_offset));
  add("HETPLAN_PODS", std::to_string(total_pods));
  add("HETPLAN_RANK_OFFSET", std::to_string(task.rank_offset));
  add("HETPLAN_WORLD_SIZE", std::to_string(world_size));

  Json resources;
  resources[task.device] = task.chips_per_pod;
  if (!task.rdma.empty()) resources[task.rdma] = 1;

  Json container;
  container["name"] = "trainer";
  container["image"] = island_image(input, island);
  container["command"] = Json::array({"/bin/sh", "-c", script});
  container["env"] = env;
  container["resources"]["limits"] = resources;
  container["resources"]["requests"] = resources;
  container["securityContext"]["capabilities"]["add"] = Json::array({"IPC_LOCK"});
  container["volumeMounts"] = Json::array({{{"name", "dshm"}, {"mountPath", "/dev/shm"}}});
  return container;
}

Json pod_spec(const Task& task, const Json& container) {
  Json spec;
  spec["restartPolicy"] = "OnFailure";
  spec["nodeSelector"] = Json::object();
  for (const auto& [key, value] : task.island->labels) spec["nodeSelector"][key] = value;
  spec["containers"] = Json::array({container});
  spec["volumes"] = Json::array({{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}}});
  return spec;
}

std::string launch_script(const std::vector<Task>& tasks, const std::string& intro,
                          const std::string& index_variable, const std::string& master) {
  std::set<int> chips;
  for (const Task& task : tasks) chips.insert(task.chips_per_pod);
  std::string script = intro;
  if (chips.size() > 1) {
    std::vector<std::string> counts;
    for (int count : chips) counts.push_back(std::to_string(count));
    script += "# WARNING: the pods of this Job hold different numbers of chips (" +
              join(counts, ", ") +
              "), so torchrun's\n"
              "# ranks do not match HETPLAN_RANK_OFFSET: use a launcher that reads it.\n";
  }
  script +=
      "exec torchrun \\\n"
      "  --nnodes=\"$HETPLAN_PODS\" \\\n"
      "  --nproc-per-node=\"$HETPLAN_CHIPS_PER_POD\" \\\n"
      "  --node-rank=\"$((HETPLAN_POD_OFFSET + " +
      index_variable +
      "))\" \\\n"
      "  --master-addr=\"" +
      master +
      "\" \\\n"
      "  --master-port=29500 \\\n"
      "  train.py";
  return script;
}

}  // namespace hetplan::exporters::manifest
