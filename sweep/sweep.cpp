#include "sweep/sweep.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <set>

#include "core/units.hpp"
#include "formats/document.hpp"
#include "formats/paths.hpp"

namespace hetplan::sweep {
namespace {

using formats::Field;
using formats::MapReader;

constexpr std::size_t kMaxPoints = 1'000'000;
constexpr std::int64_t kMaxSteps = 100'000;

// "8", "2.5e-3", "200 Gbps" -> the number and the unit text after it. Scanned by hand: a
// regular expression's matcher recurses once per character and overflows the stack on long
// input.
bool split_number(const std::string& text, double& number, std::string& unit) {
  const std::size_t n = text.size();
  auto space = [&](std::size_t k) {
    return std::isspace(static_cast<unsigned char>(text[k])) != 0;
  };
  auto digit = [&](std::size_t k) {
    return k < n && std::isdigit(static_cast<unsigned char>(text[k])) != 0;
  };
  std::size_t i = 0;
  while (i < n && space(i)) ++i;
  const std::size_t start = i;
  if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
  std::size_t digits = 0;
  for (; digit(i); ++i) ++digits;
  if (i < n && text[i] == '.') {
    for (++i; digit(i); ++i) ++digits;
  }
  if (digits == 0) return false;
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < n && (text[j] == '+' || text[j] == '-')) ++j;
    if (digit(j)) {
      while (digit(j)) ++j;
      i = j;
    }
  }
  const char* first =
      text.data() + start + (text[start] == '+' ? 1 : 0);  // from_chars takes no '+'
  const auto [end_of_number, error] = std::from_chars(first, text.data() + i, number);
  if (error != std::errc() || end_of_number != text.data() + i) return false;
  std::size_t end = n;
  while (end > i && space(end - 1)) --end;
  while (i < end && space(i)) ++i;
  unit = text.substr(i, end - i);
  return std::isfinite(number);
}

// A generated value as text: integers without a fraction, others with ten significant digits.
std::string number_text(double value, const std::string& unit) {
  char digits[64];
  const double rounded = std::round(value);
  if (std::abs(value - rounded) <= 1e-9 * std::max(1.0, std::abs(value)) && std::abs(rounded) < 1e15)
    std::snprintf(digits, sizeof digits, "%.0f", rounded);
  else
    std::snprintf(digits, sizeof digits, "%.10g", value);
  return unit.empty() ? digits : std::string(digits) + " " + unit;
}

std::vector<AxisValue> read_range(const Field& field) {
  MapReader range(field);
  const Field from = range.required("from");
  const Field to = range.required("to");
  const Field steps_field = range.required("steps");
  const std::int64_t steps = steps_field.as_int(2, kMaxSteps);
  bool log = false;
  if (auto scale = range.optional("scale")) log = scale->as_choice({"linear", "log"}) == 1;
  range.done();
  double a = 0, b = 0;
  std::string unit_a, unit_b;
  if (!from.is_scalar() || !split_number(from.as_string(), a, unit_a))
    from.fail_expected("a number, optionally with a unit (\"8\", \"100 Gbps\")");
  if (!to.is_scalar() || !split_number(to.as_string(), b, unit_b))
    to.fail_expected("a number, optionally with a unit (\"64\", \"400 Gbps\")");
  if (unit_a != unit_b)
    to.fail("expected the unit of from (\"" + unit_a + "\"), got \"" + unit_b + "\"");
  if (log && (a <= 0 || b <= 0)) field.fail("expected from and to above 0 for a log scale");
  std::vector<AxisValue> values;
  for (std::int64_t i = 0; i < steps; ++i) {
    const double t = static_cast<double>(i) / static_cast<double>(steps - 1);
    const double v = i == steps - 1 ? b : log ? a * std::pow(b / a, t) : a + (b - a) * t;
    values.push_back({number_text(v, unit_a), field.location()});
  }
  return values;
}

Axis read_axis(const Field& field) {
  MapReader map(field);
  Axis axis;
  const Field path = map.required("path");
  axis.path = path.as_string();
  axis.location = path.location();
  auto values = map.optional("values");
  auto range = map.optional("range");
  map.done();
  if (values && range) range->fail("expected either values or range, not both");
  if (values) {
    for (const Field& v : values->elements()) {
      if (!v.is_scalar()) v.fail_expected("a value (a number, a quantity or a word)");
      axis.values.push_back({v.as_string(), v.location()});
    }
    if (axis.values.empty()) values->fail_expected("at least one value");
  } else if (range) {
    axis.values = read_range(*range);
  } else {
    field.fail("expected values: [...] or range: {from, to, steps}");
  }
  return axis;
}

// One segment of an axis path: "islands[dcu-k100]" -> {"islands", "dcu-k100"}.
struct Segment {
  std::string name;
  std::optional<std::string> selector;
};

std::optional<std::vector<Segment>> split_path(const std::string& path) {
  std::vector<Segment> out;
  std::size_t at = 0;
  for (;;) {
    // A segment ends at the next '.' outside brackets (a selector may hold dots: "v1.0").
    std::size_t end = at;
    for (int depth = 0; end < path.size(); ++end) {
      if (path[end] == '[') ++depth;
      if (path[end] == ']') --depth;
      if (path[end] == '.' && depth == 0) break;
    }
    std::string text = path.substr(at, end - at);
    Segment segment;
    const std::size_t open = text.find('[');
    if (open != std::string::npos) {
      if (open == 0 || text.back() != ']' || text.size() - open < 3) return std::nullopt;
      segment.selector = text.substr(open + 1, text.size() - open - 2);
      text = text.substr(0, open);
    }
    if (text.empty() || text.find_first_of("[]") != std::string::npos) return std::nullopt;
    segment.name = text;
    out.push_back(std::move(segment));
    if (end >= path.size()) return out;
    at = end + 1;
  }
}

std::string quoted_text(const std::string& text) {
  return "\"" + text + "\"";
}

[[noreturn]] void bad_value(const Axis& axis, const AxisValue& value, const std::string& expected) {
  throw InputError(value.location, axis.path,
                   "expected " + expected + ", got " + quoted_text(value.text));
}

int int_value(const Axis& axis, const AxisValue& value, int min, int max) {
  double number = 0;
  std::string unit;
  if (!split_number(value.text, number, unit) || !unit.empty() || number != std::floor(number) ||
      number < min || number > max)
    bad_value(axis, value,
              "an integer from " + std::to_string(min) + " to " + std::to_string(max));
  return static_cast<int>(number);
}

double plain_value(const Axis& axis, const AxisValue& value, double min, double max,
                   const std::string& what) {
  double number = 0;
  std::string unit;
  if (!split_number(value.text, number, unit) || !unit.empty() || !(number >= min && number <= max))
    bad_value(axis, value, what);
  return number;
}

double quantity_value(const Axis& axis, const AxisValue& value, Dimension dimension) {
  const auto parsed = parse_quantity(value.text, dimension);
  const QuantityRange range = range_of(dimension);
  if (!parsed || *parsed < range.min || *parsed > range.max)
    bad_value(axis, value,
              std::string("a ") + std::string(name_of(dimension)) + " such as " +
                  std::string(example_of(dimension)) + ", " + std::string(range.text));
  return *parsed;
}

using Setter = std::function<void(Scenario&, const AxisValue&)>;

[[noreturn]] void unknown_path(const Axis& axis, const std::string& why) {
  throw InputError(axis.location, "path",
                   why + " in " + quoted_text(axis.path) + " (docs/sweep.md#paths lists the paths)");
}

std::size_t island_index(const Axis& axis, const Scenario& base, const std::string& name) {
  for (std::size_t i = 0; i < base.cluster.islands.size(); ++i) {
    if (base.cluster.islands[i].name == name) return i;
  }
  std::string names;
  for (const auto& island : base.cluster.islands) names += (names.empty() ? "" : ", ") + island.name;
  unknown_path(axis, "no island \"" + name + "\" (the cluster has " + names + ")");
}

std::size_t chip_index(const Axis& axis, const Scenario& base, const std::string& id) {
  for (std::size_t i = 0; i < base.cluster.chips.size(); ++i) {
    if (base.cluster.chips[i].id == id) return i;
  }
  std::string ids;
  for (const auto& chip : base.cluster.chips) ids += (ids.empty() ? "" : ", ") + chip.id;
  unknown_path(axis, "no chip profile \"" + id + "\" in the cluster (it uses " + ids + ")");
}

Setter island_setter(const Axis& axis, std::size_t i, const std::string& field) {
  if (field == "nodes")
    return [&axis, i](Scenario& s, const AxisValue& v) {
      Island& island = s.cluster.islands[i];
      const bool all_free = island.free_nodes < 0 || island.free_nodes == island.nodes;
      island.nodes = int_value(axis, v, 1, 100000);
      if (all_free) island.free_nodes = island.nodes;
    };
  if (field == "free_nodes")
    return [&axis, i](Scenario& s, const AxisValue& v) {
      s.cluster.islands[i].free_nodes = int_value(axis, v, 0, 100000);
    };
  if (field == "nics")
    return [&axis, i](Scenario& s, const AxisValue& v) {
      s.cluster.islands[i].nic_count = int_value(axis, v, 1, 64);
    };
  if (field == "nic_speed")
    return [&axis, i](Scenario& s, const AxisValue& v) {
      s.cluster.islands[i].nic_speed = quantity_value(axis, v, Dimension::bandwidth);
    };
  if (field == "nodes_per_leaf")
    return [&axis, i](Scenario& s, const AxisValue& v) {
      s.cluster.islands[i].nodes_per_leaf = int_value(axis, v, 1, 100000);
    };
  unknown_path(axis, "an island has no field \"" + field +
                         "\" to sweep (nodes, free_nodes, nics, nic_speed, nodes_per_leaf)");
}

Setter chip_setter(const Axis& axis, std::size_t c, const std::vector<Segment>& rest) {
  const std::string group = rest.size() == 2 ? rest[0].name : "";
  const std::string field = rest.size() == 2 ? rest[1].name : "";
  auto efficiency = [&axis, c](std::optional<double> EfficiencyModel::*member) -> Setter {
    return [&axis, c, member](Scenario& s, const AxisValue& v) {
      s.cluster.chips[c].efficiency.*member = plain_value(axis, v, 1e-3, 1.0, "a share from 0.001 to 1");
    };
  };
  if (group == "efficiency") {
    if (field == "gemm_max") return efficiency(&EfficiencyModel::gemm_max);
    if (field == "attention_max") return efficiency(&EfficiencyModel::attention_max);
    if (field == "memory") return efficiency(&EfficiencyModel::memory);
    if (field == "intra_bus_efficiency") return efficiency(&EfficiencyModel::intra_bus_efficiency);
    if (field == "network_bus_efficiency") return efficiency(&EfficiencyModel::network_bus_efficiency);
    if (field == "tp_comm_overlap") return efficiency(&EfficiencyModel::tp_comm_overlap);
    if (field == "ep_comm_overlap") return efficiency(&EfficiencyModel::ep_comm_overlap);
  }
  if (group == "memory" && field == "capacity")
    return [&axis, c](Scenario& s, const AxisValue& v) {
      ChipProfile& chip = s.cluster.chips[c];
      const double capacity = quantity_value(axis, v, Dimension::bytes);
      // The usable share stays what the profile says of its capacity.
      if (chip.memory_usable && chip.memory_capacity && *chip.memory_capacity > 0)
        chip.memory_usable = *chip.memory_usable / *chip.memory_capacity * capacity;
      chip.memory_capacity = capacity;
    };
  if (group == "memory" && field == "bandwidth")
    return [&axis, c](Scenario& s, const AxisValue& v) {
      s.cluster.chips[c].memory_bandwidth = quantity_value(axis, v, Dimension::bandwidth);
    };
  if (group == "peak") {
    for (const DType dtype : {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8}) {
      if (field != to_string(dtype)) continue;
      return [&axis, c, dtype](Scenario& s, const AxisValue& v) {
        ChipProfile& chip = s.cluster.chips[c];
        if (!chip.supports(dtype))
          throw InputError(v.location, axis.path,
                           "chip " + chip.id + " does not support " + std::string(to_string(dtype)));
        chip.peak_flops[dtype] = quantity_value(axis, v, Dimension::flop_rate);
      };
    }
  }
  if (group == "intra_node" && field == "bandwidth")
    return [&axis, c](Scenario& s, const AxisValue& v) {
      s.cluster.chips[c].intra_node.bandwidth = quantity_value(axis, v, Dimension::bandwidth);
    };
  unknown_path(axis,
               "a chip profile has no field to sweep there (efficiency.gemm_max, "
               "efficiency.attention_max, efficiency.memory, efficiency.intra_bus_efficiency, "
               "efficiency.network_bus_efficiency, efficiency.tp_comm_overlap, "
               "efficiency.ep_comm_overlap, "
               "memory.capacity, memory.bandwidth, peak.<dtype>, intra_node.bandwidth)");
}

Setter workload_setter(const Axis& axis, const std::vector<Segment>& rest) {
  const std::string group = rest.size() == 2 ? rest[0].name : "";
  const std::string field = rest.size() == 2 ? rest[1].name : "";
  auto model = [&axis](int ModelShape::*member, int max) -> Setter {
    return [&axis, member, max](Scenario& s, const AxisValue& v) {
      s.workload.model.*member = int_value(axis, v, 1, max);
    };
  };
  auto training = [&axis](int TrainingSettings::*member, int max) -> Setter {
    return [&axis, member, max](Scenario& s, const AxisValue& v) {
      s.workload.training.*member = int_value(axis, v, 1, max);
    };
  };
  if (group == "model") {
    if (field == "layers") return model(&ModelShape::layers, 100000);
    if (field == "hidden") return model(&ModelShape::hidden, 1 << 20);
    if (field == "heads") return model(&ModelShape::heads, 65536);
    if (field == "kv_heads") return model(&ModelShape::kv_heads, 65536);
    if (field == "ffn") return model(&ModelShape::ffn, 1 << 22);
    if (field == "vocab") return model(&ModelShape::vocab, 1 << 24);
  }
  if (group == "training") {
    if (field == "global_batch") return training(&TrainingSettings::global_batch, 1 << 24);
    if (field == "micro_batch") return training(&TrainingSettings::micro_batch, 1 << 16);
    if (field == "seq_len") return training(&TrainingSettings::seq_len, 1 << 24);
  }
  unknown_path(axis,
               "a workload has no field to sweep there (model.layers, model.hidden, "
               "model.heads, model.kv_heads, model.ffn, model.vocab, "
               "training.global_batch, training.micro_batch, training.seq_len, "
               "training.moe.imbalance, training.moe.capacity_factor)");
}

Setter resolve(const Axis& axis, const Scenario& base) {
  const auto segments = split_path(axis.path);
  if (!segments || segments->empty()) unknown_path(axis, "not a path");
  const auto& p = *segments;
  const auto has = [&](std::size_t i, std::string_view name, bool selector) {
    return p.size() > i && p[i].name == name && p[i].selector.has_value() == selector;
  };
  if (p.size() == 1 && has(0, "objective", false))
    return [&axis](Scenario& s, const AxisValue& v) {
      if (v.text == "throughput") s.objective = Objective::throughput;
      else if (v.text == "cost") s.objective = Objective::cost;
      else bad_value(axis, v, "throughput or cost");
    };
  if (has(0, "cluster", false) && p.size() == 3 && has(1, "islands", true) && !p[2].selector)
    return island_setter(axis, island_index(axis, base, *p[1].selector), p[2].name);
  if (has(0, "cluster", false) && p.size() == 3 && has(1, "fabric", false) && !p[2].selector) {
    const std::string& field = p[2].name;
    if (field == "oversubscription")
      return [&axis](Scenario& s, const AxisValue& v) {
        s.cluster.fabric.oversubscription = plain_value(axis, v, 1, 1000, "a ratio from 1 to 1000");
      };
    if (field == "spine_oversubscription")
      return [&axis](Scenario& s, const AxisValue& v) {
        s.cluster.fabric.spine_oversubscription =
            plain_value(axis, v, 1, 1000, "a ratio from 1 to 1000");
      };
    if (field == "leaf_uplink_speed")
      return [&axis](Scenario& s, const AxisValue& v) {
        s.cluster.fabric.leaf_uplink_speed = quantity_value(axis, v, Dimension::bandwidth);
      };
    if (field == "switch_latency")
      return [&axis](Scenario& s, const AxisValue& v) {
        s.cluster.fabric.switch_latency = quantity_value(axis, v, Dimension::duration);
      };
    unknown_path(axis, "the fabric has no field \"" + field +
                           "\" to sweep (oversubscription, spine_oversubscription, leaf_uplink_speed, "
                           "switch_latency)");
  }
  if (has(0, "cluster", false) && p.size() == 3 && has(1, "zone_links", true) && !p[2].selector) {
    const std::string& pair = *p[1].selector;
    const std::size_t comma = pair.find(',');
    const std::string a = pair.substr(0, comma);
    const std::string b = comma == std::string::npos ? "" : pair.substr(comma + 1);
    std::optional<std::size_t> link;
    for (std::size_t i = 0; i < base.cluster.fabric.zone_links.size(); ++i) {
      const ZoneLink& z = base.cluster.fabric.zone_links[i];
      if ((z.zone_a == a && z.zone_b == b) || (z.zone_a == b && z.zone_b == a)) link = i;
    }
    if (!link) unknown_path(axis, "no zone link between \"" + a + "\" and \"" + b + "\"");
    const std::size_t i = *link;
    if (p[2].name == "bandwidth")
      return [&axis, i](Scenario& s, const AxisValue& v) {
        s.cluster.fabric.zone_links[i].bandwidth = quantity_value(axis, v, Dimension::bandwidth);
      };
    if (p[2].name == "latency")
      return [&axis, i](Scenario& s, const AxisValue& v) {
        s.cluster.fabric.zone_links[i].latency = quantity_value(axis, v, Dimension::duration);
      };
    unknown_path(axis, "a zone link has no field \"" + p[2].name + "\" to sweep (bandwidth, latency)");
  }
  if (has(0, "chips", true))
    return chip_setter(axis, chip_index(axis, base, *p[0].selector),
                       std::vector<Segment>(p.begin() + 1, p.end()));
  if (has(0, "workload", false) && p.size() == 4 && has(1, "training", false) &&
      has(2, "moe", false) && !p[3].selector) {
    // A mixture's expert load: what if the routing were less even, or the experts padded?
    if (!base.workload.model.moe()) unknown_path(axis, "the workload's model has no experts");
    if (p[3].name == "imbalance")
      return [&axis](Scenario& s, const AxisValue& v) {
        s.workload.training.expert_imbalance =
            plain_value(axis, v, 1, 1000, "a ratio from 1 to 1000");
      };
    if (p[3].name == "capacity_factor")
      return [&axis](Scenario& s, const AxisValue& v) {
        s.workload.training.moe_capacity_factor =
            plain_value(axis, v, 0.01, 64, "a factor from 0.01 to 64");
      };
    unknown_path(axis, "a workload's moe settings have no field \"" + p[3].name +
                           "\" to sweep (imbalance, capacity_factor)");
  }
  if (has(0, "workload", false))
    return workload_setter(axis, std::vector<Segment>(p.begin() + 1, p.end()));
  if (has(0, "reliability", false) && p.size() == 2) {
    if (!base.reliability) unknown_path(axis, "the scenario has no reliability section");
    if (p[1].name == "node_mtbf" && p[1].selector) {
      const std::string id = *p[1].selector;
      chip_index(axis, base, id);
      return [&axis, id](Scenario& s, const AxisValue& v) {
        s.reliability->node_mtbf[id] = quantity_value(axis, v, Dimension::duration);
      };
    }
    if (p[1].name == "checkpoint_write_bandwidth")
      return [&axis](Scenario& s, const AxisValue& v) {
        s.reliability->checkpoint_write_bandwidth = quantity_value(axis, v, Dimension::bandwidth);
      };
    if (p[1].name == "checkpoint_read_bandwidth")
      return [&axis](Scenario& s, const AxisValue& v) {
        s.reliability->checkpoint_read_bandwidth = quantity_value(axis, v, Dimension::bandwidth);
      };
    if (p[1].name == "restart_time")
      return [&axis](Scenario& s, const AxisValue& v) {
        s.reliability->restart_time = quantity_value(axis, v, Dimension::duration);
      };
    unknown_path(axis, "reliability has no field to sweep there (node_mtbf[<chip>], "
                       "checkpoint_write_bandwidth, checkpoint_read_bandwidth, restart_time)");
  }
  if (has(0, "prices", false) && p.size() == 3 && has(1, "islands", true) &&
      p[2].name == "chip_hour") {
    if (!base.prices) unknown_path(axis, "the scenario has no prices section");
    const std::string name = *p[1].selector;
    island_index(axis, base, name);
    return [&axis, name](Scenario& s, const AxisValue& v) {
      s.prices->islands[name].chip_hour = quantity_value(axis, v, Dimension::money_rate);
    };
  }
  unknown_path(axis, "no such field to sweep");
}

// What the loaders check across fields, checked again after a point's values are set.
void check_consistent(const Sweep& sweep, const Point& point, const Scenario& s) {
  auto fail = [&](const std::string& prefix, const std::string& message) {
    // At the first value whose path starts with the prefix (the one that can fix it).
    for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
      const Axis& axis = sweep.axes[a];
      if (axis.path.rfind(prefix, 0) == 0)
        throw InputError(axis.values[point.values[a]].location, axis.path, message);
    }
    throw InputError(sweep.axes.front().location, "axes", message);
  };
  for (const Island& island : s.cluster.islands) {
    if (island.free_nodes > island.nodes)
      fail("cluster.islands[" + island.name + "]",
           "island " + island.name + ": expected free_nodes (" + std::to_string(island.free_nodes) +
               ") at most nodes (" + std::to_string(island.nodes) + ")");
  }
  const ModelShape& m = s.workload.model;
  if (m.hidden % m.heads != 0)
    fail("workload.model", "expected hidden size (" + std::to_string(m.hidden) +
                               ") divisible by the number of attention heads (" +
                               std::to_string(m.heads) + ")");
  if (m.heads % m.kv_heads != 0)
    fail("workload.model", "expected the number of attention heads (" + std::to_string(m.heads) +
                               ") divisible by the number of key/value heads (" +
                               std::to_string(m.kv_heads) + ")");
  if (s.objective == Objective::cost && !s.prices)
    fail("objective", "expected prices when the objective is cost");
  const TrainingSettings& t = s.workload.training;
  if (t.global_batch % t.micro_batch != 0)
    fail("workload.training", "expected global_batch (" + std::to_string(t.global_batch) +
                                  ") a multiple of micro_batch (" + std::to_string(t.micro_batch) +
                                  ")");
}

}  // namespace

Sweep load_sweep(const std::string& path) {
  return parse_sweep(formats::read_text_file(path), path);
}

Sweep parse_sweep(const std::string& text, const std::string& path) {
  const YAML::Node root = formats::parse_document(text, path);
  const Field field = formats::document_root(root, path, kSweepSchema);
  MapReader map(field);
  map.required("schema");
  Sweep sweep;
  sweep.file = path;
  sweep.name = map.required("name").as_identifier();
  const Field scenario = map.required("scenario");
  sweep.scenario = formats::resolve_relative(scenario.as_string(), path);
  sweep.scenario_location = scenario.location();
  if (auto combine = map.optional("combine"))
    sweep.combine = static_cast<Combine>(combine->as_choice({"grid", "zip", "random"}));
  auto samples = map.optional("samples");
  auto seed = map.optional("seed");
  if (auto top = map.optional("top")) sweep.top = static_cast<std::size_t>(top->as_int(1, 100));
  if (auto twin = map.optional("twin")) {
    sweep.twin = static_cast<std::size_t>(twin->as_int(0, 100));
    if (sweep.twin > sweep.top)
      twin->fail_expected("at most top (" + std::to_string(sweep.top) + ") plans for the twin");
  }
  // The same range as `hetplan plan --max-pipeline-islands`: a pipeline of one island is a
  // single-island plan, so a cap below two would only switch the task-level search off.
  if (auto cap = map.optional("max_pipeline_islands"))
    sweep.max_pipeline_islands = static_cast<int>(cap->as_int(2, 1024));
  const Field axes = map.required("axes");
  map.done();
  for (const Field& axis : axes.elements()) sweep.axes.push_back(read_axis(axis));
  if (sweep.axes.empty()) axes.fail_expected("at least one axis");
  std::set<std::string> paths;
  for (const Axis& axis : sweep.axes) {
    if (!paths.insert(axis.path).second)
      throw InputError(axis.location, "path", "expected each path once, got " + quoted_text(axis.path) + " again");
  }
  std::size_t grid = 1;
  for (const Axis& axis : sweep.axes) {
    if (grid > kMaxPoints / axis.values.size())
      axes.fail("expected at most " + std::to_string(kMaxPoints) + " points in the grid");
    grid *= axis.values.size();
  }
  if (sweep.combine == Combine::zip) {
    for (const Axis& axis : sweep.axes) {
      if (axis.values.size() != sweep.axes.front().values.size())
        throw InputError(axis.location, "path",
                         "expected as many values as the first axis (" +
                             std::to_string(sweep.axes.front().values.size()) + ") to zip, got " +
                             std::to_string(axis.values.size()));
    }
  }
  if (sweep.combine == Combine::random) {
    if (!samples) field.fail("expected samples: N with combine: random");
    sweep.samples = static_cast<std::size_t>(samples->as_int(1, static_cast<std::int64_t>(grid)));
    if (seed) sweep.seed = static_cast<std::uint64_t>(seed->as_int(0, INT64_MAX));
  } else {
    if (samples) samples->fail("expected samples only with combine: random");
    if (seed) seed->fail("expected seed only with combine: random");
  }
  return sweep;
}

std::vector<Point> points(const Sweep& sweep) {
  std::vector<Point> out;
  const std::size_t n = sweep.axes.size();
  if (sweep.combine == Combine::zip) {
    for (std::size_t i = 0; i < sweep.axes.front().values.size(); ++i)
      out.push_back({i, std::vector<std::size_t>(n, i)});
    return out;
  }
  std::size_t grid = 1;
  for (const Axis& axis : sweep.axes) grid *= axis.values.size();
  auto grid_point = [&](std::size_t flat) {
    std::vector<std::size_t> values(n);
    for (std::size_t a = n; a-- > 0;) {
      values[a] = flat % sweep.axes[a].values.size();
      flat /= sweep.axes[a].values.size();
    }
    return values;
  };
  std::vector<std::size_t> chosen;
  if (sweep.combine == Combine::random) {
    // Floyd's sampling of distinct indices with the standard's mt19937_64 (its outputs are fixed
    // by the standard; the distributions are not, so none is used).
    std::mt19937_64 rng(sweep.seed);
    std::set<std::size_t> picked;
    for (std::size_t j = grid - sweep.samples; j < grid; ++j) {
      const std::size_t t = static_cast<std::size_t>(rng() % (j + 1));
      if (!picked.insert(t).second) picked.insert(j);
    }
    chosen.assign(picked.begin(), picked.end());
  } else {
    for (std::size_t i = 0; i < grid; ++i) chosen.push_back(i);
  }
  for (std::size_t i = 0; i < chosen.size(); ++i) out.push_back({i, grid_point(chosen[i])});
  return out;
}

void apply(const Sweep& sweep, const Point& point, Scenario& scenario) {
  // Resolved against the scenario being edited: it is a copy of the base, with the same names.
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    const Axis& axis = sweep.axes[a];
    resolve(axis, scenario)(scenario, axis.values[point.values[a]]);
  }
  check_consistent(sweep, point, scenario);
}

void check(const Sweep& sweep, const Scenario& base) {
  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
    const Axis& axis = sweep.axes[a];
    const Setter set = resolve(axis, base);
    Sweep just_this;  // the axis alone, for check_consistent's messages
    just_this.axes = {axis};
    for (std::size_t v = 0; v < axis.values.size(); ++v) {
      // The value alone on the base: what the other axes change is checked at each point.
      Scenario copy = base;
      set(copy, axis.values[v]);
      check_consistent(just_this, {0, {v}}, copy);
    }
  }
}

}  // namespace hetplan::sweep
