#include "extender/extender.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>

#include "core/input_file.hpp"
#include "extender/http_server.hpp"

namespace hetplan::extender {

using nlohmann::json;

namespace {

constexpr int kMaxDepth = 64;           // nesting levels a request may have
constexpr std::size_t kMaxQuoted = 64;  // characters of a found value quoted in a message
constexpr int kMaxThreads = 256;
constexpr int kBacklog = 128;                 // connections waiting in the kernel to be accepted

// ---- JSON helpers -------------------------------------------------------------------------

std::string in_quotes(std::string_view text) {
  std::string out = "\"";
  if (text.size() > kMaxQuoted) {
    out += text.substr(0, kMaxQuoted);
    out += "...";
  } else {
    out += text;
  }
  out += '"';
  return out;
}

// How a found value is named in messages: `"text"`, `5`, `null`, `an object`, `an array`.
std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::string:
      return in_quotes(value.get_ref<const std::string&>());
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::discarded:
      return "nothing";
    default:
      return value.dump();
  }
}

// The member `key` of an object, matched exactly and then, as Go's encoding/json does,
// case-insensitively; nullptr when absent or null.
const json* member(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto exact = object.find(key);
  if (exact != object.end()) return exact->is_null() ? nullptr : &*exact;
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string& name = it.key();
    if (name.size() != key.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < name.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(name[i])) ==
             std::tolower(static_cast<unsigned char>(key[i]));
    }
    if (same) return it->is_null() ? nullptr : &*it;
  }
  return nullptr;
}

// Errors in a request: "filter request: Nodes.items[2].metadata.name: expected ..., got ...".
struct Request {
  std::string_view verb;  // "filter", "prioritize", or a file name for node lists

  [[noreturn]] void fail(const std::string& field, const std::string& expected,
                         const json* found) const {
    const std::string got = found ? describe(*found) : std::string("nothing");
    throw InputError({std::string(verb), 0, 0}, field, "expected " + expected + ", got " + got);
  }
};

std::string at(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

// Calls visit(i) for each byte of a JSON text outside its strings (a string's escapes are
// skipped with it); visit returns how many bytes to go on by, 0 to stop.
template <typename Visit>
void scan_outside_strings(std::string_view text, Visit&& visit) {
  bool in_string = false;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (in_string) {
      if (c == '"') in_string = false;
      i += c == '\\' ? 2 : 1;
    } else if (c == '"') {
      in_string = true;
      ++i;
    } else {
      const std::size_t step = visit(i);
      if (step == 0) return;
      i += step;
    }
  }
}

// Depth of nesting, checked before parsing (deep documents would exhaust the stack of the code
// that walks them).
bool nesting_within(std::string_view text, int limit) {
  int depth = 0;
  scan_outside_strings(text, [&](std::size_t i) -> std::size_t {
    if (text[i] == '[' || text[i] == '{') return ++depth > limit ? 0 : 1;
    if (text[i] == ']' || text[i] == '}') --depth;
    return 1;
  });
  return depth <= limit;
}

// The first number of a JSON text beyond the range of a double (which nlohmann reports
// without a place), or an empty view.
std::string_view overflowing_number(std::string_view text) {
  std::string_view found;
  scan_outside_strings(text, [&](std::size_t i) -> std::size_t {
    if (text[i] != '-' && !std::isdigit(static_cast<unsigned char>(text[i]))) return 1;
    std::size_t end = i;
    while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) ||
                                 std::strchr("+-.eE", text[end]) != nullptr))
      ++end;
    const std::string token(text.substr(i, end - i));
    if (std::isfinite(std::strtod(token.c_str(), nullptr))) return end - i;
    found = text.substr(i, end - i);
    return 0;
  });
  return found;
}

// The labels of a v1.Node (metadata.labels); path names the node in messages.
NodeLabels node_labels(const json& node, const std::string& path, const Request& request) {
  NodeLabels labels;
  const json* metadata = member(node, "metadata");
  const json* found = metadata ? member(*metadata, "labels") : nullptr;
  if (!found) return labels;
  if (!found->is_object()) request.fail(path + ".metadata.labels", "an object", found);
  for (auto it = found->begin(); it != found->end(); ++it) {
    if (!it->is_string()) {
      request.fail(path + ".metadata.labels." + it.key(), "a string", &*it);
    }
    labels.emplace(it.key(), it->get<std::string>());
  }
  return labels;
}

std::string node_name(const json& node, const std::string& path, const Request& request) {
  if (!node.is_object()) request.fail(path, "a v1.Node object", &node);
  const json* metadata = member(node, "metadata");
  if (!metadata || !metadata->is_object()) {
    request.fail(path + ".metadata", "an object", metadata);
  }
  const json* name = member(*metadata, "name");
  if (!name || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    request.fail(path + ".metadata.name", "a node name", name);
  }
  return name->get<std::string>();
}

// ---- The pod's stage group ----------------------------------------------------------------

// A string value of the pod: metadata.labels[key], else metadata.annotations[key], else the
// value of env `env` in the first container.
std::optional<std::string> pod_value(const json& pod, std::string_view key, std::string_view env,
                                     const Request& request) {
  const json* metadata = member(pod, "metadata");
  for (std::string_view where : {"labels", "annotations"}) {
    const json* map = metadata ? member(*metadata, where) : nullptr;
    const json* value = map ? member(*map, key) : nullptr;
    if (!value) continue;
    if (!value->is_string()) {
      request.fail("Pod.metadata." + std::string(where) + "." + std::string(key), "a string",
                   value);
    }
    return value->get<std::string>();
  }
  const json* spec = member(pod, "spec");
  const json* containers = spec ? member(*spec, "containers") : nullptr;
  if (!containers || !containers->is_array() || containers->empty()) return std::nullopt;
  const json* vars = member((*containers)[0], "env");
  if (!vars || !vars->is_array()) return std::nullopt;
  for (std::size_t i = 0; i < vars->size(); ++i) {
    const json& var = (*vars)[i];
    const json* name = member(var, "name");
    if (!name || !name->is_string() || name->get_ref<const std::string&>() != env) continue;
    const json* value = member(var, "value");
    if (!value) continue;  // valueFrom: not resolvable here
    if (!value->is_string()) {
      request.fail(at("Pod.spec.containers[0].env", i) + ".value", "a string", value);
    }
    return value->get<std::string>();
  }
  return std::nullopt;
}

// The pod's group: none (not a plan pod), a group, or a reason that fails every node.
struct PodGroup {
  bool named = false;
  const StageGroup* group = nullptr;
  std::string error;
};

PodGroup pod_group(const StageTable& table, const json& pod, const Request& request) {
  const auto island = pod_value(pod, kIslandKey, kIslandEnv, request);
  const auto stage = pod_value(pod, kStageKey, kStageEnv, request);
  PodGroup result;
  if (!island && !stage) return result;
  result.named = true;
  if (!stage) {
    result.error = "pod names " + std::string(kIslandKey) + " " + in_quotes(*island) + " but no " +
                   std::string(kStageKey);
    return result;
  }
  if (!island) {
    result.error = "pod names " + std::string(kStageKey) + " " + in_quotes(*stage) + " but no " +
                   std::string(kIslandKey);
    return result;
  }
  int index = -1;
  const char* end = stage->data() + stage->size();
  const auto [ptr, ec] = std::from_chars(stage->data(), end, index);
  if (ec != std::errc() || ptr != end || index < 0 ||
      static_cast<std::size_t>(index) >= table.groups.size()) {
    result.error = "pod's " + std::string(kStageKey) + " " + in_quotes(*stage) +
                   " is not a stage of plan " + table.plan + " (0 to " +
                   std::to_string(static_cast<long>(table.groups.size()) - 1) + ")";
    return result;
  }
  const StageGroup& group = table.groups[static_cast<std::size_t>(index)];
  if (group.island != *island) {
    result.error = "pod's " + std::string(kIslandKey) + " " + in_quotes(*island) +
                   " does not run stage " + std::to_string(index) + " of plan " + table.plan +
                   " (" + group.island + " does)";
    return result;
  }
  result.group = &group;
  return result;
}

// The first group label a node lacks or has another value of, or that the node is outside the
// stage's placement; nullopt when it may run the group's pods.
std::optional<std::string> mismatch(const StageTable& table, const StageGroup& group,
                                    const std::string& node, const NodeLabels& labels) {
  for (const auto& [name, wanted] : group.labels) {
    const auto found = labels.find(name);
    if (found != labels.end() && found->second == wanted) continue;
    return "node label " + name + ": wanted " + in_quotes(wanted) + ", found " +
           (found == labels.end() ? std::string("none") : in_quotes(found->second));
  }
  if (group.nodes.empty()) return std::nullopt;
  const auto placeholder = labels.find(std::string(kNodeLabel));
  const std::string& id = placeholder != labels.end() ? placeholder->second : node;
  if (std::find(group.nodes.begin(), group.nodes.end(), id) != group.nodes.end()) {
    return std::nullopt;
  }
  // The reason names no node, so that the scheduler's summary groups the nodes it fails.
  return "node outside the placement of stage " + std::to_string(group.stage) + " of plan " +
         table.plan + " (" + std::to_string(group.nodes.size()) + " node" +
         (group.nodes.size() == 1 ? ": " + group.nodes.front()
                                  : "s, " + group.nodes.front() + " to " + group.nodes.back()) +
         "; by " + std::string(kNodeLabel) + ", else by name)";
}

// ---- ExtenderArgs -------------------------------------------------------------------------

struct Candidate {
  std::string name;
  const json* node = nullptr;        // the full Node, when the scheduler sent it
  std::optional<NodeLabels> labels;  // nullopt: a name the cache does not know
};

struct Args {
  const json* pod = nullptr;
  const json* nodes = nullptr;  // the NodeList, when sent in full
  std::vector<Candidate> candidates;
};

Args read_args(const json& args, NodeCache& cache, const Request& request) {
  if (!args.is_object()) request.fail("", "ExtenderArgs (a JSON object)", &args);
  Args out;
  out.pod = member(args, "Pod");
  if (!out.pod || !out.pod->is_object()) request.fail("Pod", "a v1.Pod object", out.pod);
  out.nodes = member(args, "Nodes");
  if (out.nodes) {
    if (!out.nodes->is_object()) request.fail("Nodes", "a v1.NodeList object", out.nodes);
    const json* items = member(*out.nodes, "items");
    if (items && !items->is_array()) request.fail("Nodes.items", "an array", items);
    if (!items) return out;
    out.candidates.reserve(items->size());
    for (std::size_t i = 0; i < items->size(); ++i) {
      const json& node = (*items)[i];
      const std::string path = at("Nodes.items", i);
      Candidate candidate;
      candidate.name = node_name(node, path, request);
      candidate.node = &node;
      candidate.labels = node_labels(node, path, request);
      out.candidates.push_back(std::move(candidate));
    }
    // Remember what was seen, for later requests that send names only.
    for (const Candidate& candidate : out.candidates) cache.put(candidate.name, *candidate.labels);
    return out;
  }
  const json* names = member(args, "NodeNames");
  if (!names) request.fail("Nodes", "a v1.NodeList object or NodeNames", nullptr);
  if (!names->is_array()) request.fail("NodeNames", "an array of node names", names);
  out.candidates.reserve(names->size());
  for (std::size_t i = 0; i < names->size(); ++i) {
    const json& name = (*names)[i];
    if (!name.is_string()) request.fail(at("NodeNames", i), "a node name", &name);
    Candidate candidate;
    candidate.name = name.get<std::string>();
    candidate.labels = cache.get(candidate.name);
    out.candidates.push_back(std::move(candidate));
  }
  return out;
}

// Why a candidate cannot run the pod; nullopt when it can.
std::optional<std::string> failure(const StageTable& table, const PodGroup& group,
                                   const Candidate& candidate) {
  if (!group.named) return std::nullopt;
  if (!group.error.empty()) return group.error;
  if (!candidate.labels) return std::string(kUnknownNodeReason);
  return mismatch(table, *group.group, candidate.name, *candidate.labels);
}

void check_config(const ExtenderConfig& config) {
  const SourceLocation where{"extender", 0, 0};
  if (config.threads < 1 || config.threads > kMaxThreads) {
    throw InputError(where, "threads",
                     "expected an integer from 1 to " + std::to_string(kMaxThreads) + ", got " +
                         std::to_string(config.threads));
  }
  if (!(config.request_timeout >= 0.1 && config.request_timeout <= 3600)) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", config.request_timeout);
    throw InputError(where, "request_timeout",
                     std::string("expected seconds from 0.1 to 3600, got ") + got);
  }
  if (config.tls_certificate.empty() != config.tls_key.empty()) {
    throw InputError(where, "tls",
                     "expected a certificate and its private key together, got only the " +
                         std::string(config.tls_key.empty() ? "certificate" : "key"));
  }
  if (!config.client_ca.empty() && config.tls_certificate.empty()) {
    throw InputError(where, "client_ca",
                     "expected a server certificate and key with it: client certificates are "
                     "asked for over TLS only");
  }
  if (config.max_body < 1024) {
    throw InputError(where, "max_body",
                     "expected at least 1024 bytes, got " + std::to_string(config.max_body));
  }
  const std::string& prefix = config.prefix;
  const bool chars_ok = std::all_of(prefix.begin(), prefix.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '-' || c == '_' ||
           c == '.';
  });
  if (!chars_ok || (!prefix.empty() && (prefix.front() != '/' || prefix.back() == '/'))) {
    throw InputError(where, "prefix",
                     "expected a URL path such as \"/hetplan\" (letters, digits, '/', '-', '_', "
                     "'.'; starting with '/', not ending with it), got " +
                         in_quotes(prefix));
  }
}

std::string error_body(const std::string& message) {
  json body = {{"Error", message}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

// ---- StageTable ---------------------------------------------------------------------------

StageTable stage_table(const Cluster& cluster, const Plan& plan) {
  StageTable table;
  table.plan = plan.name;
  table.groups.reserve(plan.stages.size());
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const PlanStage& stage = plan.stages[i];
    if (!cluster.find_island(stage.island)) {
      throw InputError(
          stage.island_location, at("stages", i) + ".island",
          "expected an island of cluster " + cluster.name + ", got " + in_quotes(stage.island));
    }
  }
  Placement placement;
  try {
    placement = place_plan(cluster, plan);
  } catch (const std::invalid_argument& error) {
    const SourceLocation where = plan.stages.empty() ? SourceLocation{} : plan.stages[0].location;
    throw InputError(where, "stages",
                     "expected stages that fit their islands' nodes, got " +
                         std::string(error.what()));
  }
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const PlanStage& stage = plan.stages[i];
    const Island* island = cluster.find_island(stage.island);
    StageGroup group;
    group.stage = static_cast<int>(i);
    group.island = island->name;
    for (std::string_view name : kGroupLabels) {
      const auto found = island->labels.find(std::string(name));
      if (found != island->labels.end()) group.labels.emplace_back(found->first, found->second);
    }
    group.nodes_per_leaf = island->nodes_per_leaf;
    for (const PlacedNode& node : placement.stages[i].nodes) group.nodes.push_back(node.name);
    table.groups.push_back(std::move(group));
  }
  return table;
}

// ---- NodeCache ----------------------------------------------------------------------------

bool NodeCache::put(const std::string& name, NodeLabels labels) {
  std::lock_guard lock(mutex_);
  auto found = nodes_.find(name);
  if (found != nodes_.end()) {
    found->second = std::move(labels);
    return true;
  }
  if (nodes_.size() >= max_nodes_) return false;
  nodes_.emplace(name, std::move(labels));
  return true;
}

std::optional<NodeLabels> NodeCache::get(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto found = nodes_.find(name);
  if (found == nodes_.end()) return std::nullopt;
  return found->second;
}

std::size_t NodeCache::size() const {
  std::lock_guard lock(mutex_);
  return nodes_.size();
}

std::size_t NodeCache::add_node_list(const json& list, const SourceLocation& where) {
  const Request request{where.file};
  if (!list.is_object()) request.fail("", "a v1 NodeList (kubectl get nodes -o json)", &list);
  const json* items = member(list, "items");
  if (!items || !items->is_array()) request.fail("items", "an array of nodes", items);
  std::vector<std::pair<std::string, NodeLabels>> nodes;
  nodes.reserve(items->size());
  for (std::size_t i = 0; i < items->size(); ++i) {
    const std::string path = at("items", i);
    std::string name = node_name((*items)[i], path, request);
    nodes.emplace_back(std::move(name), node_labels((*items)[i], path, request));
  }
  std::size_t added = 0;
  for (auto& [name, labels] : nodes) added += put(name, std::move(labels)) ? 1 : 0;
  return added;
}

json parse_json(const std::string& text, const std::string& file_name) {
  if (!nesting_within(text, kMaxDepth)) {
    throw InputError({file_name, 0, 0}, "",
                     "expected JSON nested at most " + std::to_string(kMaxDepth) +
                         " levels deep, got deeper nesting");
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& error) {
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error while
    // parsing value - ..." without the tag and the place, which the location gives.
    std::string what = error.what();
    if (const auto colon = what.find(": "); colon != std::string::npos) what.erase(0, colon + 2);
    const std::size_t offset = error.byte > 0 ? std::min(error.byte - 1, text.size()) : 0;
    throw InputError(location_at(file_name, text, offset), "", "expected JSON, got a " + what);
  } catch (const json::exception&) {
    // out_of_range.406: a number beyond a double.
    const std::string_view number = overflowing_number(text);
    const std::size_t offset = number.empty() ? 0 : static_cast<std::size_t>(number.data() - text.data());
    throw InputError(location_at(file_name, text, offset), "",
                     "expected a number within the range of a double, got " + quoted(number));
  }
}

// ---- filter and prioritize ----------------------------------------------------------------

json filter(const StageTable& table, NodeCache& cache, const json& args) {
  const Request request{"filter request"};
  const Args in = read_args(args, cache, request);
  const PodGroup group = pod_group(table, *in.pod, request);

  // A pod naming a group the plan does not have: the error is the pod's, said once (the
  // scheduler keeps the pod pending and reports it), not once per node: a list of node names
  // would otherwise buy an answer tens of times its size.
  if (group.named && !group.error.empty()) {
    json result = json::object();
    result["Nodes"] = in.nodes ? json({{"items", json::array()}}) : json(nullptr);
    result["NodeNames"] = in.nodes ? json(nullptr) : json::array();
    result["FailedNodes"] = json::object();
    result["FailedAndUnresolvableNodes"] = json::object();
    result["Error"] = group.error;
    return result;
  }

  json failed = json::object();
  std::vector<const Candidate*> passed;
  passed.reserve(in.candidates.size());
  for (const Candidate& candidate : in.candidates) {
    if (auto reason = failure(table, group, candidate)) {
      failed[candidate.name] = std::move(*reason);
    } else {
      passed.push_back(&candidate);
    }
  }

  json result = json::object();
  if (in.nodes) {
    json nodes = json::object();
    for (auto it = in.nodes->begin(); it != in.nodes->end(); ++it) {
      if (it.key() != "items") nodes[it.key()] = *it;
    }
    json items = json::array();
    for (const Candidate* candidate : passed) items.push_back(*candidate->node);
    nodes["items"] = std::move(items);
    result["Nodes"] = std::move(nodes);
    result["NodeNames"] = nullptr;
  } else {
    json names = json::array();
    for (const Candidate* candidate : passed) names.push_back(candidate->name);
    result["Nodes"] = nullptr;
    result["NodeNames"] = std::move(names);
  }
  result["FailedNodes"] = json::object();
  result["FailedAndUnresolvableNodes"] = std::move(failed);
  result["Error"] = "";
  return result;
}

json prioritize(const StageTable& table, NodeCache& cache, const json& args) {
  const Request request{"prioritize request"};
  const Args in = read_args(args, cache, request);
  const PodGroup group = pod_group(table, *in.pod, request);

  // Matching candidates per leaf; the leaf most of them share wins (ties: the smaller name).
  std::vector<bool> matches(in.candidates.size(), false);
  std::vector<std::string> leaves(in.candidates.size());
  std::map<std::string, int> per_leaf;
  for (std::size_t i = 0; i < in.candidates.size(); ++i) {
    const Candidate& candidate = in.candidates[i];
    if (!group.group || failure(table, group, candidate)) continue;
    matches[i] = true;
    const auto leaf = candidate.labels->find(table.leaf_label);
    if (leaf == candidate.labels->end() || leaf->second.empty()) continue;
    leaves[i] = leaf->second;
    ++per_leaf[leaves[i]];
  }
  std::string best;
  int best_count = 0;
  for (const auto& [leaf, count] : per_leaf) {
    if (count > best_count) {
      best = leaf;
      best_count = count;
    }
  }

  json result = json::array();
  for (std::size_t i = 0; i < in.candidates.size(); ++i) {
    int score = 0;
    if (matches[i]) {
      if (leaves[i].empty()) {
        score = 1;
      } else if (leaves[i] == best) {
        score = kMaxScore;
      } else {
        const long size = std::max(group.group->nodes_per_leaf, 1);
        score = 1 + static_cast<int>(std::min(8L, 8L * per_leaf[leaves[i]] / size));
      }
    }
    result.push_back({{"Host", in.candidates[i].name}, {"Score", score}});
  }
  return result;
}

// ---- Server -------------------------------------------------------------------------------

struct Server::Impl {
  StageTable table;
  ExtenderConfig config;
  NodeCache cache;
  std::string filter_path;
  std::string prioritize_path;
  http::Server http;

  Impl(StageTable stage_table, ExtenderConfig extender_config)
      : table(std::move(stage_table)),
        config(std::move(extender_config)),
        filter_path(config.prefix + "/filter"),
        prioritize_path(config.prefix + "/prioritize"),
        http(
            limits(config), [this](const http::Request& req, http::Response& res) { handle(req, res); },
            [](std::string_view message) { return error_body(std::string(message)); },
            [this](const http::Request& head, http::Response& refusal) { return route(head, refusal); },
            http::Tls{config.tls_certificate, config.tls_key, config.client_ca}) {}

  static http::Limits limits(const ExtenderConfig& config) {
    http::Limits limits;
    limits.max_body = config.max_body;
    limits.threads = static_cast<std::size_t>(config.threads);
    limits.backlog = kBacklog;
    limits.request_deadline =
        std::chrono::milliseconds(std::lround(config.request_timeout * 1000.0));
    limits.drain = limits.request_deadline;
    // Room for four of the largest bodies besides the reserve small requests keep.
    limits.budget = 4 * config.max_body + limits.small_reserve;
    return limits;
  }

  // The endpoints and their method, checked before a body is read.
  bool route(const http::Request& head, http::Response& refusal) const {
    if (head.path != filter_path && head.path != prioritize_path) {
      refusal.status = 404;
      refusal.body = error_body("no such endpoint: " + head.method + " " + head.path);
      return false;
    }
    if (head.method != "POST") {
      refusal.status = 405;
      refusal.headers.emplace_back("Allow", "POST");
      refusal.body = error_body("method " + head.method + " not allowed: use POST");
      return false;
    }
    return true;
  }

  void handle(const http::Request& req, http::Response& res) {
    const bool is_filter = req.path == filter_path;
    try {
      const json args = parse_json(req.body, is_filter ? "filter request" : "prioritize request");
      const json result = is_filter ? filter(table, cache, args) : prioritize(table, cache, args);
      res.body = result.dump(-1, ' ', false, json::error_handler_t::replace);
    } catch (const InputError& error) {
      res.status = 400;
      res.body = error_body(error.what());
    }
  }
};

Server::Server(StageTable table, ExtenderConfig config) {
  check_config(config);
  impl_ = std::make_unique<Impl>(std::move(table), std::move(config));
}

Server::~Server() = default;

bool Server::listen(const std::string& host, int port) {
  if (impl_->http.bind(host, port) < 0) return false;
  listen_after_bind();
  return true;
}

int Server::bind_any_port(const std::string& host) {
  return impl_->http.bind(host, 0);
}

void Server::listen_after_bind() {
  if (!impl_->http.run()) {
    throw InputError({"extender", 0, 0}, "tls",
                     "expected a PEM certificate, its private key and (for client "
                     "certificates) PEM CA certificates the TLS library accepts; it refused them");
  }
}

void Server::stop() {
  impl_->http.stop();
}

http::Counters Server::counters() const {
  return impl_->http.counters();
}

NodeCache& Server::node_cache() {
  return impl_->cache;
}

}  // namespace hetplan::extender
