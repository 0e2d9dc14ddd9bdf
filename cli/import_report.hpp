// `hetplan import FILE`: what a file from the user's own runs is and what it holds — a training
// log (Megatron-LM, MindSpeed-LLM, Megatron-DeepSpeed), a PyTorch profiler trace, or an
// nccl-tests / hccl_test log — as text or JSON. docs/import.md.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace hetplan::cli {

// Reads and recognises the file and summarises it. Throws InputError on a file that is none of
// these kinds or is malformed.
nlohmann::ordered_json import_summary(const std::string& path);

// The summary as lines of text.
std::string import_text(const nlohmann::ordered_json& summary);

}  // namespace hetplan::cli
