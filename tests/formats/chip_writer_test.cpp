// chip_yaml writes a hetplan/chip/v1 document that parse_chip reads back to the same profile:
// every bundled profile round-trips field by field (sources and cited_by included), writing the
// re-read profile again gives the same text, and a profile changed in code (as calibration
// would) round-trips too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "tests/formats/test_support.hpp"

namespace hetplan {
namespace {

using testing::kSourceDir;

// Bit-for-bit equality of doubles (so 0.1 + 0.2 != 0.3 counts as a difference).
bool same_double(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

std::string show(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

class Differences {
 public:
  void text(const std::string& what, const std::string& a, const std::string& b) {
    if (a != b) out_.push_back(what + ": \"" + a + "\" vs \"" + b + "\"");
  }
  void number(const std::string& what, double a, double b) {
    if (!same_double(a, b)) out_.push_back(what + ": " + show(a) + " vs " + show(b));
  }
  void integer(const std::string& what, long a, long b) {
    if (a != b) out_.push_back(what + ": " + std::to_string(a) + " vs " + std::to_string(b));
  }
  template <typename T>
  void optional(const std::string& what, const std::optional<T>& a, const std::optional<T>& b) {
    if (a.has_value() != b.has_value()) {
      out_.push_back(what + ": " + (a ? "set" : "unknown") + " vs " + (b ? "set" : "unknown"));
    } else if (a) {
      if constexpr (std::is_same_v<T, double>) {
        number(what, *a, *b);
      } else {
        integer(what, *a, *b);
      }
    }
  }
  void string_map(const std::string& what, const std::map<std::string, std::string>& a,
                  const std::map<std::string, std::string>& b) {
    for (const auto& [key, value] : a) {
      const auto it = b.find(key);
      if (it == b.end()) {
        out_.push_back(what + "[" + key + "]: \"" + value + "\" vs missing");
      } else {
        text(what + "[" + key + "]", value, it->second);
      }
    }
    for (const auto& [key, value] : b) {
      if (!a.contains(key)) out_.push_back(what + "[" + key + "]: missing vs \"" + value + "\"");
    }
  }

  const std::vector<std::string>& list() const { return out_; }

 private:
  std::vector<std::string> out_;
};

// Every field of ChipProfile except `location`.
std::vector<std::string> differences(const ChipProfile& a, const ChipProfile& b) {
  Differences d;
  d.text("id", a.id, b.id);
  d.text("vendor", a.vendor, b.vendor);
  d.text("model", a.model, b.model);
  d.text("family", a.family, b.family);
  d.integer("role", static_cast<long>(a.role), static_cast<long>(b.role));
  const auto software = [&](const std::string& what, const SoftwareComponent& x,
                            const SoftwareComponent& y) {
    d.text(what + ".name", x.name, y.name);
    d.text(what + ".version", x.version, y.version);
  };
  software("runtime", a.runtime, b.runtime);
  software("framework_adapter", a.framework_adapter, b.framework_adapter);
  software("collective_library", a.collective_library, b.collective_library);

  for (DType dtype : kAllDTypes) {
    const std::string what = "peak_flops[" + std::string(to_string(dtype)) + "]";
    const bool in_a = a.peak_flops.contains(dtype);
    const bool in_b = b.peak_flops.contains(dtype);
    d.integer(what + " listed", in_a, in_b);
    if (in_a && in_b) d.optional(what, a.peak_flops.at(dtype), b.peak_flops.at(dtype));
  }
  d.optional("memory_capacity", a.memory_capacity, b.memory_capacity);
  d.optional("memory_bandwidth", a.memory_bandwidth, b.memory_bandwidth);

  d.optional("chips_per_node", a.chips_per_node, b.chips_per_node);
  d.integer("intra_node.kind", static_cast<long>(a.intra_node.kind),
            static_cast<long>(b.intra_node.kind));
  d.integer("intra_node.topology", static_cast<long>(a.intra_node.topology),
            static_cast<long>(b.intra_node.topology));
  d.integer("intra_node.group_size", a.intra_node.group_size, b.intra_node.group_size);
  d.optional("intra_node.bandwidth", a.intra_node.bandwidth, b.intra_node.bandwidth);
  d.optional("intra_node.cross_group_bandwidth", a.intra_node.cross_group_bandwidth,
             b.intra_node.cross_group_bandwidth);
  d.optional("nic_count", a.nic_count, b.nic_count);
  d.optional("nic_speed", a.nic_speed, b.nic_speed);
  d.optional("tdp", a.tdp, b.tdp);

  d.integer("default_support", static_cast<long>(a.default_support),
            static_cast<long>(b.default_support));
  for (int i = 0; i < kOpClassCount; ++i) {
    const auto op = static_cast<OpClass>(i);
    const std::string what = "op_coverage[" + std::string(to_string(op)) + "]";
    const bool in_a = a.op_coverage.contains(op);
    const bool in_b = b.op_coverage.contains(op);
    d.integer(what + " listed", in_a, in_b);
    if (in_a && in_b) {
      d.integer(what + ".support", static_cast<long>(a.op_coverage.at(op).support),
                static_cast<long>(b.op_coverage.at(op).support));
      d.number(what + ".slowdown", a.op_coverage.at(op).slowdown, b.op_coverage.at(op).slowdown);
    }
  }

  const EfficiencyModel& x = a.efficiency;
  const EfficiencyModel& y = b.efficiency;
  d.integer("efficiency.calibrated", x.calibrated, y.calibrated);
  d.optional("efficiency.gemm_max", x.gemm_max, y.gemm_max);
  d.optional("efficiency.gemm_half_dim", x.gemm_half_dim, y.gemm_half_dim);
  d.optional("efficiency.gemm_backward_max", x.gemm_backward_max, y.gemm_backward_max);
  d.optional("efficiency.gemm_fp8_max", x.gemm_fp8_max, y.gemm_fp8_max);
  d.optional("efficiency.attention_max", x.attention_max, y.attention_max);
  d.optional("efficiency.memory", x.memory, y.memory);
  d.optional("efficiency.intra_bus_efficiency", x.intra_bus_efficiency, y.intra_bus_efficiency);
  d.optional("efficiency.intra_latency", x.intra_latency, y.intra_latency);
  d.optional("efficiency.network_bus_efficiency", x.network_bus_efficiency,
             y.network_bus_efficiency);
  d.optional("efficiency.network_latency", x.network_latency, y.network_latency);

  d.string_map("sources", a.sources, b.sources);
  d.string_map("cited_by", a.cited_by, b.cited_by);
  return d.list();
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += "  " + line + "\n";
  return out;
}

// Writes `chip`, reads it back, and checks that the profile and (written again) the text are
// unchanged. Returns the text.
std::string expect_round_trip(const ChipProfile& chip, const std::string& comment = {}) {
  const std::string text = formats::chip_yaml(chip, comment);
  ChipProfile back;
  try {
    back = formats::parse_chip(text, chip.id + ".yaml");
  } catch (const std::exception& error) {
    ADD_FAILURE() << "the written profile does not load: " << error.what() << "\n" << text;
    return text;
  }
  const auto diff = differences(chip, back);
  EXPECT_TRUE(diff.empty()) << "original vs re-read:\n" << joined(diff) << "text:\n" << text;
  // The header comment is now the profile's own (its file's first comment lines).
  EXPECT_EQ(formats::chip_yaml(back), text) << "writing the re-read profile differs";
  if (comment.empty()) {
    EXPECT_EQ(back.comments, chip.comments) << text;
  }
  return text;
}

TEST(ChipWriter, EveryBundledProfileRoundTrips) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/profiles")) {
    if (entry.path().extension() != ".yaml") continue;
    ++count;
    SCOPED_TRACE(entry.path().string());
    const ChipProfile chip = formats::load_chip(entry.path().string());
    expect_round_trip(chip);
  }
  EXPECT_GE(count, 14);
}

TEST(ChipWriter, CommentLinesAndA100Text) {
  const ChipProfile chip = formats::load_chip(kSourceDir + "/profiles/nvidia-a100-sxm4-80gb.yaml");
  const std::string text = expect_round_trip(chip, "written by a test\n\nsecond line");
  EXPECT_EQ(text.rfind("# written by a test\n#\n# second line\nschema: hetplan/chip/v1\n", 0), 0u)
      << text;
  // Readable units, the forms the profile used, and its section sources.
  for (const char* line : {
           "    bf16: 312 TFLOPS\n",
           "    fp32: 19.5 TFLOPS\n",
           "  capacity: {value: 80 GiB, source: torch-trace-a100}   # datasheet '80GB'; "
           "NVIDIA's HBM 'GB' are binary (see source)\n",
           "  bandwidth: 2039 GB/s\n",
           "  source: dgx-a100\n",
           "    bandwidth: {value: 300 GB/s, source: datasheet}   # NVLink 600 GB/s "
           "bidirectional / 2\n",
           "  nics: {count: 8, speed: 200 Gbps}   # 8x ConnectX-6 HDR compute ports (storage "
           "ports excluded)\n",
           "  tdp: 400 W\n",
           "  classes: {}\n",
           "  calibrated: false\n  source: mamf\n",
           "  attention: {max: 0.61, source: flash-attention-2}   # 189 / 312\n",
           "  runtime: {name: CUDA, version: \"12.4\"}\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << "lacks: " << line << "in:\n" << text;
  }
}

// A profile as calibration would leave it: fitted efficiencies, a new source, and numbers that
// are not short decimals in any unit.
ChipProfile calibrated_a100() {
  ChipProfile chip = formats::load_chip(kSourceDir + "/profiles/nvidia-a100-sxm4-80gb.yaml");
  chip.comments.clear();  // they explain the file's figures, which this one changes
  chip.sources["calib-2025-01"] = "calibration: hetplan calibrate run 2025-01, 3 nodes x 8 A100";
  EfficiencyModel& model = chip.efficiency;
  model.calibrated = true;
  model.gemm_max = 271.2 / 312.0;  // plain, inherits efficiency.gemm's new source
  model.gemm_half_dim = 1536.25;
  chip.cited_by["efficiency.gemm.max"] = "calib-2025-01";
  chip.cited_by["efficiency.gemm.half_dim"] = "calib-2025-01";
  model.attention_max = 0.1 + 0.2;  // keeps flash-attention-2 via its own mapping
  model.memory = 1.0 / 3.0;
  chip.cited_by["efficiency.memory.value"] = "calib-2025-01";
  model.intra_bus_efficiency = 1.2345678901234567;
  model.intra_latency = 7.3e-6 / 3.0;
  chip.cited_by["efficiency.intra_node_collectives.latency.value"] = "calib-2025-01";
  model.network_bus_efficiency = 0.5;
  model.network_latency = 2.5e-5;
  chip.cited_by["efficiency.network_collectives.bus_efficiency"] = "calib-2025-01";
  chip.cited_by["efficiency.network_collectives.latency"] = "calib-2025-01";

  chip.peak_flops[DType::fp8] = 312e12 * 0.87 * 1.1;  // no short decimal times 1e12
  chip.cited_by["compute.peak.fp8.value"] = "calib-2025-01";
  chip.memory_capacity = 80.0 * 1024 * 1024 * 1024 + 1;
  chip.intra_node.cross_group_bandwidth = 1e11 / 3.0;
  chip.cited_by["node.intra_node.cross_group_bandwidth.value"] = "datasheet";
  chip.tdp = std::nextafter(400.0, 500.0);
  chip.cited_by["power.tdp.value"] = "calib-2025-01";
  chip.cited_by.erase("power.tdp");

  chip.default_support = Support::fallback;
  chip.op_coverage[OpClass::rope] = {Support::fallback, 1.37};
  chip.cited_by["operators.classes.rope"] = "calib-2025-01";
  chip.cited_by["operators.classes.rope.slowdown"] = "calib-2025-01";
  chip.op_coverage[OpClass::dropout] = {Support::fallback, 1.0};  // slowdown unknown
  chip.cited_by["operators.classes.dropout"] = "datasheet";
  chip.op_coverage[OpClass::flash_attention] = {Support::missing, 1.0};
  chip.cited_by["operators.classes.flash_attention"] = "calib-2025-01";
  chip.op_coverage[OpClass::norm] = {Support::native, 1.0};
  chip.cited_by["operators.classes.norm"] = "calib-2025-01";
  chip.op_coverage[OpClass::gemm] = {Support::fallback, 2.0};
  chip.cited_by["operators.classes.gemm"] = "datasheet";
  chip.cited_by["operators.classes.gemm.slowdown.value"] = "calib-2025-01";
  return chip;
}

TEST(ChipWriter, CalibratedProfileRoundTrips) {
  const ChipProfile chip = calibrated_a100();
  const std::string text = expect_round_trip(chip, "calibrated");
  const ChipProfile back = formats::parse_chip(text, "x.yaml");
  EXPECT_TRUE(back.efficiency.calibrated);
  EXPECT_EQ(back.cited_by.at("efficiency.gemm.max"), "calib-2025-01");
  EXPECT_EQ(back.cited_by.at("operators.classes.rope"), "calib-2025-01");
  EXPECT_EQ(back.coverage(OpClass::rope).slowdown, 1.37);
  EXPECT_NE(text.find("  calibrated: true\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  memory: {value: 0.3333333333333333, source: calib-2025-01}\n"),
            std::string::npos)
      << text;
  // 80 GiB + 1 B has no short exact spelling in GiB; GB needs 11 digits.
  EXPECT_NE(text.find("  capacity: {value: 85.899345921 GB, source: torch-trace-a100}\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  default: fallback\n"), std::string::npos) << text;
  // operators.source is the first entry's (gemm: datasheet), so dropout inherits it.
  EXPECT_NE(text.find("  source: datasheet\n  classes:\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    dropout: {support: fallback, slowdown: unknown}\n"), std::string::npos)
      << text;
}

// The file's comments come back in the written profile, each where it stood: above its key or at
// the end of its line; a `#` inside a quoted or block scalar is text.
TEST(ChipWriter, CommentsAreCarried) {
  const std::string text = R"(# header line one
#   indented header
schema: hetplan/chip/v1
id: commented
vendor: NVIDIA's lab   # an apostrophe in a plain scalar
model: "Model #7"
family: nvidia
role: training
sources:
  sheet: >-
    A folded citation whose second line
    # starts with a hash that is text
  other: 'it''s # quoted'   # after a quoted scalar
software:
  runtime: {name: CUDA, version: "12.4"}
  framework_adapter: {name: PyTorch, version: "2.4"}
  collective_library: {name: NCCL, version: "2.21"}
compute:
  source: sheet   # the section's source
  peak:
    # above the dtype
    bf16: 100 TFLOPS   # 2 x 50
memory:
  source: sheet
  capacity: 16 GiB
  bandwidth: unknown
node:
  source: sheet
  chips_per_node: 8
  intra_node: {kind: pcie, topology: pcie-tree, group_size: unknown, bandwidth: unknown}
  nics: {count: unknown, speed: unknown}
power:
  source: sheet
  tdp: unknown
operators:
  default: native
  classes: {}
efficiency:
  # about the section
  calibrated: false
  gemm: {max: unknown}
  memory: unknown
  intra_node_collectives: {bus_efficiency: unknown}
  network_collectives: {bus_efficiency: unknown}
# after the last key
)";
  const ChipProfile chip = formats::parse_chip(text, "commented.yaml");
  EXPECT_EQ(chip.sources.at("sheet"),
            "A folded citation whose second line # starts with a hash that is text");
  EXPECT_EQ(chip.model, "Model #7");
  const auto& comments = chip.comments;
  ASSERT_TRUE(comments.contains("schema"));
  EXPECT_EQ(comments.at("schema").leading,
            (std::vector<std::string>{" header line one", "   indented header"}));
  EXPECT_EQ(comments.at("vendor").trailing, " an apostrophe in a plain scalar");
  EXPECT_EQ(comments.at("sources.other").trailing, " after a quoted scalar");
  EXPECT_FALSE(comments.contains("model"));
  EXPECT_FALSE(comments.contains("sources.sheet"));
  EXPECT_EQ(comments.at("compute.source").trailing, " the section's source");
  EXPECT_EQ(comments.at("compute.peak.bf16").leading, std::vector<std::string>{" above the dtype"});
  EXPECT_EQ(comments.at("compute.peak.bf16").trailing, " 2 x 50");
  EXPECT_TRUE(comments.at("compute.peak.bf16").on_values);
  EXPECT_EQ(comments.at("efficiency.calibrated").leading,
            std::vector<std::string>{" about the section"});
  EXPECT_EQ(comments.at("").leading, std::vector<std::string>{" after the last key"});
  EXPECT_EQ(comments.size(), 7u);

  const std::string written = expect_round_trip(chip);
  for (const char* line : {"# header line one\n#   indented header\nschema: hetplan/chip/v1\n",
                           "lab\"   # an apostrophe in a plain scalar\nmodel: ",
                           "  source: sheet   # the section's source\n",
                           "    # above the dtype\n    bf16: 100 TFLOPS   # 2 x 50\n",
                           "  # about the section\n  calibrated: false\n"}) {
    EXPECT_NE(written.find(line), std::string::npos) << "lacks: " << line << "in:\n" << written;
  }
  EXPECT_TRUE(written.ends_with("\n# after the last key\n")) << written;

  ChipProfile broken = chip;
  broken.comments["vendor"].trailing = " two\nlines";
  EXPECT_THROW(formats::chip_yaml(broken), std::invalid_argument);
}

// Every comment of every bundled profile is still in the profile written from it, on its key's
// line (the writer's key order may differ from the file's).
TEST(ChipWriter, BundledProfilesKeepEveryComment) {
  auto lines_of = [](std::istream& in) {
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  // The key a line starts with ("" for a comment line).
  auto key_of = [](const std::string& line) {
    const auto start = line.find_first_not_of(' ');
    if (start == std::string::npos || line[start] == '#') return std::string();
    return line.substr(0, line.find(':'));
  };
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/profiles")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    std::ifstream file(entry.path());
    std::istringstream written(formats::chip_yaml(formats::load_chip(entry.path().string())));
    const auto originals = lines_of(file);
    const auto copies = lines_of(written);
    int comments = 0;
    for (const auto& line : originals) {
      // The bundled profiles keep `#` out of their strings, so each `#` starts a comment.
      const auto hash = line.find('#');
      if (hash == std::string::npos) continue;
      ++comments;
      const std::string comment = line.substr(hash);
      const bool kept = std::any_of(copies.begin(), copies.end(), [&](const std::string& copy) {
        return copy.ends_with(comment) && key_of(copy) == key_of(line);
      });
      EXPECT_TRUE(kept) << "lost: " << line;
    }
    EXPECT_GT(comments, 0);
  }
}

TEST(ChipWriter, RefusesProfilesThatCannotBeWritten) {
  const ChipProfile a100 = formats::load_chip(kSourceDir + "/profiles/nvidia-a100-sxm4-80gb.yaml");
  const auto error_of = [](const ChipProfile& chip) -> std::string {
    try {
      formats::chip_yaml(chip);
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "<no error>";
  };
  {  // a number with no source
    ChipProfile chip = a100;
    chip.efficiency.gemm_half_dim = 512;
    EXPECT_NE(error_of(chip).find("efficiency.gemm.half_dim: has a value but no source"),
              std::string::npos)
        << error_of(chip);
  }
  {  // a source that is not listed
    ChipProfile chip = a100;
    chip.cited_by["memory.bandwidth"] = "nowhere";
    EXPECT_NE(error_of(chip).find("not listed in sources"), std::string::npos) << error_of(chip);
  }
  {  // a citation of a number the profile does not state
    ChipProfile chip = a100;
    chip.tdp.reset();
    EXPECT_NE(error_of(chip).find("power.tdp: cited_by names it"), std::string::npos)
        << error_of(chip);
  }
  {  // two plain numbers of one mapping with different sources
    ChipProfile chip = a100;
    chip.cited_by["memory.bandwidth"] = "babelstream";
    chip.cited_by["memory.capacity"] = "datasheet";
    chip.cited_by.erase("memory.capacity.value");
    EXPECT_NE(error_of(chip).find("in the same mapping"), std::string::npos) << error_of(chip);
  }
  {  // a value the loader rejects
    ChipProfile chip = a100;
    chip.efficiency.gemm_max = 1.5;
    EXPECT_NE(error_of(chip).find("efficiency.gemm.max: expected a number from 0.01 to 1"),
              std::string::npos)
        << error_of(chip);
  }
}

}  // namespace
}  // namespace hetplan
