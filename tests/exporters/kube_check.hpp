// What the exporters' tests check Kubernetes objects with: YAML read as Kubernetes reads it, the
// structural-schema rules valijson does not know, and schemas hardened as the API server applies
// them (unknown fields refused, ObjectMeta checked). Shared by volcano_test.cpp and
// kube_scheduler_test.cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "exporters/export.hpp"
#include "formats/loaders.hpp"

#if __has_include(<valijson/validator.hpp>)
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>
#define HETPLAN_HAVE_VALIJSON 1
#endif

namespace hetplan::exporters::kube_check {

using nlohmann::json;

// ---- YAML as Kubernetes reads it -------------------------------------------------------------

// A plain scalar resolved as sigs.k8s.io/yaml (go-yaml v2, YAML 1.1) does: null, booleans
// (yes/no/on/off too), integers (decimal, 0x, 0b, 0-octal), floats; anything else is a string.
inline json plain_scalar(const std::string& text) {
  static const std::regex null_re("^(~|null|Null|NULL|)$");
  static const std::regex true_re("^(y|Y|yes|Yes|YES|true|True|TRUE|on|On|ON)$");
  static const std::regex false_re("^(n|N|no|No|NO|false|False|FALSE|off|Off|OFF)$");
  static const std::regex int_re("^[-+]?(0|[1-9][0-9_]*)$");
  static const std::regex other_int_re("^[-+]?0(b[01_]+|x[0-9a-fA-F_]+|[0-7_]+)$");
  static const std::regex float_re(
      "^[-+]?(\\.[0-9]+|[0-9][0-9_]*(\\.[0-9_]*)?)([eE][-+]?[0-9]+)?$|^[-+]?\\.(inf|Inf|INF)$|"
      "^\\.(nan|NaN|NAN)$");
  if (std::regex_match(text, null_re)) return nullptr;
  if (std::regex_match(text, true_re)) return true;
  if (std::regex_match(text, false_re)) return false;
  std::string digits;
  for (char c : text) {
    if (c != '_') digits += c;
  }
  if (std::regex_match(text, int_re)) return std::stoll(digits);
  if (std::regex_match(text, other_int_re)) {
    const bool negative = digits[0] == '-';
    const std::string body = (digits[0] == '-' || digits[0] == '+') ? digits.substr(1) : digits;
    const long long value = body.rfind("0b", 0) == 0 ? std::stoll(body.substr(2), nullptr, 2)
                                                     : std::stoll(body, nullptr, 0);
    return negative ? -value : value;
  }
  if (std::regex_match(text, float_re)) return 0.5;  // a float: its value does not matter here
  return text;
}

inline json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      // Quoted and block scalars carry the non-specific tag "!": always strings.
      return node.Tag() == "!" ? json(node.Scalar()) : plain_scalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& entry : node) {
        const std::string key = entry.first.as<std::string>();
        if (out.contains(key)) throw std::runtime_error("duplicate key " + key);
        out[key] = yaml_to_json(entry.second);
      }
      return out;
    }
    default:
      throw std::runtime_error("undefined YAML node");
  }
}

inline json parse_yaml(const std::string& text) {
  return yaml_to_json(YAML::Load(text));
}

// ---- checks beyond the schema ----------------------------------------------------------------

inline const std::regex kLabelValue("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$");
inline const std::regex kLabelKey(
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    "[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$");
inline const std::regex kDnsLabel("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
inline const std::regex kDns1035Label("^[a-z]([-a-z0-9]*[a-z0-9])?$");

inline bool label_key_ok(const std::string& key) {
  const auto slash = key.find('/');
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  return std::regex_match(key, kLabelKey) && name.size() <= 63 &&
         (slash == std::string::npos || slash <= 253);
}

// The structural-schema extensions valijson does not know: x-kubernetes-list-type (set: unique
// items; map: unique x-kubernetes-list-map-keys) and the int32 range of `format: int32` (the
// Go types decode into int32). x-kubernetes-int-or-string is already an anyOf in the schema;
// x-kubernetes-map-type only says how updates merge.
inline void kube_extension_errors(const json& schema, const json& doc, const std::string& path,
                                  std::vector<std::string>& errors) {
  if (!schema.is_object()) return;
  if (doc.is_array() && schema.contains("x-kubernetes-list-type")) {
    const std::string type = schema["x-kubernetes-list-type"];
    std::set<std::string> seen;
    for (const json& item : doc) {
      std::string key;
      if (type == "set") key = item.dump();
      if (type == "map" && item.is_object()) {
        for (const json& field : schema["x-kubernetes-list-map-keys"]) {
          key += item.value(field.get<std::string>(), json()).dump() + "\x1f";
        }
      }
      if (type != "atomic" && !seen.insert(key).second) {
        errors.push_back(path + ": duplicate entry in a list of type " + type);
      }
    }
  }
  if (doc.is_number_integer() && schema.value("format", "") == "int32") {
    const auto value = doc.get<std::int64_t>();
    if (value < INT32_MIN || value > INT32_MAX) errors.push_back(path + ": out of int32 range");
  }
  if (doc.is_object()) {
    const json properties = schema.value("properties", json::object());
    for (const auto& [key, value] : doc.items()) {
      if (properties.contains(key)) {
        kube_extension_errors(properties[key], value, path + "." + key, errors);
      } else if (schema.contains("additionalProperties")) {
        kube_extension_errors(schema["additionalProperties"], value, path + "." + key, errors);
      }
    }
  }
  if (doc.is_array() && schema.contains("items")) {
    for (std::size_t i = 0; i < doc.size(); ++i) {
      kube_extension_errors(schema["items"], doc[i], path + "[" + std::to_string(i) + "]", errors);
    }
  }
}

// Every document of a multi-document YAML file, in order.
inline std::vector<json> parse_yaml_documents(const std::string& text) {
  std::vector<json> out;
  for (const YAML::Node& node : YAML::LoadAll(text)) out.push_back(yaml_to_json(node));
  return out;
}

inline std::string joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& error : errors) out += error + "\n";
  return out;
}

#ifdef HETPLAN_HAVE_VALIJSON

// Kubernetes rejects fields a structural schema does not declare (kubectl's default strict
// field validation), so every object schema with properties gets additionalProperties: false;
// the CRD leaves metadata open because the API server checks ObjectMeta itself, so that check
// is written here: a name, string labels that are label values, string annotations.
inline void harden(json& schema) {
  if (!schema.is_object()) return;
  if (schema.contains("properties") && !schema.contains("additionalProperties") &&
      !schema.value("x-kubernetes-preserve-unknown-fields", false)) {
    schema["additionalProperties"] = false;
  }
  if (schema.contains("properties")) {
    for (auto& [name, sub] : schema["properties"].items()) harden(sub);
  }
  for (const char* key : {"additionalProperties", "items"}) {
    if (schema.contains(key)) harden(schema[key]);
  }
  for (const char* key : {"anyOf", "allOf", "oneOf"}) {
    if (schema.contains(key)) {
      for (auto& sub : schema[key]) harden(sub);
    }
  }
}

inline json label_value_schema() {
  return {{"type", "string"},
          {"maxLength", 63},
          {"pattern", "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"}};
}

inline json object_meta_schema() {
  return {
      {"type", "object"},
      {"required", {"name"}},
      {"additionalProperties", false},
      {"properties",
       {{"name", {{"type", "string"}, {"minLength", 1}, {"maxLength", 253}}},
        {"namespace", {{"type", "string"}}},
        {"labels", {{"type", "object"}, {"additionalProperties", label_value_schema()}}},
        {"annotations", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}}}}};
}

// A schema ready for valijson, and its JSON for the walk of the structural extensions.
struct Schema {
  json raw;
  valijson::Schema schema;
};

inline void populate(Schema& schema) {
  valijson::SchemaParser parser;
  valijson::adapters::NlohmannJsonAdapter adapter(schema.raw);
  parser.populateSchema(adapter, schema.schema);
}

// The hardened openAPIV3Schema of the first version of a CRD file, with ObjectMeta at metadata.
inline json crd_schema(const std::string& path) {
  const json crd = yaml_to_json(YAML::LoadFile(path));
  json raw = crd.at("spec").at("versions").at(0).at("schema").at("openAPIV3Schema");
  harden(raw);
  raw["properties"]["metadata"] = object_meta_schema();
  return raw;
}

#endif

// The reasons `doc` fails `schema` (valijson's, then the structural extensions'); without valijson
// one reason that says so.
template <typename LoadedSchema>
std::vector<std::string> schema_errors(const LoadedSchema& schema, const json& doc) {
  std::vector<std::string> errors;
#ifdef HETPLAN_HAVE_VALIJSON
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(doc);
  if (!validator.validate(schema.schema, target, &results)) {
    valijson::ValidationResults::Error error;
    while (results.popError(error)) {
      std::string path;
      for (const std::string& part : error.context) path += part;
      errors.push_back(path + ": " + error.description);
    }
  }
  kube_extension_errors(schema.raw, doc, "", errors);
#else
  (void)schema;
  (void)doc;
  errors.push_back("valijson is not installed (apt-get install libvalijson-dev)");
#endif
  return errors;
}

// ---- the schemas of the exported objects (tests/exporters/data) ------------------------------

inline const std::string kSchemaData = HETPLAN_SOURCE_DIR "/tests/exporters/data/";

#ifdef HETPLAN_HAVE_VALIJSON
// The hardened schema of a CRD file in tests/exporters/data, loaded once.
inline const Schema& crd(const std::string& file) {
  // Never destroyed, so that the schemas stay reachable to the end: valijson does not free a
  // schema's recursive references, and the leak checker would report each of them.
  static auto& loaded = *new std::map<std::string, Schema*>;
  if (auto it = loaded.find(file); it != loaded.end()) return *it->second;
  auto* out = new Schema;
  out->raw = crd_schema(kSchemaData + file);
  populate(*out);
  loaded[file] = out;
  return *out;
}

// A definition of kubernetes-objects.schema.json at the root (KubeSchedulerConfiguration, Job,
// Service), with the Volcano Job CRD's pod template (a core/v1 PodTemplateSpec) as its
// PodTemplateSpec.
inline const Schema& kube_object(const std::string& kind) {
  static auto& loaded = *new std::map<std::string, Schema*>;  // never destroyed, as crd()'s
  if (auto it = loaded.find(kind); it != loaded.end()) return *it->second;
  auto* out = new Schema;
  std::ifstream in(kSchemaData + "kubernetes-objects.schema.json");
  json document = json::parse(in);
  json pod_template =
      crd("batch.volcano.sh_jobs.yaml")
          .raw["properties"]["spec"]["properties"]["tasks"]["items"]["properties"]["template"];
  pod_template["properties"]["metadata"]["properties"]["labels"]["additionalProperties"] =
      label_value_schema();
  document["definitions"]["PodTemplateSpec"] = pod_template;
  out->raw = document["definitions"][kind];
  out->raw["definitions"] = document["definitions"];
  populate(*out);
  loaded[kind] = out;
  return *out;
}
#endif

// Why the API server with a CRD of tests/exporters/data would refuse `object`.
inline std::vector<std::string> crd_errors(const std::string& file, const json& object) {
#ifdef HETPLAN_HAVE_VALIJSON
  return schema_errors(crd(file), object);
#else
  (void)file;
  (void)object;
  return {"valijson is not installed (apt-get install libvalijson-dev)"};
#endif
}

// Why a Job or Service of the kube-scheduler path would be refused: its schema, and an Indexed
// Job's pod host name "<job>-<index>" a DNS label (its name is a label value too).
inline std::vector<std::string> kube_object_errors(const json& object) {
#ifdef HETPLAN_HAVE_VALIJSON
  std::vector<std::string> errors = schema_errors(kube_object(object.value("kind", "")), object);
#else
  std::vector<std::string> errors = {"valijson is not installed (apt-get install libvalijson-dev)"};
#endif
  if (object.value("kind", "") == "Job") {
    const std::string name = object["metadata"].value("name", "");
    const std::string host =
        name + "-" + std::to_string(object["spec"].value("completions", 1) - 1);
    if (!std::regex_match(host, kDnsLabel) || host.size() > 63)
      errors.push_back(host + ": host name");
  }
  return errors;
}

// Why kube-scheduler would refuse the configuration: its types, and what its configuration
// validation (pkg/scheduler/apis/config/validation) checks beyond them: profiles with unique,
// non-empty scheduler names; extenders with a positive weight, at most one binder, managed
// resources that are extended resource names (a domain other than kubernetes.io), each once.
inline std::vector<std::string> scheduler_config_errors(const json& config) {
#ifdef HETPLAN_HAVE_VALIJSON
  std::vector<std::string> errors =
      schema_errors(kube_object("KubeSchedulerConfiguration"), config);
#else
  std::vector<std::string> errors = {"valijson is not installed (apt-get install libvalijson-dev)"};
#endif
  std::set<std::string> profiles;
  for (const json& profile : config.value("profiles", json::array())) {
    const std::string name = profile.value("schedulerName", "");
    if (name.empty() || !profiles.insert(name).second) errors.push_back("profile " + name);
  }
  int binders = 0;
  for (const json& extender : config.value("extenders", json::array())) {
    const json weight = extender.value("weight", json(0));
    if (!weight.is_number_integer() || weight.get<long long>() <= 0)
      errors.push_back("extender weight must be positive");
    binders += extender.contains("bindVerb") ? 1 : 0;
    std::set<std::string> names;
    for (const json& resource : extender.value("managedResources", json::array())) {
      const std::string name = resource.value("name", "");
      const auto slash = name.find('/');
      if (slash == std::string::npos ||
          name.substr(0, slash).find("kubernetes.io") != std::string::npos || !label_key_ok(name) ||
          !names.insert(name).second)
        errors.push_back("managed resource " + name + " is not an extended resource name, once");
    }
  }
  if (binders > 1) errors.push_back("more than one extender binds");
  return errors;
}

// Whether one of `errors` mentions `part`.
inline bool mentions(const std::vector<std::string>& errors, const std::string& part) {
  return std::any_of(errors.begin(), errors.end(),
                     [&](const std::string& error) { return error.find(part) != error.npos; });
}

// ---- the bundled site and its reference plan -------------------------------------------------

inline const Scenario& bundled() {
  static const Scenario scenario =
      formats::load_scenario(HETPLAN_SOURCE_DIR "/scenarios/default.yaml");
  return scenario;
}

inline const Plan& reference() {
  static const Plan plan = formats::load_plan(HETPLAN_SOURCE_DIR "/plans/default-reference.yaml");
  return plan;
}

// The input of an export of `plan` on `scenario`, validated.
inline ExportInput validated_input(const Scenario& scenario, const Plan& plan) {
  ExportInput input;
  input.scenario = &scenario;
  input.plan = &plan;
  input.validation.validated = true;
  return input;
}

}  // namespace hetplan::exporters::kube_check
