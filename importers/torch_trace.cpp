#include "importers/torch_trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "core/input_file.hpp"

namespace hetplan::importers {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxTraceBytes = std::size_t{256} << 20;
constexpr std::size_t kMaxNesting = 64;
constexpr double kSecondsPerMicrosecond = 1e-6;

// A short rendering of a JSON value for "got ..." in messages.
std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return hetplan::quoted(value.get_ref<const std::string&>());
    case json::value_t::null:
      return "null";
    default: {
      const std::string text = value.dump();
      return text.size() > 40 ? text.substr(0, 40) + "..." : text;
    }
  }
}

// One step of a JSON path: an object key or an array index.
struct Step {
  bool is_index = false;
  std::size_t index = 0;
  std::string key;
};
using Path = std::vector<Step>;

// "traceEvents[12].dur"; paths deeper than 8 steps are cut short with "...".
std::string to_string(const Path& path) {
  constexpr std::size_t kMaxSteps = 8;
  std::string text;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (i == kMaxSteps) return text + "...";
    const Step& step = path[i];
    if (step.is_index) {
      text += "[" + std::to_string(step.index) + "]";
    } else {
      if (!text.empty()) text += '.';
      text += step.key;
    }
  }
  return text;
}

Path child(Path path, std::string key) {
  path.push_back(Step{false, 0, std::move(key)});
  return path;
}

// Finds where things are in the text once the streaming parser has found a problem: the JSON
// values carry no positions, so the path is walked again over the raw text. The text up to the
// problem is well-formed; everything is bounds-checked all the same.
class Locator {
 public:
  explicit Locator(std::string_view text) : text_(text) {}

  // Offset of the value at path, or of the deepest container on the way to it.
  std::size_t locate(const Path& path) const {
    std::size_t at = 0;
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") at = 3;
    at = skip_space(at);
    for (const Step& step : path) {
      const std::size_t found = step.is_index ? element(at, step.index) : member(at, step.key);
      if (found == std::string_view::npos) return at;
      at = found;
    }
    return at;
  }

  // Offset of the first opening bracket nested deeper than limit, or npos.
  std::size_t too_deep(std::size_t limit) const {
    std::size_t depth = 0;
    for (std::size_t at = 0; at < text_.size(); ++at) {
      const char c = text_[at];
      if (c == '"') {
        at = skip_string(at) - 1;
      } else if (c == '[' || c == '{') {
        if (++depth > limit) return at;
      } else if ((c == ']' || c == '}') && depth > 0) {
        --depth;
      }
    }
    return std::string_view::npos;
  }

  // Where the token that contains offset starts (nlohmann reports the last character it read,
  // which is the end of a string or number token). Tokenises from the start: the text before a
  // syntax error is well-formed.
  std::size_t token_start(std::size_t offset) const {
    std::size_t at = 0;
    while (at < text_.size()) {
      at = skip_space(at);
      if (at >= offset) return at == offset ? at : offset;
      const char c = text_[at];
      std::size_t end = at + 1;
      if (c == '"') {
        end = skip_string(at);
      } else if (c != '{' && c != '}' && c != '[' && c != ']' && c != ':' && c != ',') {
        while (end < text_.size() && !is_delimiter(text_[end])) ++end;
      }
      if (offset < end) return at;
      at = end;
    }
    return offset;
  }

  // 1-based line and column of an offset (columns count bytes).
  SourceLocation location(const std::string& file, std::size_t offset) const {
    offset = std::min(offset, text_.size());
    const std::string_view before = text_.substr(0, offset);
    const auto line = 1 + std::count(before.begin(), before.end(), '\n');
    const std::size_t line_start = before.rfind('\n');
    const std::size_t column =
        line_start == std::string_view::npos ? offset + 1 : offset - line_start;
    return {file, static_cast<int>(line), static_cast<int>(column)};
  }

 private:
  static bool is_delimiter(char c) {
    return std::string_view(" \t\r\n{}[]:,\"").find(c) != std::string_view::npos;
  }

  std::size_t skip_space(std::size_t at) const {
    while (at < text_.size() &&
           (text_[at] == ' ' || text_[at] == '\t' || text_[at] == '\n' || text_[at] == '\r')) {
      ++at;
    }
    return at;
  }

  // From an opening quote to just past the closing one.
  std::size_t skip_string(std::size_t at) const {
    for (++at; at < text_.size(); ++at) {
      if (text_[at] == '\\') {
        ++at;
      } else if (text_[at] == '"') {
        return at + 1;
      }
    }
    return text_.size();
  }

  std::size_t skip_value(std::size_t at) const {
    if (at >= text_.size()) return at;
    if (text_[at] == '"') return skip_string(at);
    if (text_[at] == '{' || text_[at] == '[') {
      std::size_t depth = 0;
      for (; at < text_.size(); ++at) {
        const char c = text_[at];
        if (c == '"') {
          at = skip_string(at) - 1;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (--depth == 0) return at + 1;
        }
      }
      return at;
    }
    while (at < text_.size() && text_[at] != ',' && text_[at] != '}' && text_[at] != ']' &&
           text_[at] != ' ' && text_[at] != '\n' && text_[at] != '\r' && text_[at] != '\t') {
      ++at;
    }
    return at;
  }

  // The value of the last member named key of the object at `at` (the parser keeps the last of
  // duplicate keys), or npos.
  std::size_t member(std::size_t at, const std::string& key) const {
    if (at >= text_.size() || text_[at] != '{') return std::string_view::npos;
    std::size_t found = std::string_view::npos;
    at = skip_space(at + 1);
    while (at < text_.size() && text_[at] == '"') {
      const std::size_t key_end = skip_string(at);
      const std::string_view raw = text_.substr(at, key_end - at);
      at = skip_space(key_end);
      if (at >= text_.size() || text_[at] != ':') break;
      at = skip_space(at + 1);
      if (decoded(raw) == key) found = at;
      at = skip_space(skip_value(at));
      if (at >= text_.size() || text_[at] != ',') break;
      at = skip_space(at + 1);
    }
    return found;
  }

  std::size_t element(std::size_t at, std::size_t index) const {
    if (at >= text_.size() || text_[at] != '[') return std::string_view::npos;
    at = skip_space(at + 1);
    for (std::size_t i = 0; at < text_.size() && text_[at] != ']'; ++i) {
      if (i == index) return at;
      at = skip_space(skip_value(at));
      if (at >= text_.size() || text_[at] != ',') break;
      at = skip_space(at + 1);
    }
    return std::string_view::npos;
  }

  // A quoted key as text ("\"dur\"" -> "dur"), escapes resolved.
  static std::string decoded(std::string_view raw) {
    if (raw.size() >= 2 && raw.find('\\') == std::string_view::npos) {
      return std::string(raw.substr(1, raw.size() - 2));
    }
    const json value = json::parse(raw, nullptr, false);
    return value.is_string() ? value.get<std::string>() : std::string();
  }

  std::string_view text_;
};

// Builds one JSON value (an event, deviceProperties) from SAX calls.
class Builder {
 public:
  void reset() {
    root_ = json();
    stack_.clear();
    done_ = false;
  }
  bool done() const { return done_; }
  json& root() { return root_; }

  void value(json value) { place(std::move(value)); }
  void open(bool array) {
    stack_.push_back(place(array ? json::array() : json::object()));
    done_ = false;
  }
  void key(std::string key) { key_ = std::move(key); }
  void close() {
    if (!stack_.empty()) stack_.pop_back();
    done_ = stack_.empty();
  }

 private:
  json* place(json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      done_ = true;
      return &root_;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    json& slot = parent[key_];
    slot = std::move(value);
    return &slot;
  }

  json root_;
  std::vector<json*> stack_;
  std::string key_;
  bool done_ = false;
};

struct Aggregate {
  std::vector<TraceOp> ops;
  std::unordered_map<std::string, std::size_t> index;  // "category\nname" -> position in ops

  void add(const char* category, const std::string& name, double seconds) {
    auto [found, inserted] = index.try_emplace(category + ("\n" + name), ops.size());
    if (inserted) ops.push_back(TraceOp{name, category, 0, 0, 0});
    TraceOp& op = ops[found->second];
    ++op.count;
    op.total_s += seconds;
    op.max_s = std::max(op.max_s, seconds);
  }

  std::vector<TraceOp> sorted() && {
    std::sort(ops.begin(), ops.end(), [](const TraceOp& a, const TraceOp& b) {
      if (a.total_s != b.total_s) return a.total_s > b.total_s;
      if (a.name != b.name) return a.name < b.name;
      return a.category < b.category;
    });
    return std::move(ops);
  }
};

// The nlohmann SAX handler: follows where it is in the document, builds each event (and the
// small top-level members it needs) as a JSON value and folds it into the result at once.
class TraceReader {
 public:
  TraceReader(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  TorchTrace read() {
    if (text_.size() > kMaxTraceBytes) {
      throw InputError(
          location_at(file_, text_, kMaxTraceBytes), "",
          "expected a trace of at most 256 MiB, got " + std::to_string(text_.size()) + " bytes");
    }
    const bool complete = json::sax_parse(text_, this);
    const Locator locator(text_);
    if (syntax_error_) {
      throw InputError(locator.location(file_, syntax_offset_), syntax_field_, syntax_message_);
    }
    if (too_deep_) {
      const std::size_t at = locator.too_deep(kMaxNesting);
      throw InputError(
          locator.location(file_, at), too_deep_field_,
          "expected at most " + std::to_string(kMaxNesting) + " levels of nesting, got deeper");
    }
    if (error_) {
      throw InputError(locator.location(file_, locator.locate(error_path_)), to_string(error_path_),
                       error_message_);
    }
    if (!complete) throw InputError({file_, 0, 0}, "", "cannot read the trace");
    if (root_is_object_ && !seen_events_) {
      throw InputError(locator.location(file_, locator.locate({})), "traceEvents",
                       "expected an array of trace events, got none");
    }
    result_.kernels = std::move(kernels_).sorted();
    result_.memory_ops = std::move(memory_ops_).sorted();
    result_.cpu_ops = std::move(cpu_ops_).sorted();
    if (first_ts_ <= last_end_) result_.span_s = (last_end_ - first_ts_) * kSecondsPerMicrosecond;
    return std::move(result_);
  }

  // nlohmann::json SAX interface.
  bool null() { return scalar(json(nullptr)); }
  bool boolean(bool value) { return scalar(json(value)); }
  bool number_integer(json::number_integer_t value) { return scalar(json(value)); }
  bool number_unsigned(json::number_unsigned_t value) { return scalar(json(value)); }
  bool number_float(json::number_float_t value, const std::string& /*text*/) {
    return scalar(json(value));
  }
  bool string(std::string& value) { return scalar(json(std::move(value))); }
  bool binary(json::binary_t& /*value*/) { return scalar(json(nullptr)); }
  bool start_object(std::size_t /*elements*/) { return open(false); }
  bool start_array(std::size_t /*elements*/) { return open(true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& key) {
    if (!frames_.empty()) frames_.back().key = key;
    if (capturing_) builder_.key(std::move(key));
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const json::exception& error) {
    syntax_error_ = true;
    // position counts the characters read, the offending one included.
    const std::size_t offset =
        Locator(text_).token_start(std::min(position > 0 ? position - 1 : 0, text_.size()));
    syntax_offset_ = offset;
    if (offset >= text_.size() && !text_.empty() && text_.back() == '\n') {
      syntax_offset_ = text_.size() - 1;  // the end of the last line, not the line after it
    }
    syntax_field_ = to_string(container_path());
    syntax_message_ = syntax_message(offset, error.what());
    return false;
  }

 private:
  enum class Target { event, device_properties, distributed_info };

  struct Frame {
    bool array = false;
    std::size_t count = 0;  // elements started so far (arrays)
    std::string key;        // the current member (objects)
  };

  // The path of the innermost open container.
  Path container_path() const {
    Path path;
    for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
      if (frames_[i].array) {
        path.push_back(Step{true, frames_[i].count == 0 ? 0 : frames_[i].count - 1, ""});
      } else {
        path.push_back(Step{false, 0, frames_[i].key});
      }
    }
    return path;
  }

  // The token starting at an offset, for "got ..." in syntax errors.
  std::string token_at(std::size_t offset) const {
    if (offset >= text_.size()) return "the end of the file";
    const char c = text_[offset];
    if (c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ',') {
      return std::string("'") + c + "'";
    }
    std::size_t end = offset + 1;
    if (c == '"') {
      while (end < text_.size() && text_[end] != '"' && text_[end] != '\n') {
        end += text_[end] == '\\' ? 2 : 1;
      }
      return hetplan::quoted(text_.substr(offset + 1, end - offset - 1));
    } else {
      while (end < text_.size() &&
             std::string_view(" \t\r\n{}[]:,\"").find(text_[end]) == std::string_view::npos) {
        ++end;
      }
    }
    return hetplan::quoted(text_.substr(offset, end - offset));
  }

  // From nlohmann's "[json.exception.parse_error.101] parse error at line 3, column 5: syntax
  // error while parsing object - unexpected '}'; expected string literal": "expected string
  // literal, got '}' (malformed JSON)"; lexer errors ("invalid literal", "invalid string: ...")
  // become "expected well-formed JSON, got an invalid literal".
  std::string syntax_message(std::size_t offset, std::string_view what) const {
    const std::size_t bracket = what.find("] ");
    if (what.substr(0, 1) == "[" && bracket != std::string_view::npos) {
      what = what.substr(bracket + 2);
    }
    const std::size_t dash = what.find(" - ");
    std::string_view detail = dash == std::string_view::npos ? what : what.substr(dash + 3);
    const std::size_t last_read = detail.find("; last read:");
    if (last_read != std::string_view::npos) detail = detail.substr(0, last_read);
    if (detail.substr(0, 11) == "unexpected ") {
      const std::size_t expected = detail.find("; expected ");
      if (expected != std::string_view::npos) {
        return "expected " + std::string(detail.substr(expected + 11)) + ", got " +
               token_at(offset) + " (malformed JSON)";
      }
    }
    if (detail.substr(0, 7) == "invalid") {
      return "expected well-formed JSON, got an " + std::string(detail);
    }
    if (detail.substr(0, 15) == "number overflow") {
      return "expected a number within the range of a double, got " + token_at(offset);
    }
    return "expected well-formed JSON, got " + token_at(offset) + " (" + std::string(detail) + ")";
  }

  void fail(Path path, std::string message) {
    if (error_) return;
    error_ = true;
    error_path_ = std::move(path);
    error_message_ = std::move(message);
  }

  // Called for every value before it is stored: decides what the value is for.
  // Returns false to stop the parser (the error is recorded).
  bool begin_value(const json* scalar_value, bool array) {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().count;
    if (capturing_) return true;
    const std::string got =
        scalar_value ? describe(*scalar_value) : (array ? "an array" : "an object");
    if (frames_.empty()) {
      if (scalar_value) {
        fail({},
             "expected a Chrome trace: an object with \"traceEvents\" or an array of events, "
             "got " +
                 got);
        return false;
      }
      root_is_object_ = !array;
      if (array) events_frame_ = 0;  // the bare array form: the root is the event list
      return true;
    }
    if (root_is_object_ && frames_.size() == 1) {
      const std::string& key = frames_[0].key;
      if (key == "traceEvents") {
        seen_events_ = true;
        if (scalar_value || !array) {
          fail({Step{false, 0, key}}, "expected an array of trace events, got " + got);
          return false;
        }
        events_frame_ = 1;
      } else if (key == "deviceProperties") {
        start_capture(Target::device_properties);
      } else if (key == "distributedInfo") {
        start_capture(Target::distributed_info);
      }
      return true;
    }
    if (events_frame_ && frames_.size() == *events_frame_ + 1) {
      event_index_ = frames_.back().count - 1;
      start_capture(Target::event);
    }
    return true;
  }

  void start_capture(Target target) {
    capturing_ = true;
    target_ = target;
    builder_.reset();
  }

  bool scalar(json value) {
    if (!begin_value(&value, false)) return false;
    if (!capturing_) return true;
    builder_.value(std::move(value));
    return builder_.done() ? finish_capture() : true;
  }

  bool open(bool array) {
    if (!begin_value(nullptr, array)) return false;
    frames_.push_back(Frame{array, 0, ""});
    if (frames_.size() > kMaxNesting) {
      too_deep_ = true;
      too_deep_field_ = to_string(container_path());
      return false;
    }
    if (capturing_) builder_.open(array);
    return true;
  }

  bool close() {
    if (frames_.empty()) return true;
    if (events_frame_ && frames_.size() == *events_frame_ + 1) events_frame_.reset();
    frames_.pop_back();
    if (!capturing_) return true;
    builder_.close();
    return builder_.done() ? finish_capture() : true;
  }

  bool finish_capture() {
    capturing_ = false;
    switch (target_) {
      case Target::event:
        read_event();
        break;
      case Target::device_properties:
        read_device_properties();
        break;
      case Target::distributed_info:
        read_distributed_info();
        break;
    }
    return !error_;
  }

  Path events_path() const {
    Path path;
    if (root_is_object_) path.push_back(Step{false, 0, "traceEvents"});
    path.push_back(Step{true, event_index_, ""});
    return path;
  }

  // A number field of the event; fails (and returns nullopt) when present but not a finite
  // non-negative number, or absent when required.
  std::optional<double> microseconds(const json& event, const char* name, bool required,
                                     const char* what) {
    const auto found = event.find(name);
    if (found == event.end()) {
      if (required)
        fail(child(events_path(), name), std::string("expected ") + what + ", got none");
      return std::nullopt;
    }
    if (!found->is_number() || !std::isfinite(found->get<double>()) || found->get<double>() < 0) {
      fail(child(events_path(), name),
           std::string("expected ") + what + ", got " + describe(*found));
      return std::nullopt;
    }
    return found->get<double>();
  }

  void read_event() {
    const json& event = builder_.root();
    if (!event.is_object()) {
      fail(events_path(), "expected an event object, got " + describe(event));
      return;
    }
    const auto phase = event.find("ph");
    if (phase == event.end() || !phase->is_string()) {
      fail(child(events_path(), "ph"),
           "expected an event phase (\"ph\") such as \"X\", got " +
               (phase == event.end() ? std::string("none") : describe(*phase)));
      return;
    }
    const std::string& ph = phase->get_ref<const std::string&>();
    if (ph == "M") return;  // metadata: process and thread names
    const bool complete = ph == "X";
    const auto ts = microseconds(event, "ts", complete, "a non-negative timestamp in microseconds");
    if (error_) return;
    double end = ts.value_or(0);
    if (complete) {
      const auto name = event.find("name");
      if (name == event.end() || !name->is_string()) {
        fail(child(events_path(), "name"),
             "expected an event name string, got " +
                 (name == event.end() ? std::string("none") : describe(*name)));
        return;
      }
      const auto dur = microseconds(event, "dur", true, "a non-negative duration in microseconds");
      if (error_) return;
      const auto category = event.find("cat");
      if (category != event.end() && !category->is_string()) {
        fail(child(events_path(), "cat"),
             "expected a category string such as \"kernel\", got " + describe(*category));
        return;
      }
      const std::string cat =
          category == event.end() ? std::string() : category->get<std::string>();
      const double seconds = *dur * kSecondsPerMicrosecond;
      const std::string& op = name->get_ref<const std::string&>();
      if (cat == "kernel" || cat == "Kernel") {
        kernels_.add("kernel", op, seconds);
      } else if (cat == "gpu_memcpy" || cat == "Memcpy") {
        memory_ops_.add("gpu_memcpy", op, seconds);
      } else if (cat == "gpu_memset" || cat == "Memset") {
        memory_ops_.add("gpu_memset", op, seconds);
      } else if (cat == "cpu_op" || cat == "Operator") {
        cpu_ops_.add("cpu_op", op, seconds);
      }
      end += *dur;
    }
    if (ts) {
      first_ts_ = std::min(first_ts_, *ts);
      last_end_ = std::max(last_end_, end);
    }
  }

  void read_device_properties() {
    const json& devices = builder_.root();
    const Path path{Step{false, 0, "deviceProperties"}};
    if (!devices.is_array()) {
      fail(path, "expected an array of devices, got " + describe(devices));
      return;
    }
    for (std::size_t i = 0; i < devices.size(); ++i) {
      Path at = path;
      at.push_back(Step{true, i, ""});
      const json& device = devices[i];
      if (!device.is_object()) {
        fail(at, "expected a device object, got " + describe(device));
        return;
      }
      const auto name = device.find("name");
      if (name == device.end() || !name->is_string()) {
        fail(child(at, "name"), "expected a device name string, got " +
                                    (name == device.end() ? std::string("none") : describe(*name)));
        return;
      }
      result_.devices.push_back(name->get<std::string>());
    }
  }

  void read_distributed_info() {
    const json& info = builder_.root();
    const Path path{Step{false, 0, "distributedInfo"}};
    if (!info.is_object()) {
      fail(path, "expected an object, got " + describe(info));
      return;
    }
    const auto rank = info.find("rank");
    if (rank == info.end()) return;
    if (!rank->is_number_integer() || rank->get<long long>() < 0 ||
        rank->get<long long>() > std::numeric_limits<int>::max()) {
      fail(child(path, "rank"), "expected a rank number from 0, got " + describe(*rank));
      return;
    }
    result_.rank = static_cast<int>(rank->get<long long>());
  }

  const std::string& text_;
  const std::string& file_;
  TorchTrace result_;
  Aggregate kernels_, memory_ops_, cpu_ops_;
  double first_ts_ = std::numeric_limits<double>::infinity();
  double last_end_ = -std::numeric_limits<double>::infinity();

  std::vector<Frame> frames_;
  bool root_is_object_ = false;
  bool seen_events_ = false;
  std::optional<std::size_t> events_frame_;  // index in frames_ of the traceEvents array
  std::size_t event_index_ = 0;

  bool capturing_ = false;
  Target target_ = Target::event;
  Builder builder_;

  bool error_ = false;
  Path error_path_;
  std::string error_message_;
  bool syntax_error_ = false;
  std::size_t syntax_offset_ = 0;
  std::string syntax_field_;
  std::string syntax_message_;
  bool too_deep_ = false;
  std::string too_deep_field_;
};

}  // namespace

TorchTrace parse_torch_trace(const std::string& text, const std::string& file_name) {
  return TraceReader(text, file_name).read();
}

TorchTrace import_torch_trace(const std::string& path) {
  const std::string text = read_input_file(path, kMaxTraceBytes, "a trace");
  return parse_torch_trace(text, path);
}

}  // namespace hetplan::importers
