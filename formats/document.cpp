#include "formats/document.hpp"

#include "core/input_file.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

namespace hetplan::formats {
namespace {

constexpr std::size_t kMaxDocumentBytes = 16u << 20;
constexpr int kMaxNesting = 64;

// Estimates how deeply the text nests (flow brackets, block indentation, "- - -" runs) so that
// hostile input cannot exhaust the stack inside the recursive YAML parser.
void check_nesting(const std::string& text, const std::string& file_name) {
  int line = 1;
  int flow_depth = 0;
  bool in_single = false;
  bool in_double = false;
  bool at_line_start = true;
  int indent = 0;
  int dashes = 0;
  int column = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
      at_line_start = true;
      indent = 0;
      dashes = 0;
      // Quotes are tracked within a line only: a stray quote in a plain scalar must not hide
      // the nesting that follows it.
      in_single = false;
      in_double = false;
      continue;
    }
    if (in_double) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_double = false;
      continue;
    }
    if (in_single) {
      if (c == '\'') in_single = false;
      continue;
    }
    if (at_line_start) {
      if (c == ' ') {
        ++indent;
        continue;
      }
      if (c == '-' && i + 1 < text.size() && (text[i + 1] == ' ')) {
        ++dashes;
        ++indent;
        continue;
      }
      at_line_start = false;
    }
    if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '"')
      in_double = true;
    else if (c == '\'')
      in_single = true;
    else if (c == '[' || c == '{')
      ++flow_depth;
    else if ((c == ']' || c == '}') && flow_depth > 0)
      --flow_depth;
    const int depth = flow_depth + dashes + indent / 2;
    if (flow_depth > kMaxNesting || dashes > kMaxNesting || depth > 4 * kMaxNesting) {
      throw InputError(
          {file_name, line, column}, "",
          "expected at most " + std::to_string(kMaxNesting) + " levels of nesting, got deeper");
    }
  }
}

// Where the content of a second document starts, or npos. A line that starts with "---" (then
// a blank or its end) is a document marker wherever it stands (YAML does not allow one inside a
// document's content); the first may precede the first document, and a marker, an end marker
// ("...") or comments with nothing after them are no document.
std::size_t second_document(std::string_view text) {
  bool content = false;  // the first document has begun
  bool after_marker = false;  // a marker (or "...") closed it: content now begins another
  auto blank_or_comment = [](std::string_view rest) {
    const std::size_t first = rest.find_first_not_of(" \t");
    return first == std::string_view::npos || rest[first] == '#';
  };
  std::size_t line_start = 0;
  while (line_start < text.size()) {
    std::size_t end = text.find('\n', line_start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(line_start, end - line_start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const bool marker = (line.starts_with("---") || line.starts_with("...")) &&
                        (line.size() == 3 || line[3] == ' ' || line[3] == '\t');
    if (marker) {
      if (content) after_marker = true;
      const std::string_view rest = line.substr(3);
      if (!blank_or_comment(rest) && line.starts_with("---")) {
        if (after_marker) return line_start + 3 + rest.find_first_not_of(" \t");
        content = true;
      }
    } else if (!blank_or_comment(line) && !(line.starts_with("%") && !content)) {
      if (after_marker) return line_start + line.find_first_not_of(" \t");
      content = true;
    }
    line_start = end + 1;
  }
  return std::string_view::npos;
}

bool is_identifier(std::string_view text) {
  if (text.empty()) return false;
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_or_digit(text.front())) return false;
  return std::all_of(text.begin(), text.end(),
                     [&](char c) { return lower_or_digit(c) || c == '-' || c == '_' || c == '.'; });
}

}  // namespace

YAML::Node parse_document(const std::string& text, const std::string& file_name) {
  if (text.size() > kMaxDocumentBytes) {
    throw InputError(
        location_at(file_name, text, kMaxDocumentBytes), "",
        "expected a document of at most 16 MiB, got " + std::to_string(text.size()) + " bytes");
  }
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos) {
    throw InputError(location_at(file_name, text, nul), "",
                     "expected a text document, got a NUL byte");
  }
  check_nesting(text, file_name);
  try {
    // A second document is refused rather than ignored (found in the text: yaml-cpp's LoadAll
    // does not return on some malformed input).
    if (const std::size_t second = second_document(text); second != std::string::npos) {
      throw InputError(location_at(file_name, text, second), "",
                       "expected one YAML document, got a second one (after \"---\")");
    }
    YAML::Node root = YAML::Load(text);
    if (!root.IsDefined() || root.IsNull()) {
      throw InputError({file_name, 1, 1}, "", "expected a mapping, got an empty document");
    }
    return root;
  } catch (const YAML::Exception& error) {
    const int line = error.mark.is_null() ? 0 : error.mark.line + 1;
    const int column = error.mark.is_null() ? 0 : error.mark.column + 1;
    throw InputError({file_name, line, column}, "", "malformed YAML: " + error.msg);
  }
}

std::string read_text_file(const std::string& path) {
  return read_input_file(path, kMaxDocumentBytes);
}

Field::Field(YAML::Node node, std::string path, std::shared_ptr<const std::string> file)
    : node_(std::move(node)), path_(std::move(path)), file_(std::move(file)) {}

Field& Field::operator=(const Field& other) {
  if (this != &other) {
    node_.reset(other.node_);
    path_ = other.path_;
    file_ = other.file_;
  }
  return *this;
}

SourceLocation Field::location() const {
  const YAML::Mark mark = node_.Mark();
  if (mark.is_null()) return {*file_, 0, 0};
  return {*file_, mark.line + 1, mark.column + 1};
}

void Field::fail_expected(std::string_view expected) const {
  throw InputError(location(), path_, "expected " + std::string(expected) + ", got " + describe());
}

void Field::fail(std::string_view message) const {
  throw InputError(location(), path_, std::string(message));
}

std::string Field::describe() const {
  if (!node_.IsDefined() || node_.IsNull()) return "nothing";
  if (node_.IsMap()) return "a mapping";
  if (node_.IsSequence()) return "a list";
  return hetplan::quoted(node_.Scalar());
}

std::string Field::as_string() const {
  if (!node_.IsScalar()) fail_expected("a string");
  return node_.Scalar();
}

std::string Field::as_identifier() const {
  if (!node_.IsScalar() || !is_identifier(node_.Scalar())) {
    fail_expected("a name of lower-case letters, digits, '-', '_' and '.'");
  }
  return node_.Scalar();
}

// A quoted scalar ("32", '32') is a string in YAML and in JSON, never a number or a flag:
// yaml-cpp gives it the non-specific tag "!", a plain scalar "?".
bool Field::quoted() const {
  return node_.IsScalar() && node_.Tag() == "!";
}

bool Field::as_bool() const {
  if (node_.IsScalar() && !quoted()) {
    const std::string& text = node_.Scalar();
    if (text == "true") return true;
    if (text == "false") return false;
  }
  fail_expected("true or false");
}

std::int64_t Field::as_int(std::int64_t min, std::int64_t max) const {
  const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  if (!node_.IsScalar() || quoted()) fail_expected(range);
  const std::string& text = node_.Scalar();
  std::int64_t value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (result.ec != std::errc{} || result.ptr != text.data() + text.size() || value < min ||
      value > max) {
    fail_expected(range);
  }
  return value;
}

double Field::as_number(double min, double max) const {
  std::ostringstream range;
  range << "a number from " << min << " to " << max;
  if (!node_.IsScalar() || quoted()) fail_expected(range.str());
  const std::string& text = node_.Scalar();
  double value = 0.0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (result.ec != std::errc{} || result.ptr != text.data() + text.size() ||
      !std::isfinite(value) || value < min || value > max) {
    fail_expected(range.str());
  }
  return value;
}

double Field::as_quantity(Dimension dimension) const {
  const std::string expected =
      "a " + std::string(name_of(dimension)) + " such as " + std::string(example_of(dimension));
  if (!node_.IsScalar()) fail_expected(expected);
  const auto value = parse_quantity(node_.Scalar(), dimension);
  if (!value) fail_expected(expected);
  const QuantityRange range = range_of(dimension);
  if (*value < range.min || *value > range.max)
    fail_expected("a " + std::string(name_of(dimension)) + " " + std::string(range.text));
  return *value;
}

std::size_t Field::as_choice(std::initializer_list<std::string_view> choices) const {
  std::string expected = "one of ";
  std::size_t index = 0;
  for (auto choice : choices) {
    if (index > 0) expected += index + 1 == choices.size() ? " or " : ", ";
    expected += choice;
    ++index;
  }
  if (!node_.IsScalar()) fail_expected(expected);
  index = 0;
  for (auto choice : choices) {
    if (node_.Scalar() == choice) return index;
    ++index;
  }
  fail_expected(expected);
}

bool Field::is_unknown() const {
  return node_.IsScalar() && node_.Scalar() == "unknown";
}

std::vector<Field> Field::elements() const {
  if (!node_.IsSequence()) fail_expected("a list");
  std::vector<Field> out;
  out.reserve(node_.size());
  for (std::size_t i = 0; i < node_.size(); ++i) out.push_back(element(i));
  return out;
}

Field Field::element(std::size_t index) const {
  return Field(node_[index], path_ + "[" + std::to_string(index) + "]", file_);
}

MapReader::MapReader(const Field& field) : field_(field) {
  if (!field.is_map()) field.fail_expected("a mapping");
  std::vector<std::string> keys;
  for (const auto& entry : field.node()) {
    const Field key(entry.first, field.path(), field.file_ptr());
    if (!entry.first.IsScalar()) key.fail_expected("a plain key");
    const std::string& name = entry.first.Scalar();
    if (std::find(keys.begin(), keys.end(), name) != keys.end()) {
      const std::string path = field.path().empty() ? name : field.path() + "." + name;
      throw InputError(key.location(), path, "duplicate key");
    }
    keys.push_back(name);
  }
}

bool MapReader::has(std::string_view key) const {
  for (const auto& entry : field_.node()) {
    if (entry.first.Scalar() == key) return true;
  }
  return false;
}

std::optional<Field> MapReader::optional(std::string_view key) {
  seen_.emplace_back(key);
  for (const auto& entry : field_.node()) {
    if (entry.first.Scalar() == key) {
      std::string path =
          field_.path().empty() ? std::string(key) : field_.path() + "." + std::string(key);
      return Field(entry.second, std::move(path), field_.file_ptr());
    }
  }
  return std::nullopt;
}

Field MapReader::required(std::string_view key) {
  auto value = optional(key);
  if (!value) {
    const std::string path =
        field_.path().empty() ? std::string(key) : field_.path() + "." + std::string(key);
    throw InputError(field_.location(), path, "missing required key");
  }
  return *value;
}

std::vector<std::pair<std::string, Field>> MapReader::entries() {
  std::vector<std::pair<std::string, Field>> out;
  for (const auto& entry : field_.node()) {
    const std::string& key = entry.first.Scalar();
    seen_.push_back(key);
    std::string path = field_.path().empty() ? key : field_.path() + "." + key;
    out.emplace_back(key, Field(entry.second, std::move(path), field_.file_ptr()));
  }
  return out;
}

void MapReader::done() const {
  for (const auto& entry : field_.node()) {
    const std::string& key = entry.first.Scalar();
    if (std::find(seen_.begin(), seen_.end(), key) == seen_.end()) {
      const std::string path = field_.path().empty() ? key : field_.path() + "." + key;
      const YAML::Mark mark = entry.first.Mark();
      throw InputError({field_.file(), mark.line + 1, mark.column + 1}, path, "unknown key");
    }
  }
}

Field document_root(const YAML::Node& root, const std::string& file_name,
                    std::string_view expected_schema) {
  Field field(root, "", std::make_shared<const std::string>(file_name));
  if (!root.IsMap()) field.fail_expected("a mapping");
  MapReader reader(field);
  auto schema = reader.optional("schema");
  if (!schema) {
    throw InputError(field.location(), "schema",
                     "missing required key (expected \"" + std::string(expected_schema) + "\")");
  }
  if (!schema->is_scalar() || schema->as_string() != expected_schema) {
    schema->fail_expected("\"" + std::string(expected_schema) + "\"");
  }
  return field;
}

std::string schema_of(const YAML::Node& root) {
  if (!root.IsMap()) return {};
  const YAML::Node schema = root["schema"];
  if (!schema || !schema.IsScalar()) return {};
  return schema.Scalar();
}

}  // namespace hetplan::formats
