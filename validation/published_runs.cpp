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
#include "sim/twin_input.hpp"

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

constexpr double kFlopsPerTflop = 1e12;

double megatron_flops(const CaseConfig& c) {
  // Megatron-LM's reported FLOPs per iteration (Narayanan et al. 2021, eq. 3): the forward
  // pass counted once more under full recompute, logits once.
  const double b = c.global_batch, s = c.seq_len, l = c.layers, h = c.hidden, v = c.vocab;
  const double passes = c.recompute == "full" ? 4.0 : 3.0;
  return passes * 24.0 * b * s * l * h * h * (1.0 + s / (6.0 * h)) + 6.0 * b * s * h * v;
}

// A case's metric from a predicted step time, as the source reports it: the step time itself,
// tokens/s per chip, or TFLOP/s per chip by Megatron's formula. The estimator's and the twin's
// step times both go through here.
double metric_from_step(const CaseConfig& c, const std::string& metric, double step_time_s) {
  if (metric == "step_time_s") return step_time_s;
  if (step_time_s <= 0) return 0;
  if (metric == "tokens_per_s_per_chip")
    return static_cast<double>(c.global_batch) * c.seq_len / step_time_s / c.chips;
  return megatron_flops(c) / (step_time_s * c.chips) / kFlopsPerTflop;  // tflops_per_chip
}

// A case as predicted by the estimator, with what the twin needs to predict it too.
struct PreparedCase {
  CaseResult result;
  CaseConfig config;
  std::optional<sim::TwinInput> twin;  // the plan lowered onto its cluster, to simulate
};

PreparedCase run_case(const std::string& file, const std::string& stem, const YAML::Node& root,
                      const CaseConfig& c, const std::string& profiles_folder,
                      bool lower_for_twin) {
  PreparedCase prepared;
  prepared.config = c;
  CaseResult& result = prepared.result;
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
    return prepared;
  }
  for (const char* metric : {"step_time_s", "tokens_per_s_per_chip", "tflops_per_chip"}) {
    if (measured[metric]) {
      result.metric = metric;
      result.measured = measured[metric].as<double>();
      break;
    }
  }
  if (result.metric.empty()) {
    fail(file, measured, "measured",
         "expected step_time_s, tokens_per_s_per_chip, tflops_per_chip or out_of_memory");
  }
  result.predicted = metric_from_step(c, result.metric, estimate.step_time_s);
  result.error = (result.predicted - result.measured) / result.measured;
  result.correct = estimate.feasible;
  if (lower_for_twin) {
    if (estimate.feasible) {
      prepared.twin = sim::make_twin_input(cluster, workload, plan, estimate, sim::TwinOptions{});
    } else {
      result.twin_not_simulated = "the estimator says the plan cannot run";
    }
  }
  return prepared;
}

// Simulates the prepared cases' plans, all in one pool of workers, and records each one's
// prediction, or why it has none.
void simulate_cases(std::vector<PreparedCase>& prepared, const TwinValidation& twin) {
  std::vector<sim::TwinInput> inputs;
  std::vector<PreparedCase*> simulated;
  for (auto& p : prepared) {
    if (!p.twin) continue;
    const auto problems = sim::check_twin_input(*p.twin);
    if (!problems.empty()) {
      p.result.twin_not_simulated = problems.front();
      continue;
    }
    inputs.push_back(std::move(*p.twin));
    simulated.push_back(&p);
  }
  if (inputs.empty()) return;
  const auto outcomes = sim::twin::run_workers(inputs, twin.worker, twin.parallel);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    CaseResult& r = simulated[i]->result;
    if (!outcomes[i].result) {
      r.twin_not_simulated = outcomes[i].error;
      continue;
    }
    r.twin_predicted =
        metric_from_step(simulated[i]->config, r.metric, outcomes[i].result->step_time_s);
    r.twin_error = (*r.twin_predicted - r.measured) / r.measured;
  }
}

}  // namespace

ValidationReport validate_published_runs(const std::string& folder,
                                         const std::string& profiles_folder,
                                         const ValidationOptions& options) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  if (error) throw InputError({folder, 0, 0}, "", "cannot list the folder: " + error.message());
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw InputError({folder, 0, 0}, "", "expected published-run files (*.yaml), found none");

  std::vector<PreparedCase> prepared;
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
        prepared.push_back(run_case(file, path.stem().string(), root, c, profiles_folder,
                                    options.twin.has_value()));
      } catch (const YAML::Exception& bad) {
        // A value of the wrong type somewhere in the case.
        fail(file, node, "cases", "expected the published-run case format (" + bad.msg + ")");
      }
    }
  }
  if (options.twin) simulate_cases(prepared, *options.twin);

  ValidationReport report;
  report.twin = options.twin.has_value();
  for (auto& p : prepared) report.cases.push_back(std::move(p.result));
  double sum = 0, twin_sum = 0, analytic_sum = 0;
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
    if (!r.twin_predicted) continue;
    ++report.twin_cases;
    twin_sum += std::fabs(r.twin_error);
    analytic_sum += std::fabs(r.error);
    if (std::fabs(r.twin_error) > std::fabs(report.twin_worst_error)) {
      report.twin_worst_error = r.twin_error;
      report.twin_worst_case = r.id;
    }
    if (std::fabs(r.twin_error - r.error) > std::fabs(report.twin_largest_gap)) {
      report.twin_largest_gap = r.twin_error - r.error;
      report.twin_largest_gap_case = r.id;
    }
  }
  report.mean_absolute_error = count > 0 ? sum / count : 0;
  if (report.twin_cases > 0) {
    report.twin_mean_absolute_error = twin_sum / report.twin_cases;
    report.twin_analytic_mean_absolute_error = analytic_sum / report.twin_cases;
  }
  return report;
}

std::string report_text(const ValidationReport& report) {
  char line[512];
  // The twin's columns, after the estimator's error; empty without the twin.
  const auto twin_columns = [&](const char* predicted, const char* error) {
    if (!report.twin) return std::string();
    std::snprintf(line, sizeof line, " %11s %10s", predicted, error);
    return std::string(line);
  };
  std::string out =
      "file                          case               metric                 measured   "
      "predicted    error" +
      twin_columns("twin", "twin error") + "  memory pred/meas GiB\n";
  for (const auto& r : report.cases) {
    std::string twin = twin_columns("-", "-");
    if (r.twin_predicted) {
      std::snprintf(line, sizeof line, " %11.4g %+9.1f%%", *r.twin_predicted, 100 * r.twin_error);
      twin = line;
    }
    if (r.metric == "out_of_memory") {
      std::snprintf(line, sizeof line, "%-29s %-18s %-20s %10s %11s %8s", r.file.c_str(),
                    r.id.c_str(), r.metric.c_str(), "OOM", r.feasible ? "fits" : "OOM",
                    r.correct ? "ok" : "WRONG");
      out += line + twin;
      std::snprintf(line, sizeof line, "  %5.1f / -\n", r.predicted_memory_gib);
    } else {
      std::snprintf(line, sizeof line, "%-29s %-18s %-20s %10.4g %11.4g %+7.1f%%", r.file.c_str(),
                    r.id.c_str(), r.metric.c_str(), r.measured, r.predicted, 100 * r.error);
      out += line + twin;
      std::snprintf(line, sizeof line, "  %5.1f / %s\n", r.predicted_memory_gib,
                    r.measured_memory_gib > 0
                        ? std::to_string(static_cast<int>(r.measured_memory_gib)).c_str()
                        : "-");
    }
    out += line;
    if (!r.feasible && r.metric != "out_of_memory") {
      for (const auto& reason : r.reasons) out += "    infeasible: " + reason + "\n";
    }
    if (!r.twin_not_simulated.empty())
      out += "    twin: not simulated: " + r.twin_not_simulated + "\n";
  }
  std::snprintf(line, sizeof line,
                "mean absolute error %.1f%% over %zu cases; worst %s at %+.1f%%; out-of-memory "
                "cases predicted %d/%d\n",
                100 * report.mean_absolute_error,
                report.cases.size() - static_cast<std::size_t>(report.oom_cases),
                report.worst_case.c_str(), 100 * report.worst_error, report.oom_correct,
                report.oom_cases);
  out += line;
  if (report.twin) {
    const auto not_simulated =
        std::count_if(report.cases.begin(), report.cases.end(),
                      [](const auto& r) { return !r.twin_not_simulated.empty(); });
    std::snprintf(line, sizeof line,
                  "twin: mean absolute error %.1f%% over %d cases (estimator %.1f%% on the same); "
                  "worst %s at %+.1f%%; largest gap to the estimator %s at %+.1f points; "
                  "not simulated %td\n",
                  100 * report.twin_mean_absolute_error, report.twin_cases,
                  100 * report.twin_analytic_mean_absolute_error,
                  report.twin_cases > 0 ? report.twin_worst_case.c_str() : "-",
                  100 * report.twin_worst_error,
                  report.twin_cases > 0 ? report.twin_largest_gap_case.c_str() : "-",
                  100 * report.twin_largest_gap, not_simulated);
    out += line;
  }
  return out;
}

nlohmann::ordered_json report_json(const ValidationReport& report) {
  nlohmann::ordered_json j;
  auto& cases = j["cases"] = nlohmann::ordered_json::array();
  for (const auto& r : report.cases) {
    nlohmann::ordered_json c = {{"file", r.file},           {"id", r.id},
                                {"metric", r.metric},       {"measured", r.measured},
                                {"predicted", r.predicted}, {"error", r.error}};
    if (report.twin) {
      c["twin_predicted"] = r.twin_predicted ? nlohmann::ordered_json(*r.twin_predicted) : nullptr;
      c["twin_error"] = r.twin_predicted ? nlohmann::ordered_json(r.twin_error) : nullptr;
      c["twin_not_simulated"] = r.twin_not_simulated.empty()
                                    ? nlohmann::ordered_json(nullptr)
                                    : nlohmann::ordered_json(r.twin_not_simulated);
    }
    c["feasible"] = r.feasible;
    c["correct"] = r.correct;
    c["predicted_memory_gib"] = r.predicted_memory_gib;
    c["reasons"] = r.reasons;
    cases.push_back(std::move(c));
  }
  j["mean_absolute_error"] = report.mean_absolute_error;
  j["worst_case"] = report.worst_case;
  j["worst_error"] = report.worst_error;
  j["oom_cases"] = report.oom_cases;
  j["oom_correct"] = report.oom_correct;
  if (report.twin) {
    j["twin_cases"] = report.twin_cases;
    j["twin_mean_absolute_error"] = report.twin_mean_absolute_error;
    j["twin_analytic_mean_absolute_error"] = report.twin_analytic_mean_absolute_error;
    j["twin_worst_case"] = report.twin_worst_case;
    j["twin_worst_error"] = report.twin_worst_error;
    j["twin_largest_gap_case"] = report.twin_largest_gap_case;
    j["twin_largest_gap"] = report.twin_largest_gap;
  }
  return j;
}

}  // namespace hetplan::validation
