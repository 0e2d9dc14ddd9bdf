#include "sim/twin/json.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace hetplan::sim::twin {
namespace {

using models::Collective;
using models::CollectiveAlgorithm;
using nlohmann::json;
using nlohmann::ordered_json;

// Each struct's fields, listed once for both directions: `v(name, field)` for every field. The
// JSON keys are the field names.

template <typename V>
void fields(V& v, TwinIsland& i) {
  v("name", i.name);
  v("zone", i.zone);
  v("nodes", i.nodes);
  v("chips_per_node", i.chips_per_node);
  v("nics", i.nics);
  v("nic_speed", i.nic_speed);
  v("nodes_per_leaf", i.nodes_per_leaf);
  v("uplink_speed", i.uplink_speed);
  v("intra_speed", i.intra_speed);
  v("intra_group", i.intra_group);
  v("cross_group_speed", i.cross_group_speed);
  v("intra_efficiency", i.intra_efficiency);
  v("network_efficiency", i.network_efficiency);
}

template <typename V>
void fields(V& v, TwinZoneLink& z) {
  v("zone_a", z.zone_a);
  v("zone_b", z.zone_b);
  v("speed", z.speed);
  v("latency", z.latency);
}

template <typename V>
void fields(V& v, TwinSpine& z) {
  v("zone", z.zone);
  v("speed", z.speed);
}

template <typename V>
void fields(V& v, TwinCollective& c) {
  v("kind", c.kind);
  v("algorithm", c.algorithm);
  v("bytes", c.bytes);
  v("latency_s", c.latency_s);
  v("experts", c.experts);
}

template <typename V>
void fields(V& v, TwinStage& s) {
  v("island", s.island);
  v("first_chip", s.first_chip);
  v("tp", s.tp);
  v("dp", s.dp);
  v("ep", s.ep);
  v("etp", s.etp);
  v("a2a_bytes", s.a2a_bytes);
  v("a2a_node_bytes", s.a2a_node_bytes);
  v("a2a_network_bytes", s.a2a_network_bytes);
  v("a2a_forward", s.a2a_forward);
  v("a2a_backward", s.a2a_backward);
  v("a2a_latency_s", s.a2a_latency_s);
  v("a2a_overlap", s.a2a_overlap);
  v("forward_s", s.forward_s);
  v("backward_s", s.backward_s);
  v("tp_s", s.tp_s);
  v("optimizer_s", s.optimizer_s);
  v("dp_sync", s.dp_sync);
  v("chunk_share", s.chunk_share);
}

template <typename V>
void fields(V& v, TwinStraggler& s) {
  v("island", s.island);
  v("node", s.node);
  v("slowdown", s.slowdown);
}

template <typename V>
void fields(V& v, TwinInput& in) {
  v("plan", in.plan);
  v("link_latency", in.link_latency);
  v("switch_latency", in.switch_latency);
  v("islands", in.islands);
  v("zone_links", in.zone_links);
  v("spines", in.spines);
  v("stages", in.stages);
  v("micro_batches", in.micro_batches);
  v("chunks", in.chunks);
  v("activation_bytes", in.activation_bytes);
  v("overlap_grad_reduce", in.overlap_grad_reduce);
  v("overlap_param_gather", in.overlap_param_gather);
  v("combined", in.combined);
  v("tokens_per_step", in.tokens_per_step);
  v("model_flops_per_step", in.model_flops_per_step);
  v("peak_flops", in.peak_flops);
  v("seed", in.seed);
  v("jitter", in.jitter);
  v("stragglers", in.stragglers);
  v("chip_blocks", in.chip_blocks);
  v("fold_replicas", in.fold_replicas);
  v("trace_path", in.trace_path);
}

template <typename V>
void fields(V& v, TwinBreakdown& b) {
  v("compute_s", b.compute_s);
  v("tensor_parallel_s", b.tensor_parallel_s);
  v("pipeline_s", b.pipeline_s);
  v("cross_island_s", b.cross_island_s);
  v("data_parallel_s", b.data_parallel_s);
  v("expert_parallel_s", b.expert_parallel_s);
  v("bubble_s", b.bubble_s);
  v("stragglers_s", b.stragglers_s);
  v("optimizer_s", b.optimizer_s);
}

template <typename V>
void fields(V& v, TwinLinkLoad& l) {
  v("name", l.name);
  v("kind", l.kind);
  v("bytes", l.bytes);
  v("speed", l.speed);
  v("busy_s", l.busy_s);
  v("utilization", l.utilization);
}

template <typename V>
void fields(V& v, TwinResult& r) {
  v("plan", r.plan);
  v("step_time_s", r.step_time_s);
  v("tokens_per_s", r.tokens_per_s);
  v("mfu", r.mfu);
  v("breakdown", r.breakdown);
  v("critical_stage", r.critical_stage);
  v("critical_replica", r.critical_replica);
  v("stage_finish_s", r.stage_finish_s);
  v("stage_first_finish_s", r.stage_first_finish_s);
  v("stage_breakdown", r.stage_breakdown);
  v("links", r.links);
  v("ranks", r.ranks);
  v("simulated_ranks", r.simulated_ranks);
  v("flows", r.flows);
}

template <typename V>
void fields(V& v, TwinGradientPath& p) {
  v("group_a", p.group_a);
  v("group_b", p.group_b);
  v("speed", p.speed);
  v("latency", p.latency);
  v("fabric", p.fabric);
}

template <typename V>
void fields(V& v, TwinGradientExchange& e) {
  v("parameter_server", e.parameter_server);
  v("server", e.server);
  v("bytes", e.bytes);
  v("paths", e.paths);
  v("zone_links", e.zone_links);
}

template <typename V>
void fields(V& v, TwinExchangeResult& r) {
  v("start_s", r.start_s);
  v("end_s", r.end_s);
  v("flows", r.flows);
  v("links", r.links);
}

template <typename V>
void fields(V& v, TwinPoolInput& p) {
  v("jobs", p.jobs);
  v("max_steps", p.max_steps);
  v("exchange", p.exchange);
}

template <typename V>
void fields(V& v, TwinSharedLink& l) {
  v("load", l.load);
  v("job_bytes", l.job_bytes);
}

template <typename V>
void fields(V& v, TwinPoolResult& r) {
  v("jobs", r.jobs);
  v("steps", r.steps);
  v("mean_step_s", r.mean_step_s);
  v("window_s", r.window_s);
  v("links", r.links);
  v("exchange", r.exchange);
}

// The words of the enumerations, as models:: and sim:: spell them.
template <typename Enum>
constexpr auto words() {
  if constexpr (std::is_same_v<Enum, Collective>) {
    return std::to_array({Collective::all_reduce, Collective::reduce_scatter,
                          Collective::all_gather});
  } else if constexpr (std::is_same_v<Enum, CollectiveAlgorithm>) {
    return std::to_array({CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                          CollectiveAlgorithm::hierarchical});
  } else {
    static_assert(std::is_same_v<Enum, TwinLinkKind>);
    return std::to_array({TwinLinkKind::nic, TwinLinkKind::intra, TwinLinkKind::cross_group,
                          TwinLinkKind::leaf_uplink, TwinLinkKind::zone_link, TwinLinkKind::spine,
                          TwinLinkKind::gradient_path});
  }
}

template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};
template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

// --- writing -----------------------------------------------------------------------------------

template <typename T>
ordered_json write(const T& value);

struct Writer {
  ordered_json out = ordered_json::object();
  template <typename T>
  void operator()(const char* name, const T& value) {
    out[name] = write(value);
  }
};

template <typename T>
ordered_json write(const T& value) {
  if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
    return value;
  } else if constexpr (std::is_enum_v<T>) {
    return std::string(to_string(value));
  } else if constexpr (is_vector<T>::value) {
    ordered_json out = ordered_json::array();
    for (const auto& element : value) out.push_back(write(element));
    return out;
  } else if constexpr (is_optional<T>::value) {
    return value ? write(*value) : ordered_json(nullptr);
  } else {
    Writer writer;
    fields(writer, const_cast<T&>(value));  // fields() only reads through a Writer
    return writer.out;
  }
}

// --- reading: strict, every field required, types and ranges checked ---------------------------

template <typename T>
T read(const json& value, const std::string& path);

struct Reader {
  const json& object;
  const std::string& path;
  template <typename T>
  void operator()(const char* name, T& value) {
    auto it = object.find(name);
    if (it == object.end()) throw std::runtime_error(path + "." + name + ": missing");
    value = read<T>(*it, path + "." + name);
  }
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

template <typename T>
T read(const json& value, const std::string& path) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean()) fail(path, "expected true or false");
    return value.get<bool>();
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<long long>() >= 0))
      fail(path, "expected a non-negative integer");
    return value.get<std::uint64_t>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!value.is_number_integer()) fail(path, "expected an integer");
    if (value.is_number_unsigned() && value.get<unsigned long long>() > (1ull << 62))
      fail(path, "out of range");
    const long long limit = std::is_same_v<T, int> ? (1LL << 30) : (1LL << 62);
    const long long number = value.get<long long>();
    if (number < -limit || number > limit) fail(path, "out of range");
    return static_cast<T>(number);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!value.is_number()) fail(path, "expected a number");
    return value.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string()) fail(path, "expected a string");
    return value.get<std::string>();
  } else if constexpr (std::is_enum_v<T>) {
    const std::string word = read<std::string>(value, path);
    for (T option : words<T>())
      if (to_string(option) == word) return option;
    fail(path, "unknown value \"" + word + "\"");
  } else if constexpr (is_optional<T>::value) {
    if (value.is_null()) return T{};
    return read<typename T::value_type>(value, path);
  } else if constexpr (is_vector<T>::value) {
    if (!value.is_array()) fail(path, "expected an array");
    T out;
    for (std::size_t k = 0; k < value.size(); ++k)
      out.push_back(read<typename T::value_type>(value[k], path + "[" + std::to_string(k) + "]"));
    return out;
  } else {
    if (!value.is_object()) fail(path, "expected an object");
    T out;
    Reader reader{value, path};
    fields(reader, out);
    return out;
  }
}

}  // namespace

ordered_json to_json(const TwinInput& input) { return write(input); }
TwinInput input_from_json(const json& json) { return read<TwinInput>(json, "input"); }

ordered_json to_json(const TwinResult& result) { return write(result); }
TwinResult result_from_json(const json& json) { return read<TwinResult>(json, "result"); }

ordered_json to_json(const TwinBreakdown& breakdown) { return write(breakdown); }

ordered_json to_json(const TwinPoolInput& pool) { return {{"pool", write(pool)}}; }
bool is_pool(const json& json) { return json.is_object() && json.contains("pool"); }
TwinPoolInput pool_from_json(const json& json) {
  if (!is_pool(json)) throw std::runtime_error("pool: missing");
  return read<TwinPoolInput>(json.at("pool"), "pool");
}

ordered_json to_json(const TwinPoolResult& result) { return write(result); }
TwinPoolResult pool_result_from_json(const json& json) {
  return read<TwinPoolResult>(json, "result");
}

}  // namespace hetplan::sim::twin
