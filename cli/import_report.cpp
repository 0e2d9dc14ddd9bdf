#include "cli/import_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "cli/report.hpp"
#include "core/error.hpp"
#include "formats/document.hpp"
#include "importers/collective_logs.hpp"
#include "importers/k8s_inventory.hpp"
#include "importers/run_files.hpp"
#include "importers/torch_trace.hpp"
#include "importers/training_logs.hpp"

namespace hetplan::cli {
namespace {

using Json = nlohmann::ordered_json;

Json optional_number(const std::optional<double>& value) {
  return value && std::isfinite(*value) ? Json(round6(*value)) : Json(nullptr);
}

Json optional_int(const std::optional<int>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json training_summary(const importers::TrainingLog& log) {
  Json j;
  j["kind"] = "training-log";
  j["framework"] = log.framework;
  j["world_size"] = optional_int(log.world_size);
  j["tp"] = optional_int(log.tp);
  j["pp"] = optional_int(log.pp);
  j["dp"] = optional_int(log.dp);
  j["micro_batch"] = optional_int(log.micro_batch);
  j["global_batch"] = optional_int(log.global_batch);
  j["seq_len"] = optional_int(log.seq_len);
  j["iteration_lines"] = log.iterations.size();
  const importers::IterationSummary summary = importers::summarize(log);
  j["summarised_lines"] = summary.count;
  j["median_iteration_s"] = summary.count > 0 ? Json(round6(summary.median_elapsed_s)) : Json(nullptr);
  // The spread of the lines the median is over (after the first, the warm-up).
  std::vector<double> elapsed;
  for (std::size_t i = 1; i < log.iterations.size(); ++i) elapsed.push_back(log.iterations[i].elapsed_s);
  if (elapsed.empty() && !log.iterations.empty()) elapsed.push_back(log.iterations[0].elapsed_s);
  if (!elapsed.empty()) {
    j["min_iteration_s"] = round6(*std::min_element(elapsed.begin(), elapsed.end()));
    j["max_iteration_s"] = round6(*std::max_element(elapsed.begin(), elapsed.end()));
  }
  j["median_tokens_per_s"] = optional_number(summary.median_tokens_per_s);
  j["median_tflops_per_gpu"] =
      summary.median_flops_per_gpu ? Json(round6(*summary.median_flops_per_gpu / 1e12)) : Json(nullptr);
  std::optional<double> first_loss, last_loss, memory;
  for (const auto& it : log.iterations) {
    if (it.loss && std::isfinite(*it.loss)) {
      if (!first_loss) first_loss = it.loss;
      last_loss = it.loss;
    }
    if (it.max_memory_bytes) memory = std::max(memory.value_or(0.0), *it.max_memory_bytes);
  }
  j["first_loss"] = optional_number(first_loss);
  j["last_loss"] = optional_number(last_loss);
  j["peak_memory_gib"] = memory ? Json(round6(*memory / (1ull << 30))) : Json(nullptr);
  return j;
}

Json trace_summary(const importers::TorchTrace& trace) {
  Json j;
  j["kind"] = "torch-profiler-trace";
  j["devices"] = trace.devices;
  j["rank"] = trace.rank ? Json(*trace.rank) : Json(nullptr);
  j["span_s"] = round6(trace.span_s);
  double kernel_total = 0;
  for (const auto& op : trace.kernels) kernel_total += op.total_s;
  j["kernel_time_s"] = round6(kernel_total);
  auto ops = [](const std::vector<importers::TraceOp>& list) {
    Json out = Json::array();
    for (std::size_t i = 0; i < list.size() && i < 10; ++i) {
      out.push_back({{"name", list[i].name},
                     {"count", list[i].count},
                     {"total_s", round6(list[i].total_s)},
                     {"max_s", round6(list[i].max_s)}});
    }
    return out;
  };
  j["top_kernels"] = ops(trace.kernels);
  j["top_cpu_ops"] = ops(trace.cpu_ops);
  return j;
}

Json collective_summary(const std::vector<importers::CollectiveSweep>& sweeps) {
  Json j;
  j["kind"] = "collective-benchmark";
  j["sweeps"] = Json::array();
  for (const auto& sweep : sweeps) {
    double best = 0;
    for (const auto& p : sweep.points) {
      for (const auto& bw : {p.out_of_place_busbw, p.in_place_busbw, p.out_of_place_algbw})
        if (bw && std::isfinite(*bw)) best = std::max(best, *bw);
    }
    j["sweeps"].push_back({{"tool", sweep.tool},
                           {"version", sweep.version},
                           {"collective", sweep.collective},
                           {"ranks", sweep.ranks},
                           {"points", sweep.points.size()},
                           {"best_bus_bandwidth_gbps", round6(best / 1e9)}});
  }
  return j;
}

}  // namespace

Json import_summary(const std::string& path) {
  const std::string text = formats::read_text_file(path);
  Json j;
  j["file"] = path;
  Json body;
  auto kind = importers::recognise_run_file(text);
  // Any other JSON is read as nccl-tests -J output, so that a damaged one gets that reader's
  // located error rather than "expected a training log ...".
  if (!kind && importers::sniff_collective_log(text)) kind = importers::RunFile::collective_log;
  if (!kind) {
    throw InputError({path, 1, 1}, "",
                     "expected a training log (Megatron-LM, MindSpeed-LLM or Megatron-DeepSpeed "
                     "iteration lines), a PyTorch profiler trace (traceEvents) or an nccl-tests / "
                     "hccl_test log");
  }
  switch (*kind) {
    case importers::RunFile::kubectl_nodes: {
      const importers::Inventory inventory = importers::parse_kubectl_nodes(text, path);
      body["kind"] = "kubectl-nodes";
      std::size_t nodes = inventory.other_nodes.size();
      body["islands"] = Json::array();
      for (const auto& island : inventory.islands) {
        nodes += static_cast<std::size_t>(island.nodes);
        body["islands"].push_back({{"name", island.name},
                                   {"chip", island.chip_id},
                                   {"resource", island.resource},
                                   {"nodes", island.nodes},
                                   {"free_nodes", island.free_nodes}});
      }
      body["nodes"] = nodes;
      body["other_nodes"] = inventory.other_nodes.size();
      break;
    }
    case importers::RunFile::torch_trace:
      body = trace_summary(importers::parse_torch_trace(text, path));
      break;
    case importers::RunFile::collective_log:
      body = collective_summary(importers::import_collective_log(path));
      break;
    case importers::RunFile::training_log:
      body = training_summary(importers::parse_training_log(text, path));
      break;
  }
  for (auto& [key, value] : body.items()) j[key] = value;
  return j;
}

std::string import_text(const Json& j) {
  std::string out = j["file"].get<std::string>() + ": ";
  auto num = [](const Json& value, int precision) {
    return value.is_number() ? fixed(value.get<double>(), precision) : std::string("-");
  };
  auto integer = [](const Json& value) {
    return value.is_number() ? std::to_string(value.get<long long>()) : std::string("-");
  };
  const std::string kind = j["kind"];
  if (kind == "kubectl-nodes") {
    out += "kubectl node list, " + integer(j["nodes"]) + " nodes (" + integer(j["other_nodes"]) +
           " without accelerators); `hetplan inventory import` makes it a cluster file\n";
    for (const auto& island : j["islands"]) {
      out += "  " + island["name"].get<std::string>() + ": " + integer(island["nodes"]) +
             " nodes (" + integer(island["free_nodes"]) + " free) of " +
             island["chip"].get<std::string>() + " (" + island["resource"].get<std::string>() +
             ")\n";
    }
  } else if (kind == "training-log") {
    out += j["framework"].get<std::string>() + " training log\n";
    out += "  layout: world " + integer(j["world_size"]) + ", tp " + integer(j["tp"]) + ", pp " +
           integer(j["pp"]) + ", dp " + integer(j["dp"]) + "; micro-batch " +
           integer(j["micro_batch"]) + ", global batch " + integer(j["global_batch"]) +
           ", sequence " + integer(j["seq_len"]) + "\n";
    out += "  iterations: " + integer(j["iteration_lines"]) + " lines, median " +
           num(j["median_iteration_s"], 3) + " s over " + integer(j["summarised_lines"]) +
           " after warm-up (range " + num(j.value("min_iteration_s", Json()), 3) + " to " +
           num(j.value("max_iteration_s", Json()), 3) + " s)\n";
    out += "  throughput: " + num(j["median_tokens_per_s"], 0) + " tokens/s, " +
           num(j["median_tflops_per_gpu"], 1) + " TFLOP/s per GPU\n";
    out += "  loss: " + num(j["first_loss"], 4) + " -> " + num(j["last_loss"], 4) +
           "; peak memory " + num(j["peak_memory_gib"], 2) + " GiB\n";
  } else if (kind == "torch-profiler-trace") {
    // Devices as "name x count", in their order.
    std::vector<std::pair<std::string, int>> counted;
    for (const auto& d : j["devices"]) {
      const std::string name = d.get<std::string>();
      if (!counted.empty() && counted.back().first == name)
        ++counted.back().second;
      else
        counted.push_back({name, 1});
    }
    std::string devices;
    for (const auto& [name, count] : counted)
      devices += (devices.empty() ? "" : ", ") + name + (count > 1 ? " x" + std::to_string(count) : "");
    out += "PyTorch profiler trace" + (devices.empty() ? std::string() : " of " + devices) +
           (j["rank"].is_number() ? ", rank " + integer(j["rank"]) : std::string()) + "\n";
    out += "  span " + num(j["span_s"], 6) + " s, kernels " + num(j["kernel_time_s"], 6) + " s\n";
    for (const char* list : {"top_kernels", "top_cpu_ops"}) {
      out += std::string("  ") + (std::string(list) == "top_kernels" ? "kernels" : "CPU operators") +
             " by total time:\n";
      for (const auto& op : j[list]) {
        char line[512];
        std::snprintf(line, sizeof line, "    %10.6f s %6lld x  %s\n", op["total_s"].get<double>(),
                      op["count"].get<long long>(), op["name"].get<std::string>().c_str());
        out += line;
      }
    }
  } else {
    out += "collective benchmark\n";
    for (const auto& s : j["sweeps"]) {
      out += "  " + s["tool"].get<std::string>() + " " + s["version"].get<std::string>() + ": " +
             (s["collective"].get<std::string>().empty() ? std::string("?") : s["collective"].get<std::string>()) +
             " over " + integer(s["ranks"]) + " ranks, " + integer(s["points"]) +
             " sizes, best bus bandwidth " + num(s["best_bus_bandwidth_gbps"], 1) + " GB/s\n";
    }
  }
  return out;
}

}  // namespace hetplan::cli
