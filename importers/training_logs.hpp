// Training logs of Megatron-LM, MindSpeed-LLM and Megatron-DeepSpeed: the periodic iteration lines
// ("iteration 10/ 500000 | consumed samples: ... | elapsed time per iteration (ms): ... |"), the
// argument dump ("  name ........ value" between the "arguments" rulers) and the
// "using world size: ..." line. Every other line is ignored.
//
// Values are SI: seconds, bytes, FLOP per second, tokens and samples per second. A line
// reporting iteration N with a log interval of K carries averages over the K iterations
// that end at N, as the frameworks print them.
//
// Malformed input (a recognised line with an unreadable value, a log without iteration lines, an
// oversized file) is an InputError naming file:line:column, the field and what was expected.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace hetplan::importers {

// One iteration line.
struct Iteration {
  int iteration = 0;         // the N of "iteration N/ M"
  int total_iterations = 0;  // the M: the planned number of iterations
  double elapsed_s = 0;      // wall time per iteration ("elapsed time per iteration (ms|s)")
  // Achieved model FLOP/s per GPU: "throughput per GPU (TFLOP/s/GPU)" (Megatron-LM) or
  // "TFLOPs" (Megatron-DeepSpeed), converted from TFLOP/s.
  std::optional<double> flops_per_gpu;
  // Tokens per second for the whole job: "tokens/s" where printed (MindSpeed-LLM); otherwise
  // derived from the previous iteration line, see tokens_per_s_derived.
  std::optional<double> tokens_per_s;
  // True when tokens_per_s was not printed but derived: the growth of "consumed tokens" (or of
  // "consumed samples" times the seq_length argument) since the previous iteration line, divided
  // by the iterations in between and by elapsed_s.
  bool tokens_per_s_derived = false;
  std::optional<double> samples_per_s;  // "samples per second" (Megatron-DeepSpeed)
  std::optional<double> learning_rate;
  std::optional<double> loss;  // "lm loss" (or "loss"); may be NaN or infinite when printed so
  std::optional<double> loss_scale;  // fp16 dynamic loss scale
  std::optional<double> grad_norm;   // may be NaN or infinite when printed so
  // Peak allocated device memory: "max_memory_allocated(GB)" (MindSpeed-LLM, GiB: bytes / 1024^3).
  std::optional<double> max_memory_bytes;
  std::optional<long long> consumed_samples;
  std::optional<long long> consumed_tokens;
  std::optional<int> global_batch;  // "global batch size"
  int skipped = 0;          // "number of skipped iterations" in the interval (loss-scale skips)
  int nan_iterations = 0;   // "number of nan iterations" in the interval
  SourceLocation location;  // the word "iteration" of the line
};

struct TrainingLog {
  // "megatron-lm", "mindspeed-llm" or "megatron-deepspeed", sniffed from the first iteration
  // line: "(s)" elapsed time, "samples per second" or "TFLOPs" mean Megatron-DeepSpeed; a ">>"
  // logger prefix, "tokens/s" or "max_memory_allocated(GB)" mean MindSpeed-LLM; otherwise
  // Megatron-LM.
  std::string framework;
  // Megatron's argument dump, name (as printed, with underscores: "tensor_model_parallel_size")
  // to value text ("4", "None", "['a', 'b']"). Empty when the log has none.
  std::map<std::string, std::string> arguments;
  // From the arguments (world_size, tensor_model_parallel_size, pipeline_model_parallel_size,
  // data_parallel_size, micro_batch_size, global_batch_size, seq_length; "None" leaves them
  // empty), else from the "using world size: ..." line (the first four), else global_batch from
  // the first iteration line's "global batch size".
  std::optional<int> world_size, tp, pp, dp, micro_batch, global_batch, seq_len;
  std::vector<Iteration> iterations;  // in file order
};

// Parses the text of a training log; file_name is used in error messages only.
TrainingLog parse_training_log(const std::string& text, const std::string& file_name);

// Reads and parses a training log (at most 64 MiB).
TrainingLog import_training_log(const std::string& path);

struct IterationSummary {
  int count = 0;  // iteration lines summarised; the medians are 0 / empty when 0
  double median_elapsed_s = 0;
  std::optional<double> median_flops_per_gpu;  // over the lines that report it
  std::optional<double> median_tokens_per_s;   // over the lines that report or derive it
};

// Medians over the iteration lines after the first skip_first lines (warm-up), leaving out the
// lines whose interval had skipped (loss-scale overflow) or NaN iterations.
IterationSummary summarize(const TrainingLog& log, int skip_first = 1);

}  // namespace hetplan::importers
