// Reads profiles/*.yaml (docs/formats/chip.md). Every number must name a source: its own
// `source:` or one inherited from an enclosing mapping's `source:`.
#include <algorithm>
#include <array>
#include <sstream>
#include <string_view>

#include "formats/document.hpp"
#include "formats/loaders.hpp"

namespace hetplan::formats {
namespace {

struct SourceUse {
  std::string id;
  Field where;
};

class ChipReader {
 public:
  explicit ChipReader(ChipProfile& chip) : chip_(chip) {}

  // A number that may be `unknown`, a plain value with its unit, or {value, source, note}.
  template <typename Parse>
  std::optional<double> cited(const Field& field, const std::string& inherited, Parse parse) {
    std::string source = inherited;
    Field value_field = field;
    if (field.is_map()) {
      MapReader map(field);
      value_field = map.required("value");
      if (auto own = map.optional("source")) source = source_id(*own);
      if (auto note = map.optional("note")) note->as_string();
      map.done();
    }
    if (value_field.is_unknown()) return std::nullopt;
    if (source.empty()) {
      value_field.fail(
          "expected a source for this number (a `source:` here or in an enclosing "
          "mapping), got none");
    }
    const double value = parse(value_field);
    chip_.cited_by[value_field.path()] = source;
    return value;
  }

  std::optional<double> quantity(const Field& field, const std::string& inherited,
                                 Dimension dimension) {
    return cited(field, inherited, [&](const Field& f) { return f.as_quantity(dimension); });
  }
  std::optional<double> number(const Field& field, const std::string& inherited, double min,
                               double max) {
    return cited(field, inherited, [&](const Field& f) { return f.as_number(min, max); });
  }
  std::optional<int> count(const Field& field, const std::string& inherited, int min, int max) {
    auto value = cited(field, inherited,
                       [&](const Field& f) { return static_cast<double>(f.as_int(min, max)); });
    if (!value) return std::nullopt;
    return static_cast<int>(*value);
  }

  // Reads an optional `source:` of a section; returns the source children inherit.
  std::string section_source(MapReader& map, const std::string& inherited) {
    if (auto own = map.optional("source")) return source_id(*own);
    return inherited;
  }

  std::string source_id(const Field& field) {
    std::string id = field.as_identifier();
    uses_.push_back({id, field});
    return id;
  }

  void check_sources() const {
    for (const auto& use : uses_) {
      if (!chip_.sources.contains(use.id)) {
        use.where.fail("expected a source id listed under `sources:`, got \"" + use.id + "\"");
      }
    }
  }

 private:
  ChipProfile& chip_;
  std::vector<SourceUse> uses_;
};

void read_software(MapReader& root, ChipProfile& chip) {
  MapReader software(root.required("software"));
  auto component = [&](std::string_view key, SoftwareComponent& out) {
    MapReader map(software.required(key));
    out.name = map.required("name").as_string();
    if (auto version = map.optional("version")) out.version = version->as_string();
    map.done();
  };
  component("runtime", chip.runtime);
  component("framework_adapter", chip.framework_adapter);
  component("collective_library", chip.collective_library);
  software.done();
}

void read_compute(MapReader& root, ChipProfile& chip, ChipReader& reader) {
  MapReader compute(root.required("compute"));
  const std::string source = reader.section_source(compute, "");
  MapReader peak(compute.required("peak"));
  const std::string peak_source = reader.section_source(peak, source);
  for (auto& [key, field] : peak.entries()) {
    if (key == "source") continue;
    const auto dtype = dtype_from_string(key);
    if (!dtype) {
      throw InputError(
          field.location(), field.path(),
          "expected a dtype (fp32, tf32, fp16, bf16 or fp8) as key, got \"" + key + "\"");
    }
    chip.peak_flops[*dtype] = reader.quantity(field, peak_source, Dimension::flop_rate);
  }
  if (chip.peak_flops.empty()) peak.field().fail_expected("at least one dtype with its peak");
  peak.done();
  compute.done();
}

void read_memory(MapReader& root, ChipProfile& chip, ChipReader& reader) {
  MapReader memory(root.required("memory"));
  const std::string source = reader.section_source(memory, "");
  chip.memory_capacity = reader.quantity(memory.required("capacity"), source, Dimension::bytes);
  chip.memory_bandwidth =
      reader.quantity(memory.required("bandwidth"), source, Dimension::bandwidth);
  if (auto usable = memory.optional("usable")) {
    chip.memory_usable = reader.quantity(*usable, source, Dimension::bytes);
    if (chip.memory_usable && chip.memory_capacity && *chip.memory_usable > *chip.memory_capacity)
      usable->fail("expected at most the capacity");
  }
  memory.done();
}

void read_node(MapReader& root, ChipProfile& chip, ChipReader& reader) {
  MapReader node(root.required("node"));
  const std::string source = reader.section_source(node, "");
  chip.chips_per_node = reader.count(node.required("chips_per_node"), source, 1, 1024);

  MapReader intra(node.required("intra_node"));
  const std::string intra_source = reader.section_source(intra, source);
  chip.intra_node.kind = static_cast<IntraNodeKind>(
      intra.required("kind").as_choice({"hccs", "xgmi", "mlu-link", "nvlink", "nvswitch", "pcie"}));
  const Field topology_field = intra.required("topology");
  chip.intra_node.topology = static_cast<IntraNodeTopology>(
      topology_field.as_choice({"switch", "full-mesh", "groups", "ring", "pairs", "pcie-tree"}));
  const auto group = reader.count(intra.required("group_size"), intra_source, 1, 1024);
  chip.intra_node.group_size = group.value_or(1);
  chip.intra_node.bandwidth =
      reader.quantity(intra.required("bandwidth"), intra_source, Dimension::bandwidth);
  if (auto cross = intra.optional("cross_group_bandwidth")) {
    chip.intra_node.cross_group_bandwidth =
        reader.quantity(*cross, intra_source, Dimension::bandwidth);
  }
  intra.done();
  if (chip.chips_per_node && chip.intra_node.group_size > *chip.chips_per_node) {
    throw InputError(intra.field().location(), "node.intra_node.group_size",
                     "expected at most chips_per_node (" + std::to_string(*chip.chips_per_node) +
                         "), got " + std::to_string(chip.intra_node.group_size));
  }

  MapReader nics(node.required("nics"));
  const std::string nic_source = reader.section_source(nics, source);
  chip.nic_count = reader.count(nics.required("count"), nic_source, 0, 64);
  chip.nic_speed = reader.quantity(nics.required("speed"), nic_source, Dimension::bandwidth);
  nics.done();
  node.done();
}

void read_power(MapReader& root, ChipProfile& chip, ChipReader& reader) {
  auto power_field = root.optional("power");
  if (!power_field) return;
  MapReader power(*power_field);
  const std::string source = reader.section_source(power, "");
  chip.tdp = reader.quantity(power.required("tdp"), source, Dimension::power);
  power.done();
}

constexpr std::array<std::string_view, kOpClassCount> kOpClassNames = {
    "gemm", "flash_attention", "attention_unfused", "norm",      "activation",
    "rope", "embedding",       "cross_entropy",     "optimizer", "dropout"};

Support read_support(const Field& field) {
  return static_cast<Support>(field.as_choice({"native", "fallback", "missing"}));
}

void read_operators(MapReader& root, ChipProfile& chip, ChipReader& reader) {
  auto operators_field = root.optional("operators");
  if (!operators_field) return;
  MapReader operators(*operators_field);
  const std::string source = reader.section_source(operators, "");
  if (auto def = operators.optional("default")) {
    chip.default_support = read_support(*def);
  }
  if (auto classes_field = operators.optional("classes")) {
    MapReader classes(*classes_field);
    for (auto& [key, field] : classes.entries()) {
      const auto it = std::find(kOpClassNames.begin(), kOpClassNames.end(), key);
      if (it == kOpClassNames.end()) {
        throw InputError(field.location(), field.path(),
                         "expected an operator class (gemm, flash_attention, attention_unfused, "
                         "norm, activation, rope, embedding, cross_entropy, optimizer or dropout) "
                         "as key, got \"" +
                             key + "\"");
      }
      const auto op = static_cast<OpClass>(it - kOpClassNames.begin());
      MapReader entry(field);
      std::string entry_source = reader.section_source(entry, source);
      OpCoverage coverage;
      coverage.support = read_support(entry.required("support"));
      if (coverage.support == Support::fallback) {
        coverage.slowdown =
            reader.number(entry.required("slowdown"), entry_source, 1.0, 1000.0).value_or(1.0);
      } else if (auto slowdown = entry.optional("slowdown")) {
        slowdown->fail("expected no slowdown unless support is fallback");
      }
      if (entry_source.empty()) entry.field().fail("expected a source for this coverage entry");
      chip.cited_by[field.path()] = entry_source;
      entry.done();
      chip.op_coverage[op] = coverage;
    }
    classes.done();
  }
  operators.done();
}

void read_efficiency(MapReader& root, ChipProfile& chip, ChipReader& reader) {
  auto efficiency_field = root.optional("efficiency");
  if (!efficiency_field) return;
  MapReader efficiency(*efficiency_field);
  EfficiencyModel& model = chip.efficiency;
  const std::string source = reader.section_source(efficiency, "");
  model.calibrated = efficiency.required("calibrated").as_bool();
  if (auto gemm_field = efficiency.optional("gemm")) {
    MapReader gemm(*gemm_field);
    const std::string gemm_source = reader.section_source(gemm, source);
    model.gemm_max = reader.number(gemm.required("max"), gemm_source, 0.01, 1.0);
    if (auto half = gemm.optional("half_dim"))
      model.gemm_half_dim = reader.number(*half, gemm_source, 0.0, 65536.0);
    if (auto backward = gemm.optional("backward_max"))
      model.gemm_backward_max = reader.number(*backward, gemm_source, 0.01, 1.0);
    if (auto fp8 = gemm.optional("fp8_max"))
      model.gemm_fp8_max = reader.number(*fp8, gemm_source, 0.01, 1.0);
    gemm.done();
  }
  if (auto attention_field = efficiency.optional("attention")) {
    MapReader attention(*attention_field);
    const std::string attention_source = reader.section_source(attention, source);
    model.attention_max = reader.number(attention.required("max"), attention_source, 0.01, 1.0);
    attention.done();
  }
  if (auto memory = efficiency.optional("memory")) {
    model.memory = reader.number(*memory, source, 0.01, 1.0);
  }
  auto collectives = [&](std::string_view key, std::optional<double>& bus,
                         std::optional<double>& latency) {
    auto field = efficiency.optional(key);
    if (!field) return;
    MapReader map(*field);
    const std::string map_source = reader.section_source(map, source);
    bus = reader.number(map.required("bus_efficiency"), map_source, 0.01, 1.5);
    if (auto lat = map.optional("latency")) {
      latency = reader.quantity(*lat, map_source, Dimension::duration);
      if (latency && *latency > 1.0) lat->fail_expected("a latency of at most 1 s");
    }
    map.done();
  };
  collectives("intra_node_collectives", model.intra_bus_efficiency, model.intra_latency);
  collectives("network_collectives", model.network_bus_efficiency, model.network_latency);
  collectives("intra_node_all_to_all", model.intra_all_to_all_efficiency,
              model.intra_all_to_all_latency);
  if (auto overhead = efficiency.optional("kernel_overhead")) {
    model.kernel_overhead = reader.quantity(*overhead, source, Dimension::duration);
    if (model.kernel_overhead && *model.kernel_overhead > 1e-3)
      overhead->fail("expected at most 1 ms per kernel");
  }
  if (auto overlap = efficiency.optional("tp_comm_overlap"))
    model.tp_comm_overlap = reader.number(*overlap, source, 0.0, 1.0);
  if (auto overlap = efficiency.optional("ep_comm_overlap"))
    model.ep_comm_overlap = reader.number(*overlap, source, 0.0, 1.0);
  if (auto in_step_field = efficiency.optional("in_step")) {
    // Fitted from training runs (docs/models/in-step.md): factors on the microbenchmarks'
    // rates and the model's collective times, overheads per layer and micro-batch.
    MapReader in_step(*in_step_field);
    const std::string in_step_source = reader.section_source(in_step, source);
    InStepTerms& terms = model.in_step;
    if (auto f = in_step.optional("gemm")) terms.gemm = reader.number(*f, in_step_source, 0.05, 2.0);
    if (auto f = in_step.optional("attention"))
      terms.attention = reader.number(*f, in_step_source, 0.05, 2.0);
    if (auto f = in_step.optional("communication"))
      terms.communication = reader.number(*f, in_step_source, 0.1, 10.0);
    for (auto [key, out] : {std::pair{"layer_overhead", &terms.layer_overhead},
                            std::pair{"moe_layer_overhead", &terms.moe_layer_overhead}}) {
      auto f = in_step.optional(key);
      if (!f) continue;
      *out = reader.quantity(*f, in_step_source, Dimension::duration);
      if (*out && **out > 1.0) f->fail_expected("at most 1 s per layer and micro-batch");
    }
    if (auto runs = in_step.optional("runs")) {
      for (const Field& element : runs->elements()) {
        MapReader run(element);
        RunReference ref;
        ref.id = run.required("id").as_string();
        ref.file = run.required("file").as_string();
        const Field hash = run.required("sha256");
        ref.sha256 = hash.as_string();
        if (ref.sha256.size() != 64 ||
            ref.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
          hash.fail_expected("64 lower-case hexadecimal digits");
        run.done();
        terms.runs.push_back(std::move(ref));
      }
    }
    in_step.done();
    if (!terms.any())
      in_step_field->fail_expected("at least one fitted term (gemm, attention, communication, "
                                   "layer_overhead or moe_layer_overhead)");
  }
  efficiency.done();
}

// evidence: how much stands behind the profile's figures, and the interval its predictions
// carry (docs/models/uncertainty.md).
void read_evidence(MapReader& root, ChipProfile& chip, ChipReader& reader) {
  auto evidence_field = root.optional("evidence");
  if (!evidence_field) return;
  MapReader evidence(*evidence_field);
  const std::string source = reader.section_source(evidence, "");
  if (auto level = evidence.optional("level")) {
    chip.evidence.level = static_cast<EvidenceLevel>(
        level->as_choice({"datasheet", "microbenchmarks", "probe", "runs"}));
    if (*chip.evidence.level == EvidenceLevel::runs && !chip.efficiency.in_step.any())
      level->fail_expected("a level below runs (the profile has no efficiency.in_step fitted "
                           "from runs)");
  }
  for (auto [key, out] : {std::pair{"step", &chip.evidence.step},
                          std::pair{"memory", &chip.evidence.memory}}) {
    auto field = evidence.optional(key);
    if (!field) continue;
    MapReader band(*field);
    const std::string band_source = reader.section_source(band, source);
    const auto low = reader.number(band.required("low"), band_source, 0.01, 100.0);
    const Field high_field = band.required("high");
    const auto high = reader.number(high_field, band_source, 0.01, 100.0);
    band.done();
    if (low.has_value() != high.has_value())
      high_field.fail_expected("both ends of the interval known, or both unknown");
    if (!low) continue;
    if (*high < *low)
      high_field.fail_expected("a high end at least the low end");
    *out = Band{*low, *high};
  }
  evidence.done();
}

}  // namespace

// Where a comment starts on a line (the `#` that begins it), or npos: a `#` at the line's start
// or after a blank, outside quoted scalars.
std::size_t comment_start(std::string_view line) {
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote == '"') {
      if (c == '\\') ++i;
      else if (c == '"') quote = 0;
    } else if (quote == '\'') {
      if (c == '\'' && i + 1 < line.size() && line[i + 1] == '\'') ++i;  // '' is a quote
      else if (c == '\'') quote = 0;
    } else if (c == '"' || c == '\'') {
      // A quote opens a quoted scalar only where a scalar starts (an apostrophe inside a plain
      // scalar is text).
      const std::size_t before = line.find_last_not_of(" \t", i == 0 ? 0 : i - 1);
      if (i == 0 || before == std::string_view::npos ||
          std::string_view(":{[,-").find(line[before]) != std::string_view::npos)
        quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return i;
    }
  }
  return std::string_view::npos;
}

// The dotted path of the first key on each line (a flow mapping's keys share its line), and
// whether that line holds the key's value.
struct KeyLine {
  std::string path;
  bool on_values = false;
  std::size_t indent = 0;
};

void key_lines(const YAML::Node& node, const std::string& path, std::map<int, KeyLine>& out) {
  if (!node.IsMap()) return;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) continue;
    const std::string child =
        path.empty() ? entry.first.Scalar() : path + "." + entry.first.Scalar();
    const YAML::Mark mark = entry.first.Mark();
    const YAML::Node& value = entry.second;
    const bool block =
        (value.IsMap() || value.IsSequence()) && value.Style() != YAML::EmitterStyle::Flow;
    if (mark.line >= 0 && !out.contains(mark.line)) {
      out[mark.line] = {child, !block, static_cast<std::size_t>(std::max(0, mark.column))};
    }
    key_lines(value, child, out);
  }
}

// The file's comments by the key they belong to: a comment that ends a key's line is that key's;
// whole-line comments belong to the next key below them (those after the last key to "").
std::map<std::string, FieldComment> read_comments(const std::string& text, const YAML::Node& root) {
  std::map<int, KeyLine> keys;
  key_lines(root, "", keys);
  std::map<std::string, FieldComment> out;
  std::vector<std::string> pending;
  // Inside a `|` or `>` block scalar of a key at this indent (-1: not): the lines indented
  // further are its text.
  long scalar_indent = -1;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::size_t first = line.find_first_not_of(" \t");
    const auto key = keys.find(number);
    if (scalar_indent >= 0 && key == keys.end() &&
        (first == std::string::npos || static_cast<long>(first) > scalar_indent))
      continue;  // the block scalar's own text, `#` and all
    scalar_indent = -1;
    if (key != keys.end()) {
      FieldComment& comment = out[key->second.path];
      comment.on_values = key->second.on_values;
      comment.leading.insert(comment.leading.end(), pending.begin(), pending.end());
      pending.clear();
      const std::size_t start = comment_start(line);
      if (start != std::string::npos) {
        comment.trailing = line.substr(start + 1);
        line.resize(start);
      }
      // A `|` or `>` block scalar: its lines follow, indented past the key.
      const std::size_t colon = line.find(':', key->second.indent);
      if (colon != std::string::npos) {
        const std::size_t value = line.find_first_not_of(" \t", colon + 1);
        if (value != std::string::npos && (line[value] == '|' || line[value] == '>'))
          scalar_indent = static_cast<long>(key->second.indent);
      }
      if (comment.leading.empty() && comment.trailing.empty()) out.erase(key->second.path);
    } else if (first != std::string::npos && line[first] == '#') {
      pending.push_back(line.substr(first + 1));
    }
  }
  if (!pending.empty()) out[""].leading = std::move(pending);
  return out;
}

ChipProfile parse_chip(const std::string& text, const std::string& file_name) {
  const YAML::Node root_node = parse_document(text, file_name);
  const Field root_field = document_root(root_node, file_name, kChipSchema);
  MapReader root(root_field);
  root.required("schema");

  ChipProfile chip;
  chip.location = root_field.location();
  chip.location.line = 0;
  ChipReader reader(chip);

  {
    MapReader sources(root.required("sources"));
    for (auto& [key, field] : sources.entries()) {
      if (key.empty() ||
          key.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos) {
        throw InputError(field.location(), field.path(),
                         "expected a source id of lower-case letters, digits, '-', '_' and '.'");
      }
      const std::string citation = field.as_string();
      if (citation.size() < 8) field.fail_expected("a citation (title, publisher or URL)");
      chip.sources[key] = citation;
    }
    if (chip.sources.empty()) sources.field().fail_expected("at least one source");
  }
  chip.id = root.required("id").as_identifier();
  chip.vendor = root.required("vendor").as_string();
  chip.model = root.required("model").as_string();
  chip.family = root.required("family").as_identifier();
  chip.role = static_cast<ChipRole>(root.required("role").as_choice({"training", "inference"}));
  if (auto from = root.optional("in_step_from")) chip.in_step_from = from->as_identifier();

  read_software(root, chip);
  read_compute(root, chip, reader);
  read_memory(root, chip, reader);
  read_node(root, chip, reader);
  read_power(root, chip, reader);
  read_operators(root, chip, reader);
  read_efficiency(root, chip, reader);
  read_evidence(root, chip, reader);
  root.done();
  reader.check_sources();
  chip.comments = read_comments(text, root_node);
  return chip;
}

ChipProfile load_chip(const std::string& path) {
  return parse_chip(read_text_file(path), path);
}

}  // namespace hetplan::formats
