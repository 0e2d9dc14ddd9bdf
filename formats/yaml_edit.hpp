// Editing a YAML document's text in place, as a person would: a value replaced where it is
// written, a key added to the mapping that should hold it, and nothing else changed (comments,
// key order, spelling, quoting of the other values). The front ends save edited cluster and
// workload files this way; the loaders then read the result like any file.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace hetplan::formats {

// A path into a document: mapping keys and sequence indices ("islands", 2, "nodes").
using YamlPathStep = std::variant<std::string, std::size_t>;
using YamlPath = std::vector<YamlPathStep>;

std::string to_string(const YamlPath& path);  // "islands[2].nodes"

// Any text as one YAML double-quoted scalar (JSON's escapes are YAML's). Throws
// std::invalid_argument for bytes that are not UTF-8.
std::string yaml_quoted(std::string_view text);

// The text with the scalar at `path` set to `value` (YAML as it should be written: 32, true,
// bf16, "200 Gbps", {count: 4, speed: 200 Gbps}); a list written in flow style ([a, b]) is
// replaced whole. A key the document lacks is added to its
// mapping (in the mapping's style: a line at its keys' indentation, or an entry of a flow
// mapping); missing mappings on the way are added as flow mappings. `file_name` names the text
// in errors. Throws std::invalid_argument when the path cannot be followed (a sequence index past
// its end, a step into a scalar, a value at the path that is neither a scalar nor a flow list) and
// InputError when the text does not parse.
// Every edit is checked before it is returned: the edited text reads back, holds the value at
// the path, and every other value of the document as it was; a text that cannot take the edit
// faithfully (a plain scalar over several lines, a key written in an unusual form, ...) is
// refused with std::invalid_argument ("...: edit the file by hand"). A value reached through an
// alias gets its own value in place of the alias; a value or mapping that an anchor defines and
// aliases repeat is refused (InputError at the anchor). A UTF-8 byte-order mark and the file's
// line ends (LF or CRLF) are kept.
std::string set_yaml_value(const std::string& text, const YamlPath& path, const std::string& value,
                           const std::string& file_name);

}  // namespace hetplan::formats
