#include "formats/yaml_edit.hpp"

#include <yaml-cpp/yaml.h>

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
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

// The line ending the text uses ("\r\n" when its first line ends so), for lines added to it.
std::string line_ending(const std::string& text) {
  const std::size_t newline = text.find('\n');
  return newline != std::string::npos && newline > 0 && text[newline - 1] == '\r' ? "\r\n" : "\n";
}

// How many times `target` is reached from `node` (a value an anchor defines and aliases repeat
// is one node, reached once for each). Stops counting at 2; `depth` bounds a recursive alias.
int times_reached(const YAML::Node& node, const YAML::Node& target, int depth = 0) {
  if (node.is(target)) return 1;
  if (depth > 128) return 0;
  int count = 0;
  if (node.IsMap()) {
    for (const auto& entry : node) {
      count += times_reached(entry.second, target, depth + 1);
      if (count > 1) return count;
    }
  } else if (node.IsSequence()) {
    for (const auto& element : node) {
      count += times_reached(element, target, depth + 1);
      if (count > 1) return count;
    }
  }
  return count;
}

// Where the value of `key` in a mapping is written: after the key's colon and the blanks
// behind it (an anchor, a tag, an alias, or the end of the line for an empty value).
std::size_t value_site(const std::string& text, const YAML::Node& map, const std::string& key,
                       const std::string& where) {
  for (const auto& entry : map) {
    if (!entry.first.IsScalar() || entry.first.Scalar() != key) continue;
    const std::size_t key_at = offset_of(entry.first, text, where);
    std::size_t at = key_at;
    if (at < text.size() && (text[at] == '"' || text[at] == '\'')) {
      at += scalar_length(text, key_at, true);
    } else {
      // A plain key ends at the ':' followed by a blank or the line's end.
      while (at < text.size() && !(text[at] == ':' && (at + 1 == text.size() || text[at + 1] == ' ' ||
                                                         text[at + 1] == '\t' || text[at + 1] == '\n' ||
                                                         text[at + 1] == '\r' || text[at + 1] == ',' ||
                                                         text[at + 1] == '}')))
        ++at;
    }
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
    if (at >= text.size() || text[at] != ':') throw std::invalid_argument(where + ": no ':' after its key");
    ++at;
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
    return at;
  }
  throw std::invalid_argument(where + ": its key is not in the text");
}

// The end of a token that runs to a blank, a line end or (in a flow collection) a separator:
// an anchor (&name), an alias (*name) or a tag (!tag).
std::size_t token_end(const std::string& text, std::size_t at) {
  std::size_t end = at;
  while (end < text.size() && text[end] != ' ' && text[end] != '\t' && text[end] != '\n' &&
         text[end] != '\r' && text[end] != ',' && text[end] != '}' && text[end] != ']')
    ++end;
  return end;
}

// The end of a block scalar (| or >) whose header is at `at`: its last line indented deeper
// than the line of the header (blank lines inside it belong to it, trailing ones do not).
std::size_t block_scalar_end(const std::string& text, std::size_t at) {
  const std::size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  const std::size_t line_start = newline == std::string::npos ? 0 : newline + 1;
  const std::size_t indent = text.find_first_not_of(" -", line_start) - line_start;
  std::size_t end = text.find('\n', at);
  if (end == std::string::npos) return text.size();
  if (end > at && text[end - 1] == '\r') --end;
  std::size_t next = text.find('\n', at) + 1;
  while (next < text.size()) {
    std::size_t line_end = text.find('\n', next);
    if (line_end == std::string::npos) line_end = text.size();
    std::size_t content_end = line_end;
    if (content_end > next && text[content_end - 1] == '\r') --content_end;
    const std::size_t first = text.find_first_not_of(' ', next);
    const bool blank = first == std::string::npos || first >= content_end;
    if (!blank) {
      if (first - next <= indent) break;
      end = content_end;
    }
    next = line_end + 1;
  }
  return end;
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
  const std::string eol = line_ending(text);
  if (text.find_first_not_of(' ', line_start) == at) {
    // "  first: ...": a line of its own before the first key.
    return text.substr(0, line_start) + indent + entry + eol + text.substr(line_start);
  }
  // "  - first: value": after the first key's line, if its value is a scalar on that line.
  const auto first = map.begin();
  if (first == map.end() || !first->second.IsScalar() ||
      first->second.Mark().line != map.Mark().line)
    throw std::invalid_argument(where + ": cannot add a key to this mapping in place");
  std::size_t line_end = std::min(text.find('\n', at), text.size());
  if (line_end > at && line_end < text.size() && text[line_end - 1] == '\r') --line_end;
  return text.substr(0, line_end) + eol + indent + entry + text.substr(line_end);
}

}  // namespace

std::string yaml_quoted(std::string_view text) {
  try {
    return nlohmann::json(std::string(text)).dump(-1, ' ', false);  // JSON's escapes are YAML's
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument("not UTF-8 text");
  }
}

namespace {

// The edit in `text`, whose document is `root`.
std::string set_in_text(const std::string& text, const YAML::Node& root, const YamlPath& path,
                        const std::string& value, const std::string& file_name) {
  // reset() rebinds a node; operator= would write through into the document.
  YAML::Node node;
  node.reset(root);
  YAML::Node parent;
  // A value an anchor defines and aliases repeat is one node: an edit inside it in place would
  // change every place that names it. Refused, with where the anchor is.
  auto refuse_shared = [&](const YAML::Node& shared, const std::string& where) {
    const YAML::Mark mark = shared.Mark();
    throw InputError({file_name, mark.line + 1, mark.column + 1}, where,
                     "expected a value written once, got one an anchor (&) defines here and "
                     "aliases (*) repeat: an edit in place would change them all; edit the file "
                     "by hand");
  };
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
    if (k + 1 < path.size() && !node.IsScalar() && times_reached(root, node) > 1)
      refuse_shared(node, where);
  }
  const std::string where = to_string(path);
  // Where the value is written. Through a mapping's key: an alias there (*name) is replaced by
  // the value, so that this place gets its own and the anchor's other places keep theirs.
  std::size_t at = offset_of(node, text, where);
  const auto* last_key = std::get_if<std::string>(&path.back());
  if (last_key) {
    const std::size_t site = value_site(text, parent, *last_key, where);
    if (site < text.size() && text[site] == '*')
      return text.substr(0, site) + value + text.substr(token_end(text, site));
    if (node.IsNull()) {
      // Empty (up to a comment or the line's end) or written as ~ or null.
      const bool empty = site >= text.size() || text[site] == '\n' || text[site] == '\r' ||
                         text[site] == '#' || text[site] == ',' || text[site] == '}';
      if (empty) {
        const bool spaced = site > 0 && (text[site - 1] == ' ' || text[site - 1] == '\t');
        const std::string written = (spaced ? "" : " ") + value + (text[site] == '#' ? " " : "");
        return text.substr(0, site) + written + text.substr(site);
      }
      at = site;
    }
  }
  if (node.IsNull() && !last_key)
    throw std::invalid_argument(where + ": an empty list element cannot be set in place");
  if (times_reached(root, node) > 1) refuse_shared(node, where);
  // An anchor no alias names, or a tag, stays as written before the new value.
  while (at < text.size() && (text[at] == '&' || text[at] == '!')) {
    at = token_end(text, at);
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
  }
  if (node.IsSequence() && node.Style() == YAML::EmitterStyle::Flow) {
    // A list written [a, b] is replaced whole.
    if (at >= text.size() || text[at] != '[')
      throw std::invalid_argument(where + ": not where the list starts");
    return text.substr(0, at) + value + text.substr(flow_end(text, at, where));
  }
  if (!node.IsScalar() && !node.IsNull()) throw std::invalid_argument(where + ": not a single value");
  if (at < text.size() && (text[at] == '|' || text[at] == '>'))  // a block scalar, all its lines
    return text.substr(0, at) + value + text.substr(block_scalar_end(text, at));
  const std::size_t length = scalar_length(text, at, parent.Style() == YAML::EmitterStyle::Flow);
  return text.substr(0, at) + value + text.substr(at + length);
}

// The node at `path`, or an undefined one.
YAML::Node node_at(const YAML::Node& root, const YamlPath& path) {
  YAML::Node node;
  node.reset(root);
  for (const auto& step : path) {
    YAML::Node next(YAML::NodeType::Undefined);
    if (const auto* key = std::get_if<std::string>(&step)) {
      if (node.IsMap()) next.reset(child_of(node, *key));
    } else if (node.IsSequence() && std::get<std::size_t>(step) < node.size()) {
      const YAML::Node element = node[std::get<std::size_t>(step)];
      next.reset(element);
    }
    if (!next.IsDefined()) return next;
    node.reset(next);
  }
  return node;
}

// A value's content, tags left out (a tag the edit keeps before a new value is the file's):
// scalars with their length, collections in flow form. `depth` bounds a recursive alias.
std::string dumped(const YAML::Node& node, int depth = 0) {
  if (depth > 128) return "...";
  if (node.IsScalar()) return std::to_string(node.Scalar().size()) + ":" + node.Scalar();
  if (node.IsNull() || !node.IsDefined()) return "~";
  std::string out = node.IsMap() ? "{" : "[";
  bool first = true;
  for (const auto& item : node) {
    out += first ? "" : ", ";
    first = false;
    out += node.IsMap() ? dumped(item.first, depth + 1) + ": " + dumped(item.second, depth + 1)
                        : dumped(item, depth + 1);
  }
  return out + (node.IsMap() ? "}" : "]");
}

// Every scalar of a document with its path, outside `skip` (the edited path and what is below
// it); `depth` bounds a recursive alias.
void leaves(const YAML::Node& node, YamlPath& at, const YamlPath& skip,
            std::vector<std::pair<YamlPath, std::string>>& out, int depth = 0) {
  if (depth > 128 || out.size() > 100000) return;
  if (at.size() >= skip.size() && std::equal(skip.begin(), skip.end(), at.begin())) return;
  if (node.IsMap()) {
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) continue;
      at.emplace_back(entry.first.Scalar());
      leaves(entry.second, at, skip, out, depth + 1);
      at.pop_back();
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      at.emplace_back(i);
      leaves(node[i], at, skip, out, depth + 1);
      at.pop_back();
    }
  } else {
    out.emplace_back(at, dumped(node));
  }
}

// The edit kept the document faithful: it reads back, holds the value at the path, and every
// other value as it was. Otherwise the edit is refused (the text is never written).
void check_faithful(const YAML::Node& old_root, const std::string& after, const YamlPath& path,
                    const std::string& value, const std::string& file_name) {
  const std::string where = to_string(path);
  const std::string refused = where + ": this file's text cannot take the edit in place (";
  YAML::Node new_root, wanted;
  try {
    new_root = parse_document(after, file_name);
    wanted = YAML::Load(value);
  } catch (const std::exception&) {
    throw std::invalid_argument(refused + "it would not read back); edit the file by hand");
  }
  const YAML::Node got = node_at(new_root, path);
  if (!got.IsDefined() || dumped(got) != dumped(wanted))
    throw std::invalid_argument(refused + "the value would not read back as written); edit the "
                                          "file by hand");
  YamlPath at;
  std::vector<std::pair<YamlPath, std::string>> kept;
  leaves(old_root, at, path, kept);
  for (const auto& [leaf, text] : kept) {
    const YAML::Node now = node_at(new_root, leaf);
    if (!now.IsDefined() || dumped(now) != text)
      throw std::invalid_argument(refused + to_string(leaf) +
                                  " would change too); edit the file by hand");
  }
}

}  // namespace

std::string set_yaml_value(const std::string& text, const YamlPath& path, const std::string& value,
                           const std::string& file_name) {
  if (path.empty()) throw std::invalid_argument("an empty path");
  // The parser's places do not count a UTF-8 byte-order mark: edit after it, keep it.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  const bool bom = std::string_view(text).starts_with(kBom);
  std::string stripped;
  const std::string& body = bom ? (stripped = text.substr(kBom.size())) : text;
  const YAML::Node root = parse_document(body, file_name);
  const std::string edited = set_in_text(body, root, path, value, file_name);
  check_faithful(root, edited, path, value, file_name);
  return bom ? std::string(kBom) + edited : edited;
}

}  // namespace hetplan::formats
