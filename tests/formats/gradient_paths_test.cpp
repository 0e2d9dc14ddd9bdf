// The cluster file's gradient paths (docs/formats/cluster.md#gradient-paths): a declared path
// between two islands loads with its kind, figures and source; every mistake is one line naming
// file:line:column and the field.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>
#include <utility>

#include "formats/loaders.hpp"
#include "tests/formats/test_support.hpp"
#include "tests/support/temp_folder.hpp"

namespace hetplan::formats {
namespace {

using testing::input_error_of;
using testing::replaced;

const std::string kCluster = R"(schema: hetplan/cluster/v1
name: paths
profiles: [PROFILES]
fabric: {kind: roce-v2, topology: leaf-spine, leaf_uplink_speed: 400 Gbps, switch_latency: 600 ns, link_latency: 50 ns, zones: [z]}
islands:
  - {name: npu, chip: ascend-910b, nodes: 4, zone: z}
  - {name: dcu, chip: hygon-k100-ai, nodes: 2, chips_per_node: 8, nics: {count: 4, speed: 200 Gbps}, zone: z}
gradient_paths:
  - between: [npu, dcu]
    kind: host-staged
    bandwidth: 100 Gbps
    latency: 30 us
    source: assumed
)";

struct Loaded {
  std::string error;
  Cluster cluster;
};

Loaded load(const std::string& text) {
  test::TempFolder folder;
  std::string body = text;
  body.replace(body.find("PROFILES"), 8, testing::kSourceDir + "/profiles");
  const std::string path = folder.file("cluster.yaml");
  std::ofstream(path) << body;
  Loaded out;
  out.error = input_error_of([&] { out.cluster = load_cluster(path); });
  if (out.error != "<no error>") {
    // The message names the file by its path; keep what follows it.
    const auto at = out.error.find("cluster.yaml");
    if (at != std::string::npos) out.error = out.error.substr(at);
  }
  return out;
}

TEST(GradientPaths, ADeclaredPathLoads) {
  const Loaded loaded = load(kCluster);
  ASSERT_EQ(loaded.error, "<no error>");
  ASSERT_EQ(loaded.cluster.gradient_paths.size(), 1u);
  const GradientPath& path = loaded.cluster.gradient_paths.front();
  EXPECT_EQ(path.island_a, "npu");
  EXPECT_EQ(path.island_b, "dcu");
  EXPECT_EQ(path.kind, GradientPathKind::host_staged);
  EXPECT_DOUBLE_EQ(path.bandwidth, 100e9 / 8);
  EXPECT_DOUBLE_EQ(path.latency, 30e-6);
  EXPECT_EQ(path.source, "assumed");
  EXPECT_EQ(loaded.cluster.gradient_path("dcu", "npu"), &path);
  EXPECT_EQ(loaded.cluster.gradient_path("npu", "npu"), nullptr);
  // Without the section there is none.
  const Loaded none = load(kCluster.substr(0, kCluster.find("gradient_paths:")));
  ASSERT_EQ(none.error, "<no error>");
  EXPECT_TRUE(none.cluster.gradient_paths.empty());
}

// `hetplan check` names the paths (and a limiting spine) on the cluster's line.
TEST(GradientPaths, CheckCountsThem) {
  test::TempFolder folder;
  std::string body = replaced(kCluster, "zones: [z]}", "zones: [z], spine_oversubscription: 3}");
  body.replace(body.find("PROFILES"), 8, testing::kSourceDir + "/profiles");
  const std::string path = folder.file("cluster.yaml");
  std::ofstream(path) << body;
  const CheckReport report = check_file(path);
  EXPECT_EQ(report.kind, "cluster");
  EXPECT_EQ(report.summary,
            "paths: 2 islands, 48 chips, roce-v2 leaf-spine, 1 zones, spine 3:1, 1 gradient path");
}

TEST(GradientPaths, MistakesNameTheField) {
  EXPECT_EQ(load(replaced(kCluster, "[npu, dcu]", "[npu, mlu]")).error,
            "cluster.yaml:9:20: gradient_paths[0].between[1]: expected an island of this cluster, got \"mlu\"");
  EXPECT_EQ(load(replaced(kCluster, "[npu, dcu]", "[npu, npu]")).error,
            "cluster.yaml:9:14: gradient_paths[0].between: expected two different islands, got a list");
  EXPECT_EQ(load(replaced(kCluster, "[npu, dcu]", "[npu]")).error,
            "cluster.yaml:9:14: gradient_paths[0].between: expected a list of two islands, got a list");
  // One line each, at the value (or at the path for a missing key), naming the field.
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> cases = {
      {"cluster.yaml:10:11: gradient_paths[0].kind: expected one of host-staged or device-rdma, "
       "got \"pcie\"",
       {"kind: host-staged", "kind: pcie"}},
      {"cluster.yaml:11:16: gradient_paths[0].bandwidth: expected a bandwidth between 1 MB/s and "
       "1 PB/s, got \"0 Gbps\"",
       {"bandwidth: 100 Gbps", "bandwidth: 0 Gbps"}},
      {"cluster.yaml:12:14: gradient_paths[0].latency: expected a latency of at most 1 s, got "
       "\"3 s\"",
       {"latency: 30 us", "latency: 3 s"}},
      {"cluster.yaml:9:5: gradient_paths[0].source: missing required key",
       {"    source: assumed\n", ""}},
      {"cluster.yaml:13:13: gradient_paths[0].source: expected where the figures come from, or "
       "\"assumed\", got \" \"",
       {"source: assumed", "source: \" \""}},
      {"cluster.yaml:14:5: gradient_paths[0].speed: unknown key",
       {"source: assumed", "source: assumed\n    speed: 1"}},
  };
  for (const auto& [expected, edit] : cases)
    EXPECT_EQ(load(replaced(kCluster, edit.first, edit.second)).error, expected);
  const std::string twice = kCluster + R"(  - {between: [dcu, npu], kind: device-rdma, bandwidth: 200 Gbps, latency: 5 us, source: assumed}
)";
  EXPECT_EQ(load(twice).error,
            "cluster.yaml:14:15: gradient_paths[1].between: expected a pair of islands not given a path before, got a list");
}

// Zone links name their two ends the same way (one reader for both `between`s).
TEST(GradientPaths, ZoneLinkEndsAreReadAlike) {
  const std::string without_paths = kCluster.substr(0, kCluster.find("gradient_paths:"));
  auto with_link = [&](const std::string& ends) {
    return replaced(without_paths, "zones: [z]}",
                    "zones: [z, w], zone_links: [{between: " + ends +
                        ", bandwidth: 100 Gbps, latency: 2 us}]}");
  };
  // On line 4 the ends' list starts at column 159, its second name at 163.
  EXPECT_EQ(load(with_link("[z, y]")).error,
            "cluster.yaml:4:163: fabric.zone_links[0].between[1]: expected a zone listed in "
            "fabric.zones, got \"y\"");
  EXPECT_EQ(load(with_link("[z, z]")).error,
            "cluster.yaml:4:159: fabric.zone_links[0].between: expected two different zones, got a "
            "list");
  EXPECT_EQ(load(with_link("[z]")).error,
            "cluster.yaml:4:159: fabric.zone_links[0].between: expected a list of two zones, got a "
            "list");
}

}  // namespace
}  // namespace hetplan::formats
