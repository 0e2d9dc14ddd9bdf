#include "importers/k8s_inventory.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "core/input_file.hpp"
#include "importers/located_json.hpp"
#include "core/units.hpp"

namespace hetplan::importers {
namespace {

// 10,000 nodes as kubectl prints them, each with its image list, take 100-200 MB; parsing one
// costs about nine times its size in memory (2.3 GB at the limit).
constexpr std::size_t kMaxFileBytes = std::size_t{256} << 20;
constexpr std::size_t kNodesNamedInComments = 8;

// Defaults written into the cluster file for what Kubernetes does not know; each is marked
// ASSUMED there. They match the bundled example sites (topologies/).
constexpr int kAssumedNodesPerLeaf = 16;
constexpr int kAssumedNicCount = 4;
constexpr std::string_view kAssumedNicSpeed = "200 Gbps";
constexpr int kAssumedChipsPerNode = 8;

// ---------------------------------------------------------------------------------------------
// Text helpers

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}
std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}
bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}
bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

std::optional<std::int64_t> non_negative_integer(std::string_view text) {
  std::int64_t value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (result.ec != std::errc{} || result.ptr != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::optional<std::int64_t> kubernetes_count(std::string_view text) {
  // Kubernetes' quantity grammar: a decimal number (digits, an optional fraction), then a binary
  // suffix (Ki .. Ei), a decimal suffix (n, u, m, k, M, G, T, P, E) or an exponent (e3, E3).
  std::size_t i = 0;
  if (i < text.size() && text[i] == '+') ++i;
  const std::size_t digits_start = i;
  std::string mantissa;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) mantissa += text[i++];
  int fraction_digits = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      mantissa += text[i++];
      ++fraction_digits;
    }
  }
  if (mantissa.empty() || i == digits_start) return std::nullopt;
  const std::string_view suffix = text.substr(i);
  int decimal_exponent = -fraction_digits;
  int binary_exponent = 0;
  static const std::pair<std::string_view, int> kBinary[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  static const std::pair<std::string_view, int> kDecimal[] = {
      {"n", -9}, {"u", -6}, {"m", -3}, {"", 0}, {"k", 3}, {"M", 6}, {"G", 9}, {"T", 12},
      {"P", 15}, {"E", 18}};
  bool known = false;
  for (const auto& [name, bits] : kBinary)
    if (suffix == name) known = true, binary_exponent = bits;
  for (const auto& [name, exponent] : kDecimal)
    if (suffix == name) known = true, decimal_exponent += exponent;
  if (!known && suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    int exponent = 0;
    std::string_view rest = suffix.substr(1);
    bool negative = false;
    if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) {
      negative = rest[0] == '-';
      rest.remove_prefix(1);
    }
    const auto result = std::from_chars(rest.data(), rest.data() + rest.size(), exponent);
    if (result.ec != std::errc{} || result.ptr != rest.data() + rest.size() || exponent > 18)
      return std::nullopt;
    decimal_exponent += negative ? -exponent : exponent;
    known = true;
  }
  if (!known) return std::nullopt;
  // Whole counts only, up to 10^15: strip trailing zeros the exponent lets go, then scale.
  while (decimal_exponent < 0 && mantissa.size() > 1 && mantissa.back() == '0') {
    mantissa.pop_back();
    ++decimal_exponent;
  }
  const auto first = mantissa.find_first_not_of('0');
  if (first == std::string::npos) return 0;
  mantissa = mantissa.substr(first);
  if (decimal_exponent < 0) return std::nullopt;  // a fraction of a device
  if (mantissa.size() + static_cast<std::size_t>(decimal_exponent) > 15) return std::nullopt;
  std::int64_t value = 0;
  std::from_chars(mantissa.data(), mantissa.data() + mantissa.size(), value);
  for (int e = 0; e < decimal_exponent; ++e) value *= 10;
  if (binary_exponent > 0) {
    if (value > (std::int64_t{1} << (62 - binary_exponent))) return std::nullopt;
    value <<= binary_exponent;
  }
  return value;
}

namespace {

// A hetplan name ([a-z0-9][a-z0-9._-]*) made from any text: lower-cased, other characters
// replaced by '-', leading and trailing separators dropped.
std::string hetplan_name(std::string_view text, std::string_view fallback) {
  std::string out;
  for (char c : lower(text)) {
    const bool ok = is_alnum(c) || c == '.' || c == '_' || c == '-';
    out += ok ? c : '-';
  }
  const auto first = out.find_first_not_of("._-");
  if (first == std::string::npos) return std::string(fallback);
  out.erase(0, first);
  while (!out.empty() && (out.back() == '.' || out.back() == '_' || out.back() == '-')) {
    out.pop_back();
  }
  return out;
}

// A Kubernetes label value as the cluster loader accepts it.
bool valid_label_value(std::string_view text) {
  if (text.size() > 63) return false;
  if (text.empty()) return true;
  if (!is_alnum(text.front()) || !is_alnum(text.back())) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return is_alnum(c) || c == '.' || c == '_' || c == '-'; });
}

void add_unique(std::vector<std::string>& list, std::string item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(std::move(item));
}

using Json = LocatedJson;

// ---------------------------------------------------------------------------------------------
// Device-plugin resources

enum class Family { ascend, dcu, mlu, nvidia, other };

std::string family_name(Family family, std::string_view resource) {
  switch (family) {
    case Family::ascend:
      return "ascend";
    case Family::dcu:
      return "dcu";
    case Family::mlu:
      return "mlu";
    case Family::nvidia:
      return "nvidia";
    case Family::other:
      break;
  }
  return std::string(resource.substr(0, resource.find('/')));
}

// How a resource counts devices.
enum class Counting {
  whole,   // one per physical device
  shared,  // virtual devices (HAMi, time-slicing): physical ones from an annotation or label
  slices,  // partitions of devices (Ascend vNPU templates, NVIDIA MIG): not whole chips
};

struct DeviceResource {
  Family family = Family::other;
  Counting counting = Counting::whole;
};

// Whether an extended resource is an accelerator device count, and of which kind. Memory and
// core-share resources (huawei.com/Ascend910B3-memory, hygon.com/dcumem, nvidia.com/gpucores,
// cambricon.com/mlu370.smlu.vcore, ...) are not.
std::optional<DeviceResource> classify_resource(std::string_view key) {
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) return std::nullopt;  // cpu, memory, pods, hugepages-*
  const std::string_view domain = key.substr(0, slash);
  const std::string_view name = key.substr(slash + 1);
  if (ends_with(name, "-memory") || ends_with(name, "mem") || ends_with(name, "cores") ||
      contains(name, "memory") || contains(name, ".smlu.") || contains(name, "-percentage")) {
    return std::nullopt;
  }
  if (domain == "huawei.com") {
    // MindCluster: Ascend910 (910A and 910B alike), Ascend310P, Ascend310; vNPU templates
    // Ascend910-2c, Ascend910-6c.1cpu.16g, Ascend310P-2c...; HAMi: Ascend910A, Ascend910B2...
    if (name == "Ascend910" || name == "Ascend310P" || name == "Ascend310" || name == "npu") {
      return DeviceResource{Family::ascend, Counting::whole};
    }
    if (starts_with(name, "Ascend910-") || starts_with(name, "Ascend310P-") ||
        starts_with(name, "Ascend310-")) {
      return DeviceResource{Family::ascend, Counting::slices};
    }
    if (starts_with(name, "Ascend910") || starts_with(name, "Ascend310P")) {
      return DeviceResource{Family::ascend, Counting::whole};  // HAMi's per-model names
    }
    return std::nullopt;
  }
  if (domain == "hygon.com") {
    if (name == "dcu") return DeviceResource{Family::dcu, Counting::whole};
    if (name == "dcunum") return DeviceResource{Family::dcu, Counting::shared};  // HAMi
    return std::nullopt;
  }
  if (domain == "cambricon.com") {
    if (name == "mlunum" || name == "vmlu") return DeviceResource{Family::mlu, Counting::shared};
    // cambricon.com/mlu, or with --enable-device-type mlu370, mlu290, mlu270-x5k, ...
    if (starts_with(name, "mlu")) return DeviceResource{Family::mlu, Counting::whole};
    return std::nullopt;
  }
  if (domain == "nvidia.com") {
    if (name == "gpu") return DeviceResource{Family::nvidia, Counting::whole};
    if (name == "gpu.shared") return DeviceResource{Family::nvidia, Counting::shared};
    if (starts_with(name, "mig-")) return DeviceResource{Family::nvidia, Counting::slices};
    return std::nullopt;
  }
  if (domain == "volcano.sh") {
    if (name == "gpu-number") return DeviceResource{Family::nvidia, Counting::whole};
    if (name == "vgpu-number") return DeviceResource{Family::nvidia, Counting::shared};
    return std::nullopt;
  }
  // Accelerators without a bundled chip guess.
  static const std::set<std::string, std::less<>> kOthers = {
      "amd.com/gpu",         "metax-tech.com/gpu",    "metax-tech.com/sgpu",
      "iluvatar.ai/gpu",     "iluvatar.ai/vgpu",      "iluvatar.com/gpu",
      "mthreads.com/gpu",    "mthreads.com/vgpu",     "enflame.com/gcu",
      "enflame.com/vgcu",    "baidu.com/xpu",         "kunlunxin.com/xpu",
      "habana.ai/gaudi",     "aws.amazon.com/neuron", "aws.amazon.com/neurondevice",
      "google.com/tpu",      "gpu.intel.com/i915",    "gpu.intel.com/xe",
      "alibabacloud.com/ppu"};
  if (kOthers.contains(key)) {
    const bool shared = starts_with(name, "v") || starts_with(name, "s");
    return DeviceResource{Family::other, shared ? Counting::shared : Counting::whole};
  }
  static const std::set<std::string, std::less<>> kDeviceNames = {"gpu", "npu", "xpu", "dcu",
                                                                  "mlu", "gcu", "tpu"};
  if (kDeviceNames.contains(name) && !contains(domain, "kubernetes.io")) {
    return DeviceResource{Family::other, Counting::whole};
  }
  return std::nullopt;
}

bool is_rdma_resource(std::string_view key) {
  return starts_with(key, "rdma/") || contains(lower(key), "rdma") ||
         key == "vpc.amazonaws.com/efa";
}

// Bundled profiles of vendors for which no chip is guessed, named in the question.
std::string bundled_candidates(std::string_view resource) {
  if (starts_with(resource, "metax-tech.com/")) return "metax-c500, metax-c550";
  if (starts_with(resource, "iluvatar.")) return "iluvatar-bi150";
  if (starts_with(resource, "mthreads.com/")) return "moorethreads-mtt-s4000";
  if (contains(resource, "biren")) return "biren-br100, biren-br104";
  return "";
}

// ---------------------------------------------------------------------------------------------
// Chip guesses

struct Guess {
  std::string chip_id = "unknown";
  std::string question;  // empty when the labels name the profile's chip
};

// The AI cores MindCluster's servertype label gives ("Ascend910B-20", "Ascend910-20": the part
// and its AI-core count) and whether it names the 910B generation; 0 without one.
std::pair<int, bool> servertype_cores(const std::string& servertype) {
  const std::string t = upper(servertype);
  const auto dash = t.rfind('-');
  if (!starts_with(t, "ASCEND910") || dash == std::string::npos) return {0, false};
  const auto cores = non_negative_integer(std::string_view(t).substr(dash + 1));
  if (!cores || *cores < 1 || *cores > 64) return {0, false};
  return {static_cast<int>(*cores), contains(t.substr(0, dash), "910B")};
}

Guess guess_ascend(const std::string& resource, const std::string& model,
                   const std::string& accelerator_type, const std::string& servertype) {
  const std::string m = upper(model);
  const std::string type = upper(accelerator_type);
  if (resource == "huawei.com/Ascend310P" || contains(m, "310P")) return {"ascend-310p", ""};
  if (resource == "huawei.com/Ascend310" || contains(m, "310")) {
    return {"unknown",
            "chip: Ascend 310 has no bundled profile (bundled Ascend profiles: ascend-910, "
            "ascend-910b, ascend-910c, ascend-310p)"};
  }
  if (contains(m, "910_93") || contains(m, "910C") || contains(type, "-A3-") ||
      ends_with(type, "-A3")) {
    return {"ascend-910c", ""};
  }
  if (contains(m, "910B1") || contains(m, "910B2")) return {"ascend-910b", ""};
  // The 910B3's 20 AI cores make it msmodeling's 313T tier (docs/profiles-sources.md).
  if (contains(m, "910B3")) return {"ascend-910b-313t", ""};
  if (contains(m, "910B4")) {
    return {"ascend-910b-313t",
            "chip: the nodes have " + model +
                " (20 AI cores, 32 GiB); ascend-910b-313t is the 20-core 313T class with 64 GiB, "
                "and the 910B4's own tier is not established: copy it with your part's peaks "
                "and memory"};
  }
  // Without a chip name, a 910B server's AI-core count (servertype) gives the tier: 24 cores the
  // 376T class (910B2), 20 the 313T class (910B3, or the 910B4 with half the memory).
  const auto [cores, names_910b] = servertype_cores(servertype);
  if (m.empty() && (names_910b || contains(type, "910B"))) {
    if (cores == 24) return {"ascend-910b", ""};
    if (cores == 20) {
      return {"ascend-910b-313t",
              "chip: servertype=" + servertype +
                  " gives 20 AI cores, the 313T class: a 910B3 (64 GiB, the profile's) or a "
                  "910B4 (32 GiB); no node.kubernetes.io/npu.chip.name label says which"};
    }
  }
  if (contains(m, "910B") || contains(type, "910B")) {
    return {"ascend-910b",
            "chip: the 910B variant (910B1 to 910B4) is not in the labels "
            "(node.kubernetes.io/npu.chip.name); the ascend-910b profile is the 910B2 class"};
  }
  if (contains(m, "910A") || contains(m, "910PREMIUMA") || contains(m, "910PROA") ||
      contains(m, "910PROB")) {
    return {"ascend-910", ""};
  }
  if (type == "MODULE" || type == "CARD" || type == "HALF") {
    return {"ascend-910",
            "chip: guessed ascend-910 (Ascend 910A) from accelerator-type=" + accelerator_type +
                ", the label of Atlas 800 training servers before the 910B; no "
                "node.kubernetes.io/npu.chip.name label says which chip it is"};
  }
  return {"ascend-910b",
          "chip: the Ascend 910 generation is not in the labels (node.kubernetes.io/npu.chip.name, "
          "accelerator-type): guessed ascend-910b (Atlas A2); use ascend-910 for a 910A or "
          "ascend-910c for an A3 node"};
}

Guess guess_dcu(const std::string& model) {
  const std::string m = upper(model);
  if (m.empty()) {
    return {"hygon-k100-ai",
            "chip: no label names the DCU model (hetplan reads hygon.com/dcu.name): guessed "
            "hygon-k100-ai, the only bundled DCU profile"};
  }
  if (contains(m, "K100")) {
    if (contains(m, "AI")) return {"hygon-k100-ai", ""};
    return {"hygon-k100-ai", "chip: the nodes have DCU " + model +
                                 "; the bundled profile is the K100-AI: check that it is one"};
  }
  return {"unknown", "chip: DCU " + model + " has no bundled profile (bundled: hygon-k100-ai)"};
}

Guess guess_mlu(const std::string& model) {
  const std::string m = upper(model);
  if (m.empty()) {
    return {"cambricon-mlu370-x8",
            "chip: neither the resource name nor a label names the MLU model (the device plugin "
            "names it with --enable-device-type): guessed cambricon-mlu370-x8, the only bundled "
            "MLU profile"};
  }
  if (contains(m, "370")) {
    if (contains(m, "X8")) return {"cambricon-mlu370-x8", ""};
    if (contains(m, "X4") || contains(m, "S4")) {
      return {"unknown", "chip: MLU " + model +
                             " has no bundled profile (bundled: cambricon-mlu370-x8, a two-chip "
                             "card)"};
    }
    return {"cambricon-mlu370-x8",
            "chip: the MLU370 card (X8, X4 or S4) is not in the labels: guessed the X8 of the "
            "bundled cambricon-mlu370-x8 profile, which counts one two-chip card as a device"};
  }
  return {"unknown",
          "chip: MLU " + model + " has no bundled profile (bundled: cambricon-mlu370-x8)"};
}

Guess guess_nvidia(const std::string& model) {
  const std::string m = upper(model);
  const std::string bundled =
      "bundled NVIDIA profiles: nvidia-a100-sxm4-80gb, nvidia-a800-sxm4-80gb, "
      "nvidia-h100-sxm5-80gb";
  if (m.empty()) {
    return {"unknown",
            "chip: no label names the GPU (GPU feature discovery's nvidia.com/gpu.product); " +
                bundled};
  }
  const bool pcie = contains(m, "PCIE");
  // An 80 GB SXM4 part is its profile's; another SKU of the die gets it with a question.
  auto sxm4_80gb = [&](const std::string& profile, const std::string& part,
                       const std::string& differs) -> Guess {
    if (contains(m, "80G") && !pcie) return {profile, ""};
    return {profile, "chip: the nodes have " + model + "; the bundled profile is the " + part +
                         " SXM4 80GB (" + differs + " differ): copy and adjust it"};
  };
  // The A800 is the A100 die with NVLink at 400 GB/s; it has a profile of its own.
  if (contains(m, "A800")) return sxm4_80gb("nvidia-a800-sxm4-80gb", "A800", "memory and links");
  if (contains(m, "A100"))
    return sxm4_80gb("nvidia-a100-sxm4-80gb", "A100", "memory and bandwidth");
  if (contains(m, "H800")) {
    return {"nvidia-h100-sxm5-80gb",
            "chip: the nodes have " + model +
                "; the bundled profile is the H100 SXM5 80GB: the H800 is its die with NVLink at "
                "400 GB/s (both ways together, against 900): copy it and set "
                "node.intra_node.bandwidth to 200 GB/s"};
  }
  if (contains(m, "H100")) {
    if ((contains(m, "HBM3") || contains(m, "SXM")) && !pcie && !contains(m, "NVL")) {
      return {"nvidia-h100-sxm5-80gb", ""};
    }
    return {"nvidia-h100-sxm5-80gb",
            "chip: the nodes have " + model +
                "; the bundled profile is the H100 SXM5 80GB (clocks, memory and NVLink differ): "
                "copy and adjust it"};
  }
  return {"unknown", "chip: GPU " + model + " has no bundled profile (" + bundled + ")"};
}

// GPU models of cloud instance types whose GPUs the bundled profiles describe.
std::string gpu_of_instance_type(std::string_view type) {
  static const std::map<std::string, std::string, std::less<>> kTypes = {
      {"p4de.24xlarge", "A100-SXM4-80GB"},       {"p4d.24xlarge", "A100-SXM4-40GB"},
      {"p5.48xlarge", "H100-80GB-HBM3"},         {"Standard_ND96amsr_A100_v4", "A100-SXM4-80GB"},
      {"Standard_ND96asr_v4", "A100-SXM4-40GB"}, {"Standard_ND96isr_H100_v5", "H100-80GB-HBM3"},
      {"a2-ultragpu-8g", "A100-SXM4-80GB"},      {"a2-highgpu-8g", "A100-SXM4-40GB"},
      {"a3-highgpu-8g", "H100-80GB-HBM3"},
  };
  const auto it = kTypes.find(type);
  return it == kTypes.end() ? std::string() : it->second;
}

// ---------------------------------------------------------------------------------------------
// HAMi's device register annotation: hami.io/node-<type>-register (older: hami.io/node-register-
// <type>), devices separated by ':', each "{uuid},{split count},{memory},{cores},{type},{numa},
// {healthy}[,{index},{mode}]"; newer plugins may write a JSON list of objects with "type" and
// "health". Unreadable values are ignored (the resource counts are used instead).

struct HamiDevices {
  int devices = 0;
  int healthy = 0;
  std::string type;  // of the first device ("MLU-MLU370-X4", "NVIDIA-Tesla V100-PCIE-32GB")
};

std::optional<HamiDevices> read_hami_register(const std::string& value) {
  HamiDevices out;
  const auto first = value.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && value[first] == '[') {
    const nlohmann::json list = nlohmann::json::parse(value, nullptr, false);
    if (!list.is_array()) return std::nullopt;
    for (const auto& device : list) {
      if (!device.is_object()) return std::nullopt;
      ++out.devices;
      const auto health = device.find("health");
      if (health == device.end() || !health->is_boolean() || health->get<bool>()) ++out.healthy;
      const auto type = device.find("type");
      if (out.type.empty() && type != device.end() && type->is_string()) {
        out.type = type->get<std::string>();
      }
    }
    return out.devices > 0 ? std::optional<HamiDevices>(out) : std::nullopt;
  }
  std::size_t start = 0;
  while (start < value.size()) {
    auto end = value.find(':', start);
    if (end == std::string::npos) end = value.size();
    const std::string device = value.substr(start, end - start);
    start = end + 1;
    if (device.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    std::vector<std::string> fields;
    std::istringstream in(device);
    for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
    if (fields.size() < 7) return std::nullopt;
    ++out.devices;
    if (fields[6] != "false") ++out.healthy;
    if (out.type.empty()) out.type = fields[4];
  }
  return out.devices > 0 ? std::optional<HamiDevices>(out) : std::nullopt;
}

bool hami_annotation_of(std::string_view key, Family family) {
  if (!starts_with(key, "hami.io/node-") || !ends_with(key, "register") ||
      contains(key, "handshake")) {
    return false;
  }
  const std::string k = lower(key);
  switch (family) {
    case Family::nvidia:
      return contains(k, "nvidia");
    case Family::ascend:
      return contains(k, "ascend");
    case Family::dcu:
      return contains(k, "dcu") || contains(k, "hygon");
    case Family::mlu:
      return contains(k, "mlu") || contains(k, "cambricon");
    case Family::other:
      break;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// One node, as read from the List.

struct Taint {
  std::string key;
  std::string value;
  std::string effect;
};

struct ResourceCount {
  std::int64_t capacity = -1;     // -1: not listed
  std::int64_t allocatable = -1;  // -1: not listed
  int order = 0;                  // first appearance, for stable choices
};

struct Node {
  std::string name;
  SourceLocation location;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::map<std::string, ResourceCount> devices;  // device resources, by name
  std::map<std::string, ResourceCount> rdma;     // RDMA resources, by name
  bool unschedulable = false;
  std::optional<std::string> ready;  // the Ready condition's status ("True"); empty: not listed
  std::string ready_reason;
  std::vector<Taint> taints;

  const std::string* label(std::string_view key) const {
    const auto it = labels.find(std::string(key));
    return it == labels.end() ? nullptr : &it->second;
  }
  std::string label_or_empty(std::string_view key) const {
    const std::string* value = label(key);
    return value ? *value : std::string();
  }
};

class NodeListReader {
 public:
  explicit NodeListReader(const std::string& file) : file_(file) {}

  std::vector<Node> read(const Json& root) {
    if (root.kind != Json::Kind::object) {
      expected(root, "", "a JSON object (the output of `kubectl get nodes -o json`)");
    }
    const Json* kind = root.find("kind");
    if (kind == nullptr) {
      throw InputError(at(root), "kind",
                       "missing required key (expected the output of `kubectl get nodes -o json`, "
                       "a v1 List of Nodes)");
    }
    const std::string kind_text = as_string(*kind, "kind");
    std::vector<Node> nodes;
    if (kind_text == "Node") {
      nodes.push_back(read_node(root, ""));
      return nodes;
    }
    if (kind_text != "List" && kind_text != "NodeList") {
      expected(*kind, "kind", "\"List\" (the output of `kubectl get nodes -o json`)");
    }
    const Json& items = required(root, "", "items");
    if (items.kind != Json::Kind::array) expected(items, "items", "a list of Nodes");
    std::set<std::string> names;
    for (std::size_t i = 0; i < items.items.size(); ++i) {
      const std::string path = "items[" + std::to_string(i) + "]";
      const Json& item = items.items[i];
      if (item.kind != Json::Kind::object) expected(item, path, "a Node object");
      if (const Json* item_kind = item.find("kind")) {
        if (as_string(*item_kind, path + ".kind") != "Node") {
          expected(*item_kind, path + ".kind", "\"Node\" (a list of nodes only)");
        }
      }
      Node node = read_node(item, path + ".");
      if (!names.insert(node.name).second) {
        const Json& name = *item.find("metadata")->find("name");
        throw InputError(at(name), path + ".metadata.name",
                         "expected unique node names, got " + hetplan::quoted(node.name) + " twice");
      }
      nodes.push_back(std::move(node));
    }
    return nodes;
  }

 private:
  SourceLocation at(const Json& value) const { return {file_, value.line, value.column}; }

  [[noreturn]] void expected(const Json& value, const std::string& path,
                             std::string_view what) const {
    throw InputError(at(value), path, "expected " + std::string(what) + ", got " + describe(value));
  }

  const Json& required(const Json& object, const std::string& prefix, std::string_view key) const {
    const Json* value = object.find(key);
    if (value == nullptr)
      throw InputError(at(object), prefix + std::string(key), "missing required key");
    return *value;
  }

  std::string as_string(const Json& value, const std::string& path) const {
    if (value.kind != Json::Kind::string) expected(value, path, "a string");
    return value.text;
  }

  // An object of string values (labels, annotations); null reads as empty.
  std::map<std::string, std::string> string_map(const Json* value, const std::string& path) const {
    std::map<std::string, std::string> out;
    if (value == nullptr || value->kind == Json::Kind::null) return out;
    if (value->kind != Json::Kind::object) expected(*value, path, "an object of strings");
    for (std::size_t i = 0; i < value->keys.size(); ++i) {
      out[value->keys[i]] = as_string(value->items[i], path + "[\"" + value->keys[i] + "\"]");
    }
    return out;
  }

  // A device count: a Kubernetes quantity that is a whole number ("8", "1k" as kubectl prints
  // the RDMA shared-device plugin's 1000), or a JSON integer.
  std::int64_t device_count(const Json& value, const std::string& path) const {
    std::optional<std::int64_t> count;
    if (value.kind == Json::Kind::string) count = kubernetes_count(value.text);
    if (value.kind == Json::Kind::number) count = non_negative_integer(value.text);
    if (!count || *count > 1000000) {
      expected(value, path,
               "a device count (a whole Kubernetes quantity such as \"8\" or \"1k\", at most "
               "1000000)");
    }
    return *count;
  }

  void read_resources(const Json* list, const std::string& path, bool capacity, Node& node) {
    if (list == nullptr || list->kind == Json::Kind::null) return;
    if (list->kind != Json::Kind::object) expected(*list, path, "an object of resource quantities");
    for (std::size_t i = 0; i < list->keys.size(); ++i) {
      const std::string& key = list->keys[i];
      const bool device = classify_resource(key).has_value();
      if (!device && !is_rdma_resource(key)) continue;
      const std::int64_t count = device_count(list->items[i], path + "[\"" + key + "\"]");
      auto& map = device ? node.devices : node.rdma;
      auto [it, inserted] = map.try_emplace(key);
      if (inserted) it->second.order = order_++;
      (capacity ? it->second.capacity : it->second.allocatable) = count;
    }
  }

  Node read_node(const Json& item, const std::string& prefix) {
    Node node;
    node.location = at(item);
    const Json& metadata = required(item, prefix, "metadata");
    if (metadata.kind != Json::Kind::object) expected(metadata, prefix + "metadata", "an object");
    const Json& name = required(metadata, prefix + "metadata.", "name");
    node.name = as_string(name, prefix + "metadata.name");
    if (node.name.empty()) expected(name, prefix + "metadata.name", "a node name");
    node.labels = string_map(metadata.find("labels"), prefix + "metadata.labels");
    node.annotations = string_map(metadata.find("annotations"), prefix + "metadata.annotations");

    if (const Json* spec = item.find("spec"); spec != nullptr && spec->kind != Json::Kind::null) {
      if (spec->kind != Json::Kind::object) expected(*spec, prefix + "spec", "an object");
      if (const Json* unschedulable = spec->find("unschedulable")) {
        if (unschedulable->kind != Json::Kind::boolean) {
          expected(*unschedulable, prefix + "spec.unschedulable", "true or false");
        }
        node.unschedulable = unschedulable->boolean;
      }
      if (const Json* taints = spec->find("taints");
          taints != nullptr && taints->kind != Json::Kind::null) {
        if (taints->kind != Json::Kind::array) expected(*taints, prefix + "spec.taints", "a list");
        for (std::size_t i = 0; i < taints->items.size(); ++i) {
          const std::string path = prefix + "spec.taints[" + std::to_string(i) + "]";
          const Json& taint = taints->items[i];
          if (taint.kind != Json::Kind::object) expected(taint, path, "an object");
          Taint out;
          out.key = as_string(required(taint, path + ".", "key"), path + ".key");
          if (const Json* value = taint.find("value"))
            out.value = as_string(*value, path + ".value");
          const Json& effect = required(taint, path + ".", "effect");
          out.effect = as_string(effect, path + ".effect");
          if (out.effect != "NoSchedule" && out.effect != "PreferNoSchedule" &&
              out.effect != "NoExecute") {
            expected(effect, path + ".effect", "NoSchedule, PreferNoSchedule or NoExecute");
          }
          node.taints.push_back(std::move(out));
        }
      }
    }

    if (const Json* status = item.find("status");
        status != nullptr && status->kind != Json::Kind::null) {
      if (status->kind != Json::Kind::object) expected(*status, prefix + "status", "an object");
      read_resources(status->find("capacity"), prefix + "status.capacity", true, node);
      read_resources(status->find("allocatable"), prefix + "status.allocatable", false, node);
      if (const Json* conditions = status->find("conditions");
          conditions != nullptr && conditions->kind != Json::Kind::null) {
        if (conditions->kind != Json::Kind::array) {
          expected(*conditions, prefix + "status.conditions", "a list");
        }
        for (std::size_t i = 0; i < conditions->items.size(); ++i) {
          const std::string path = prefix + "status.conditions[" + std::to_string(i) + "]";
          const Json& condition = conditions->items[i];
          if (condition.kind != Json::Kind::object) expected(condition, path, "an object");
          const Json* type = condition.find("type");
          if (type == nullptr || type->kind != Json::Kind::string || type->text != "Ready")
            continue;
          node.ready = as_string(required(condition, path + ".", "status"), path + ".status");
          if (const Json* reason = condition.find("reason")) {
            node.ready_reason = as_string(*reason, path + ".reason");
          }
        }
      }
    }
    return node;
  }

  const std::string& file_;
  int order_ = 0;
};

// ---------------------------------------------------------------------------------------------
// From a node to what it holds

// What one node contributes to an island.
struct NodeDevices {
  Family family = Family::other;
  std::string resource;
  std::string chip_id;
  std::string model;
  std::int64_t capacity = -1;     // physical devices; -1: unknown
  std::int64_t allocatable = -1;  // healthy physical devices; -1: unknown
  bool partitioned = false;       // only slices (vNPU, MIG) are offered
  std::vector<std::string> questions;
  // The device plugin's own labels and resource names the chip was read from
  // ("node.kubernetes.io/npu.chip.name=910B3, servertype=Ascend910B-20").
  std::string evidence;
};

// The device resource of a node: a whole-device resource before a shared one before slices,
// then the larger count, then the first listed.
std::optional<std::pair<std::string, DeviceResource>> main_resource(const Node& node) {
  std::optional<std::pair<std::string, DeviceResource>> best;
  auto rank = [](Counting counting) {
    return counting == Counting::whole ? 0 : counting == Counting::shared ? 1 : 2;
  };
  auto count = [&](const std::string& key) {
    const ResourceCount& c = node.devices.at(key);
    return std::max(c.capacity, c.allocatable);
  };
  for (const auto& [key, counts] : node.devices) {
    const DeviceResource resource = *classify_resource(key);
    if (!best) {
      best = {key, resource};
      continue;
    }
    const auto& [best_key, best_resource] = *best;
    const bool positive = count(key) > 0;
    const bool best_positive = count(best_key) > 0;
    if (positive != best_positive) {
      if (positive) best = {key, resource};
      continue;
    }
    if (rank(resource.counting) != rank(best_resource.counting)) {
      if (rank(resource.counting) < rank(best_resource.counting)) best = {key, resource};
      continue;
    }
    if (count(key) != count(best_key)) {
      if (count(key) > count(best_key)) best = {key, resource};
      continue;
    }
    if (counts.order < node.devices.at(best_key).order) best = {key, resource};
  }
  return best;
}

// A node labelled for accelerators whose device plugin reports none.
std::optional<std::pair<std::string, Family>> labelled_accelerator(const Node& node) {
  const std::string accelerator = node.label_or_empty("accelerator");
  if (starts_with(accelerator, "huawei-Ascend310P")) {
    return std::pair<std::string, Family>{"huawei.com/Ascend310P", Family::ascend};
  }
  if (starts_with(accelerator, "huawei-Ascend")) {
    return std::pair<std::string, Family>{"huawei.com/Ascend910", Family::ascend};
  }
  if (node.label("nvidia.com/gpu.product") ||
      node.label_or_empty("nvidia.com/gpu.present") == "true") {
    return std::pair<std::string, Family>{"nvidia.com/gpu", Family::nvidia};
  }
  if (node.label_or_empty("dcu") == "on" || node.label("hygon.com/dcu.name")) {
    return std::pair<std::string, Family>{"hygon.com/dcu", Family::dcu};
  }
  if (node.label_or_empty("mlu") == "on") {
    return std::pair<std::string, Family>{"cambricon.com/mlu", Family::mlu};
  }
  return std::nullopt;
}

std::optional<NodeDevices> devices_of(const Node& node) {
  NodeDevices out;
  Counting counting = Counting::whole;
  if (const auto main = main_resource(node)) {
    out.resource = main->first;
    out.family = main->second.family;
    counting = main->second.counting;
    const ResourceCount& counts = node.devices.at(out.resource);
    out.capacity = counts.capacity >= 0 ? counts.capacity : counts.allocatable;
    out.allocatable = counts.allocatable >= 0 ? counts.allocatable : counts.capacity;
    for (const auto& [key, other] : node.devices) {
      const DeviceResource resource = *classify_resource(key);
      if (resource.family != out.family && std::max(other.capacity, other.allocatable) > 0) {
        out.questions.push_back("node " + node.name + " also offers " + key + " (" +
                                std::to_string(std::max(other.capacity, other.allocatable)) +
                                "); only " + out.resource + " is counted");
      }
    }
  } else if (const auto labelled = labelled_accelerator(node)) {
    out.resource = labelled->first;
    out.family = labelled->second;
    out.capacity = 0;
    out.allocatable = 0;
  } else {
    return std::nullopt;
  }

  // Physical devices where the resource counts virtual ones or slices.
  std::optional<HamiDevices> hami;
  std::string hami_key;
  for (const auto& [key, value] : node.annotations) {
    if (!hami_annotation_of(key, out.family)) continue;
    hami = read_hami_register(value);
    hami_key = key;
    if (!hami) {
      out.questions.push_back("HAMi annotation " + key + " on node " + node.name +
                              " could not be read; the " + out.resource + " count is used");
    }
    break;
  }
  if (hami) {
    out.capacity = hami->devices;
    out.allocatable = hami->healthy;
  } else if (out.family == Family::nvidia && node.label("nvidia.com/gpu.count")) {
    // GPU feature discovery counts physical GPUs; with time-slicing nvidia.com/gpu counts
    // replicas, with MIG the resources are slices.
    if (const auto gpus = non_negative_integer(node.label_or_empty("nvidia.com/gpu.count"));
        gpus && *gpus > 0 && out.capacity != *gpus) {
      const std::int64_t replicas =
          out.capacity > 0 ? std::max<std::int64_t>(1, out.capacity / *gpus) : 1;
      out.allocatable = out.allocatable >= 0 ? out.allocatable / replicas : -1;
      out.capacity = *gpus;
      if (counting == Counting::slices) out.allocatable = 0;
    }
  } else if (counting != Counting::whole) {
    out.questions.push_back(
        "chips per node: " + out.resource + " counts " +
        (counting == Counting::slices ? "slices of devices" : "virtual devices") +
        ", not physical ones, and no annotation or label counts those");
    out.capacity = -1;
    out.allocatable = -1;
  }
  out.partitioned = counting == Counting::slices;

  // The model text the chip is guessed from.
  const std::string hami_type = hami ? hami->type : std::string();
  const std::string slash_name = out.resource.substr(out.resource.find('/') + 1);
  Guess guess;
  switch (out.family) {
    case Family::ascend: {
      out.model = node.label_or_empty("node.kubernetes.io/npu.chip.name");
      if (out.model.empty() && starts_with(slash_name, "Ascend") && slash_name.size() > 9 &&
          counting == Counting::whole && slash_name != "Ascend910") {
        out.model = slash_name.substr(6);  // HAMi's Ascend910B3 -> 910B3
      }
      if (out.model.empty()) out.model = hami_type;
      guess = guess_ascend(out.resource, out.model, node.label_or_empty("accelerator-type"),
                           node.label_or_empty("servertype"));
      for (const char* key : {"node.kubernetes.io/npu.chip.name", "servertype", "accelerator-type"})
        if (const std::string* value = node.label(key))
          out.evidence += (out.evidence.empty() ? "" : ", ") + std::string(key) + "=" + *value;
      break;
    }
    case Family::dcu:
      out.model = node.label_or_empty("hygon.com/dcu.name");
      if (!out.model.empty()) out.evidence = "hygon.com/dcu.name=" + out.model;
      if (out.model.empty()) out.model = hami_type;
      guess = guess_dcu(out.model);
      break;
    case Family::mlu:
      if (starts_with(slash_name, "mlu") && slash_name != "mlu" && slash_name != "mlunum") {
        out.model = upper(slash_name);  // cambricon.com/mlu370 -> MLU370
        out.evidence = "the resource " + out.resource;
      }
      if (out.model.empty() || out.model == "MLU370") {
        if (!hami_type.empty()) out.model = hami_type;
      }
      guess = guess_mlu(out.model);
      break;
    case Family::nvidia:
      out.model = node.label_or_empty("nvidia.com/gpu.product");
      if (!out.model.empty()) out.evidence = "nvidia.com/gpu.product=" + out.model;
      if (out.model.empty()) out.model = node.label_or_empty("cloud.google.com/gke-accelerator");
      if (out.model.empty()) out.model = hami_type;
      if (out.model.empty()) {
        out.model = gpu_of_instance_type(node.label_or_empty("node.kubernetes.io/instance-type"));
      }
      guess = guess_nvidia(out.model);
      break;
    case Family::other: {
      const std::string candidates = bundled_candidates(out.resource);
      guess.question = "chip: no bundled profile is guessed for " + out.resource +
                       (candidates.empty() ? std::string()
                                           : "; bundled profiles of this vendor: " + candidates) +
                       "; set chip: to a profile id";
      break;
    }
  }
  // The deployment practice's accelerator.model names hetplan's chip profile (labels.sh writes
  // it). Where the device plugin's own labels name the chip for certain, they decide, and a site
  // label that says otherwise is a question; where they leave the chip open, the site label
  // settles it.
  if (const std::string practice = node.label_or_empty("accelerator.model");
      !practice.empty() && out.family != Family::other && hetplan_name(practice, "") == practice) {
    const bool plugin_decides = guess.question.empty() && guess.chip_id != "unknown";
    if (!plugin_decides) {
      out.model = practice;
      guess = {practice, ""};
    } else if (practice != guess.chip_id) {
      out.questions.push_back(
          "chip: the site's label accelerator.model=" + practice +
          " disagrees with the device plugin (" + out.evidence + "), which names " +
          guess.chip_id + ": written chip " + guess.chip_id +
          ", and the node selectors ask for accelerator.model=" + guess.chip_id +
          " (labels.sh relabels the nodes); if " + practice +
          " is right, the device plugin's labels are wrong: fix them and set chip: " + practice);
    }
  }
  out.chip_id = guess.chip_id;
  if (!guess.question.empty()) out.questions.push_back(guess.question);
  if (hami) {
    out.questions.push_back("HAMi shares these devices (" + hami_key +
                            "): jobs sharing a device with others run slower than planned");
  }
  return out;
}

// The runtime a node label names: hetplan's runtime.version=<name>-<version>, or GPU feature
// discovery's CUDA labels (the highest CUDA version the driver supports).
std::pair<std::string, std::string> runtime_of(const Node& node) {
  if (const std::string* label = node.label("runtime.version")) {
    const auto dash = label->find('-');
    if (dash != std::string::npos && dash > 0 && dash + 1 < label->size()) {
      static const std::map<std::string, std::string, std::less<>> kNames = {
          {"cann", "CANN"}, {"cuda", "CUDA"}, {"dtk", "DTK"},   {"neuware", "Neuware"},
          {"rocm", "ROCm"}, {"maca", "MACA"}, {"musa", "MUSA"}, {"corex", "Corex"}};
      const std::string name = label->substr(0, dash);
      const auto known = kNames.find(lower(name));
      return {known != kNames.end() ? known->second : name, label->substr(dash + 1)};
    }
  }
  if (const std::string* full = node.label("nvidia.com/cuda.runtime-version.full")) {
    return {"CUDA", *full};
  }
  const std::string major = node.label_or_empty("nvidia.com/cuda.runtime.major");
  const std::string minor = node.label_or_empty("nvidia.com/cuda.runtime.minor");
  if (!major.empty() && !minor.empty()) return {"CUDA", major + "." + minor};
  return {};
}

std::string zone_label_of(const Node& node) {
  // The deployment practice's fabric.zone names the fabric zone itself; the cloud's zone label
  // is the fallback.
  if (const std::string* zone = node.label("fabric.zone")) return *zone;
  if (const std::string* zone = node.label("topology.kubernetes.io/zone")) return *zone;
  if (const std::string* zone = node.label("failure-domain.beta.kubernetes.io/zone")) return *zone;
  return {};
}

// Labels an island keeps when all its nodes carry one value: the ones device plugins, Volcano
// and cloud providers select accelerator nodes by, and hetplan's own.
const std::vector<std::string>& selector_label_keys() {
  static const std::vector<std::string> kKeys = {
      "accelerator",
      "accelerator-type",
      "node.kubernetes.io/npu.chip.name",
      "servertype",
      "host-arch",
      "nvidia.com/gpu.product",
      "cloud.google.com/gke-accelerator",
      "hygon.com/dcu.name",
      "dcu",
      "mlu",
      "gpu",
      "node.kubernetes.io/instance-type",
      "kubernetes.io/arch",
      "topology.kubernetes.io/region",
      "topology.kubernetes.io/zone",
      "accelerator.vendor",
      "accelerator.model",
      "runtime.version",
      "fabric.zone",
  };
  return kKeys;
}

// Why a node is not free, or empty. Taints whose key is the device resource are the usual
// "accelerator nodes only" taints that pods requesting the device tolerate (Kubernetes'
// ExtendedResourceToleration admission plugin adds the toleration).
std::vector<std::string> busy_reasons(const Node& node, const std::string& resource,
                                      bool& only_taints) {
  std::vector<std::string> reasons;
  only_taints = true;
  if (node.unschedulable) {
    reasons.push_back("cordoned (spec.unschedulable)");
    only_taints = false;
  }
  if (node.ready && *node.ready != "True") {
    reasons.push_back("not Ready (Ready=" + *node.ready +
                      (node.ready_reason.empty() ? "" : ", " + node.ready_reason) + ")");
    only_taints = false;
  }
  for (const Taint& taint : node.taints) {
    if (taint.effect == "PreferNoSchedule" || taint.key == resource) continue;
    if (node.unschedulable && taint.key == "node.kubernetes.io/unschedulable") continue;
    if (node.ready && *node.ready != "True" &&
        (taint.key == "node.kubernetes.io/not-ready" ||
         taint.key == "node.kubernetes.io/unreachable")) {
      continue;
    }
    reasons.push_back("taint " + taint.key + (taint.value.empty() ? "" : "=" + taint.value) + ":" +
                      taint.effect);
  }
  return reasons;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

// Node names for a comment: the first few, then how many more.
std::string some_names(const std::vector<std::string>& names) {
  std::vector<std::string> shown(
      names.begin(),
      names.begin() + static_cast<std::ptrdiff_t>(std::min(names.size(), kNodesNamedInComments)));
  std::string out = join(shown, ", ");
  if (names.size() > shown.size()) {
    out += " and " + std::to_string(names.size() - shown.size()) + " more";
  }
  return out;
}

struct Member {
  const Node* node = nullptr;
  NodeDevices devices;
};

InventoryIsland make_island(const std::vector<Member>& members, const std::string& zone_label,
                            const std::pair<std::string, std::string>& runtime) {
  InventoryIsland island;
  const NodeDevices& first = members.front().devices;
  island.chip_id = first.chip_id;
  island.family = family_name(first.family, first.resource);
  island.resource = first.resource;
  island.zone_label = zone_label;
  island.runtime_name = runtime.first;
  island.runtime_version = runtime.second;
  island.location = members.front().node->location;
  island.nodes = static_cast<int>(members.size());

  std::vector<std::string> models;
  std::map<std::int64_t, int> per_count;  // physical devices -> nodes
  for (const Member& member : members) {
    island.node_names.push_back(member.node->name);
    if (!member.devices.model.empty()) add_unique(models, member.devices.model);
    if (member.devices.capacity > 0) ++per_count[member.devices.capacity];
    for (const auto& question : member.devices.questions) add_unique(island.questions, question);
  }
  island.model = join(models, ", ");
  // The most common count; on a tie the larger.
  int best_nodes = 0;
  for (const auto& [count, nodes] : per_count) {
    if (nodes >= best_nodes) {
      best_nodes = nodes;
      island.chips_per_node = static_cast<int>(count);
    }
  }
  if (per_count.size() > 1) {
    std::vector<std::string> counts;
    for (auto it = per_count.rbegin(); it != per_count.rend(); ++it) {
      counts.push_back(std::to_string(it->first) + " on " + std::to_string(it->second) +
                       (it->second == 1 ? " node" : " nodes"));
    }
    island.questions.push_back("chips per node: the nodes differ (" + join(counts, ", ") +
                               "); taken as " + std::to_string(island.chips_per_node) +
                               ", split the island by hand if they are different machines");
  }
  if (island.chips_per_node == 0) {
    island.questions.push_back("chips per node: no node reports its " + island.resource +
                               " devices");
  }

  std::vector<std::string> tainted;
  for (const Member& member : members) {
    const Node& node = *member.node;
    bool only_taints = true;
    std::vector<std::string> reasons = busy_reasons(node, island.resource, only_taints);
    bool taint_reasons = !reasons.empty() && only_taints;
    if (member.devices.partitioned) {
      reasons.push_back("devices partitioned (" + island.resource + ")");
      taint_reasons = false;
    } else if (member.devices.allocatable >= 0 && island.chips_per_node > 0 &&
               member.devices.allocatable < island.chips_per_node) {
      reasons.push_back(std::to_string(member.devices.allocatable) + " of " +
                        std::to_string(island.chips_per_node) + " " + island.resource +
                        " allocatable");
      taint_reasons = false;
    }
    if (reasons.empty()) {
      ++island.free_nodes;
    } else {
      island.busy_nodes.push_back({node.name, join(reasons, "; ")});
      if (taint_reasons) tainted.push_back(node.name);
    }
  }
  if (!tainted.empty()) {
    island.questions.push_back("free nodes: " + some_names(tainted) +
                               " carry NoSchedule/NoExecute taints and are counted as busy; if "
                               "the training job tolerates them, raise free_nodes");
  }

  // Labels every node shares.
  for (const std::string& key : selector_label_keys()) {
    const std::string* value = members.front().node->label(key);
    if (value == nullptr || !valid_label_value(*value)) continue;
    const bool shared = std::all_of(members.begin(), members.end(), [&](const Member& member) {
      const std::string* other = member.node->label(key);
      return other != nullptr && *other == *value;
    });
    if (shared) island.labels[key] = *value;
  }
  // A site accelerator.model that names another chip is a question (devices_of), not a selector:
  // the cluster loader gives the island accelerator.model=<chip> instead.
  if (const auto model = island.labels.find("accelerator.model");
      model != island.labels.end() && model->second != island.chip_id) {
    island.labels.erase(model);
  }
  // The free nodes first: a plan's placement takes an island's nodes in the order of node_names
  // (core/placement.hpp), and must not land on a cordoned or tainted one.
  std::stable_partition(island.node_names.begin(), island.node_names.end(),
                        [&](const std::string& name) {
                          return std::none_of(island.busy_nodes.begin(), island.busy_nodes.end(),
                                              [&](const BusyNode& busy) { return busy.name == name; });
                        });

  // RDMA and NICs.
  std::map<std::int64_t, int> efa_counts;
  for (const Member& member : members) {
    for (const auto& [key, counts] : member.node->rdma) {
      if (std::max(counts.capacity, counts.allocatable) <= 0) continue;
      add_unique(island.rdma_resources, key);
      if (key == "vpc.amazonaws.com/efa") {
        ++efa_counts[counts.capacity >= 0 ? counts.capacity : counts.allocatable];
      }
    }
    if (member.node->label_or_empty("feature.node.kubernetes.io/rdma.available") == "true") {
      add_unique(island.rdma_resources, "feature.node.kubernetes.io/rdma.available");
    }
  }
  if (efa_counts.size() == 1 && efa_counts.begin()->second == island.nodes) {
    island.nic_count = static_cast<int>(efa_counts.begin()->first);
  }
  island.questions.push_back(
      "nodes per leaf switch (rail group): Kubernetes does not know the wiring; each run of "
      "nodes_per_leaf nodes in node_names (free nodes first) is taken as one leaf switch, so "
      "list them leaf by leaf");
  if (island.nic_count > 0) {
    island.questions.push_back("NIC speed: vpc.amazonaws.com/efa counts " +
                               std::to_string(island.nic_count) +
                               " NICs per node but not their speed");
  } else if (!island.rdma_resources.empty()) {
    island.questions.push_back("NICs per node and their speed: RDMA is present (" +
                               join(island.rdma_resources, ", ") + ") but nothing counts the NICs");
  } else {
    island.questions.push_back(
        "NICs per node and their speed: no RDMA resource or label on these nodes");
  }
  if (island.runtime_version.empty()) {
    island.questions.push_back(
        "runtime version: no node label names it (hetplan reads runtime.version=<name>-<version> "
        "and GPU feature discovery's nvidia.com/cuda.runtime labels); the profile's runtime is "
        "assumed");
  }
  return island;
}

void name_islands(std::vector<InventoryIsland>& islands) {
  auto base = [](const InventoryIsland& island) {
    if (island.chip_id != "unknown") return island.chip_id;
    return "unknown-" + hetplan_name(island.resource, "device");
  };
  std::map<std::string, int> per_base;
  std::map<std::pair<std::string, std::string>, int> per_zone;
  for (const auto& island : islands) {
    ++per_base[base(island)];
    ++per_zone[{base(island), island.zone}];
  }
  std::set<std::string> taken;
  for (auto& island : islands) {
    std::string name = base(island);
    if (per_base[name] > 1) {
      const bool zone_unique = per_zone[{name, island.zone}] == 1;
      name += "-" + island.zone;
      if (!zone_unique && !island.runtime_version.empty()) {
        name += "-" + hetplan_name(island.runtime_name + "-" + island.runtime_version, "runtime");
      }
    }
    std::string unique = name;
    for (int n = 2; taken.contains(unique); ++n) unique = name + "-" + std::to_string(n);
    taken.insert(unique);
    island.name = unique;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------

Inventory parse_kubectl_nodes(const std::string& text, const std::string& file_name) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InputError(location_at(file_name, text, text.size()), "",
                     "expected the output of `kubectl get nodes -o json`, got an empty file");
  }
  const Json root = parse_located_json(text, file_name,
                                       "a JSON object (the output of `kubectl get nodes -o json`)");
  const std::vector<Node> nodes = NodeListReader(file_name).read(root);

  Inventory inventory;
  inventory.file = file_name;

  // Group by (chip, runtime, zone) in order of first appearance.
  struct Group {
    std::string chip_key;
    std::pair<std::string, std::string> runtime;
    std::string zone_label;
    std::vector<Member> members;
  };
  std::vector<Group> groups;
  for (const Node& node : nodes) {
    auto devices = devices_of(node);
    if (!devices) {
      inventory.other_nodes.push_back(node.name);
      continue;
    }
    const std::string chip_key =
        devices->chip_id == "unknown" ? "unknown/" + devices->resource : devices->chip_id;
    const auto runtime = runtime_of(node);
    const std::string zone = zone_label_of(node);
    auto group = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.chip_key == chip_key && g.runtime == runtime && g.zone_label == zone;
    });
    if (group == groups.end()) {
      groups.push_back({chip_key, runtime, zone, {}});
      group = groups.end() - 1;
    }
    group->members.push_back({&node, std::move(*devices)});
  }

  // Zone names: hetplan names made from the labels, unique.
  std::map<std::string, std::string> zone_names;  // label -> name
  std::set<std::string> used_zone_names;
  bool unlabelled = false;
  for (const Group& group : groups) {
    if (zone_names.contains(group.zone_label)) continue;
    if (group.zone_label.empty()) unlabelled = true;
    const std::string base =
        group.zone_label.empty() ? "default" : hetplan_name(group.zone_label, "zone");
    std::string name = base;
    for (int n = 2; used_zone_names.contains(name); ++n) name = base + "-" + std::to_string(n);
    used_zone_names.insert(name);
    zone_names[group.zone_label] = name;
  }

  for (const Group& group : groups) {
    InventoryIsland island = make_island(group.members, group.zone_label, group.runtime);
    island.zone = zone_names.at(group.zone_label);
    inventory.islands.push_back(std::move(island));
  }
  name_islands(inventory.islands);

  inventory.questions.push_back(
      "fabric: Kubernetes does not know the network; its kind (RoCE v2 or InfiniBand), topology, "
      "rail optimisation, leaf uplink speed, oversubscription and latencies are ASSUMED defaults");
  if (used_zone_names.size() > 1) {
    inventory.questions.push_back(
        "zone links: which zones are linked, with what bandwidth and latency; until "
        "fabric.zone_links lists them, no plan spans two zones");
  }
  if (unlabelled) {
    inventory.questions.push_back(
        "zones: some accelerator nodes have no topology.kubernetes.io/zone label; they are put in "
        "zone \"default\"");
  }
  inventory.questions.push_back(
      "free nodes: counted from schedulability, readiness, taints and healthy devices; the node "
      "list does not show devices that running pods hold (kubectl describe node: Allocated "
      "resources), so lower free_nodes for nodes in use");
  return inventory;
}

Inventory import_kubectl_nodes(const std::string& path) {
  const std::string text = read_input_file(path, kMaxFileBytes);
  return parse_kubectl_nodes(text, path);
}

// ---------------------------------------------------------------------------------------------
// The cluster file

namespace {

// A YAML double-quoted scalar.
std::string yaml_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

// A comment line's text: one line.
std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

// Wraps a comment at about 100 columns, each line starting with `prefix`, continuation lines
// with `continuation`.
void write_comment(std::ostringstream& out, const std::string& prefix,
                   const std::string& continuation, const std::string& text) {
  constexpr std::size_t kWidth = 100;
  std::istringstream words(one_line(text));
  std::string line = prefix;
  bool first_word = true;
  for (std::string word; words >> word;) {
    if (!first_word && line.size() + 1 + word.size() > kWidth) {
      out << line << '\n';
      line = continuation;
      first_word = true;
    }
    if (!first_word) line += ' ';
    line += word;
    first_word = false;
  }
  out << line << '\n';
}

std::string bandwidth_text(double bytes_per_second) {
  // Gbps when a whole number of them, else the unit format_quantity picks.
  const double gbps = bytes_per_second / *parse_quantity("1 Gbps", Dimension::bandwidth);
  const double rounded = static_cast<double>(static_cast<long long>(gbps + 0.5));
  if (gbps >= 1.0 && std::abs(gbps - rounded) < 1e-9 * gbps) {
    return std::to_string(static_cast<long long>(rounded)) + " Gbps";
  }
  return format_quantity(bytes_per_second, Dimension::bandwidth);
}

}  // namespace

std::string cluster_yaml(const Inventory& inventory, const std::string& cluster_name,
                         const std::string& profiles_folder,
                         const std::vector<ChipProfile>& profiles) {
  const bool name_ok =
      !cluster_name.empty() &&
      (std::islower(static_cast<unsigned char>(cluster_name[0])) || is_digit(cluster_name[0])) &&
      std::all_of(cluster_name.begin(), cluster_name.end(), [](char c) {
        return std::islower(static_cast<unsigned char>(c)) || is_digit(c) || c == '.' || c == '_' ||
               c == '-';
      });
  if (!name_ok) {
    throw InputError(
        {"--name", 0, 0}, "",
        "expected a cluster name of [a-z0-9][a-z0-9._-]*, got " + hetplan::quoted(cluster_name));
  }
  std::map<std::string, const ChipProfile*> by_id;
  for (const ChipProfile& profile : profiles) by_id.emplace(profile.id, &profile);

  std::ostringstream out;
  out << "# hetplan cluster file made by `hetplan inventory import` from the output of\n"
         "# `kubectl get nodes -o json` in\n#   "
      << one_line(inventory.file)
      << "\n# Kubernetes knows the nodes, their accelerators, zones and which nodes are "
         "schedulable;\n# it does not know the network. Values marked ASSUMED are defaults: "
         "replace them with\n# the site's own.\n#\n";
  out << "# Questions Kubernetes cannot answer:\n";
  for (const auto& question : inventory.questions) {
    write_comment(out, "#   - site: ", "#       ", question);
  }
  for (const auto& island : inventory.islands) {
    for (const auto& question : island.questions) {
      write_comment(out, "#   - island " + island.name + ": ", "#       ", question);
    }
  }
  if (!inventory.other_nodes.empty()) {
    out << "#\n";
    write_comment(out, "# Nodes without accelerators, in no island: ", "#   ",
                  some_names(inventory.other_nodes));
  }

  out << "schema: hetplan/cluster/v1\n";
  out << "name: " << yaml_string(cluster_name) << '\n';
  out << "profiles: [" << yaml_string(profiles_folder) << "]\n";

  std::vector<std::string> zones;
  for (const auto& island : inventory.islands) {
    if (island.chip_id != "unknown") add_unique(zones, island.zone);
  }
  if (zones.empty()) zones.push_back("default");
  out << "fabric:\n"
         "  kind: roce-v2                # ASSUMED: Kubernetes does not know the fabric\n"
         "  topology: leaf-spine         # ASSUMED\n"
         "  rail_optimized: false        # ASSUMED\n"
         "  leaf_uplink_speed: 400 Gbps  # ASSUMED\n"
         "  oversubscription: \"1:1\"      # ASSUMED\n"
         "  switch_latency: 600 ns       # ASSUMED\n"
         "  link_latency: 50 ns          # ASSUMED\n";
  out << "  zones: [";
  for (std::size_t i = 0; i < zones.size(); ++i) out << (i ? ", " : "") << yaml_string(zones[i]);
  out << "]  # from topology.kubernetes.io/zone\n";
  if (zones.size() > 1) {
    out << "  # zone_links: not known to Kubernetes; until they are listed, no plan spans two "
           "zones.\n"
           "  # zone_links:\n";
    for (std::size_t i = 0; i + 1 < zones.size(); ++i) {
      out << "  #   - {between: [" << zones[i] << ", " << zones[i + 1]
          << "], bandwidth: 6.4 Tbps, latency: 2 us}\n";
    }
  }

  out << "islands:";
  bool any = false;
  for (const auto& island : inventory.islands) {
    if (island.chip_id != "unknown") any = true;
  }
  out << (any ? "\n" : " []  # no accelerator a bundled profile describes: see below\n");

  for (const auto& island : inventory.islands) {
    const bool unknown = island.chip_id == "unknown";
    const std::string p = unknown ? "  # " : "  ";  // commented out when no chip is known
    const std::string q = unknown ? "  #   " : "    ";
    if (unknown) {
      write_comment(out, "  # ", "  # ",
                    "Not written: " + std::to_string(island.nodes) + " nodes with " +
                        island.resource + (island.model.empty() ? "" : " (" + island.model + ")") +
                        " have no bundled profile; set chip: and uncomment.");
    }
    out << p << "- name: " << island.name << '\n';
    out << q << "chip: " << (unknown ? "CHIP-PROFILE-ID" : island.chip_id) << "  # from "
        << island.resource << (island.model.empty() ? "" : " and " + yaml_string(island.model))
        << '\n';
    out << q << "nodes: " << island.nodes << "  # " << some_names(island.node_names) << '\n';
    out << q << "free_nodes: " << island.free_nodes;
    if (!island.busy_nodes.empty()) {
      std::vector<std::string> busy;
      for (const auto& node : island.busy_nodes) busy.push_back(node.name + ": " + node.reason);
      out << "  # busy: " << one_line(some_names(busy));
    }
    out << '\n';

    const auto found = by_id.find(island.chip_id);
    const ChipProfile* profile = found == by_id.end() ? nullptr : found->second;
    if (island.chips_per_node > 0) {
      if (!profile || !profile->chips_per_node ||
          *profile->chips_per_node != island.chips_per_node) {
        out << q << "chips_per_node: " << island.chips_per_node << "  # " << island.resource
            << " per node\n";
      }
    } else if (!profile || !profile->chips_per_node) {
      out << q << "chips_per_node: " << kAssumedChipsPerNode
          << "  # ASSUMED: no node reports its devices\n";
    }

    const bool profile_nics = profile && profile->nic_count && *profile->nic_count > 0 &&
                              profile->nic_speed && *profile->nic_speed > 0;
    if (island.nic_count > 0) {
      const std::string speed = profile && profile->nic_speed && *profile->nic_speed > 0
                                    ? bandwidth_text(*profile->nic_speed)
                                    : std::string(kAssumedNicSpeed);
      out << q << "nics: {count: " << island.nic_count << ", speed: " << speed
          << "}  # count from vpc.amazonaws.com/efa; speed ASSUMED\n";
    } else if (profile_nics) {
      out << q << "# nics: the profile's " << *profile->nic_count << " x "
          << bandwidth_text(*profile->nic_speed)
          << " (ASSUMED: Kubernetes does not show the NICs)\n";
    } else {
      out << q << "nics: {count: " << kAssumedNicCount << ", speed: " << kAssumedNicSpeed
          << "}  # ASSUMED: Kubernetes does not show the NICs\n";
    }
    if (!island.runtime_version.empty()) {
      out << q << "runtime: {name: " << yaml_string(island.runtime_name)
          << ", version: " << yaml_string(island.runtime_version) << "}  # from a node label\n";
    }
    out << q << "zone: " << island.zone;
    if (!island.zone_label.empty() && island.zone_label != island.zone) {
      out << "  # topology.kubernetes.io/zone=" << one_line(island.zone_label);
    }
    out << '\n';
    out << q << "nodes_per_leaf: " << std::min(island.nodes, kAssumedNodesPerLeaf)
        << "  # ASSUMED: Kubernetes does not know the wiring\n";
    // The nodes by name, for labels.sh (the busy ones too: `nodes` counts them all).
    if (static_cast<int>(island.node_names.size()) == island.nodes) {
      out << q << "node_names: [";
      for (std::size_t n = 0; n < island.node_names.size(); ++n)
        out << (n ? ", " : "") << yaml_string(island.node_names[n]);
      out << "]\n";
    }
    // What the nodes advertise, so that an exported Job requests exactly these.
    const bool device_named = island.resource.find('/') != std::string::npos;
    std::string rdma;
    for (const auto& name : island.rdma_resources)
      if (name.find('/') != std::string::npos && rdma.empty() &&
          name.rfind("feature.node.kubernetes.io/", 0) != 0)  // a label, not a resource
        rdma = name;
    if (device_named) {
      out << q << "resources: {device: " << yaml_string(island.resource) << ", rdma: "
          << (rdma.empty() ? std::string("none") : yaml_string(rdma))
          << "}  # as the nodes advertise them" << (rdma.empty() ? "; no RDMA resource" : "")
          << "\n";
    }
    if (!island.labels.empty()) {
      out << q << "labels:\n";
      for (const auto& [key, value] : island.labels) {
        out << q << "  " << yaml_string(key) << ": " << yaml_string(value) << '\n';
      }
    }
  }
  return out.str();
}

}  // namespace hetplan::importers
