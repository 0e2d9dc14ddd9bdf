// The in-place YAML edit (formats/yaml_edit) on arbitrary documents: edit, reload, compare.
// The input's first five bytes choose the path (one to three steps, each a key of a small set
// or an index) and the value; the rest is the document. An edit either is refused
// (std::invalid_argument, InputError) or returns a text that reads back with the value at the
// path; any other exception, crash or sanitizer report is a finding.
#include <yaml-cpp/yaml.h>

#include <stdexcept>

#include "formats/document.hpp"
#include "formats/yaml_edit.hpp"
#include "fuzz/fuzz_common.hpp"

namespace {

const char* const kKeys[] = {"a", "b", "c", "nodes", "name"};
const char* const kValues[] = {"42", "x y", "[1, 2]", "\"q\"", "{k: 1}"};

YAML::Node at_path(YAML::Node node, const hetplan::formats::YamlPath& path) {
  for (const auto& step : path) {
    YAML::Node next;
    if (const auto* key = std::get_if<std::string>(&step)) {
      if (!node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
      bool found = false;
      for (const auto& entry : node) {
        if (entry.first.IsScalar() && entry.first.Scalar() == *key) {
          next.reset(entry.second);
          found = true;
          break;
        }
      }
      if (!found) return YAML::Node(YAML::NodeType::Undefined);
    } else {
      const std::size_t index = std::get<std::size_t>(step);
      if (!node.IsSequence() || index >= node.size()) return YAML::Node(YAML::NodeType::Undefined);
      next.reset(node[index]);
    }
    node.reset(next);
  }
  return node;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 0;
  hetplan::formats::YamlPath path;
  const std::size_t steps = 1 + data[0] % 3;
  for (std::size_t k = 0; k < steps; ++k) {
    const std::uint8_t b = data[1 + k];
    if (b & 0x80) {
      path.emplace_back(static_cast<std::size_t>(b & 3));
    } else {
      path.emplace_back(std::string(kKeys[b % 5]));
    }
  }
  const std::string value = kValues[data[4] % 5];
  const std::string text = hetplan::fuzz::as_text(data + 5, size - 5);
  std::string edited;
  try {
    edited = hetplan::formats::set_yaml_value(text, path, value, "fuzz-edit.yaml");
  } catch (const std::invalid_argument&) {
    return 0;
  } catch (const hetplan::InputError& error) {
    if (error.what()[0] == '\0') __builtin_trap();
    return 0;
  }
  // Reload and compare: the edited text is a document, and holds the value where it was set.
  YAML::Node root;
  try {
    root = hetplan::formats::parse_document(edited, "fuzz-edit.yaml");
  } catch (const hetplan::InputError&) {
    __builtin_trap();
  }
  const YAML::Node got = at_path(root, path);
  const YAML::Node wanted = YAML::Load(value);
  if (!got.IsDefined()) __builtin_trap();
  // A tag written before the old value stays before the new one (it is the file's); the value
  // is compared without it.
  YAML::Node untagged = YAML::Clone(got);
  untagged.SetTag("");
  YAML::Emitter a, b;
  a << YAML::Flow << untagged;
  b << YAML::Flow << wanted;
  if (std::string(a.c_str()) != std::string(b.c_str())) __builtin_trap();
  return 0;
}
