#include "formats/yaml_edit.hpp"

#include <yaml-cpp/yaml.h>

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "formats/document.hpp"

namespace hetplan::formats {

std::string to_string(const YamlPath& path) {
  std::string out;
  for (const auto& step : path) {
    if (const auto* key = std::get_if<std::string>(&step)) {
      out += (out.empty() ? "" : ".") + *key;
    } else {
      out += "[" + std::to_string(std::get<std::size_t>(step)) + "]";
    }
  }
  return out;
}

namespace {

// The value of `key` in a mapping node, or an invalid node. (operator[] on a non-const node
// would add the key.)
YAML::Node child_of(const YAML::Node& map, const std::string& key) {
  for (const auto& entry : map) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::size_t offset_of(const YAML::Node& node, const std::string& text, const std::string& what) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null() || mark.pos < 0 || static_cast<std::size_t>(mark.pos) > text.size())
    throw std::invalid_argument(what + ": its place in the text is unknown");
  return static_cast<std::size_t>(mark.pos);  // yaml-cpp counts bytes
}

// The length of the scalar written at `at`: quoted to its closing quote, plain to the end of its
// line, a comment, or (inside a flow collection) the next separator; trailing blanks excluded.
std::size_t scalar_length(const std::string& text, std::size_t at, bool in_flow) {
  std::size_t end = at;
  if (at < text.size() && (text[at] == '"' || text[at] == '\'')) {
    const char quote = text[at];
    for (end = at + 1; end < text.size(); ++end) {
      if (quote == '"' && text[end] == '\\') {
        ++end;
        continue;
      }
      if (text[end] == quote) {
        if (quote == '\'' && end + 1 < text.size() && text[end + 1] == '\'') {
          ++end;
          continue;
        }
        return end + 1 - at;
      }
    }
    throw std::invalid_argument("an unterminated quoted scalar");
  }
  while (end < text.size() && text[end] != '\n' && text[end] != '\r' &&
         !(text[end] == '#' && end > at && (text[end - 1] == ' ' || text[end - 1] == '\t')) &&
         !(in_flow && (text[end] == ',' || text[end] == '}' || text[end] == ']')))
    ++end;
  while (end > at && (text[end - 1] == ' ' || text[end - 1] == '\t')) --end;
  return end - at;
}

// The end (one past its closing bracket) of the flow collection that starts at `at` ('[' or
// '{'), across nested collections and quoted scalars.
std::size_t flow_end(const std::string& text, std::size_t at, const std::string& where) {
  int depth = 0;
  for (std::size_t i = at; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      i += scalar_length(text, i, true) - 1;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && --depth == 0) {
      return i + 1;
    }
  }
  throw std::invalid_argument(where + ": an unterminated list");
}

// `key: value` for the steps left, as nested flow mappings: {a: {b: value}} is "a: {b: value}".
std::string entry_for(const YamlPath& path, std::size_t from, const std::string& value) {
  std::string out = value;
  for (std::size_t k = path.size(); k-- > from + 1;) {
    const auto* key = std::get_if<std::string>(&path[k]);
    if (!key) throw std::invalid_argument("cannot add a sequence element");
    out = "{" + *key + ": " + out + "}";
  }
  const auto* key = std::get_if<std::string>(&path[from]);
  if (!key) throw std::invalid_argument("cannot add a sequence element");
  return *key + ": " + out;
}

// Adds `entry` ("key: value") to a mapping: into a flow mapping after its '{', into a block
// mapping as a line at its first key's indentation.
std::string add_entry(const std::string& text, const YAML::Node& map, const std::string& entry,
                      const std::string& where) {
  const std::size_t at = offset_of(map, text, where);
  if (map.Style() == YAML::EmitterStyle::Flow) {
    if (at >= text.size() || text[at] != '{') throw std::invalid_argument(where + ": not where the mapping starts");
    const bool empty = map.size() == 0;
    return text.substr(0, at + 1) + entry + (empty ? "" : ", ") + text.substr(at + 1);
  }
  const std::size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  const std::size_t line_start = newline == std::string::npos ? 0 : newline + 1;
  const std::string indent(at - line_start, ' ');
  if (text.find_first_not_of(' ', line_start) == at) {
    // "  first: ...": a line of its own before the first key.
    return text.substr(0, line_start) + indent + entry + "\n" + text.substr(line_start);
  }
  // "  - first: value": after the first key's line, if its value is a scalar on that line.
  const auto first = map.begin();
  if (first == map.end() || !first->second.IsScalar() ||
      first->second.Mark().line != map.Mark().line)
    throw std::invalid_argument(where + ": cannot add a key to this mapping in place");
  const std::size_t line_end = std::min(text.find('\n', at), text.size());
  return text.substr(0, line_end) + "\n" + indent + entry + text.substr(line_end);
}

}  // namespace

std::string yaml_quoted(std::string_view text) {
  try {
    return nlohmann::json(std::string(text)).dump(-1, ' ', false);  // JSON's escapes are YAML's
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument("not UTF-8 text");
  }
}

std::string set_yaml_value(const std::string& text, const YamlPath& path, const std::string& value,
                           const std::string& file_name) {
  if (path.empty()) throw std::invalid_argument("an empty path");
  const YAML::Node root = parse_document(text, file_name);
  // reset() rebinds a node; operator= would write through into the document.
  YAML::Node node;
  node.reset(root);
  YAML::Node parent;
  for (std::size_t k = 0; k < path.size(); ++k) {
    const std::string where = to_string(YamlPath(path.begin(), path.begin() + static_cast<long>(k) + 1));
    if (const auto* key = std::get_if<std::string>(&path[k])) {
      if (!node.IsMap()) throw std::invalid_argument(where + ": the document has no mapping here");
      YAML::Node next = child_of(node, *key);
      if (!next.IsDefined()) return add_entry(text, node, entry_for(path, k, value), where);
      parent.reset(node);
      node.reset(next);
    } else {
      const std::size_t index = std::get<std::size_t>(path[k]);
      if (!node.IsSequence() || index >= node.size())
        throw std::invalid_argument(where + ": the document has no such element");
      parent.reset(node);
      const YAML::Node element = node[index];
      node.reset(element);
    }
  }
  const std::string where = to_string(path);
  if (node.IsSequence() && node.Style() == YAML::EmitterStyle::Flow) {
    // A list written [a, b] is replaced whole.
    const std::size_t at = offset_of(node, text, where);
    if (at >= text.size() || text[at] != '[')
      throw std::invalid_argument(where + ": not where the list starts");
    return text.substr(0, at) + value + text.substr(flow_end(text, at, where));
  }
  if (!node.IsScalar()) throw std::invalid_argument(where + ": not a single value");
  const std::size_t at = offset_of(node, text, where);
  const std::size_t length = scalar_length(text, at, parent.Style() == YAML::EmitterStyle::Flow);
  return text.substr(0, at) + value + text.substr(at + length);
}

}  // namespace hetplan::formats
