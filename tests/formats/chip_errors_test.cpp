// parse_chip: one test per kind of bad input, each checking the exact message.
#include <gtest/gtest.h>

#include "formats/loaders.hpp"
#include "tests/formats/test_support.hpp"

namespace hetplan {
namespace {

using formats::parse_chip;
using testing::input_error_of;
using testing::replaced;

// A small valid profile; the line numbers in the expectations below refer to it.
const std::string kChip =
    "schema: hetplan/chip/v1\n"                                    // 1
    "id: test-chip\n"                                              // 2
    "vendor: Test\n"                                               // 3
    "model: T1\n"                                                  // 4
    "family: test\n"                                               // 5
    "role: training\n"                                             // 6
    "sources:\n"                                                   // 7
    "  datasheet: \"Test T1 datasheet (Test Corp, 2024)\"\n"       // 8
    "software:\n"                                                  // 9
    "  runtime: {name: rt, version: \"1.0\"}\n"                    // 10
    "  framework_adapter: {name: PyTorch}\n"                       // 11
    "  collective_library: {name: ccl}\n"                          // 12
    "compute:\n"                                                   // 13
    "  source: datasheet\n"                                        // 14
    "  peak:\n"                                                    // 15
    "    bf16: 100 TFLOPS\n"                                       // 16
    "memory:\n"                                                    // 17
    "  source: datasheet\n"                                        // 18
    "  capacity: 64 GiB\n"                                         // 19
    "  bandwidth: 1.6 TB/s\n"                                      // 20
    "node:\n"                                                      // 21
    "  source: datasheet\n"                                        // 22
    "  chips_per_node: 8\n"                                        // 23
    "  intra_node:\n"                                              // 24
    "    kind: pcie\n"                                             // 25
    "    topology: pcie-tree\n"                                    // 26
    "    group_size: 8\n"                                          // 27
    "    bandwidth: 32 GB/s\n"                                     // 28
    "  nics: {count: 4, speed: 200 Gbps}\n"                        // 29
    "efficiency:\n"                                                // 30
    "  calibrated: false\n"                                        // 31
    "  source: datasheet\n"                                        // 32
    "  gemm: {max: 0.8}\n";                                        // 33

std::string chip_error(const std::string& text) {
  return input_error_of([&] { (void)parse_chip(text, "chip.yaml"); });
}

TEST(ChipErrors, BaseFixtureIsValid) {
  const ChipProfile chip = parse_chip(kChip, "chip.yaml");
  EXPECT_EQ(chip.id, "test-chip");
  EXPECT_EQ(chip.memory_capacity, 64.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(chip.memory_bandwidth, 1.6e12);
  EXPECT_EQ(chip.nic_speed, 25e9);
  EXPECT_EQ(chip.peak(DType::bf16), 100e12);
  EXPECT_EQ(chip.cited_by.at("memory.capacity"), "datasheet");
}

TEST(ChipErrors, MalformedYamlUnclosedBracket) {
  EXPECT_EQ(chip_error(replaced(kChip, "  gemm: {max: 0.8}\n", "  gemm: {max: [0.8}\n")),
            "chip.yaml:33:19: malformed YAML: illegal flow end");
}

TEST(ChipErrors, TruncatedInsideAValue) {
  // Cut in the middle of "64 GiB".
  const std::string text = kChip.substr(0, kChip.find("64 GiB") + 4);
  EXPECT_EQ(chip_error(text),
            "chip.yaml:19:13: memory.capacity: expected a size such as \"64 GB\", got \"64 G\"");
}

TEST(ChipErrors, TruncatedBeforeASection) {
  const std::string text = kChip.substr(0, kChip.find("memory:"));
  EXPECT_EQ(chip_error(text), "chip.yaml:1:1: memory: missing required key");
}

TEST(ChipErrors, TruncatedInsideAFlowMapping) {
  const std::string text = kChip.substr(0, kChip.find("version: \"1.0\""));
  EXPECT_EQ(chip_error(text), "chip.yaml:10:1: malformed YAML: end of map flow not found");
}

TEST(ChipErrors, StringWhereIntegerExpected) {
  EXPECT_EQ(chip_error(replaced(kChip, "chips_per_node: 8", "chips_per_node: eight")),
            "chip.yaml:23:19: node.chips_per_node: expected an integer from 1 to 1024, got \"eight\"");
}

TEST(ChipErrors, ListWhereMappingExpected) {
  EXPECT_EQ(chip_error(replaced(kChip, "{name: rt, version: \"1.0\"}", "[rt, \"1.0\"]")),
            "chip.yaml:10:12: software.runtime: expected a mapping, got a list");
}

TEST(ChipErrors, EfficiencyAboveOne) {
  EXPECT_EQ(chip_error(replaced(kChip, "{max: 0.8}", "{max: 1.5}")),
            "chip.yaml:33:15: efficiency.gemm.max: expected a number from 0.01 to 1, got \"1.5\"");
}

TEST(ChipErrors, NegativeBandwidth) {
  EXPECT_EQ(chip_error(replaced(kChip, "bandwidth: 1.6 TB/s", "bandwidth: -1.6 TB/s")),
            "chip.yaml:20:14: memory.bandwidth: expected a bandwidth such as \"200 Gbps\", got "
            "\"-1.6 TB/s\"");
}

TEST(ChipErrors, GroupLargerThanNode) {
  EXPECT_EQ(chip_error(replaced(kChip, "group_size: 8", "group_size: 16")),
            "chip.yaml:25:5: node.intra_node.group_size: expected at most chips_per_node (8), got 16");
}

TEST(ChipErrors, UnknownTopLevelKey) {
  EXPECT_EQ(chip_error(kChip + "colour: green\n"), "chip.yaml:34:1: colour: unknown key");
}

TEST(ChipErrors, UnknownNestedKey) {
  EXPECT_EQ(chip_error(replaced(kChip, "  bandwidth: 1.6 TB/s\n", "  bandwidth: 1.6 TB/s\n  latency: 1 us\n")),
            "chip.yaml:21:3: memory.latency: unknown key");
}

TEST(ChipErrors, UnknownKeyInFlowMapping) {
  EXPECT_EQ(chip_error(replaced(kChip, "speed: 200 Gbps}", "speed: 200 Gbps, ports: 2}")),
            "chip.yaml:29:37: node.nics.ports: unknown key");
}

TEST(ChipErrors, UnknownDtypeKey) {
  EXPECT_EQ(chip_error(replaced(kChip, "bf16: 100 TFLOPS", "int8: 100 TFLOPS")),
            "chip.yaml:16:11: compute.peak.int8: expected a dtype (fp32, tf32, fp16, bf16 or fp8) "
            "as key, got \"int8\"");
}

TEST(ChipErrors, DuplicateNestedKey) {
  EXPECT_EQ(chip_error(replaced(kChip, "  capacity: 64 GiB\n", "  capacity: 64 GiB\n  capacity: 80 GiB\n")),
            "chip.yaml:20:3: memory.capacity: duplicate key");
}

TEST(ChipErrors, DuplicateTopLevelKey) {
  EXPECT_EQ(chip_error(replaced(kChip, "vendor: Test\n", "vendor: Test\nid: other-chip\n")),
            "chip.yaml:4:1: id: duplicate key");
}

TEST(ChipErrors, MissingRequiredKey) {
  EXPECT_EQ(chip_error(replaced(kChip, "id: test-chip\n", "")), "chip.yaml:1:1: id: missing required key");
}

TEST(ChipErrors, MissingNestedRequiredKey) {
  EXPECT_EQ(chip_error(replaced(kChip, "    kind: pcie\n", "")),
            "chip.yaml:25:5: node.intra_node.kind: missing required key");
}

TEST(ChipErrors, SourceNotListedUnderSources) {
  EXPECT_EQ(chip_error(replaced(kChip, "capacity: 64 GiB", "capacity: {value: 64 GiB, source: vendor-site}")),
            "chip.yaml:19:37: memory.capacity.source: expected a source id listed under `sources:`, "
            "got \"vendor-site\"");
}

TEST(ChipErrors, SectionSourceNotListed) {
  EXPECT_EQ(chip_error(replaced(kChip, "node:\n  source: datasheet\n", "node:\n  source: whitepaper\n")),
            "chip.yaml:22:11: node.source: expected a source id listed under `sources:`, got "
            "\"whitepaper\"");
}

TEST(ChipErrors, NumberWithoutSource) {
  EXPECT_EQ(chip_error(replaced(kChip, "memory:\n  source: datasheet\n", "memory:\n")),
            "chip.yaml:18:13: memory.capacity: expected a source for this number (a `source:` here "
            "or in an enclosing mapping), got none");
}

TEST(ChipErrors, UnknownNeedsNoSource) {
  const ChipProfile chip =
      parse_chip(replaced(kChip, "memory:\n  source: datasheet\n  capacity: 64 GiB\n  bandwidth: 1.6 TB/s\n",
                          "memory:\n  capacity: unknown\n  bandwidth: unknown\n"),
                 "chip.yaml");
  EXPECT_FALSE(chip.memory_capacity.has_value());
  EXPECT_FALSE(chip.memory_bandwidth.has_value());
}

TEST(ChipErrors, BadSizeUnit) {
  EXPECT_EQ(chip_error(replaced(kChip, "capacity: 64 GiB", "capacity: 64 GX")),
            "chip.yaml:19:13: memory.capacity: expected a size such as \"64 GB\", got \"64 GX\"");
}

TEST(ChipErrors, BadBandwidthUnit) {
  EXPECT_EQ(chip_error(replaced(kChip, "speed: 200 Gbps", "speed: 200 Gbit")),
            "chip.yaml:29:27: node.nics.speed: expected a bandwidth such as \"200 Gbps\", got \"200 Gbit\"");
}

TEST(ChipErrors, WrongDimensionUnit) {
  // A bandwidth where a size is expected.
  EXPECT_EQ(chip_error(replaced(kChip, "capacity: 64 GiB", "capacity: 64 GB/s")),
            "chip.yaml:19:13: memory.capacity: expected a size such as \"64 GB\", got \"64 GB/s\"");
}

TEST(ChipErrors, WrongSchema) {
  EXPECT_EQ(chip_error(replaced(kChip, "hetplan/chip/v1", "hetplan/chip/v2")),
            "chip.yaml:1:9: schema: expected \"hetplan/chip/v1\", got \"hetplan/chip/v2\"");
}

TEST(ChipErrors, MissingSchema) {
  EXPECT_EQ(chip_error(replaced(kChip, "schema: hetplan/chip/v1\n", "")),
            "chip.yaml:1:1: schema: missing required key (expected \"hetplan/chip/v1\")");
}

TEST(ChipErrors, EmptyDocument) {
  EXPECT_EQ(chip_error(""), "chip.yaml:1:1: expected a mapping, got an empty document");
  EXPECT_EQ(chip_error("# only a comment\n"), "chip.yaml:1:1: expected a mapping, got an empty document");
}

TEST(ChipErrors, ScalarDocument) {
  EXPECT_EQ(chip_error("just text"), "chip.yaml:1:1: expected a mapping, got \"just text\"");
}

TEST(ChipErrors, NulByte) {
  std::string text = kChip;
  text[kChip.find("Test Corp")] = '\0';
  EXPECT_EQ(chip_error(text), "chip.yaml:8:34: expected a text document, got a NUL byte");
}

TEST(ChipErrors, BadIdentifier) {
  EXPECT_EQ(chip_error(replaced(kChip, "id: test-chip", "id: Test Chip")),
            "chip.yaml:2:5: id: expected a name of lower-case letters, digits, '-', '_' and '.', got "
            "\"Test Chip\"");
}

TEST(ChipErrors, BadChoice) {
  EXPECT_EQ(chip_error(replaced(kChip, "kind: pcie", "kind: ethernet")),
            "chip.yaml:25:11: node.intra_node.kind: expected one of hccs, xgmi, mlu-link, nvlink, "
            "nvswitch or pcie, got \"ethernet\"");
}

}  // namespace
}  // namespace hetplan

namespace hetplan {
namespace {

// Values that would poison every result: no peak, memory or usable capacity outside what any
// chip has.
TEST(ChipErrors, AbsurdFiguresAreRefusedWithTheirRange) {
  EXPECT_EQ(testing::input_error_of([] {
              (void)formats::parse_chip(testing::replaced(kChip, "bf16: 100 TFLOPS", "bf16: 0 TFLOPS"),
                                        "chip.yaml");
            }),
            "chip.yaml:16:11: compute.peak.bf16: expected a compute rate between 1 MFLOPS and 10 "
            "EFLOPS, got \"0 TFLOPS\"");
  EXPECT_EQ(testing::input_error_of([] {
              (void)formats::parse_chip(
                  testing::replaced(kChip, "bf16: 100 TFLOPS", "bf16: 1e-320 TFLOPS"), "chip.yaml");
            }),
            "chip.yaml:16:11: compute.peak.bf16: expected a compute rate between 1 MFLOPS and 10 "
            "EFLOPS, got \"1e-320 TFLOPS\"");
  // A slow figure is not an absurd one: a CPU's emulated BF16 GEMMs, as a probe run on a busy
  // host measures them and calibration writes them, can run below 1 GFLOPS.
  EXPECT_DOUBLE_EQ(
      formats::parse_chip(testing::replaced(kChip, "bf16: 100 TFLOPS", "bf16: 0.0008 TFLOPS"),
                          "chip.yaml")
          .peak(DType::bf16)
          .value_or(0),
      0.8e9);
  EXPECT_EQ(testing::input_error_of([] {
              (void)formats::parse_chip(testing::replaced(kChip, "bandwidth: 1.6 TB/s", "bandwidth: 0 TB/s"),
                                        "chip.yaml");
            }),
            "chip.yaml:20:14: memory.bandwidth: expected a bandwidth between 1 MB/s and 1 PB/s, got "
            "\"0 TB/s\"");
}

}  // namespace
}  // namespace hetplan
