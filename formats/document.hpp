// Strict, located reading of YAML (and JSON, which yaml-cpp reads as YAML) documents.
//
// Every value is read through a Field that knows its file, its dotted path and its line and
// column, so every error can say where it is and what was expected. Maps are read through a
// MapReader that rejects unknown and duplicate keys.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"

namespace hetplan::formats {

// Parses text into a YAML node tree. Rejects oversized or too deeply nested input before
// yaml-cpp sees it (its parser recurses), and turns parser errors into InputErrors.
YAML::Node parse_document(const std::string& text, const std::string& file_name);

// Reads a whole file. Throws InputError (naming the file) when it cannot be read.
std::string read_text_file(const std::string& path);

class Field {
 public:
  Field(YAML::Node node, std::string path, std::shared_ptr<const std::string> file);
  Field(const Field&) = default;
  // yaml-cpp's Node::operator= writes through to the referenced node (it would edit the
  // document); assigning a Field rebinds it instead.
  Field& operator=(const Field& other);

  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  const std::shared_ptr<const std::string>& file_ptr() const { return file_; }
  SourceLocation location() const;

  // Throws an InputError at this field: "<file:line:col>: <path>: expected <what>, got <found>".
  [[noreturn]] void fail_expected(std::string_view expected) const;
  // Throws an InputError at this field with a free-form message.
  [[noreturn]] void fail(std::string_view message) const;

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool is_null() const { return node_.IsNull(); }

  std::string as_string() const;      // any scalar
  std::string as_identifier() const;  // [a-z0-9][a-z0-9._-]*
  bool as_bool() const;
  // Whether the value is a quoted scalar (a string, even when its text is a number).
  bool quoted() const;
  std::int64_t as_int(std::int64_t min, std::int64_t max) const;
  double as_number(double min, double max) const;
  double as_quantity(Dimension dimension) const;
  // One of the listed words; returns its index.
  std::size_t as_choice(std::initializer_list<std::string_view> choices) const;
  // Whether the scalar is the word "unknown".
  bool is_unknown() const;

  std::vector<Field> elements() const;  // a sequence's elements (fails if not a sequence)
  Field element(std::size_t index) const;

  // A short rendering of the value for error messages.
  std::string describe() const;

 private:
  YAML::Node node_;
  std::string path_;
  std::shared_ptr<const std::string> file_;
};

// Reads a mapping key by key. Call done() after reading: any key that was not asked for is an
// error ("unknown key"). Duplicate keys are rejected on construction.
class MapReader {
 public:
  explicit MapReader(const Field& field);

  const Field& field() const { return field_; }
  bool has(std::string_view key) const;
  std::optional<Field> optional(std::string_view key);
  Field required(std::string_view key);
  // All keys in document order (for maps whose keys are names, like `sources:` or `labels:`).
  std::vector<std::pair<std::string, Field>> entries();
  void done() const;

 private:
  Field field_;
  std::vector<std::string> seen_;
};

// The root of a document, checked to be a mapping whose `schema:` is the expected one.
Field document_root(const YAML::Node& root, const std::string& file_name,
                    std::string_view expected_schema);

// Loads the file that `reference` names (a scenario's `cluster:`, a cluster's `chip:`). An
// InputError inside that file is thrown again at the reference, so the one line names both
// places: "scenario.yaml:4:10: cluster: cluster.yaml:9:19: fabric.switch_latency: expected ...".
template <typename Load>
auto load_referenced(const Field& reference, Load&& load) -> decltype(load()) {
  try {
    return load();
  } catch (const InputError& error) {
    throw InputError(reference.location(), reference.path(), error.what());
  }
}

// The `schema:` value of a document, or empty when it has none.
std::string schema_of(const YAML::Node& root);

}  // namespace hetplan::formats
