// What the Kubernetes exports share (volcano.cpp, kube_scheduler.cpp): names Kubernetes accepts,
// a YAML writer for an ordered tree (same tree, same bytes), and the pods of each stage with the
// rank layout in HETPLAN_* variables. Internal to hetplan_exporters.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/placement.hpp"
#include "exporters/export.hpp"

namespace hetplan::exporters::manifest {

using Json = nlohmann::ordered_json;

inline constexpr std::size_t kDnsLabelMax = 63;  // DNS-1123 label, label value, name part

// 32-bit FNV-1a as eight hex digits: a stable suffix for names that had to be shortened.
std::string short_hash(std::string_view text);
// Lower case, [a-z0-9-] only, no runs of '-', alphanumeric at both ends (may be empty).
std::string dns_label(std::string_view text);
// `name` (a DNS label) cut to at most `max` characters; a cut name ends in "-" and a hash of
// `original`, so two long names that share their beginning stay apart.
std::string shorten(const std::string& name, std::size_t max, std::string_view original);
// A Kubernetes label value made from any text (at most 63 of [A-Za-z0-9._-]).
std::string label_value(std::string_view text);
bool is_label_value(std::string_view value);
// A label key: an optional DNS-1123 subdomain prefix and "/", then a name.
bool is_label_key(std::string_view key);
int decimal_digits(long long value);
std::string join(const std::vector<std::string>& items, const std::string& separator);
// Six significant digits, independent of the locale.
std::string six_digits(double value);
// A comment line's text: control characters as spaces.
std::string comment_text(std::string_view text);

// The tree as a YAML block mapping, appended to `out`. Strings YAML 1.1 or 1.2 would read as
// something else are double-quoted; multi-line strings are literal blocks.
void write_yaml(std::string& out, const Json& map);

// The pods of one plan stage.
struct Task {
  std::size_t stage = 0;
  const Island* island = nullptr;
  std::string name;          // "s03-ascend-910b": a DNS label of at most 40 characters
  std::string device;        // device-plugin resource name
  std::string rdma;          // RDMA resource name, empty for none
  int pods_per_replica = 1;  // > 1 when a tensor-parallel group spans nodes
  int chips_per_pod = 0;
  long long replicas = 0;     // pods
  long long pod_offset = 0;   // pods of the tasks before
  long long rank_offset = 0;  // ranks (chips) of the stages before
};

// One task per stage. Throws std::invalid_argument prefixed with `who` for what a pod cannot
// express: an island the cluster lacks, a family without a device resource, an island label
// Kubernetes refuses, a tensor-parallel group that spans nodes unevenly.
std::vector<Task> layout_tasks(const ExportInput& input, const std::string& who);

// The plan's name as a DNS-1123 label starting with a letter, short enough that every pod's name
// "<job>-<task>-<index>" is a DNS label (Volcano) and "<job>-<task>-<index>-xxxxx" fits too.
std::string job_name(const Plan& plan, const std::vector<Task>& tasks);

// The metadata every object of an export carries: labels (managed-by, plan, scenario, the
// Ascend ring controller) and annotations (plan, scenario, validation).
struct Stamp {
  Json labels;
  Json annotations;
  std::string unvalidated;  // the missing items joined, when the export is stamped unvalidated
};
Stamp stamp(const ExportInput& input, const std::string& job, const std::vector<Task>& tasks);

// The trainer container of a task: image, placeholder command `script`, the rank layout in
// HETPLAN_* variables, the resources (device and RDMA, limits equal to requests), IPC_LOCK and
// /dev/shm.
Json trainer_container(const ExportInput& input, const std::vector<Task>& tasks, const Task& task,
                       const std::string& script);

// The pod spec of a task: restartPolicy, the island's labels as the node selector, the container
// and the /dev/shm volume.
Json pod_spec(const Task& task, const Json& container);

// A placeholder launch command: the comment lines `intro`, then torchrun with the rank layout
// from HETPLAN_*, the pod's index in its task from `index_variable` and the rendezvous host from
// the shell expression `master`.
std::string launch_script(const std::vector<Task>& tasks, const std::string& intro,
                          const std::string& index_variable, const std::string& master);

}  // namespace hetplan::exporters::manifest
