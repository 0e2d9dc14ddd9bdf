#include "validation/published_runs.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "core/error.hpp"
#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "sim/estimator.hpp"

namespace hetplan::validation {
namespace {

// One case with `common` merged in, as plain values.
struct CaseConfig {
  std::string id;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, seq_len = 0;
  bool gpt_style = false;  // ffn written as "4h" or equal to 4 x hidden: GPT-2/Megatron GPT
  int global_batch = 0, micro_batch = 1;
  std::string dtype = "fp16", recompute = "none";
  int tp = 1, pp = 1, dp = 1, vpp = 1;
  bool sp = false;
  int chips = 0;
  YAML::Node measured;
};

[[noreturn]] void fail(const std::string& file, const YAML::Node& node, const std::string& field,
                       const std::string& message) {
  const YAML::Mark mark = node.Mark();
  throw InputError({file, mark.is_null() ? 0 : mark.line + 1, mark.is_null() ? 0 : mark.column + 1},
                   field, message);
}

int integer(const std::string& file, const YAML::Node& node, const std::string& field) {
  try {
    return node.as<int>();
  } catch (const YAML::Exception&) {
    fail(file, node, field, "expected an integer");
  }
}

void apply(const std::string& file, const YAML::Node& section, CaseConfig& c) {
  if (!section || !section.IsMap()) return;
  if (auto model = section["model"]) {
    for (const auto& kv : model) {
      const std::string key = kv.first.as<std::string>();
      const YAML::Node& value = kv.second;
      const std::string field = "model." + key;
      if (key == "layers")
        c.layers = integer(file, value, field);
      else if (key == "hidden")
        c.hidden = integer(file, value, field);
      else if (key == "heads")
        c.heads = integer(file, value, field);
      else if (key == "kv_heads")
        c.kv_heads = integer(file, value, field);
      else if (key == "vocab")
        c.vocab = integer(file, value, field);
      else if (key == "seq_len")
        c.seq_len = integer(file, value, field);
      else if (key == "ffn") {
        if (value.IsScalar() && value.Scalar() == "4h")
          c.ffn = -4;
        else
          c.ffn = integer(file, value, field);
      }
    }
  }
  if (auto training = section["training"]) {
    if (training["global_batch"])
      c.global_batch = integer(file, training["global_batch"], "training.global_batch");
    if (training["micro_batch"])
      c.micro_batch = integer(file, training["micro_batch"], "training.micro_batch");
    if (training["dtype"]) c.dtype = training["dtype"].as<std::string>();
    if (training["recompute"]) c.recompute = training["recompute"].as<std::string>();
  }
  if (auto parallel = section["parallel"]) {
    if (parallel["tp"]) c.tp = integer(file, parallel["tp"], "parallel.tp");
    if (parallel["pp"]) c.pp = integer(file, parallel["pp"], "parallel.pp");
    if (parallel["dp"]) c.dp = integer(file, parallel["dp"], "parallel.dp");
    if (parallel["vpp"]) c.vpp = integer(file, parallel["vpp"], "parallel.vpp");
    if (parallel["sp"]) c.sp = parallel["sp"].as<bool>();
  }
}

// The chip profile a published hardware description names. A800 is A100 silicon with NVLink
// limited to 400 GB/s (200 GB/s each way), which the source states.
struct HardwareMatch {
  std::string profile;
  std::optional<double> intra_node_bandwidth;
};

HardwareMatch match_hardware(const std::string& chip) {
  if (chip.find("A800") != std::string::npos) return {"nvidia-a100-sxm4-80gb", 200e9};
  if (chip.find("A100") != std::string::npos) return {"nvidia-a100-sxm4-80gb", std::nullopt};
  if (chip.find("H100") != std::string::npos) return {"nvidia-h100-sxm5-80gb", std::nullopt};
  if (chip.find("910B") != std::string::npos) return {"ascend-910b", std::nullopt};
  return {};
}

// "8x 200 Gb/s HDR InfiniBand per node" -> 8 NICs of 200 Gb/s.
void parse_network(const std::string& text, Island& island) {
  static const std::regex with_count(R"((\d+)\s*x\s*(\d+)\s*Gb/s)");
  static const std::regex speed_only(R"((\d+)\s*Gb/s)");
  std::smatch match;
  if (std::regex_search(text, match, with_count)) {
    island.nic_count = std::stoi(match[1]);
    island.nic_speed = std::stod(match[2]) * 1e9 / 8;
  } else if (std::regex_search(text, match, speed_only)) {
    island.nic_count = 1;
    island.nic_speed = std::stod(match[1]) * 1e9 / 8;
  }
}

double megatron_flops(const CaseConfig& c) {
  // Megatron-LM's reported FLOPs per iteration (Narayanan et al. 2021, eq. 3): the forward
  // pass counted once more under full recompute, logits once.
  const double b = c.global_batch, s = c.seq_len, l = c.layers, h = c.hidden, v = c.vocab;
  const double passes = c.recompute == "full" ? 4.0 : 3.0;
  return passes * 24.0 * b * s * l * h * h * (1.0 + s / (6.0 * h)) + 6.0 * b * s * h * v;
}

CaseResult run_case(const std::string& file, const std::string& stem, const YAML::Node& root,
                    const CaseConfig& c, const std::string& profiles_folder) {
  CaseResult result;
  result.file = stem;
  result.id = c.id;
  const YAML::Node hardware = root["hardware"];
  const std::string chip_text =
      hardware && hardware["chip"] ? hardware["chip"].as<std::string>() : "";
  const HardwareMatch match = match_hardware(chip_text);
  if (match.profile.empty())
    fail(file, hardware, "hardware.chip",
         "expected a chip hetplan has a profile for, got \"" + chip_text + "\"");

  Cluster cluster;
  cluster.name = stem;
  cluster.fabric.kind = FabricKind::infiniband;
  cluster.fabric.topology = FabricTopology::leaf_spine;
  cluster.fabric.leaf_uplink_speed = 400e9 / 8;
  cluster.fabric.switch_latency = 0.6e-6;
  cluster.fabric.zones = {"main"};
  ChipProfile chip = formats::load_chip(profiles_folder + "/" + match.profile + ".yaml");
  if (match.intra_node_bandwidth) chip.intra_node.bandwidth = match.intra_node_bandwidth;
  cluster.chips.push_back(chip);
  Island island;
  island.name = "main";
  island.chips_per_node = hardware["chips_per_node"]
                              ? integer(file, hardware["chips_per_node"], "hardware.chips_per_node")
                              : chip.chips_per_node.value_or(8);
  island.nodes = std::max(1, (c.chips + island.chips_per_node - 1) / island.chips_per_node);
  island.nic_count = chip.nic_count.value_or(1);
  island.nic_speed = chip.nic_speed.value_or(25e9);
  if (hardware["network"]) parse_network(hardware["network"].as<std::string>(), island);
  island.runtime = chip.runtime;
  island.zone = "main";
  island.nodes_per_leaf = island.nodes;
  cluster.islands.push_back(island);

  Workload workload;
  workload.name = c.id;
  ModelShape& m = workload.model;
  m.model_type = c.gpt_style ? "gpt2" : "llama";
  m.layers = c.layers;
  m.hidden = c.hidden;
  m.heads = c.heads;
  m.kv_heads = c.kv_heads > 0 ? c.kv_heads : c.heads;
  m.ffn = c.ffn == -4 ? 4 * c.hidden : c.ffn;
  m.vocab = c.vocab;
  m.max_positions = c.seq_len;
  if (c.gpt_style) {
    // Megatron GPT of 2021-22: GeLU, LayerNorm, biases, dropout, learned positions, tied
    // embeddings, no fused attention.
    m.activation = Activation::gelu;
    m.norm = Norm::layernorm;
    m.linear_bias = true;
    m.dropout = true;
    m.learned_positions = true;
    m.tied_embeddings = true;
  } else {
    m.activation = Activation::swiglu;
    m.norm = Norm::rmsnorm;
    m.linear_bias = false;
    m.dropout = false;
    m.tied_embeddings = false;
  }
  TrainingSettings& t = workload.training;
  t.seq_len = c.seq_len;
  t.global_batch = c.global_batch;
  t.micro_batch = c.micro_batch;
  t.dtype = dtype_from_string(c.dtype).value_or(DType::fp16);
  t.fp32_grad_accumulation = true;
  t.recompute = c.recompute == "full"        ? Recompute::full
                : c.recompute == "selective" ? Recompute::selective
                                             : Recompute::none;
  t.sequence_parallel = c.sp;
  t.flash_attention = !c.gpt_style;
  const std::string notes =
      root["common"] && root["common"]["notes"] ? root["common"]["notes"].as<std::string>() : "";
  t.zero_stage = notes.find("distributed optimizer") != std::string::npos ? 1 : 0;

  Plan plan;
  plan.name = c.id;
  plan.virtual_stages = c.vpp;
  plan.schedule = c.vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  int first = 0;
  for (int i = 0; i < c.pp; ++i) {
    PlanStage stage;
    stage.island = "main";
    stage.first_layer = first;
    stage.num_layers = c.layers / c.pp + (i < c.layers % c.pp ? 1 : 0);
    stage.tp = c.tp;
    stage.dp = c.dp;
    first += stage.num_layers;
    plan.stages.push_back(stage);
  }
  formats::check_plan_references(plan, cluster, workload);

  const sim::Estimate estimate = sim::estimate_step(cluster, workload, plan);
  result.feasible = estimate.feasible;
  result.reasons = estimate.reasons;
  for (const auto& stage : estimate.stages) {
    result.predicted_memory_gib =
        std::max(result.predicted_memory_gib, stage.memory.total() / (1ull << 30));
  }
  if (c.measured["memory_gib"]) result.measured_memory_gib = c.measured["memory_gib"].as<double>();

  const YAML::Node& measured = c.measured;
  if (measured["out_of_memory"]) {
    result.metric = "out_of_memory";
    bool memory_reason = false;
    for (const auto& reason : estimate.reasons)
      memory_reason |= reason.find("per chip") != std::string::npos;
    result.correct = !estimate.feasible && memory_reason;
    return result;
  }
  if (measured["step_time_s"]) {
    result.metric = "step_time_s";
    result.measured = measured["step_time_s"].as<double>();
    result.predicted = estimate.step_time_s;
  } else if (measured["tokens_per_s_per_chip"]) {
    result.metric = "tokens_per_s_per_chip";
    result.measured = measured["tokens_per_s_per_chip"].as<double>();
    result.predicted = estimate.tokens_per_s / c.chips;
  } else if (measured["tflops_per_chip"]) {
    result.metric = "tflops_per_chip";
    result.measured = measured["tflops_per_chip"].as<double>();
    result.predicted =
        estimate.step_time_s > 0 ? megatron_flops(c) / (estimate.step_time_s * c.chips) / 1e12 : 0;
  } else {
    fail(file, measured, "measured",
         "expected step_time_s, tokens_per_s_per_chip, tflops_per_chip or out_of_memory");
  }
  result.error = (result.predicted - result.measured) / result.measured;
  result.correct = estimate.feasible;
  return result;
}

}  // namespace

ValidationReport validate_published_runs(const std::string& folder,
                                         const std::string& profiles_folder) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  if (error) throw InputError({folder, 0, 0}, "", "cannot list the folder: " + error.message());
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw InputError({folder, 0, 0}, "", "expected published-run files (*.yaml), found none");

  ValidationReport report;
  for (const auto& path : files) {
    const std::string file = path.string();
    const YAML::Node root = formats::parse_document(formats::read_text_file(file), file);
    const YAML::Node cases = root["cases"];
    if (!cases || !cases.IsSequence()) fail(file, root, "cases", "expected a list of cases");
    for (const auto& node : cases) {
      try {
        CaseConfig c;
        apply(file, root["common"], c);
        apply(file, node, c);
        c.id = node["id"] ? node["id"].as<std::string>() : "?";
        c.chips = node["chips"] ? integer(file, node["chips"], "chips") : c.tp * c.pp * c.dp;
        c.gpt_style = c.ffn == -4 || c.ffn == 4 * c.hidden;
        c.measured = node["measured"];
        if (!c.measured) fail(file, node, "measured", "missing required key");
        if (c.layers <= 0 || c.hidden <= 0 || c.heads <= 0 || c.vocab <= 0 || c.seq_len <= 0 ||
            c.global_batch <= 0) {
          fail(file, node, "model",
               "expected layers, hidden, heads, vocab, seq_len and global_batch");
        }
        report.cases.push_back(run_case(file, path.stem().string(), root, c, profiles_folder));
      } catch (const YAML::Exception& bad) {
        // A value of the wrong type somewhere in the case.
        fail(file, node, "cases", "expected the published-run case format (" + bad.msg + ")");
      }
    }
  }
  double sum = 0;
  int count = 0;
  for (const auto& r : report.cases) {
    if (r.metric == "out_of_memory") {
      ++report.oom_cases;
      report.oom_correct += r.correct ? 1 : 0;
      continue;
    }
    sum += std::fabs(r.error);
    ++count;
    if (std::fabs(r.error) > std::fabs(report.worst_error)) {
      report.worst_error = r.error;
      report.worst_case = r.id;
    }
  }
  report.mean_absolute_error = count > 0 ? sum / count : 0;
  return report;
}

std::string report_text(const ValidationReport& report) {
  std::string out =
      "file                          case               metric                 measured   "
      "predicted    error  memory pred/meas GiB\n";
  char line[512];
  for (const auto& r : report.cases) {
    if (r.metric == "out_of_memory") {
      std::snprintf(line, sizeof line, "%-29s %-18s %-20s %10s %11s %8s  %5.1f / -\n",
                    r.file.c_str(), r.id.c_str(), r.metric.c_str(), "OOM",
                    r.feasible ? "fits" : "OOM", r.correct ? "ok" : "WRONG",
                    r.predicted_memory_gib);
    } else {
      std::snprintf(line, sizeof line, "%-29s %-18s %-20s %10.4g %11.4g %+7.1f%%  %5.1f / %s\n",
                    r.file.c_str(), r.id.c_str(), r.metric.c_str(), r.measured, r.predicted,
                    100 * r.error, r.predicted_memory_gib,
                    r.measured_memory_gib > 0
                        ? std::to_string(static_cast<int>(r.measured_memory_gib)).c_str()
                        : "-");
    }
    out += line;
    if (!r.feasible && r.metric != "out_of_memory") {
      for (const auto& reason : r.reasons) out += "    infeasible: " + reason + "\n";
    }
  }
  std::snprintf(line, sizeof line,
                "mean absolute error %.1f%% over %zu cases; worst %s at %+.1f%%; out-of-memory "
                "cases predicted %d/%d\n",
                100 * report.mean_absolute_error,
                report.cases.size() - static_cast<std::size_t>(report.oom_cases),
                report.worst_case.c_str(), 100 * report.worst_error, report.oom_correct,
                report.oom_cases);
  out += line;
  return out;
}

nlohmann::ordered_json report_json(const ValidationReport& report) {
  nlohmann::ordered_json j;
  auto& cases = j["cases"] = nlohmann::ordered_json::array();
  for (const auto& r : report.cases) {
    cases.push_back({{"file", r.file},
                     {"id", r.id},
                     {"metric", r.metric},
                     {"measured", r.measured},
                     {"predicted", r.predicted},
                     {"error", r.error},
                     {"feasible", r.feasible},
                     {"correct", r.correct},
                     {"predicted_memory_gib", r.predicted_memory_gib},
                     {"reasons", r.reasons}});
  }
  j["mean_absolute_error"] = report.mean_absolute_error;
  j["worst_case"] = report.worst_case;
  j["worst_error"] = report.worst_error;
  j["oom_cases"] = report.oom_cases;
  j["oom_correct"] = report.oom_correct;
  return j;
}

}  // namespace hetplan::validation
