// A kube-scheduler HTTP extender for one plan (k8s.io/kube-scheduler/extender/v1,
// docs/extender.md). The pods of a plan's stage groups (island, stage index) are kept on nodes
// whose labels match the group's island and are steered to fill one leaf switch first.
//
// filter() and prioritize() are pure functions of a stage table, a node cache and the
// ExtenderArgs JSON; the Server only moves bytes between HTTP and them. Nothing here prints or
// reads files: the front end reads the plan, the scenario and the optional nodes file.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/cluster.hpp"
#include "core/error.hpp"
#include "core/placement.hpp"
#include "core/plan.hpp"
#include "extender/http_server.hpp"

namespace hetplan::extender {

// The scheduler's score range for extenders (MaxExtenderPriority).
inline constexpr int kMaxScore = 10;

// Where a pod names its stage group: pod labels first, then pod annotations, then the env of its
// first container. The stage is the 0-based index into the plan's stages.
inline constexpr std::string_view kIslandKey = "hetplan.io/island";
inline constexpr std::string_view kStageKey = "hetplan.io/stage";
inline constexpr std::string_view kIslandEnv = "HETPLAN_ISLAND";
inline constexpr std::string_view kStageEnv = "HETPLAN_STAGE";

// The node label naming the leaf switch a node hangs off (the default of StageTable::leaf_label),
// and the one naming the node a placeholder of the plan's placement stands for
// (core/placement.hpp; labels.sh writes both).
using hetplan::kLeafLabel;
using hetplan::kNodeLabel;

// The island labels (Island::labels) a node must carry, in the order they are checked.
inline constexpr std::array<std::string_view, 4> kGroupLabels = {
    "accelerator.vendor", "accelerator.model", "runtime.version", "fabric.zone"};

// The reason given for a node name (nodeCacheCapable) the extender has never seen.
inline constexpr std::string_view kUnknownNodeReason = "unknown node: not in the extender's cache";

// One stage group of the plan: the pods of one pipeline stage, all on one island.
struct StageGroup {
  int stage = 0;       // index into Plan::stages
  std::string island;  // Island::name
  // The labels a node must carry (name, value), in kGroupLabels order; only those the island has.
  std::vector<std::pair<std::string, std::string>> labels;
  int nodes_per_leaf = 0;  // Island::nodes_per_leaf
  // The nodes the plan's placement puts the stage on (core/placement.hpp), in order: the cluster
  // file's node names, or placeholders "<island>-node-NN". A node passes only when its
  // kNodeLabel, or without one its name, is one of them. Empty: any node with the labels.
  std::vector<std::string> nodes;
};

// What the extender knows about a plan: one group per stage, indexed by the stage.
struct StageTable {
  std::string plan;  // Plan::name, for messages
  std::vector<StageGroup> groups;
  std::string leaf_label = std::string(kLeafLabel);
};

// The table of a plan on its cluster, each group with the nodes of its stage's placement. Throws
// InputError at the stage when a stage names an island the cluster lacks
// (formats::check_plan_references catches that earlier when it is run) or needs more nodes than
// its island has.
StageTable stage_table(const Cluster& cluster, const Plan& plan);

using NodeLabels = std::map<std::string, std::string>;

// Node name -> labels, for nodeCacheCapable schedulers that send names only. Filled from every
// full Node the extender sees and from a node list given at start. Thread-safe. Bounded: once
// max_nodes names are known, new names are not added (known ones are still updated).
class NodeCache {
 public:
  explicit NodeCache(std::size_t max_nodes = 100000) : max_nodes_(max_nodes) {}

  // Remembers the labels of a node. False when the cache is full and the name is new.
  bool put(const std::string& name, NodeLabels labels);
  std::optional<NodeLabels> get(const std::string& name) const;
  std::size_t size() const;

  // Adds every item of a v1 NodeList (`kubectl get nodes -o json`) and returns how many were
  // added. Throws InputError at `where` naming the field (items[3].metadata.name) when an item is
  // not a Node; nothing is added then.
  std::size_t add_node_list(const nlohmann::json& list, const SourceLocation& where);

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, NodeLabels> nodes_;
  std::size_t max_nodes_;
};

// Parses a JSON document (a nodes file) with the request limits: at most 64 levels of nesting.
// Throws InputError naming file_name on a syntax error or deeper nesting.
nlohmann::json parse_json(const std::string& text, const std::string& file_name);

// The ExtenderFilterResult for ExtenderArgs `args` (full "Nodes" or, nodeCacheCapable,
// "NodeNames"). Nodes whose labels differ from the pod's group, nodes outside its stage's
// placement, and unknown node names, go to FailedAndUnresolvableNodes with a reason (evicting
// pods cannot change labels). A pod that names
// no group passes every node; one that names a group the plan lacks passes none, with the
// reason once in "Error". Throws InputError ("filter request: Nodes.items[2].metadata.name:
// expected a string, got 5") when args is not ExtenderArgs.
nlohmann::json filter(const StageTable& table, NodeCache& cache, const nlohmann::json& args);

// The HostPriorityList for `args`: 0 for nodes that fail the pod's group labels (and for every
// node when the pod names no group); kMaxScore for matching nodes under the leaf switch most
// matching candidates share; 1 + 8 * candidates / nodes_per_leaf (at most 9) under other leaves;
// 1 without a leaf label. Throws InputError like filter().
nlohmann::json prioritize(const StageTable& table, NodeCache& cache, const nlohmann::json& args);

struct ExtenderConfig {
  std::string prefix = "/hetplan";  // urlPrefix's path: POST {prefix}/filter, {prefix}/prioritize
  std::size_t max_body = 8 << 20;   // bytes; larger requests get 413
  int threads = 4;                  // worker threads; connections beyond them wait (bounded)
  // Seconds a request may take from the moment a worker waits for it to its last byte; a
  // slower client gets 408 and is disconnected (docs/extender.md#limits).
  double request_timeout = 10;
  // HTTPS (PEM texts; the front end reads the files): without a certificate the extender
  // speaks plain HTTP. With client_ca, only clients presenting a certificate that CA signed
  // (kube-scheduler's extender tlsConfig certFile/keyFile) reach the node cache.
  std::string tls_certificate;
  std::string tls_key;
  std::string client_ca;
};

// The HTTP server. Use listen() (blocks until stop()), or bind_any_port() then
// listen_after_bind() (blocks) on another thread. stop() may be called from any thread, before or
// while listening; join the listening thread before destroying the Server.
class Server {
 public:
  // Throws InputError ("extender: threads: expected ...") for a bad config.
  Server(StageTable table, ExtenderConfig config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and serves until stop(). False when the address cannot be bound.
  bool listen(const std::string& host, int port);
  // Binds to a free port of host and returns it; -1 when binding fails.
  int bind_any_port(const std::string& host);
  // Serves on the bound port until stop(). Throws InputError ("extender: tls: ...") when the
  // HTTP library cannot start with the TLS certificate, key or CA given.
  void listen_after_bind();
  // Any thread, any time. Serving then ends after the requests being read or answered finish
  // (at most request_timeout); no new connection is taken meanwhile.
  void stop();
  // What the HTTP server counted (answers, refusals for memory, bytes held).
  http::Counters counters() const;

  // The node cache, e.g. to fill it from a nodes file before listening.
  NodeCache& node_cache();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hetplan::extender
