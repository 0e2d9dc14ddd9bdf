// Reads topologies/*.yaml (docs/formats/cluster.md) and the chip profiles its islands name.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <tuple>

#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "formats/paths.hpp"

namespace hetplan::formats {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// A label value as Kubernetes allows it: [A-Za-z0-9._-], at most 63 characters, starting and
// ending alphanumeric.
std::string label_value(std::string text) {
  for (char& c : text) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    if (!ok) c = '-';
  }
  if (text.size() > 63) text.resize(63);
  return text;
}

bool valid_label_value(const std::string& text) {
  if (text.size() > 63) return false;
  if (text.empty()) return true;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(text.front()) || !alnum(text.back())) return false;
  return std::all_of(text.begin(), text.end(),
                     [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

// A Kubernetes extended resource name: a DNS subdomain prefix, a slash, and a name of at most 63
// of [A-Za-z0-9._-], alphanumeric at both ends ("cambricon.com/mlu", "rdma/hca_shared_devices_a").
bool valid_resource_name(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash > 253) return false;
  const std::string domain = text.substr(0, slash);
  const std::string name = text.substr(slash + 1);
  if (name.empty() || !valid_label_value(name)) return false;
  auto domain_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  };
  return std::all_of(domain.begin(), domain.end(), domain_char) && domain.front() != '.' &&
         domain.back() != '.' && domain.front() != '-' && domain.back() != '-';
}

// A latency of the network: at most 1 s (a second per hop is no fabric hetplan can plan for).
double network_latency(const Field& field) {
  const double value = field.as_quantity(Dimension::duration);
  if (value > 1.0) field.fail_expected("a latency of at most 1 s");
  return value;
}

// `between`: two different names (`plural`: "zones"), each of which `known` accepts (else
// "expected `one`").
template <typename Known>
std::pair<std::string, std::string> two_names(const Field& between, const std::string& plural,
                                              const char* one, Known known) {
  const auto ends = between.elements();
  if (ends.size() != 2) between.fail_expected("a list of two " + plural);
  std::string names[2];
  for (std::size_t i = 0; i < 2; ++i) {
    names[i] = ends[i].as_identifier();
    if (!known(names[i])) ends[i].fail_expected(one);
  }
  if (names[0] == names[1]) between.fail_expected("two different " + plural);
  return {names[0], names[1]};
}

// An oversubscription: "3:1" or a plain number, at least 1.
double ratio(const Field& over) {
  double value = 0;
  const std::string text = over.as_string();
  const auto colon = text.find(':');
  if (colon != std::string::npos) {
    const Field numerator(YAML::Node(text.substr(0, colon)), over.path(), over.file_ptr());
    const Field denominator(YAML::Node(text.substr(colon + 1)), over.path(), over.file_ptr());
    try {
      value = numerator.as_number(1.0, 1000.0) / denominator.as_number(1.0, 1000.0);
    } catch (const InputError&) {
      over.fail_expected("a ratio such as \"3:1\" or a number of at least 1");
    }
  } else {
    value = over.as_number(1.0, 1000.0);
  }
  if (value < 1.0) over.fail_expected("a ratio of at least 1:1");
  return value;
}

void read_fabric(const Field& field, Fabric& fabric) {
  MapReader map(field);
  fabric.kind = static_cast<FabricKind>(map.required("kind").as_choice({"roce-v2", "infiniband"}));
  fabric.topology = static_cast<FabricTopology>(
      map.required("topology").as_choice({"single-switch", "leaf-spine", "fat-tree-3"}));
  if (auto rail = map.optional("rail_optimized")) fabric.rail_optimized = rail->as_bool();
  fabric.leaf_uplink_speed = map.required("leaf_uplink_speed").as_quantity(Dimension::bandwidth);
  if (fabric.leaf_uplink_speed <= 0) {
    map.required("leaf_uplink_speed").fail_expected("a bandwidth above zero");
  }
  if (auto over = map.optional("oversubscription")) fabric.oversubscription = ratio(*over);
  if (auto over = map.optional("spine_oversubscription")) {
    fabric.spine_oversubscription = ratio(*over);
  }
  fabric.switch_latency = network_latency(map.required("switch_latency"));
  fabric.link_latency = network_latency(map.required("link_latency"));
  for (const Field& zone : map.required("zones").elements()) {
    std::string name = zone.as_identifier();
    if (std::find(fabric.zones.begin(), fabric.zones.end(), name) != fabric.zones.end()) {
      zone.fail("duplicate zone \"" + name + "\"");
    }
    fabric.zones.push_back(std::move(name));
  }
  if (fabric.zones.empty()) map.required("zones").fail_expected("at least one zone");
  if (auto links = map.optional("zone_links")) {
    for (const Field& element : links->elements()) {
      MapReader link(element);
      ZoneLink out;
      std::tie(out.zone_a, out.zone_b) =
          two_names(link.required("between"), "zones", "a zone listed in fabric.zones",
                    [&](const std::string& zone) {
                      return std::find(fabric.zones.begin(), fabric.zones.end(), zone) !=
                             fabric.zones.end();
                    });
      const Field bandwidth = link.required("bandwidth");
      out.bandwidth = bandwidth.as_quantity(Dimension::bandwidth);
      if (out.bandwidth <= 0) bandwidth.fail_expected("a bandwidth above zero");
      out.latency = network_latency(link.required("latency"));
      link.done();
      fabric.zone_links.push_back(std::move(out));
    }
  }
  map.done();
}

// Finds <id>.yaml in the profile folders.
std::string find_profile(const std::string& id, const std::vector<std::string>& folders) {
  for (const auto& folder : folders) {
    const auto candidate = std::filesystem::path(folder) / (id + ".yaml");
    std::error_code error;
    if (std::filesystem::is_regular_file(candidate, error)) return candidate.string();
  }
  return {};
}

}  // namespace

Cluster load_cluster(const std::string& path) {
  const std::string text = read_text_file(path);
  const YAML::Node root_node = parse_document(text, path);
  const Field root_field = document_root(root_node, path, kClusterSchema);
  MapReader root(root_field);
  root.required("schema");

  Cluster cluster;
  cluster.location = {path, 0, 0};
  cluster.name = root.required("name").as_identifier();

  std::vector<std::string> folders;
  if (auto profiles = root.optional("profiles")) {
    for (const Field& folder : profiles->elements()) {
      folders.push_back(resolve_relative(folder.as_string(), path));
    }
  } else {
    folders.push_back(resolve_relative("../profiles", path));
  }

  read_fabric(root.required("fabric"), cluster.fabric);

  const Field islands_field = root.required("islands");
  for (const Field& element : islands_field.elements()) {
    MapReader map(element);
    Island island;
    island.location = element.location();
    island.name = map.required("name").as_identifier();
    if (cluster.find_island(island.name)) {
      map.required("name").fail("duplicate island name \"" + island.name + "\"");
    }

    const Field chip_field = map.required("chip");
    const std::string chip_id = chip_field.as_identifier();
    const auto existing = std::find_if(cluster.chips.begin(), cluster.chips.end(),
                                       [&](const ChipProfile& c) { return c.id == chip_id; });
    if (existing != cluster.chips.end()) {
      island.chip = static_cast<std::size_t>(existing - cluster.chips.begin());
    } else {
      const std::string profile_path = find_profile(chip_id, folders);
      if (profile_path.empty()) {
        std::string where;
        for (const auto& folder : folders) where += (where.empty() ? "" : ", ") + folder;
        chip_field.fail("expected a chip profile id with a file " + chip_id + ".yaml in " + where +
                        ", got \"" + chip_id + "\" (no such profile)");
      }
      ChipProfile chip = load_referenced(chip_field, [&] { return load_chip(profile_path); });
      if (chip.id != chip_id) {
        chip_field.fail("profile " + profile_path + " declares id \"" + chip.id +
                        "\", expected \"" + chip_id + "\"");
      }
      cluster.chips.push_back(std::move(chip));
      island.chip = cluster.chips.size() - 1;
    }
    const ChipProfile& chip = cluster.chips[island.chip];

    island.nodes = static_cast<int>(map.required("nodes").as_int(1, 100000));
    island.free_nodes = island.nodes;
    if (auto free = map.optional("free_nodes")) {
      island.free_nodes_stated = true;
      island.free_nodes = static_cast<int>(free->as_int(0, 100000));
      if (island.free_nodes > island.nodes) {
        free->fail_expected("at most the island's " + std::to_string(island.nodes) + " nodes");
      }
    }
    if (auto cpn = map.optional("chips_per_node")) {
      island.chips_per_node = static_cast<int>(cpn->as_int(1, 1024));
    } else if (chip.chips_per_node) {
      island.chips_per_node = *chip.chips_per_node;
    } else {
      map.field().fail("chips_per_node: expected a value here, since profile \"" + chip.id +
                       "\" does not know its chips per node");
    }

    if (auto nics_field = map.optional("nics")) {
      MapReader nics(*nics_field);
      island.nic_count = static_cast<int>(nics.required("count").as_int(1, 64));
      island.nic_speed = nics.required("speed").as_quantity(Dimension::bandwidth);
      if (island.nic_speed <= 0) nics.required("speed").fail_expected("a bandwidth above zero");
      nics.done();
    } else if (chip.nic_count && chip.nic_speed && *chip.nic_count > 0) {
      island.nic_count = *chip.nic_count;
      island.nic_speed = *chip.nic_speed;
    } else {
      map.field().fail("nics: expected a value here, since profile \"" + chip.id +
                       "\" does not know its node's NICs");
    }

    island.runtime = chip.runtime;
    if (auto runtime_field = map.optional("runtime")) {
      MapReader runtime(*runtime_field);
      island.runtime.name = runtime.required("name").as_string();
      island.runtime.version = runtime.required("version").as_string();
      runtime.done();
    }

    const Field zone_field = map.required("zone");
    island.zone = zone_field.as_identifier();
    const auto& zones = cluster.fabric.zones;
    if (std::find(zones.begin(), zones.end(), island.zone) == zones.end()) {
      zone_field.fail_expected("a zone listed in fabric.zones");
    }

    island.nodes_per_leaf = island.nodes;
    if (auto per_leaf = map.optional("nodes_per_leaf")) {
      island.nodes_per_leaf = static_cast<int>(per_leaf->as_int(1, 100000));
    }

    if (auto resources_field = map.optional("resources")) {
      MapReader resources(*resources_field);
      auto resource = [](const Field& field) {
        const std::string name = field.as_string();
        if (!valid_resource_name(name)) {
          field.fail_expected(
              "a Kubernetes extended resource name (a domain, a slash and a name of [A-Za-z0-9._-], "
              "such as cambricon.com/mlu)");
        }
        return name;
      };
      if (auto device = resources.optional("device")) island.device_resource = resource(*device);
      if (auto rdma = resources.optional("rdma")) {
        // `none`: the nodes reach the fabric without a device-plugin resource (NICs on the
        // accelerator, or host networking); the Job requests no RDMA device.
        island.rdma_resource = rdma->as_string() == "none" ? "none" : resource(*rdma);
      }
      resources.done();
    }
    if (auto names = map.optional("node_names")) {
      std::set<std::string> seen;
      for (const Field& name : names->elements()) {
        const std::string node_name = name.as_string();
        if (node_name.empty() || node_name.size() > 253 ||
            node_name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") != std::string::npos)
          name.fail_expected("a Kubernetes node name (lower-case letters, digits, '-' and '.')");
        if (!seen.insert(node_name).second) name.fail_expected("a node name not listed before");
        island.node_names.push_back(node_name);
      }
      if (static_cast<int>(island.node_names.size()) != island.nodes) {
        names->fail_expected(std::to_string(island.nodes) + " node names (nodes: " +
                             std::to_string(island.nodes) + "), got " +
                             std::to_string(island.node_names.size()));
      }
    }
    if (auto image = map.optional("image")) {
      island.image = image->as_string();
      if (island.image.empty() || island.image.find_first_of(" \t\r\n") != std::string::npos)
        image->fail_expected("a container image reference without spaces");
    }

    island.labels["accelerator.vendor"] = label_value(lower(chip.vendor));
    island.labels["accelerator.model"] = label_value(chip.id);
    island.labels["runtime.version"] =
        label_value(lower(island.runtime.name) + "-" + lower(island.runtime.version));
    island.labels["fabric.zone"] = island.zone;
    if (auto labels_field = map.optional("labels")) {
      MapReader labels(*labels_field);
      for (auto& [key, value] : labels.entries()) {
        const std::string label = value.as_string();
        if (!valid_label_value(label)) {
          value.fail_expected(
              "a Kubernetes label value (at most 63 of [A-Za-z0-9._-], "
              "alphanumeric at both ends)");
        }
        island.labels[key] = label;
      }
    }
    map.done();
    cluster.islands.push_back(std::move(island));
  }
  if (cluster.islands.empty()) islands_field.fail_expected("at least one island");
  if (auto paths = root.optional("gradient_paths")) {
    for (const Field& element : paths->elements()) {
      MapReader map(element);
      GradientPath out;
      out.location = element.location();
      const Field between = map.required("between");
      std::tie(out.island_a, out.island_b) =
          two_names(between, "islands", "an island of this cluster",
                    [&](const std::string& island) { return cluster.find_island(island); });
      if (cluster.gradient_path(out.island_a, out.island_b))
        between.fail_expected("a pair of islands not given a path before");
      out.kind = static_cast<GradientPathKind>(
          map.required("kind").as_choice({"host-staged", "device-rdma"}));
      out.bandwidth = map.required("bandwidth").as_quantity(Dimension::bandwidth);  // > 0
      out.latency = network_latency(map.required("latency"));
      const Field source = map.required("source");
      out.source = source.as_string();
      if (out.source.find_first_not_of(" \t") == std::string::npos)
        source.fail_expected("where the figures come from, or \"assumed\"");
      map.done();
      cluster.gradient_paths.push_back(std::move(out));
    }
  }
  root.done();
  return cluster;
}

}  // namespace hetplan::formats
