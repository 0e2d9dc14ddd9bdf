#include "formats/writers.hpp"
#include "formats/yaml_edit.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/scratch_files.hpp"
#include "core/units.hpp"
#include "formats/loaders.hpp"

namespace hetplan::formats {

namespace {
std::string yaml_string(const std::string& text);  // below
}  // namespace

std::string plan_yaml(const Plan& plan, const std::string& comment) {
  std::ostringstream out;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) out << "# " << line << "\n";
  out << "schema: hetplan/plan/v1\n";
  out << "name: " << plan.name << "\n";
  if (plan.scenario) {
    out << "scenario: {path: " << yaml_string(plan.scenario->path)
        << ", sha256: " << plan.scenario->sha256 << "}\n";
  }
  out << "schedule: " << to_string(plan.schedule) << "\n";
  if (plan.virtual_stages > 1) out << "virtual_stages: " << plan.virtual_stages << "\n";
  if (plan.micro_batch) out << "micro_batch: " << *plan.micro_batch << "\n";
  if (plan.recompute) out << "recompute: " << to_string(*plan.recompute) << "\n";
  if (plan.recompute_layers) out << "recompute_layers: " << *plan.recompute_layers << "\n";
  if (plan.zero_stage) out << "zero_stage: " << *plan.zero_stage << "\n";
  if (plan.dtype) out << "dtype: " << to_string(*plan.dtype) << "\n";
  auto stages = [&](const std::vector<PlanStage>& list, const std::string& indent) {
    for (const auto& stage : list) {
      out << indent << "- {island: " << stage.island << ", first_layer: " << stage.first_layer
          << ", num_layers: " << stage.num_layers << ", tp: " << stage.tp << ", dp: " << stage.dp;
      if (stage.ep > 1) out << ", ep: " << stage.ep;
      if (stage.etp > 0 && stage.etp != stage.tp) out << ", etp: " << stage.etp;
      if (stage.recompute) out << ", recompute: " << to_string(*stage.recompute);
      if (stage.recompute_layers) out << ", recompute_layers: " << *stage.recompute_layers;
      if (!stage.chunk_layers.empty()) {
        out << ", chunk_layers: [";
        for (std::size_t c = 0; c < stage.chunk_layers.size(); ++c)
          out << (c ? ", " : "") << stage.chunk_layers[c];
        out << "]";
      }
      out << "}\n";
    }
  };
  if (!plan.has_replica_groups()) {
    out << "stages:\n";
    stages(plan.stages, "  ");
    return out.str();
  }
  if (plan.gradient_exchange == GradientExchange::parameter_server) {
    out << "gradient_exchange: " << to_string(plan.gradient_exchange) << "\n";
    out << "parameter_server: " << plan.parameter_server << "\n";
  }
  if (plan.zero_across_groups) out << "zero_across_groups: true\n";
  out << "replica_groups:\n";
  for (const ReplicaGroupPlan& group : plan.replica_groups) {
    out << "  - micro_batches: " << group.micro_batches << "\n";
    out << "    gradient_weight: " << std::setprecision(12) << group.gradient_weight << "\n";
    if (group.micro_batch) out << "    micro_batch: " << *group.micro_batch << "\n";
    if (group.recompute) out << "    recompute: " << to_string(*group.recompute) << "\n";
    if (group.recompute_layers)
      out << "    recompute_layers: " << *group.recompute_layers << "\n";
    if (group.zero_stage) out << "    zero_stage: " << *group.zero_stage << "\n";
    if (group.schedule) out << "    schedule: " << to_string(*group.schedule) << "\n";
    if (group.virtual_stages) out << "    virtual_stages: " << *group.virtual_stages << "\n";
    out << "    stages:\n";
    stages(group.stages, "      ");
  }
  return out.str();
}

namespace {

// ---- chip_yaml ---------------------------------------------------------------------------------

[[noreturn]] void chip_fail(const ChipProfile& chip, const std::string& path,
                            const std::string& message) {
  throw std::invalid_argument("chip_yaml: " + chip.id + ": " + path + ": " + message);
}

// The shortest decimal that from_chars reads back to exactly `value`.
std::string shortest_decimal(double value) {
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return std::string(buffer.data(), result.ptr);
}

// Significant digits of a decimal as to_chars writes it ("0.0830" -> 3, "1e+15" -> 1).
std::size_t significant_digits(const std::string& text) {
  std::string digits;
  for (char c : text) {
    if (c == 'e' || c == 'E') break;
    if (c >= '0' && c <= '9') digits += c;
  }
  const auto first = digits.find_first_not_of('0');
  if (first == std::string::npos) return 1;
  const auto last = digits.find_last_not_of('0');
  return last - first + 1;
}

// "<number> <unit>" that parse_quantity reads back to exactly `value`, in the unit (from
// `units`, in order of preference) that needs the fewest significant digits; then the one whose
// number lies in [1, 10000); then the earlier unit. `units` ends with the base unit (factor 1),
// which always round-trips.
std::string exact_quantity(double value, Dimension dimension,
                           std::span<const std::string_view> units) {
  std::string best;
  std::tuple<std::size_t, int, std::size_t> best_score{};
  std::size_t index = 0;
  for (std::string_view unit : units) {
    const std::string symbol(unit);
    const auto factor = parse_quantity("1 " + symbol, dimension);
    if (!factor || *factor <= 0.0) continue;
    const double scaled = value / *factor;
    for (double number : {scaled, std::nextafter(scaled, std::numeric_limits<double>::infinity()),
                          std::nextafter(scaled, 0.0)}) {
      if (!std::isfinite(number) || number < 0.0) continue;
      const std::string text = shortest_decimal(number) + " " + symbol;
      const auto back = parse_quantity(text, dimension);
      if (!back || *back != value) continue;
      const int magnitude = (number == 0.0 || (number >= 1.0 && number < 10000.0)) ? 0 : 1;
      const std::tuple score{significant_digits(shortest_decimal(number)), magnitude, index};
      if (best.empty() || score < best_score) {
        best = text;
        best_score = score;
      }
    }
    ++index;
  }
  return best;
}

// A YAML string: plain when that is unambiguous (also inside a flow mapping), otherwise
// double-quoted with escapes.
std::string yaml_string(const std::string& text) {
  bool plain =
      !text.empty() && std::isalpha(static_cast<unsigned char>(text.front())) && text.back() != ' ';
  for (char c : text) {
    const bool allowed = std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '.' ||
                         c == '_' || c == '-' || c == '/' || c == '(' || c == ')' || c == '+';
    if (!allowed || (c & 0x80) != 0) plain = false;
  }
  if (plain) {
    std::string lower;
    for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* word :
         {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "unknown", "nan", "inf"}) {
      if (lower == word) plain = false;
    }
  }
  if (plain) return text;
  std::string out = "\"";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// One key of the document being written: a scalar leaf (a cited number or a plain value) or a
// mapping. `scope` mappings are those where the format allows a `source:` key.
struct YamlNode {
  std::string key;
  std::string path;  // the loader's dotted path of this key
  // Leaf:
  std::string text;        // the scalar as written (a number, `unknown`, a choice)
  std::string own_source;  // written as {value: text, source: own_source}
  // A leaf written plain, or an operator class entry: the source it must inherit (or, for an
  // entry, carry). Empty when it needs none.
  std::string needs;
  bool is_number = false;  // a cited number (known or `unknown`)
  // Mapping:
  bool is_map = false;
  bool scope = false;
  bool flow = false;
  std::vector<YamlNode> children;
  // A block sequence of flow scalars or mappings, each written as it is (no sources).
  bool is_list = false;
  std::vector<std::string> items;

  // The `source:` line of a block mapping goes before its first number or mapping.
  bool cited() const { return is_number || is_map; }
};

YamlNode map_node(std::string key, std::string path, bool scope, bool flow) {
  YamlNode node;
  node.key = std::move(key);
  node.path = std::move(path);
  node.is_map = true;
  node.scope = scope;
  node.flow = flow;
  return node;
}

YamlNode leaf_node(std::string key, std::string path, std::string text) {
  YamlNode node;
  node.key = std::move(key);
  node.path = std::move(path);
  node.text = std::move(text);
  return node;
}

// Builds the cited-number leaves from the profile, in the form its cited_by paths call for, and
// remembers which cited_by entries it used.
class ChipTree {
 public:
  explicit ChipTree(const ChipProfile& chip) : chip_(chip) {}

  // A cited number: `unknown` when absent; otherwise the form follows cited_by.
  YamlNode number(YamlNode& parent, std::string key, const std::optional<std::string>& text) {
    const std::string path = parent.path + "." + key;
    YamlNode leaf = leaf_node(std::move(key), path, text.value_or("unknown"));
    leaf.is_number = true;
    if (!text) return leaf;
    const auto plain = chip_.cited_by.find(path);
    const auto mapped = chip_.cited_by.find(path + ".value");
    const bool has_plain = plain != chip_.cited_by.end();
    const bool has_mapped = mapped != chip_.cited_by.end();
    if (has_plain && has_mapped) {
      chip_fail(
          chip_, path,
          "cited_by names it both as \"" + path + "\" and as \"" + path + ".value\"; keep one");
    }
    if (!has_plain && !has_mapped) {
      chip_fail(chip_, path,
                "has a value but no source (set cited_by[\"" + path + "\"] to inherit one, or " +
                    "cited_by[\"" + path + ".value\"] for its own)");
    }
    if (has_mapped) {
      leaf.own_source = checked_source(path, mapped->second);
      used_.insert(mapped->first);
    } else {
      leaf.needs = checked_source(path, plain->second);
      used_.insert(plain->first);
    }
    return leaf;
  }

  // Whether cited_by names the number at `path` (in either form).
  bool cites(const std::string& path) const {
    return chip_.cited_by.contains(path) || chip_.cited_by.contains(path + ".value");
  }

  // The source an operator class entry must carry or inherit.
  std::string entry_source(const std::string& path) {
    const auto it = chip_.cited_by.find(path);
    if (it == chip_.cited_by.end()) {
      chip_fail(chip_, path, "an operator class entry needs a source (cited_by[\"" + path + "\"])");
    }
    used_.insert(it->first);
    return checked_source(path, it->second);
  }

  // Fails on cited_by entries for nothing that is written (they would not read back).
  void check_all_used() const {
    for (const auto& [path, source] : chip_.cited_by) {
      if (!used_.contains(path)) {
        chip_fail(chip_, path,
                  "cited_by names it (source \"" + source +
                      "\") but the profile states no such number (unknown, or not a cited path)");
      }
    }
  }

 private:
  std::string checked_source(const std::string& path, const std::string& source) const {
    if (!chip_.sources.contains(source)) {
      chip_fail(chip_, path, "cites \"" + source + "\", which is not listed in sources");
    }
    return source;
  }

  const ChipProfile& chip_;
  std::set<std::string> used_;
};

// The source the plain leaves directly in `map` (and, for an operator class entry, the entry
// itself) need; they must agree.
std::string direct_requirement(const ChipProfile& chip, const YamlNode& map) {
  std::string required = map.needs;
  std::string first = map.path;
  for (const auto& child : map.children) {
    if (child.is_map || child.needs.empty()) continue;
    if (required.empty()) {
      required = child.needs;
      first = child.path;
    } else if (child.needs != required) {
      chip_fail(chip, child.path,
                "cites \"" + child.needs + "\" while " + first + " (in the same mapping) cites \"" +
                    required + "\"; write one of them with its own source (cited_by[\"<path>" +
                    ".value\"])");
    }
  }
  if (!required.empty() && !map.scope) {
    chip_fail(chip, map.path, "cannot carry a source");
  }
  return required;
}

// The source a mapping should state: its direct requirement, else the first one found below.
std::string preferred_source(const ChipProfile& chip, const YamlNode& map) {
  if (map.scope) {
    std::string direct = direct_requirement(chip, map);
    if (!direct.empty()) return direct;
  }
  for (const auto& child : map.children) {
    if (!child.is_map) continue;
    std::string below = preferred_source(chip, child);
    if (!below.empty()) return below;
  }
  return {};
}

std::string leaf_text(const YamlNode& leaf) {
  if (leaf.own_source.empty()) return leaf.text;
  return "{value: " + leaf.text + ", source: " + leaf.own_source + "}";
}

std::string flow_map(const ChipProfile& chip, const YamlNode& map, const std::string& inherited);

// The source line a mapping states, and the source its children inherit.
std::pair<std::string, std::string> resolve_source(const ChipProfile& chip, const YamlNode& map,
                                                   const std::string& inherited) {
  if (!map.scope) return {"", inherited};
  const std::string wanted = preferred_source(chip, map);
  if (wanted.empty()) return {"", inherited};
  return {wanted == inherited ? "" : wanted, wanted};
}

std::string child_text(const ChipProfile& chip, const YamlNode& child,
                       const std::string& inherited) {
  return child.is_map ? flow_map(chip, child, inherited) : leaf_text(child);
}

std::string flow_map(const ChipProfile& chip, const YamlNode& map, const std::string& inherited) {
  const auto [stated, effective] = resolve_source(chip, map, inherited);
  std::string out = "{";
  for (const auto& child : map.children) {
    if (out.size() > 1) out += ", ";
    out += child.key + ": " + child_text(chip, child, effective);
  }
  if (!stated.empty()) out += std::string(out.size() > 1 ? ", " : "") + "source: " + stated;
  return out + "}";
}

// The profile's comments for the key at `path` (docs/formats/chip.md#comments): the lines above
// it at its indent, and the one that ends its line.
void leading_comments(std::ostream& out, const ChipProfile& chip, const std::string& path,
                      const std::string& pad) {
  const auto it = chip.comments.find(path);
  if (it == chip.comments.end()) return;
  for (const auto& line : it->second.leading) out << pad << "#" << line << "\n";
}

std::string trailing_comment(const ChipProfile& chip, const std::string& path) {
  const auto it = chip.comments.find(path);
  if (it == chip.comments.end() || it->second.trailing.empty()) return {};
  return "   #" + it->second.trailing;
}

// A key's line with its comments.
void key_line(std::ostream& out, const ChipProfile& chip, const std::string& path,
              const std::string& pad, const std::string& text) {
  leading_comments(out, chip, path, pad);
  out << pad << text << trailing_comment(chip, path) << "\n";
}

void block_map(std::ostream& out, const ChipProfile& chip, const YamlNode& map,
               const std::string& inherited, int indent) {
  const auto [stated, effective] = resolve_source(chip, map, inherited);
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  const std::string source_path = map.path + ".source";
  bool source_written = stated.empty();
  for (const auto& child : map.children) {
    if (!source_written && child.cited()) {
      key_line(out, chip, source_path, pad, "source: " + stated);
      source_written = true;
    }
    if (child.is_list) {
      key_line(out, chip, child.path, pad, child.key + (child.items.empty() ? ": []" : ":"));
      for (const auto& item : child.items) out << pad << "  - " << item << "\n";
    } else if (child.is_map && !child.flow && !child.children.empty()) {
      key_line(out, chip, child.path, pad, child.key + ":");
      block_map(out, chip, child, effective, indent + 2);
    } else {
      key_line(out, chip, child.path, pad, child.key + ": " + child_text(chip, child, effective));
    }
  }
  if (!source_written) key_line(out, chip, source_path, pad, "source: " + stated);
}

std::string plain_number(const ChipProfile& chip, const std::string& path, double value, double min,
                         double max) {
  if (!std::isfinite(value) || value < min || value > max || std::signbit(value)) {
    chip_fail(chip, path,
              "expected a number from " + shortest_decimal(min) + " to " + shortest_decimal(max) +
                  ", got " + shortest_decimal(value));
  }
  return shortest_decimal(value);
}

std::optional<std::string> quantity_text(const ChipProfile& chip, const std::string& path,
                                         const std::optional<double>& value, Dimension dimension,
                                         std::span<const std::string_view> units) {
  if (!value) return std::nullopt;
  if (!std::isfinite(*value) || *value < 0.0 || std::signbit(*value)) {
    chip_fail(chip, path, "expected a finite, non-negative value, got " + shortest_decimal(*value));
  }
  return exact_quantity(*value, dimension, units);
}

std::optional<std::string> count_text(const ChipProfile& chip, const std::string& path,
                                      const std::optional<int>& value, int min, int max) {
  if (!value) return std::nullopt;
  if (*value < min || *value > max) {
    chip_fail(chip, path,
              "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                  ", got " + std::to_string(*value));
  }
  return std::to_string(*value);
}

std::optional<std::string> number_text(const ChipProfile& chip, const std::string& path,
                                       const std::optional<double>& value, double min, double max) {
  if (!value) return std::nullopt;
  return plain_number(chip, path, *value, min, max);
}

constexpr std::array<std::string_view, 4> kFlopUnits{"TFLOPS", "PFLOPS", "GFLOPS", "FLOPS"};
constexpr std::array<std::string_view, 9> kByteUnits{"GiB", "GB",  "TiB", "TB", "MiB",
                                                     "MB",  "KiB", "KB",  "B"};
constexpr std::array<std::string_view, 10> kLinkUnits{"GB/s", "TB/s", "MB/s", "GiB/s", "MiB/s",
                                                      "KB/s", "Gbps", "Tbps", "Mbps",  "B/s"};
constexpr std::array<std::string_view, 9> kNicUnits{"Gbps", "Tbps", "Mbps", "Kbps", "GB/s",
                                                    "TB/s", "MB/s", "KB/s", "B/s"};
constexpr std::array<std::string_view, 2> kPowerUnits{"W", "kW"};
constexpr std::array<std::string_view, 4> kTimeUnits{"us", "ns", "ms", "s"};

}  // namespace

std::string chip_yaml(const ChipProfile& chip, const std::string& comment) {
  ChipTree tree(chip);
  const auto quantity = [&](YamlNode& parent, const std::string& key,
                            const std::optional<double>& value, Dimension dimension,
                            std::span<const std::string_view> units) {
    parent.children.push_back(tree.number(
        parent, key, quantity_text(chip, parent.path + "." + key, value, dimension, units)));
  };
  const auto number = [&](YamlNode& parent, const std::string& key,
                          const std::optional<double>& value, double min, double max) {
    parent.children.push_back(
        tree.number(parent, key, number_text(chip, parent.path + "." + key, value, min, max)));
  };
  const auto count = [&](YamlNode& parent, const std::string& key, const std::optional<int>& value,
                         int min, int max) {
    parent.children.push_back(
        tree.number(parent, key, count_text(chip, parent.path + "." + key, value, min, max)));
  };

  if (chip.sources.empty()) chip_fail(chip, "sources", "expected at least one source");
  for (const auto& [id, citation] : chip.sources) {
    if (id.empty() ||
        id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos) {
      chip_fail(chip, "sources." + id, "expected a source id of [a-z0-9._-]");
    }
    if (citation.size() < 8) chip_fail(chip, "sources." + id, "expected a citation of 8+ chars");
  }
  if (chip.peak_flops.empty()) chip_fail(chip, "compute.peak", "expected at least one dtype");

  // compute
  YamlNode compute = map_node("compute", "compute", true, false);
  YamlNode peak = map_node("peak", "compute.peak", true, false);
  for (const auto& [dtype, value] : chip.peak_flops) {
    quantity(peak, std::string(to_string(dtype)), value, Dimension::flop_rate, kFlopUnits);
  }
  compute.children.push_back(std::move(peak));

  // memory
  YamlNode memory = map_node("memory", "memory", true, false);
  quantity(memory, "capacity", chip.memory_capacity, Dimension::bytes, kByteUnits);
  quantity(memory, "bandwidth", chip.memory_bandwidth, Dimension::bandwidth, kLinkUnits);
  if (chip.memory_usable)
    quantity(memory, "usable", chip.memory_usable, Dimension::bytes, kByteUnits);

  // node
  YamlNode node = map_node("node", "node", true, false);
  count(node, "chips_per_node", chip.chips_per_node, 1, 1024);
  YamlNode intra = map_node("intra_node", "node.intra_node", true, false);
  intra.children.push_back(
      leaf_node("kind", "node.intra_node.kind", std::string(to_string(chip.intra_node.kind))));
  intra.children.push_back(leaf_node("topology", "node.intra_node.topology",
                                     std::string(to_string(chip.intra_node.topology))));
  {
    // `unknown` reads back as 1, without a cited_by entry.
    const std::string path = "node.intra_node.group_size";
    std::optional<int> group = chip.intra_node.group_size;
    if (!tree.cites(path)) {
      if (chip.intra_node.group_size != 1) {
        chip_fail(chip, path, "has a value other than 1 but no source");
      }
      group.reset();
    }
    count(intra, "group_size", group, 1, 1024);
  }
  quantity(intra, "bandwidth", chip.intra_node.bandwidth, Dimension::bandwidth, kLinkUnits);
  if (chip.intra_node.cross_group_bandwidth) {
    quantity(intra, "cross_group_bandwidth", chip.intra_node.cross_group_bandwidth,
             Dimension::bandwidth, kLinkUnits);
  }
  node.children.push_back(std::move(intra));
  YamlNode nics = map_node("nics", "node.nics", true, true);
  count(nics, "count", chip.nic_count, 0, 64);
  quantity(nics, "speed", chip.nic_speed, Dimension::bandwidth, kNicUnits);
  node.children.push_back(std::move(nics));

  // power
  YamlNode power = map_node("power", "power", true, false);
  quantity(power, "tdp", chip.tdp, Dimension::power, kPowerUnits);

  // operators
  YamlNode operators = map_node("operators", "operators", true, false);
  operators.children.push_back(
      leaf_node("default", "operators.default", std::string(to_string(chip.default_support))));
  YamlNode classes = map_node("classes", "operators.classes", false, false);
  for (const auto& [op, coverage] : chip.op_coverage) {
    const std::string path = "operators.classes." + std::string(to_string(op));
    YamlNode entry = map_node(std::string(to_string(op)), path, true, true);
    entry.needs = tree.entry_source(path);
    entry.children.push_back(
        leaf_node("support", path + ".support", std::string(to_string(coverage.support))));
    if (coverage.support == Support::fallback) {
      std::optional<double> slowdown = coverage.slowdown;
      if (!tree.cites(path + ".slowdown")) {
        // `unknown` reads back as 1.0, without a cited_by entry.
        if (coverage.slowdown != 1.0) {
          chip_fail(chip, path + ".slowdown", "has a value other than 1 but no source");
        }
        slowdown.reset();
      }
      number(entry, "slowdown", slowdown, 1.0, 1000.0);
    } else if (coverage.slowdown != 1.0) {
      chip_fail(chip, path + ".slowdown", "expected 1 unless support is fallback");
    }
    classes.children.push_back(std::move(entry));
  }
  operators.children.push_back(std::move(classes));

  // efficiency
  const EfficiencyModel& model = chip.efficiency;
  YamlNode efficiency = map_node("efficiency", "efficiency", true, false);
  efficiency.children.push_back(
      leaf_node("calibrated", "efficiency.calibrated", model.calibrated ? "true" : "false"));
  YamlNode gemm = map_node("gemm", "efficiency.gemm", true, true);
  number(gemm, "max", model.gemm_max, 0.01, 1.0);
  if (model.gemm_half_dim) number(gemm, "half_dim", model.gemm_half_dim, 0.0, 65536.0);
  if (model.gemm_backward_max) number(gemm, "backward_max", model.gemm_backward_max, 0.01, 1.0);
  if (model.gemm_fp8_max) number(gemm, "fp8_max", model.gemm_fp8_max, 0.01, 1.0);
  efficiency.children.push_back(std::move(gemm));
  if (model.attention_max) {
    YamlNode attention = map_node("attention", "efficiency.attention", true, true);
    number(attention, "max", model.attention_max, 0.01, 1.0);
    efficiency.children.push_back(std::move(attention));
  }
  number(efficiency, "memory", model.memory, 0.01, 1.0);
  const auto collectives = [&](const std::string& key, const std::optional<double>& bus,
                               const std::optional<double>& latency) {
    YamlNode map = map_node(key, "efficiency." + key, true, true);
    number(map, "bus_efficiency", bus, 0.01, 1.5);
    if (latency) quantity(map, "latency", latency, Dimension::duration, kTimeUnits);
    efficiency.children.push_back(std::move(map));
  };
  collectives("intra_node_collectives", model.intra_bus_efficiency, model.intra_latency);
  collectives("network_collectives", model.network_bus_efficiency, model.network_latency);
  if (model.intra_all_to_all_efficiency)
    collectives("intra_node_all_to_all", model.intra_all_to_all_efficiency,
                model.intra_all_to_all_latency);
  if (model.kernel_overhead)
    quantity(efficiency, "kernel_overhead", model.kernel_overhead, Dimension::duration, kTimeUnits);
  if (model.tp_comm_overlap) number(efficiency, "tp_comm_overlap", model.tp_comm_overlap, 0.0, 1.0);
  if (model.ep_comm_overlap) number(efficiency, "ep_comm_overlap", model.ep_comm_overlap, 0.0, 1.0);
  if (model.in_step.any()) {
    const InStepTerms& terms = model.in_step;
    YamlNode in_step = map_node("in_step", "efficiency.in_step", true, false);
    if (terms.gemm) number(in_step, "gemm", terms.gemm, 0.05, 2.0);
    if (terms.attention) number(in_step, "attention", terms.attention, 0.05, 2.0);
    if (terms.communication) number(in_step, "communication", terms.communication, 0.1, 10.0);
    if (terms.layer_overhead)
      quantity(in_step, "layer_overhead", terms.layer_overhead, Dimension::duration, kTimeUnits);
    if (terms.moe_layer_overhead)
      quantity(in_step, "moe_layer_overhead", terms.moe_layer_overhead, Dimension::duration,
               kTimeUnits);
    if (!terms.runs.empty()) {
      YamlNode runs = leaf_node("runs", "efficiency.in_step.runs", "");
      runs.is_list = true;
      for (const auto& run : terms.runs) {
        if (run.sha256.size() != 64 ||
            run.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
          chip_fail(chip, "efficiency.in_step.runs", "expected a sha256 of 64 hexadecimal digits");
        runs.items.push_back("{id: " + yaml_string(run.id) + ", file: " + yaml_string(run.file) +
                             ", sha256: " + run.sha256 + "}");
      }
      in_step.children.push_back(std::move(runs));
    }
    efficiency.children.push_back(std::move(in_step));
  }

  // evidence
  YamlNode evidence = map_node("evidence", "evidence", true, false);
  if (chip.evidence.level)
    evidence.children.push_back(leaf_node("level", "evidence.level",
                                          std::string(to_string(*chip.evidence.level))));
  for (const auto& [key, band] : {std::pair<const char*, const std::optional<Band>*>{
                                      "step", &chip.evidence.step},
                                  {"memory", &chip.evidence.memory}}) {
    if (!*band) continue;
    YamlNode map = map_node(key, std::string("evidence.") + key, true, true);
    number(map, "low", (*band)->low, 0.01, 100.0);
    number(map, "high", (*band)->high, 0.01, 100.0);
    evidence.children.push_back(std::move(map));
  }

  tree.check_all_used();
  for (const auto& [path, note] : chip.comments) {
    bool one_line = note.trailing.find_first_of("\r\n") == std::string::npos;
    for (const auto& line : note.leading) one_line &= line.find_first_of("\r\n") == std::string::npos;
    if (!one_line) chip_fail(chip, path, "expected comments of one line each");
  }

  std::ostringstream out;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) {
    out << (line.empty() ? "#" : "# " + line) << "\n";
  }
  const auto top = [&](const std::string& key, const std::string& value) {
    key_line(out, chip, key, "", key + ":" + (value.empty() ? "" : " " + value));
  };
  top("schema", std::string(kChipSchema));
  top("id", chip.id);
  top("vendor", yaml_string(chip.vendor));
  top("model", yaml_string(chip.model));
  top("family", chip.family);
  top("role", std::string(to_string(chip.role)));
  if (!chip.in_step_from.empty()) top("in_step_from", chip.in_step_from);
  top("sources", "");
  for (const auto& [id, citation] : chip.sources) {
    std::string quoted = yaml_string(citation);
    if (quoted.front() != '"') quoted = "\"" + quoted + "\"";
    key_line(out, chip, "sources." + id, "  ", id + ": " + quoted);
  }
  top("software", "");
  for (const auto& [key, component] :
       {std::pair<const char*, const SoftwareComponent*>{"runtime", &chip.runtime},
        {"framework_adapter", &chip.framework_adapter},
        {"collective_library", &chip.collective_library}}) {
    std::string version = yaml_string(component->version);
    if (version.front() != '"') version = "\"" + version + "\"";
    key_line(out, chip, std::string("software.") + key, "  ",
             std::string(key) + ": {name: " + yaml_string(component->name) +
                 ", version: " + version + "}");
  }
  for (const YamlNode* section : {&compute, &memory, &node, &power, &operators, &efficiency}) {
    top(section->key, section->children.empty() ? "{}" : "");
    if (!section->children.empty()) block_map(out, chip, *section, "", 2);
  }
  if (!evidence.children.empty()) {
    top(evidence.key, "");
    block_map(out, chip, evidence, "", 2);
  }
  leading_comments(out, chip, "", "");
  return out.str();
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path target(path);
  const std::filesystem::path temporary =
      target.parent_path() / ("." + target.filename().string() + ".tmp" +
                              std::to_string(static_cast<long>(::getpid())));
  // Removed by the front end's signal handler if the process is interrupted before the rename.
  const ScratchFile scratch(temporary.string());
  auto fail = [&](const std::string& what, int code) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw std::runtime_error(path + ": " + what + " (" + std::strerror(code) + ")");
  };
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot write", errno);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t put = ::write(fd, text.data() + done, text.size() - done);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) {
      const int code = put < 0 ? errno : EIO;
      ::close(fd);
      fail("cannot write", code);
    }
    done += static_cast<std::size_t>(put);
  }
  // On disk before it takes the destination's name: a crash after the rename never leaves an
  // empty or partial file under it.
  if (::fsync(fd) != 0) {
    const int code = errno;
    ::close(fd);
    fail("cannot write", code);
  }
  if (::close(fd) != 0) fail("cannot write", errno);
  std::error_code error;
  std::filesystem::rename(temporary, target, error);
  if (error) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw std::runtime_error(path + ": cannot replace (" + error.message() + ")");
  }
}

namespace {

namespace fs = std::filesystem;

// fsync of a folder, so that the names in it are on disk.
void sync_folder(const fs::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::vector<std::string> write_each(const fs::path& folder, const std::vector<NamedText>& files,
                                    const std::function<bool(const std::string&)>& superseded) {
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) throw std::runtime_error(folder.string() + ": cannot create (" + error.message() + ")");
  if (superseded) {
    std::vector<fs::path> stale;
    for (const auto& entry : fs::directory_iterator(folder, error)) {
      const std::string name = entry.path().filename().string();
      bool rewritten = false;
      for (const auto& file : files) rewritten |= file.name == name;
      if (!rewritten && entry.is_regular_file() && superseded(name)) stale.push_back(entry.path());
    }
    for (const auto& path : stale) fs::remove(path, error);
  }
  std::vector<std::string> written;
  for (const auto& file : files) {
    const std::string path = (folder / file.name).string();
    write_file_atomically(path, file.text);
    written.push_back(path);
  }
  return written;
}

}  // namespace

std::vector<std::string> write_folder_atomically(
    const std::string& folder, const std::vector<NamedText>& files,
    const std::function<bool(const std::string& name)>& superseded) {
  for (const auto& file : files) {
    if (file.name.empty() || file.name == "." || file.name == ".." ||
        file.name.find('/') != std::string::npos || file.name.find('\0') != std::string::npos)
      throw std::invalid_argument("not a plain file name: \"" + file.name + "\"");
  }
  // The folder by its own name ("out/" and "." name their folders too).
  fs::path target = fs::absolute(folder).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();
  const fs::path parent = target.parent_path();
  if (target == parent) return write_each(target, files, superseded);  // the root
  std::error_code error;
  fs::create_directories(parent, error);
  if (error) throw std::runtime_error(parent.string() + ": cannot create (" + error.message() + ")");

  const fs::file_status status = fs::symlink_status(target, error);
  const bool exists = fs::exists(status);
  if (exists && !fs::is_directory(status)) {
    if (fs::is_symlink(status)) return write_each(target, files, superseded);
    throw std::runtime_error(target.string() + ": not a folder");
  }
  std::vector<fs::path> kept;  // the folder's other files, to link into the new one
  if (exists) {
    for (const auto& entry : fs::directory_iterator(target, error)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && !entry.is_symlink()) return write_each(target, files, superseded);
      bool replaced = false;
      for (const auto& file : files) replaced |= file.name == name;
      if (!replaced && superseded && !entry.is_symlink() && entry.is_regular_file())
        replaced = superseded(name);
      if (!replaced) kept.push_back(entry.path());
    }
    if (error) throw std::runtime_error(target.string() + ": cannot read (" + error.message() + ")");
  }

  const fs::path temporary =
      parent / ("." + target.filename().string() + ".tmp" + std::to_string(static_cast<long>(::getpid())));
  // Emptied and removed by the front end's signal handler if the process is interrupted;
  // registered before it exists, so that no signal finds it made but not yet known (removing a
  // folder that is not there yet does nothing).
  const ScratchFile scratch(temporary.string(), true);
  fs::remove_all(temporary, error);  // a folder a killed run of this process id left
  if (::mkdir(temporary.c_str(), 0755) != 0)
    throw std::runtime_error(temporary.string() + ": cannot create (" + std::strerror(errno) + ")");
  auto abandon = [&] {
    std::error_code ignored;
    fs::remove_all(temporary, ignored);
  };
  try {
    for (const auto& path : kept) {
      const fs::path link = temporary / path.filename();
      if (fs::is_symlink(fs::symlink_status(path))) {
        fs::copy_symlink(path, link);
      } else if (::link(path.c_str(), link.c_str()) != 0) {
        abandon();  // a file system without hard links, or a file that went away
        return write_each(target, files, superseded);
      }
    }
    for (const auto& file : files) write_file_atomically((temporary / file.name).string(), file.text);
  } catch (...) {
    abandon();
    throw;
  }
  if (exists) {
    struct stat old {};
    if (::stat(target.c_str(), &old) == 0) ::chmod(temporary.c_str(), old.st_mode & 07777);
  }
  sync_folder(temporary);
  if (exists) {
    if (::renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
      abandon();  // no exchange on this file system, or a mount point
      return write_each(target, files, superseded);
    }
    abandon();  // the old folder, now under the temporary name
  } else if (::rename(temporary.c_str(), target.c_str()) != 0) {
    const int code = errno;
    abandon();
    if (code == EEXIST || code == ENOTEMPTY) return write_each(target, files, superseded);  // made meanwhile
    throw std::runtime_error(target.string() + ": cannot create (" + std::strerror(code) + ")");
  }
  sync_folder(parent);
  std::vector<std::string> written;
  for (const auto& file : files) written.push_back((fs::path(folder) / file.name).string());
  return written;
}

std::string edit_island_counts(const std::string& text, const Cluster& loaded, const Cluster& edited) {
  std::string out = text;
  for (const Island& now : edited.islands) {
    const Island* was = loaded.find_island(now.name);
    if (!was) throw std::invalid_argument("island " + now.name + " is not in the cluster file");
    // The file's islands in the order the loader read them.
    const std::size_t index = static_cast<std::size_t>(was - loaded.islands.data());
    const int free_now = now.free_nodes < 0 ? now.nodes : now.free_nodes;
    const std::string file = loaded.location.file;
    if (now.nodes != was->nodes)
      out = set_yaml_value(out, {std::string("islands"), index, std::string("nodes")},
                           std::to_string(now.nodes), file);
    // free_nodes: where the file states it, or (added) where it now differs from nodes.
    if (free_now != was->free_nodes && (was->free_nodes_stated || free_now != now.nodes))
      out = set_yaml_value(out, {std::string("islands"), index, std::string("free_nodes")},
                           std::to_string(free_now), file);
  }
  return out;
}

}  // namespace hetplan::formats
