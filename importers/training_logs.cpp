#include "importers/training_logs.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <limits>
#include <string_view>
#include <system_error>
#include <utility>

#include "core/input_file.hpp"

namespace hetplan::importers {
namespace {

constexpr std::size_t kMaxLogBytes = std::size_t{64} << 20;
constexpr double kSecondsPerMillisecond = 1e-3;
constexpr double kFlopPerSecondPerTflops = 1e12;
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
constexpr long long kMaxInt = std::numeric_limits<int>::max();

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::optional<long long> to_integer(std::string_view text) {
  long long value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

std::optional<double> to_number(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

// Length of a launcher's rank prefix ("[default7]:" from torchrun --tee, "[rank3]:"), or 0.
std::size_t rank_prefix_length(std::string_view line) {
  for (std::string_view opening : {std::string_view("[default"), std::string_view("[rank")}) {
    if (line.substr(0, opening.size()) != opening) continue;
    std::size_t at = opening.size();
    const std::size_t digits_start = at;
    while (at < line.size() && is_digit(line[at])) ++at;
    if (at > digits_start && line.substr(at, 2) == "]:") return at + 2;
  }
  return 0;
}

// One line of the log: its text without the line break, its 1-based number.
struct Line {
  std::string_view text;
  int number = 0;
};

class LogParser {
 public:
  LogParser(const std::string& text, const std::string& file_name)
      : text_(text), file_(file_name) {}

  TrainingLog parse() {
    if (text_.size() > kMaxLogBytes) {
      throw InputError(location_at(file_, text_, kMaxLogBytes), "",
                       "expected a training log of at most 64 MiB, got " +
                           std::to_string(text_.size()) + " bytes");
    }
    std::size_t start = 0;
    int number = 0;
    while (start < text_.size()) {
      std::size_t end = text_.find('\n', start);
      if (end == std::string::npos) end = text_.size();
      std::string_view text(text_.data() + start, end - start);
      if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
      read_line(Line{text, ++number});
      start = end + 1;
    }
    if (log_.iterations.empty()) {
      throw InputError(location_at(file_, text_, text_.size()), "",
                       "expected Megatron-LM, MindSpeed-LLM or Megatron-DeepSpeed iteration lines "
                       "(\" iteration N/ M | ... |\"), got none");
    }
    resolve_parallelism();
    derive_tokens_per_second();
    return std::move(log_);
  }

 private:
  [[noreturn]] void fail(int line_number, std::size_t offset, const std::string& field,
                         const std::string& message) const {
    throw InputError({file_, line_number, static_cast<int>(offset) + 1}, field, message);
  }

  void read_line(const Line& line) {
    const std::size_t body = rank_prefix_length(line.text);
    const std::string_view content = trim(line.text.substr(body));
    // An iteration line also ends an argument dump that lost its closing ruler.
    if (const auto at = iteration_header(line.text, body)) {
      in_arguments_ = false;
      read_iteration(line, body, *at);
      return;
    }
    if (in_arguments_) {
      if (content.find("end of arguments") != std::string_view::npos) {
        in_arguments_ = false;
      } else {
        read_argument(line, body);
      }
      return;
    }
    if (content.size() > 2 && content.front() == '-' && content.back() == '-' &&
        content.find(" arguments ") != std::string_view::npos) {
      in_arguments_ = true;
      return;
    }
    if (content.substr(0, 17) == "using world size:") {
      read_world_size(line, body);
    }
  }

  // "  name ........ value" (Megatron pads the name with dots to 48 columns; a longer name gets
  // none). Lines of the block in any other shape (output of other ranks) are ignored.
  void read_argument(const Line& line, std::size_t body) {
    const std::string_view text = line.text;
    std::size_t at = body;
    const std::size_t indent_start = at;
    while (at < text.size() && text[at] == ' ') ++at;
    if (at == indent_start) return;
    const std::size_t name_start = at;
    while (at < text.size() && !is_space(text[at])) ++at;
    const std::string_view name = text.substr(name_start, at - name_start);
    if (name.empty() || at >= text.size() || text[at] != ' ') return;
    ++at;
    while (at < text.size() && text[at] == '.') ++at;
    if (at < text.size() && text[at] != ' ') return;
    if (at < text.size()) ++at;
    const std::string_view value = trim(text.substr(std::min(at, text.size())));
    log_.arguments.insert_or_assign(std::string(name), std::string(value));
    argument_columns_.insert_or_assign(std::string(name), Position{line, at});
  }

  // "using world size: 64, data-parallel-size: 1, tensor-model-parallel size: 4,
  // pipeline-model-parallel size: 16" (the separators vary between versions).
  void read_world_size(const Line& line, std::size_t body) {
    const std::string_view text = line.text;
    std::size_t at = text.find("using ", body) + 6;
    while (at < text.size()) {
      std::size_t end = text.find(',', at);
      if (end == std::string_view::npos) end = text.size();
      const std::string_view piece = text.substr(at, end - at);
      const std::size_t colon = piece.find(':');
      if (colon != std::string_view::npos) {
        const std::string_view label = trim(piece.substr(0, colon));
        std::size_t value_at = at + colon + 1;
        while (value_at < end && is_space(text[value_at])) ++value_at;
        const std::string_view value = trim(text.substr(value_at, end - value_at));
        std::optional<int>* target = nullptr;
        if (label == "world size") {
          target = &announced_.world_size;
        } else if (label == "data-parallel-size" || label == "data-parallel size") {
          target = &announced_.dp;
        } else if (label == "tensor-model-parallel size" || label == "tensor-model-parallel-size") {
          target = &announced_.tp;
        } else if (label == "pipeline-model-parallel size" ||
                   label == "pipeline-model-parallel-size") {
          target = &announced_.pp;
        }
        if (target != nullptr) {
          const auto number = to_integer(value);
          if (!number || *number < 1 || *number > kMaxInt) {
            fail(line.number, value_at, std::string(label),
                 "expected a positive whole number, got " + hetplan::quoted(value));
          }
          *target = static_cast<int>(*number);
        }
      }
      at = end + 1;
    }
  }

  // Where the iteration line's word "iteration" starts, when the line is one: after a rank
  // prefix, the word comes first or follows a logger prefix ending in "]", ":" or ">>"
  // ("INFO [...] >>  iteration"); a space, "N/ M" and a "|" follow it. Lines that mention
  // iterations otherwise ("validation loss at iteration 100 |", "(after 10 iterations)") are not.
  static std::optional<std::size_t> iteration_header(std::string_view text, std::size_t body) {
    constexpr std::string_view kWord = "iteration";
    const std::size_t at = text.find(kWord, body);
    if (at == std::string_view::npos) return std::nullopt;
    const std::string_view before = trim(text.substr(body, at - body));
    if (!before.empty() && before.back() != ']' && before.back() != ':' &&
        !(before.size() >= 2 && before.substr(before.size() - 2) == ">>")) {
      return std::nullopt;
    }
    const std::size_t after = at + kWord.size();
    if (after >= text.size() || !is_space(text[after])) return std::nullopt;
    const std::size_t bar = text.find('|', after);
    const std::size_t slash = text.find('/', after);
    if (bar == std::string_view::npos || slash == std::string_view::npos || slash > bar) {
      return std::nullopt;
    }
    return at;
  }

  void read_iteration(const Line& line, std::size_t body, std::size_t word_at) {
    const std::string_view text = line.text;
    Iteration it;
    it.location = {file_, line.number, static_cast<int>(word_at) + 1};

    // "N/ M" up to the first bar.
    std::size_t at = word_at + 9;
    while (at < text.size() && is_space(text[at])) ++at;
    const std::size_t bar = text.find('|', at);
    const std::string_view header = trim(text.substr(at, bar - at));
    const std::size_t slash = header.find('/');
    const auto iteration = to_integer(trim(header.substr(0, slash)));
    const auto total = to_integer(trim(header.substr(slash + 1)));
    if (!iteration || !total || *iteration < 0 || *iteration > kMaxInt || *total < 1 ||
        *total > kMaxInt) {
      fail(
          line.number, at, "iteration",
          "expected \"<iteration>/<total iterations>\" in whole numbers, got " + hetplan::quoted(header));
    }
    it.iteration = static_cast<int>(*iteration);
    it.total_iterations = static_cast<int>(*total);

    bool has_elapsed = false;
    bool deepspeed = false;
    bool mindspeed = trim(text.substr(body, word_at - body)).find(">>") != std::string_view::npos;

    // "label: value" segments between bars; labels this importer does not know are skipped.
    std::size_t segment_start = bar + 1;
    while (segment_start < text.size()) {
      std::size_t segment_end = text.find('|', segment_start);
      if (segment_end == std::string_view::npos) segment_end = text.size();
      const std::string_view segment = text.substr(segment_start, segment_end - segment_start);
      const std::size_t colon = segment.find(':');
      if (colon != std::string_view::npos) {
        const std::string label(trim(segment.substr(0, colon)));
        std::size_t value_at = segment_start + colon + 1;
        while (value_at < segment_end && is_space(text[value_at])) ++value_at;
        const Value value{line, value_at, label,
                          trim(text.substr(value_at, segment_end - value_at))};
        if (label == "elapsed time per iteration (ms)") {
          it.elapsed_s = non_negative(value) * kSecondsPerMillisecond;
          has_elapsed = true;
        } else if (label == "elapsed time per iteration (s)") {
          it.elapsed_s = non_negative(value);
          has_elapsed = true;
          deepspeed = true;
        } else if (label == "consumed samples") {
          it.consumed_samples = count(value, std::numeric_limits<long long>::max());
        } else if (label == "consumed tokens") {
          it.consumed_tokens = count(value, std::numeric_limits<long long>::max());
        } else if (label == "throughput per GPU (TFLOP/s/GPU)") {
          it.flops_per_gpu = non_negative(value) * kFlopPerSecondPerTflops;
        } else if (label == "TFLOPs") {
          it.flops_per_gpu = non_negative(value) * kFlopPerSecondPerTflops;
          deepspeed = true;
        } else if (label == "samples per second") {
          it.samples_per_s = non_negative(value);
          deepspeed = true;
        } else if (label == "tokens/s") {
          it.tokens_per_s = non_negative(value);
          mindspeed = true;
        } else if (label == "learning rate") {
          it.learning_rate = non_negative(value);
        } else if (label == "global batch size") {
          const long long batch = count(value, kMaxInt);
          if (batch < 1)
            fail(line.number, value_at, label,
                 "expected a positive whole number, got " + hetplan::quoted(value.text));
          it.global_batch = static_cast<int>(batch);
        } else if (label == "lm loss" || label == "lm-loss" || label == "loss") {
          it.loss = any_number(value);
        } else if (label == "loss scale") {
          // Without a dynamic loss scale (bf16) Megatron-DeepSpeed prints -1.0: no scale.
          const double scale = any_number(value);
          if (scale == -1.0) {
            it.loss_scale.reset();
          } else {
            it.loss_scale = non_negative(value);
          }
        } else if (label == "grad norm") {
          it.grad_norm = any_number(value);
        } else if (label == "number of skipped iterations") {
          it.skipped = static_cast<int>(count(value, kMaxInt));
        } else if (label == "number of nan iterations") {
          it.nan_iterations = static_cast<int>(count(value, kMaxInt));
        } else if (label == "max_memory_allocated(GB)") {
          it.max_memory_bytes = non_negative(value) * kBytesPerGiB;
          mindspeed = true;
        }
      }
      segment_start = segment_end + 1;
    }
    if (!has_elapsed) {
      fail(line.number, word_at, "elapsed time per iteration",
           "expected an \"elapsed time per iteration (ms)\" or \"(s)\" field on the iteration "
           "line, got none");
    }
    if (log_.iterations.empty()) {
      log_.framework = deepspeed   ? "megatron-deepspeed"
                       : mindspeed ? "mindspeed-llm"
                                   : "megatron-lm";
    }
    log_.iterations.push_back(std::move(it));
  }

  struct Value {
    const Line& line;
    std::size_t offset;
    const std::string& label;
    std::string_view text;
  };

  double non_negative(const Value& value) const {
    const auto number = to_number(value.text);
    if (!number || !std::isfinite(*number) || *number < 0) {
      fail(value.line.number, value.offset, value.label,
           "expected a non-negative number, got " + hetplan::quoted(value.text));
    }
    return *number;
  }

  double any_number(const Value& value) const {
    const auto number = to_number(value.text);
    if (!number)
      fail(value.line.number, value.offset, value.label,
           "expected a number, got " + hetplan::quoted(value.text));
    return *number;
  }

  long long count(const Value& value, long long max) const {
    const auto number = to_integer(value.text);
    if (!number || *number < 0 || *number > max) {
      fail(value.line.number, value.offset, value.label,
           "expected a whole number from 0 to " + std::to_string(max) + ", got " +
               hetplan::quoted(value.text));
    }
    return *number;
  }

  // A positive integer argument; "None" leaves it unset.
  std::optional<int> integer_argument(const std::string& name) const {
    const auto found = log_.arguments.find(name);
    if (found == log_.arguments.end() || found->second == "None") return std::nullopt;
    const auto number = to_integer(found->second);
    if (!number || *number < 1 || *number > kMaxInt) {
      const Position& where = argument_columns_.at(name);
      fail(where.line_number, where.offset, "arguments." + name,
           "expected a positive whole number or None, got " + hetplan::quoted(found->second));
    }
    return static_cast<int>(*number);
  }

  void resolve_parallelism() {
    auto pick = [](std::optional<int> argument, std::optional<int> announced) {
      return argument ? argument : announced;
    };
    log_.world_size = pick(integer_argument("world_size"), announced_.world_size);
    log_.tp = pick(integer_argument("tensor_model_parallel_size"), announced_.tp);
    log_.pp = pick(integer_argument("pipeline_model_parallel_size"), announced_.pp);
    log_.dp = pick(integer_argument("data_parallel_size"), announced_.dp);
    log_.micro_batch = integer_argument("micro_batch_size");
    log_.global_batch = integer_argument("global_batch_size");
    if (!log_.global_batch) log_.global_batch = log_.iterations.front().global_batch;
    log_.seq_len = integer_argument("seq_length");
  }

  void derive_tokens_per_second() {
    for (std::size_t k = 1; k < log_.iterations.size(); ++k) {
      const Iteration& previous = log_.iterations[k - 1];
      Iteration& current = log_.iterations[k];
      if (current.tokens_per_s || current.iteration <= previous.iteration ||
          current.elapsed_s <= 0) {
        continue;
      }
      const double iterations = static_cast<double>(current.iteration - previous.iteration);
      std::optional<double> tokens;
      if (current.consumed_tokens && previous.consumed_tokens &&
          *current.consumed_tokens >= *previous.consumed_tokens) {
        tokens = static_cast<double>(*current.consumed_tokens - *previous.consumed_tokens);
      } else if (current.consumed_samples && previous.consumed_samples && log_.seq_len &&
                 *current.consumed_samples >= *previous.consumed_samples) {
        tokens = static_cast<double>(*current.consumed_samples - *previous.consumed_samples) *
                 static_cast<double>(*log_.seq_len);
      }
      if (!tokens) continue;
      current.tokens_per_s = *tokens / iterations / current.elapsed_s;
      current.tokens_per_s_derived = true;
    }
  }

  // Where an argument's value starts, kept for errors found once the dump has been read.
  struct Position {
    int line_number = 0;
    std::size_t offset = 0;
    Position(const Line& line, std::size_t at) : line_number(line.number), offset(at) {}
  };

  struct Announced {
    std::optional<int> world_size, tp, pp, dp;
  };

  const std::string& text_;
  const std::string& file_;
  TrainingLog log_;
  bool in_arguments_ = false;
  std::map<std::string, Position> argument_columns_;
  Announced announced_;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  if (values.size() % 2 == 1) return values[middle];
  return (values[middle - 1] + values[middle]) / 2;
}

}  // namespace

TrainingLog parse_training_log(const std::string& text, const std::string& file_name) {
  refuse_nul_bytes(text, file_name, "text");
  return LogParser(text, file_name).parse();
}

TrainingLog import_training_log(const std::string& path) {
  const std::string text = read_input_file(path, kMaxLogBytes, "a training log");
  return parse_training_log(text, path);
}

IterationSummary summarize(const TrainingLog& log, int skip_first) {
  std::vector<double> elapsed;
  std::vector<double> flops;
  std::vector<double> tokens;
  for (std::size_t k = 0; k < log.iterations.size(); ++k) {
    if (static_cast<long long>(k) < skip_first) continue;
    const Iteration& it = log.iterations[k];
    if (it.skipped > 0 || it.nan_iterations > 0) continue;
    elapsed.push_back(it.elapsed_s);
    if (it.flops_per_gpu) flops.push_back(*it.flops_per_gpu);
    if (it.tokens_per_s) tokens.push_back(*it.tokens_per_s);
  }
  IterationSummary summary;
  summary.count = static_cast<int>(elapsed.size());
  if (!elapsed.empty()) summary.median_elapsed_s = median(elapsed);
  if (!flops.empty()) summary.median_flops_per_gpu = median(flops);
  if (!tokens.empty()) summary.median_tokens_per_s = median(tokens);
  return summary;
}

}  // namespace hetplan::importers
