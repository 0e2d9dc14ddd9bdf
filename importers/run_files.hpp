// What a file from the user's own runs is, from a glance at its text: so that a command handed
// the wrong kind of file (`hetplan check` given a training log, `validate --bundle` given an
// nccl-tests log) says what the file is and which command reads it, instead of a YAML error
// about its first odd line. `hetplan import` reads every kind (docs/import.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hetplan::importers {

enum class RunFile { training_log, torch_trace, collective_log, kubectl_nodes };

// The kind, when the text carries its markers: Megatron-style iteration lines, a profiler
// trace's traceEvents, nccl-tests / rccl-tests / hccl_test headers (text, or nccl-tests -J JSON
// with its nccl_version), a kubectl node list. Nothing else is recognised.
std::optional<RunFile> recognise_run_file(std::string_view text);

// "a training log (Megatron-LM, MindSpeed-LLM or Megatron-DeepSpeed); `hetplan import` reads it
// and `hetplan validate --run` compares it with a plan": what the file is and what reads it.
std::string describe(RunFile kind);

}  // namespace hetplan::importers
