// edit_island_counts: an island's node counts changed in the cluster file's own text, everything
// else kept byte for byte; the edited file loads back with the new counts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "formats/loaders.hpp"
#include "core/error.hpp"
#include "formats/writers.hpp"
#include "formats/yaml_edit.hpp"
#include "tests/support/temp_folder.hpp"

namespace hetplan::formats {
namespace {

const std::string kSource = HETPLAN_SOURCE_DIR;

// A cluster with one island in block style and one in flow style, with comments, beside the
// bundled profiles.
const std::string kCluster = R"(# a site
schema: hetplan/cluster/v1
name: edit-me
profiles: [PROFILES]
fabric: {kind: roce-v2, topology: leaf-spine, leaf_uplink_speed: 400 Gbps, oversubscription: "1:1", switch_latency: 600 ns, link_latency: 50 ns, zones: [z]}
islands:
  - name: block
    chip: ascend-910b
    nodes: 4   # four racks
    zone: z
  - {name: flow, chip: hygon-k100-ai, nodes: 2, free_nodes: 1, chips_per_node: 8, nics: {count: 4, speed: 200 Gbps}, zone: z}
)";

std::string cluster_text() {
  std::string text = kCluster;
  text.replace(text.find("PROFILES"), 8, kSource + "/profiles");
  return text;
}

std::string write(const test::TempFolder& folder, const std::string& name, const std::string& text) {
  const std::string path = folder.file(name);
  std::ofstream(path) << text;
  return path;
}

TEST(ClusterEdit, ChangesOnlyTheCountsAndKeepsTheRest) {
  test::TempFolder folder;
  const std::string text = cluster_text();
  const Cluster loaded = load_cluster(write(folder, "cluster.yaml", text));
  Cluster edited = loaded;
  edited.islands[0].nodes = 12;
  edited.islands[0].free_nodes = 12;
  edited.islands[1].free_nodes = 2;
  const std::string out = edit_island_counts(text, loaded, edited);
  std::string expected = text;
  expected.replace(expected.find("nodes: 4 "), 9, "nodes: 12 ");
  expected.replace(expected.find("free_nodes: 1"), 13, "free_nodes: 2");
  EXPECT_EQ(out, expected);
  const Cluster back = load_cluster(write(folder, "edited.yaml", out));
  EXPECT_EQ(back.islands[0].nodes, 12);
  EXPECT_EQ(back.islands[0].free_nodes, 12);
  EXPECT_EQ(back.islands[1].nodes, 2);
  EXPECT_EQ(back.islands[1].free_nodes, 2);
}

TEST(ClusterEdit, AddsAFreeNodesTheFileDoesNotStateInItsMappingsStyle) {
  test::TempFolder folder;
  std::string text = cluster_text();
  text.replace(text.find(", free_nodes: 1"), 15, "");
  const Cluster loaded = load_cluster(write(folder, "cluster.yaml", text));
  Cluster edited = loaded;
  edited.islands[0].free_nodes = 3;
  edited.islands[1].nodes = 5;
  edited.islands[1].free_nodes = 4;
  const std::string out = edit_island_counts(text, loaded, edited);
  // Inside a sequence element's block mapping: a line after its first key's; inside a flow
  // mapping: its first entry.
  EXPECT_NE(out.find("  - name: block\n    free_nodes: 3\n    chip: ascend-910b\n    nodes: 4   # four racks\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("{free_nodes: 4, name: flow, chip: hygon-k100-ai, nodes: 5, chips_per_node: 8, nics: {count: 4, speed: 200 Gbps}, zone: z}"),
            std::string::npos)
      << out;
  const Cluster back = load_cluster(write(folder, "edited.yaml", out));
  EXPECT_EQ(back.islands[0].free_nodes, 3);
  EXPECT_EQ(back.islands[1].nodes, 5);
  EXPECT_EQ(back.islands[1].free_nodes, 4);
}

TEST(ClusterEdit, NothingChangedIsTheSameText) {
  test::TempFolder folder;
  const std::string text = cluster_text();
  const Cluster loaded = load_cluster(write(folder, "cluster.yaml", text));
  EXPECT_EQ(edit_island_counts(text, loaded, loaded), text);
}

TEST(ClusterEdit, AnotherTextOrAnUnknownIslandIsRefused) {
  test::TempFolder folder;
  const std::string text = cluster_text();
  const Cluster loaded = load_cluster(write(folder, "cluster.yaml", text));
  Cluster edited = loaded;
  edited.islands[0].nodes = 7;
  EXPECT_THROW(edit_island_counts("schema: x\n", loaded, edited), std::invalid_argument);
  edited.islands[0].name = "elsewhere";
  EXPECT_THROW(edit_island_counts(text, loaded, edited), std::invalid_argument);
}

TEST(ClusterEdit, TheBundledClusterTakesAnEdit) {
  const std::string path = kSource + "/topologies/mixed-roce-64.yaml";
  const std::string text = read_text_file(path);
  const Cluster loaded = load_cluster(path);
  Cluster edited = loaded;
  edited.islands[1].nodes = 24;
  edited.islands[1].free_nodes = 20;
  const std::string out = edit_island_counts(text, loaded, edited);
  test::TempFolder folder;
  std::filesystem::create_directories(folder.file("topologies"));
  std::filesystem::copy(kSource + "/profiles", folder.file("profiles"));
  const Cluster back = load_cluster(write(folder, "topologies/mixed-roce-64.yaml", out));
  EXPECT_EQ(back.islands[1].nodes, 24);
  EXPECT_EQ(back.islands[1].free_nodes, 20);
  EXPECT_EQ(back.islands[0].nodes, loaded.islands[0].nodes);
  EXPECT_EQ(back.islands[2].nodes, loaded.islands[2].nodes);
}

// --- set_yaml_value -----------------------------------------------------------------------

TEST(YamlEdit, ReplacesAScalarWhereItIsWrittenInEveryStyle) {
  const std::string text =
      "# top\n"
      "training:\n"
      "  seq_len: 4096\n"
      "  global_batch: 512          # sequences\n"
      "  dtype: \"bf16\"\n"
      "  overlap: {grad_reduce: true, tp_comm: false}\n"
      "name: 'it''s'\n";
  EXPECT_EQ(set_yaml_value(text, {std::string("training"), std::string("global_batch")}, "1024", "w.yaml"),
            "# top\ntraining:\n  seq_len: 4096\n  global_batch: 1024          # sequences\n"
            "  dtype: \"bf16\"\n  overlap: {grad_reduce: true, tp_comm: false}\nname: 'it''s'\n");
  EXPECT_NE(set_yaml_value(text, {std::string("training"), std::string("dtype")}, "fp8", "w.yaml")
                .find("  dtype: fp8\n"),
            std::string::npos);
  EXPECT_NE(set_yaml_value(text, {std::string("training"), std::string("overlap"), std::string("tp_comm")},
                           "true", "w.yaml")
                .find("overlap: {grad_reduce: true, tp_comm: true}\n"),
            std::string::npos);
  EXPECT_NE(set_yaml_value(text, {std::string("name")}, "plain", "w.yaml").find("\nname: plain\n"),
            std::string::npos);
}

TEST(YamlEdit, AddsAMissingKeyInItsMappingsStyle) {
  const std::string text = "training:\n  seq_len: 4096  # tokens\n  overlap: {grad_reduce: true}\n";
  const std::string block =
      set_yaml_value(text, {std::string("training"), std::string("micro_batch")}, "2", "w.yaml");
  EXPECT_EQ(block, "training:\n  micro_batch: 2\n  seq_len: 4096  # tokens\n  overlap: {grad_reduce: true}\n");
  const std::string flow = set_yaml_value(
      text, {std::string("training"), std::string("overlap"), std::string("param_gather")}, "true", "w.yaml");
  EXPECT_EQ(flow, "training:\n  seq_len: 4096  # tokens\n  overlap: {param_gather: true, grad_reduce: true}\n");
  // A mapping missing on the way is added as a flow mapping.
  const std::string nested = set_yaml_value("training:\n  seq_len: 4096\n",
                                            {std::string("training"), std::string("overlap"), std::string("tp_comm")},
                                            "true", "w.yaml");
  EXPECT_EQ(nested, "training:\n  overlap: {tp_comm: true}\n  seq_len: 4096\n");
  EXPECT_EQ(set_yaml_value("a: {}\n", {std::string("a"), std::string("b")}, "1", "w.yaml"), "a: {b: 1}\n");
}

TEST(YamlEdit, UnicodeBeforeAValueKeepsItsPlace) {
  const std::string text = "islands:\n  - {name: \"岛\", zone: 甲, nodes: 4}\n";
  EXPECT_EQ(set_yaml_value(text, {std::string("islands"), std::size_t{0}, std::string("nodes")}, "12", "c.yaml"),
            "islands:\n  - {name: \"岛\", zone: 甲, nodes: 12}\n");
}

// A list written in flow style is replaced whole (the workload's `unfused`), across nested
// brackets and quoted commas; a block list is not a single value.
TEST(YamlEdit, ReplacesAFlowListWhole) {
  const std::string text = "training: {unfused: [rmsnorm, \"sw]ig,lu\"], seq_len: 4096}  # x\n";
  EXPECT_EQ(
      set_yaml_value(text, {std::string("training"), std::string("unfused")}, "[swiglu]", "w.yaml"),
      "training: {unfused: [swiglu], seq_len: 4096}  # x\n");
  EXPECT_EQ(set_yaml_value("a: [[1, 2], {b: [3]}]\nc: 1\n", {std::string("a")}, "[]", "w.yaml"),
            "a: []\nc: 1\n");
  EXPECT_THROW(set_yaml_value("a:\n  - 1\n  - 2\n", {std::string("a")}, "[3]", "w.yaml"),
               std::invalid_argument);
}

TEST(YamlEdit, APathItCannotFollowIsRefused) {
  const std::string text = "islands:\n  - {name: a, nodes: 4}\nname: x\nlist: [1, 2]\n";
  EXPECT_THROW(set_yaml_value(text, {std::string("islands"), std::size_t{3}, std::string("nodes")}, "1", "c.yaml"),
               std::invalid_argument);
  EXPECT_THROW(set_yaml_value(text, {std::string("name"), std::string("deeper")}, "1", "c.yaml"),
               std::invalid_argument);
  EXPECT_THROW(set_yaml_value(text, {std::string("islands")}, "1", "c.yaml"), std::invalid_argument);
  EXPECT_THROW(set_yaml_value("a: [1, {b: 2}\n", {std::string("a")}, "1", "c.yaml"), InputError);
  EXPECT_THROW(set_yaml_value(text, {std::string("missing"), std::size_t{0}}, "1", "c.yaml"),
               std::invalid_argument);
  EXPECT_THROW(set_yaml_value("a: [\n", {std::string("a")}, "1", "c.yaml"), InputError);
}

// The text after a UTF-8 byte-order mark: the parser's places do not count it, the edit lands
// where the value is and the mark stays.
TEST(YamlEdit, AByteOrderMarkStaysAndTheEditLandsOnTheValue) {
  const std::string bom = "\xEF\xBB\xBF";
  EXPECT_EQ(set_yaml_value(bom + "a: 32\nb: 5\n", {std::string("b")}, "7", "w.yaml"),
            bom + "a: 32\nb: 7\n");
  EXPECT_EQ(set_yaml_value(bom + "a: 32\n", {std::string("c")}, "1", "w.yaml"), bom + "c: 1\na: 32\n");
}

// A file with CRLF line ends gets CRLF on the lines an edit adds.
TEST(YamlEdit, AddedLinesTakeTheFilesLineEnds) {
  EXPECT_EQ(set_yaml_value("t:\r\n  a: 1\r\n", {std::string("t"), std::string("b")}, "2", "w.yaml"),
            "t:\r\n  b: 2\r\n  a: 1\r\n");
  EXPECT_EQ(set_yaml_value("islands:\r\n  - name: x\r\n    nodes: 1\r\n",
                           {std::string("islands"), std::size_t{0}, std::string("zone")}, "z", "w.yaml"),
            "islands:\r\n  - name: x\r\n    zone: z\r\n    nodes: 1\r\n");
  EXPECT_EQ(set_yaml_value("a: 1\r\nb: 2\r\n", {std::string("b")}, "3", "w.yaml"), "a: 1\r\nb: 3\r\n");
}

// Anchors and aliases: a value reached through an alias gets its own value in place of the
// alias (the anchor's other places keep theirs); an anchored value no alias names keeps its
// anchor; a value or mapping aliases repeat is refused where its anchor is, nothing written.
TEST(YamlEdit, AnchorsAndAliasesKeepTheirMeaning) {
  const std::string text = "a: &n 32\nb: *n\nc: !!int 5\n";
  EXPECT_EQ(set_yaml_value(text, {std::string("b")}, "8", "w.yaml"), "a: &n 32\nb: 8\nc: !!int 5\n");
  EXPECT_EQ(set_yaml_value(text, {std::string("c")}, "6", "w.yaml"), "a: &n 32\nb: *n\nc: !!int 6\n");
  EXPECT_EQ(set_yaml_value("a: &n 32\nb: 1\n", {std::string("a")}, "64", "w.yaml"), "a: &n 64\nb: 1\n");
  std::string error;
  try {
    (void)set_yaml_value(text, {std::string("a")}, "64", "w.yaml");
  } catch (const InputError& e) {
    error = e.what();
  }
  EXPECT_EQ(error,
            "w.yaml:1:4: a: expected a value written once, got one an anchor (&) defines here and "
            "aliases (*) repeat: an edit in place would change them all; edit the file by hand");
  const std::string islands =
      "islands:\n  - &common {chip: x, nodes: 4}\n  - *common\n";
  EXPECT_THROW(set_yaml_value(islands, {std::string("islands"), std::size_t{1}, std::string("nodes")},
                              "8", "c.yaml"),
               InputError);
}

// A block or folded scalar is replaced with all its lines; the lines after it stay.
TEST(YamlEdit, ABlockScalarIsReplacedWhole) {
  EXPECT_EQ(set_yaml_value("a: |\n  one\n\n  two\nb: 1\n", {std::string("a")}, "x", "w.yaml"),
            "a: x\nb: 1\n");
  EXPECT_EQ(set_yaml_value("t:\n  a: >-\n    one\n    two\n\n  b: 1\n", {std::string("t"), std::string("a")},
                           "x", "w.yaml"),
            "t:\n  a: x\n\n  b: 1\n");
  EXPECT_EQ(set_yaml_value("a: |\r\n  one\r\nb: 1\r\n", {std::string("a")}, "x", "w.yaml"),
            "a: x\r\nb: 1\r\n");
}

// Empty and null values take the new one where they are written.
TEST(YamlEdit, EmptyAndNullValuesAreSet) {
  EXPECT_EQ(set_yaml_value("a:\nb: 1\n", {std::string("a")}, "2", "w.yaml"), "a: 2\nb: 1\n");
  EXPECT_EQ(set_yaml_value("a:   # later\nb: 1\n", {std::string("a")}, "2", "w.yaml"),
            "a:   2 # later\nb: 1\n");
  EXPECT_EQ(set_yaml_value("a: ~\nb: null\n", {std::string("a")}, "2", "w.yaml"), "a: 2\nb: null\n");
  EXPECT_EQ(set_yaml_value("a: ~\nb: null\n", {std::string("b")}, "3", "w.yaml"), "a: ~\nb: 3\n");
  EXPECT_EQ(set_yaml_value("t: {a: , b: 1}\n", {std::string("t"), std::string("a")}, "2", "w.yaml"),
            "t: {a: 2, b: 1}\n");
  EXPECT_EQ(set_yaml_value("a:", {std::string("a")}, "2", "w.yaml"), "a: 2");
  EXPECT_THROW(set_yaml_value("a:\n  -\n  - 1\n", {std::string("a"), std::size_t{0}}, "2", "w.yaml"),
               std::invalid_argument);
}

}  // namespace
}  // namespace hetplan::formats
