#include "sim/twin/json.hpp"

#include <stdexcept>
#include <string>

namespace hetplan::sim::twin {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;
using models::Collective;
using models::CollectiveAlgorithm;

// Strict field access: the document is written by this program, so anything missing or of the
// wrong type means a broken peer; say which field.
const json& field(const json& object, const char* name, const std::string& path) {
  if (!object.is_object()) throw std::runtime_error(path + ": expected an object");
  auto it = object.find(name);
  if (it == object.end()) throw std::runtime_error(path + "." + name + ": missing");
  return *it;
}

double number(const json& object, const char* name, const std::string& path) {
  const json& value = field(object, name, path);
  if (!value.is_number()) throw std::runtime_error(path + "." + name + ": expected a number");
  return value.get<double>();
}

long long integer(const json& object, const char* name, const std::string& path) {
  const json& value = field(object, name, path);
  if (!value.is_number_integer())
    throw std::runtime_error(path + "." + name + ": expected an integer");
  if (value.is_number_unsigned() && value.get<unsigned long long>() > (1ull << 62))
    throw std::runtime_error(path + "." + name + ": out of range");
  return value.get<long long>();
}

int small_int(const json& object, const char* name, const std::string& path) {
  const long long value = integer(object, name, path);
  if (value < -(1LL << 30) || value > (1LL << 30))
    throw std::runtime_error(path + "." + name + ": out of range");
  return static_cast<int>(value);
}

std::string text(const json& object, const char* name, const std::string& path) {
  const json& value = field(object, name, path);
  if (!value.is_string()) throw std::runtime_error(path + "." + name + ": expected a string");
  return value.get<std::string>();
}

bool boolean(const json& object, const char* name, const std::string& path) {
  const json& value = field(object, name, path);
  if (!value.is_boolean()) throw std::runtime_error(path + "." + name + ": expected true or false");
  return value.get<bool>();
}

const json& array(const json& object, const char* name, const std::string& path) {
  const json& value = field(object, name, path);
  if (!value.is_array()) throw std::runtime_error(path + "." + name + ": expected an array");
  return value;
}

template <typename Enum, std::size_t N>
Enum choice(const json& object, const char* name, const std::string& path,
            const std::pair<Enum, std::string_view> (&options)[N]) {
  const std::string value = text(object, name, path);
  for (const auto& [e, word] : options)
    if (word == value) return e;
  throw std::runtime_error(path + "." + name + ": unknown value \"" + value + "\"");
}

constexpr std::pair<Collective, std::string_view> kCollectives[] = {
    {Collective::all_reduce, "all-reduce"},
    {Collective::reduce_scatter, "reduce-scatter"},
    {Collective::all_gather, "all-gather"}};
constexpr std::pair<CollectiveAlgorithm, std::string_view> kAlgorithms[] = {
    {CollectiveAlgorithm::ring, "ring"},
    {CollectiveAlgorithm::tree, "tree"},
    {CollectiveAlgorithm::hierarchical, "hierarchical"}};
constexpr std::pair<TwinLinkKind, std::string_view> kLinkKinds[] = {
    {TwinLinkKind::nic, "nic"},
    {TwinLinkKind::intra, "intra-node"},
    {TwinLinkKind::cross_group, "cross-group"},
    {TwinLinkKind::leaf_uplink, "leaf-uplink"},
    {TwinLinkKind::zone_link, "zone-link"}};

ordered_json breakdown_json(const TwinBreakdown& b) {
  return {{"compute_s", b.compute_s},
          {"tensor_parallel_s", b.tensor_parallel_s},
          {"pipeline_s", b.pipeline_s},
          {"cross_island_s", b.cross_island_s},
          {"data_parallel_s", b.data_parallel_s},
          {"bubble_s", b.bubble_s},
          {"stragglers_s", b.stragglers_s},
          {"optimizer_s", b.optimizer_s}};
}

TwinBreakdown breakdown_from_json(const json& b, const std::string& path) {
  TwinBreakdown out;
  out.compute_s = number(b, "compute_s", path);
  out.tensor_parallel_s = number(b, "tensor_parallel_s", path);
  out.pipeline_s = number(b, "pipeline_s", path);
  out.cross_island_s = number(b, "cross_island_s", path);
  out.data_parallel_s = number(b, "data_parallel_s", path);
  out.bubble_s = number(b, "bubble_s", path);
  out.stragglers_s = number(b, "stragglers_s", path);
  out.optimizer_s = number(b, "optimizer_s", path);
  return out;
}

}  // namespace

ordered_json to_json(const TwinInput& in) {
  ordered_json out;
  out["plan"] = in.plan;
  out["link_latency"] = in.link_latency;
  out["switch_latency"] = in.switch_latency;
  out["islands"] = ordered_json::array();
  for (const TwinIsland& i : in.islands) {
    out["islands"].push_back({{"name", i.name},
                              {"zone", i.zone},
                              {"nodes", i.nodes},
                              {"chips_per_node", i.chips_per_node},
                              {"nics", i.nics},
                              {"nic_speed", i.nic_speed},
                              {"nodes_per_leaf", i.nodes_per_leaf},
                              {"uplink_speed", i.uplink_speed},
                              {"intra_speed", i.intra_speed},
                              {"intra_group", i.intra_group},
                              {"cross_group_speed", i.cross_group_speed},
                              {"intra_efficiency", i.intra_efficiency},
                              {"network_efficiency", i.network_efficiency}});
  }
  out["zone_links"] = ordered_json::array();
  for (const TwinZoneLink& z : in.zone_links) {
    out["zone_links"].push_back(
        {{"zone_a", z.zone_a}, {"zone_b", z.zone_b}, {"speed", z.speed}, {"latency", z.latency}});
  }
  out["stages"] = ordered_json::array();
  for (const TwinStage& s : in.stages) {
    ordered_json sync = ordered_json::array();
    for (const TwinCollective& c : s.dp_sync) {
      sync.push_back({{"kind", models::to_string(c.kind)},
                      {"algorithm", models::to_string(c.algorithm)},
                      {"bytes", c.bytes},
                      {"latency_s", c.latency_s}});
    }
    out["stages"].push_back({{"island", s.island},
                             {"first_chip", s.first_chip},
                             {"tp", s.tp},
                             {"dp", s.dp},
                             {"forward_s", s.forward_s},
                             {"backward_s", s.backward_s},
                             {"tp_s", s.tp_s},
                             {"optimizer_s", s.optimizer_s},
                             {"dp_sync", sync}});
  }
  out["micro_batches"] = in.micro_batches;
  out["chunks"] = in.chunks;
  out["activation_bytes"] = in.activation_bytes;
  out["overlap_grad_reduce"] = in.overlap_grad_reduce;
  out["tokens_per_step"] = in.tokens_per_step;
  out["model_flops_per_step"] = in.model_flops_per_step;
  out["peak_flops"] = in.peak_flops;
  out["seed"] = in.seed;
  out["jitter"] = in.jitter;
  out["stragglers"] = ordered_json::array();
  for (const TwinStraggler& s : in.stragglers)
    out["stragglers"].push_back({{"island", s.island}, {"node", s.node}, {"slowdown", s.slowdown}});
  out["trace_path"] = in.trace_path;
  return out;
}

TwinInput input_from_json(const json& j) {
  TwinInput in;
  const std::string root = "input";
  in.plan = text(j, "plan", root);
  in.link_latency = number(j, "link_latency", root);
  in.switch_latency = number(j, "switch_latency", root);
  const json& islands = array(j, "islands", root);
  for (std::size_t k = 0; k < islands.size(); ++k) {
    const json& x = islands[k];
    const std::string path = root + ".islands[" + std::to_string(k) + "]";
    TwinIsland& i = in.islands.emplace_back();
    i.name = text(x, "name", path);
    i.zone = text(x, "zone", path);
    i.nodes = small_int(x, "nodes", path);
    i.chips_per_node = small_int(x, "chips_per_node", path);
    i.nics = small_int(x, "nics", path);
    i.nic_speed = number(x, "nic_speed", path);
    i.nodes_per_leaf = small_int(x, "nodes_per_leaf", path);
    i.uplink_speed = number(x, "uplink_speed", path);
    i.intra_speed = number(x, "intra_speed", path);
    i.intra_group = small_int(x, "intra_group", path);
    i.cross_group_speed = number(x, "cross_group_speed", path);
    i.intra_efficiency = number(x, "intra_efficiency", path);
    i.network_efficiency = number(x, "network_efficiency", path);
  }
  const json& zone_links = array(j, "zone_links", root);
  for (std::size_t k = 0; k < zone_links.size(); ++k) {
    const std::string path = root + ".zone_links[" + std::to_string(k) + "]";
    const json& x = zone_links[k];
    in.zone_links.push_back({text(x, "zone_a", path), text(x, "zone_b", path),
                             number(x, "speed", path), number(x, "latency", path)});
  }
  const json& stages = array(j, "stages", root);
  for (std::size_t k = 0; k < stages.size(); ++k) {
    const json& x = stages[k];
    const std::string path = root + ".stages[" + std::to_string(k) + "]";
    TwinStage& s = in.stages.emplace_back();
    s.island = small_int(x, "island", path);
    s.first_chip = small_int(x, "first_chip", path);
    s.tp = small_int(x, "tp", path);
    s.dp = small_int(x, "dp", path);
    s.forward_s = number(x, "forward_s", path);
    s.backward_s = number(x, "backward_s", path);
    s.tp_s = number(x, "tp_s", path);
    s.optimizer_s = number(x, "optimizer_s", path);
    const json& sync = array(x, "dp_sync", path);
    for (std::size_t c = 0; c < sync.size(); ++c) {
      const std::string cpath = path + ".dp_sync[" + std::to_string(c) + "]";
      TwinCollective& tc = s.dp_sync.emplace_back();
      tc.kind = choice(sync[c], "kind", cpath, kCollectives);
      tc.algorithm = choice(sync[c], "algorithm", cpath, kAlgorithms);
      tc.bytes = number(sync[c], "bytes", cpath);
      tc.latency_s = number(sync[c], "latency_s", cpath);
    }
  }
  in.micro_batches = small_int(j, "micro_batches", root);
  in.chunks = small_int(j, "chunks", root);
  in.activation_bytes = number(j, "activation_bytes", root);
  in.overlap_grad_reduce = boolean(j, "overlap_grad_reduce", root);
  in.tokens_per_step = number(j, "tokens_per_step", root);
  in.model_flops_per_step = number(j, "model_flops_per_step", root);
  in.peak_flops = number(j, "peak_flops", root);
  const json& seed = field(j, "seed", root);
  if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<long long>() >= 0))
    throw std::runtime_error(root + ".seed: expected a non-negative integer");
  in.seed = seed.get<std::uint64_t>();
  in.jitter = number(j, "jitter", root);
  const json& stragglers = array(j, "stragglers", root);
  for (std::size_t k = 0; k < stragglers.size(); ++k) {
    const std::string path = root + ".stragglers[" + std::to_string(k) + "]";
    in.stragglers.push_back({small_int(stragglers[k], "island", path),
                             small_int(stragglers[k], "node", path),
                             number(stragglers[k], "slowdown", path)});
  }
  in.trace_path = text(j, "trace_path", root);
  return in;
}

ordered_json to_json(const TwinResult& r) {
  ordered_json out;
  out["plan"] = r.plan;
  out["step_time_s"] = r.step_time_s;
  out["tokens_per_s"] = r.tokens_per_s;
  out["mfu"] = r.mfu;
  out["breakdown"] = breakdown_json(r.breakdown);
  out["critical_stage"] = r.critical_stage;
  out["critical_replica"] = r.critical_replica;
  out["stage_finish_s"] = r.stage_finish_s;
  out["stage_first_finish_s"] = r.stage_first_finish_s;
  out["stage_breakdown"] = ordered_json::array();
  for (const TwinBreakdown& b : r.stage_breakdown) out["stage_breakdown"].push_back(breakdown_json(b));
  out["links"] = ordered_json::array();
  for (const TwinLinkLoad& l : r.links) {
    out["links"].push_back({{"name", l.name},
                            {"kind", to_string(l.kind)},
                            {"bytes", l.bytes},
                            {"speed", l.speed},
                            {"busy_s", l.busy_s},
                            {"utilization", l.utilization}});
  }
  out["ranks"] = r.ranks;
  out["flows"] = r.flows;
  return out;
}

TwinResult result_from_json(const json& j) {
  TwinResult r;
  const std::string root = "result";
  r.plan = text(j, "plan", root);
  r.step_time_s = number(j, "step_time_s", root);
  r.tokens_per_s = number(j, "tokens_per_s", root);
  r.mfu = number(j, "mfu", root);
  r.breakdown = breakdown_from_json(field(j, "breakdown", root), root + ".breakdown");
  r.critical_stage = small_int(j, "critical_stage", root);
  r.critical_replica = small_int(j, "critical_replica", root);
  auto numbers = [&](const char* name, std::vector<double>& out) {
    for (const json& x : array(j, name, root)) {
      if (!x.is_number()) throw std::runtime_error(root + "." + name + ": expected numbers");
      out.push_back(x.get<double>());
    }
  };
  numbers("stage_finish_s", r.stage_finish_s);
  numbers("stage_first_finish_s", r.stage_first_finish_s);
  const json& stage_breakdown = array(j, "stage_breakdown", root);
  for (std::size_t k = 0; k < stage_breakdown.size(); ++k) {
    r.stage_breakdown.push_back(breakdown_from_json(
        stage_breakdown[k], root + ".stage_breakdown[" + std::to_string(k) + "]"));
  }
  const json& links = array(j, "links", root);
  for (std::size_t k = 0; k < links.size(); ++k) {
    const std::string path = root + ".links[" + std::to_string(k) + "]";
    TwinLinkLoad& l = r.links.emplace_back();
    l.name = text(links[k], "name", path);
    l.kind = choice(links[k], "kind", path, kLinkKinds);
    l.bytes = number(links[k], "bytes", path);
    l.speed = number(links[k], "speed", path);
    l.busy_s = number(links[k], "busy_s", path);
    l.utilization = number(links[k], "utilization", path);
  }
  r.ranks = integer(j, "ranks", root);
  r.flows = integer(j, "flows", root);
  return r;
}

}  // namespace hetplan::sim::twin
