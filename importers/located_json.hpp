// A small JSON reader that keeps the line and column of every value: nlohmann::json 3.11 (the
// version this project builds with) does not record where a value was, and every importer error
// must say where it is. Used by the nccl-tests JSON and kubectl node-list importers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hetplan::importers {

struct LocatedJson {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  int line = 0;
  int column = 0;
  bool boolean = false;
  std::string text;               // a string's value, or a number's source text
  std::vector<LocatedJson> items;  // an array's elements, or an object's values
  std::vector<std::string> keys;  // an object's keys, in order (keys[i] names items[i])

  const LocatedJson* find(std::string_view key) const;
};

// A value as error messages show it after "got": null, true, a number as written, a string in
// quotes, "a list", "an object".
std::string describe(const LocatedJson& value);

// The text without a leading UTF-8 byte-order mark (which Windows tools write before JSON);
// positions are then counted from after it, as editors show them.
std::string_view without_bom(std::string_view text);

// Parses a whole document (after a byte-order mark, if any). Malformed JSON, duplicate keys and nesting deeper than 64 levels are
// InputErrors at file:line:column. With `root_object` given, a document that does not start with
// '{' fails first with "expected <root_object>, got ...".
LocatedJson parse_located_json(std::string_view text, const std::string& file,
                               std::string_view root_object = {});

}  // namespace hetplan::importers
