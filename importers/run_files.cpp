#include "importers/run_files.hpp"

#include "importers/collective_logs.hpp"

namespace hetplan::importers {

std::optional<RunFile> recognise_run_file(std::string_view text) {
  const auto has = [&](std::string_view marker) { return text.find(marker) != std::string_view::npos; };
  if (has("\"items\"") && (has("\"NodeList\"") || has("\"kind\": \"List\"") || has("\"kind\":\"List\"")))
    return RunFile::kubectl_nodes;
  if (has("\"traceEvents\"")) return RunFile::torch_trace;
  if (const auto format = sniff_collective_log(text)) {
    // Any JSON starts with `{`: nccl-tests' -J output also names its NCCL version.
    if (*format != CollectiveLogFormat::nccl_tests_json || has("\"nccl_version\""))
      return RunFile::collective_log;
  }
  if (has("elapsed time per iteration")) return RunFile::training_log;
  return std::nullopt;
}

std::string describe(RunFile kind) {
  switch (kind) {
    case RunFile::training_log:
      return "a training log (Megatron-LM, MindSpeed-LLM or Megatron-DeepSpeed iteration lines); "
             "`hetplan import` reads it and `hetplan validate --run` compares it with a plan";
    case RunFile::torch_trace:
      return "a PyTorch profiler trace; `hetplan import` reads it";
    case RunFile::collective_log:
      return "a collective benchmark log (nccl-tests, rccl-tests or hccl_test); `hetplan import` "
             "reads it and `hetplan calibrate PROFILE --from` fits a profile to it";
    case RunFile::kubectl_nodes:
      return "a kubectl node list; `hetplan inventory import` makes a cluster file of it";
  }
  return "a file of another kind";
}

}  // namespace hetplan::importers
