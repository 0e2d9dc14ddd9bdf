// Reads and writes validation records (docs/formats/validation-record.md), and reads the
// ladder evidence hetplan_boundary.py writes (docs/formats/calibration-bundle.md).
#include <algorithm>
#include <cfloat>
#include <filesystem>

#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "formats/paths.hpp"
#include "formats/yaml_edit.hpp"

namespace hetplan::formats {
namespace {

SoftwareComponent read_runtime(const Field& field) {
  MapReader map(field);
  SoftwareComponent runtime;
  runtime.name = map.required("name").as_string();
  runtime.version = map.required("version").as_string();
  map.done();
  if (runtime.name.empty()) field.fail_expected("a runtime name");
  return runtime;
}

std::string read_date(const Field& field) {
  const std::string text = field.as_string();
  if (!is_record_date(text)) field.fail_expected("a date YYYY-MM-DD");
  return text;
}

bool is_sha256(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}


}  // namespace

bool is_record_date(std::string_view text) {
  return text.size() == 10 && text[4] == '-' && text[7] == '-' &&
         std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '-'; });
}

bool is_utc_time(std::string_view text) {
  if (text.size() != 20 || !is_record_date(text.substr(0, 10)) || text[10] != 'T' ||
      text[13] != ':' || text[16] != ':' || text[19] != 'Z')
    return false;
  for (std::size_t i : {11u, 12u, 14u, 15u, 17u, 18u})
    if (text[i] < '0' || text[i] > '9') return false;
  return true;
}

ValidationRecord parse_validation_record(const std::string& text, const std::string& file_name) {
  const YAML::Node root_node = parse_document(text, file_name);
  const Field root_field = document_root(root_node, file_name, kValidationRecordSchema);
  MapReader root(root_field);
  root.required("schema");
  ValidationRecord record;
  record.file = file_name;
  record.chip = root.required("chip").as_identifier();
  record.runtime = read_runtime(root.required("runtime"));
  for (const Field& element : root.required("ladder").elements()) {
    MapReader map(element);
    LadderEntry entry;
    entry.location = element.location();
    entry.step = static_cast<LadderStep>(map.required("step").as_choice(
        {"single-card", "collectives", "checkpoint", "boundary", "scale", "gradient-exchange"}));
    const Field passed = map.required("passed");
    entry.passed = passed.as_bool();
    entry.passed_location = passed.location();
    entry.date = read_date(map.required("date"));
    const Field evidence = map.required("evidence");
    entry.evidence = resolve_relative(evidence.as_string(), file_name);
    entry.evidence_location = evidence.location();
    if (auto sha256 = map.optional("sha256")) {
      entry.sha256 = sha256->as_string();
      if (!is_sha256(entry.sha256)) sha256->fail_expected("a SHA-256 of 64 lower-case hex digits");
    }
    if (auto note = map.optional("note")) entry.note = note->as_string();
    if (entry.step == LadderStep::boundary || entry.step == LadderStep::gradient_exchange) {
      MapReader with(map.required("with"));
      entry.with_chip = with.required("chip").as_identifier();
      entry.with_runtime = read_runtime(with.required("runtime"));
      with.done();
    }
    if (entry.step == LadderStep::scale) {
      entry.chips = static_cast<int>(map.required("chips").as_int(1, 1 << 24));
    }
    map.done();
    record.entries.push_back(std::move(entry));
  }
  root.done();
  return record;
}

std::vector<ValidationRecord> load_validation_records(const std::string& folder) {
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error)) {
    throw InputError({folder, 0, 0}, "records", "expected a folder of validation records");
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<ValidationRecord> records;
  for (const auto& file : files) records.push_back(parse_validation_record(read_text_file(file), file));
  return records;
}

std::string validation_record_yaml(const ValidationRecord& record, const std::string& comment) {
  std::string out;
  std::size_t start = 0;
  while (!comment.empty() && start <= comment.size()) {
    const std::size_t end = std::min(comment.find('\n', start), comment.size());
    out += "# " + comment.substr(start, end - start) + "\n";
    start = end + 1;
  }
  auto runtime = [](const SoftwareComponent& r) {
    return "{name: " + yaml_quoted(r.name) + ", version: " + yaml_quoted(r.version) + "}";
  };
  out += "schema: " + std::string(kValidationRecordSchema) + "\n";
  out += "chip: " + record.chip + "\n";
  out += "runtime: " + runtime(record.runtime) + "\n";
  out += "ladder:\n";
  for (const LadderEntry& e : record.entries) {
    out += "  - step: " + std::string(to_string(e.step)) + "\n";
    out += std::string("    passed: ") + (e.passed ? "true" : "false") + "\n";
    out += "    date: " + e.date + "\n";
    out += "    evidence: " + yaml_quoted(e.evidence) + "\n";
    if (!e.sha256.empty()) out += "    sha256: " + e.sha256 + "\n";
    if (e.step == LadderStep::boundary || e.step == LadderStep::gradient_exchange)
      out += "    with: {chip: " + e.with_chip + ", runtime: " + runtime(e.with_runtime) + "}\n";
    if (e.step == LadderStep::scale) out += "    chips: " + std::to_string(e.chips) + "\n";
    if (!e.note.empty()) out += "    note: " + yaml_quoted(e.note) + "\n";
  }
  return out;
}

LadderEvidence parse_ladder_evidence(const std::string& text, const std::string& file_name) {
  const YAML::Node root_node = parse_document(text, file_name);
  const Field root_field = document_root(root_node, file_name, kLadderEvidenceSchema);
  MapReader root(root_field);
  root.required("schema");
  LadderEvidence evidence;
  evidence.file = file_name;
  static constexpr LadderStep kChecks[] = {LadderStep::collectives, LadderStep::checkpoint,
                                           LadderStep::boundary, LadderStep::gradient_exchange};
  evidence.check = kChecks[root.required("check").as_choice(
      {"collectives", "checkpoint", "boundary", "gradient-exchange"})];
  const Field started = root.required("started");
  evidence.started = started.as_string();
  evidence.started_location = started.location();
  if (!is_utc_time(evidence.started)) started.fail_expected("a time YYYY-MM-DDTHH:MM:SSZ");
  {
    MapReader host(root.required("host"));
    evidence.hostname = host.required("hostname").as_string();
    evidence.torch = host.required("torch").as_string();
    host.done();
  }
  const Field backends = root.required("backends");
  for (const Field& element : backends.elements()) {
    MapReader map(element);
    LadderEvidenceBackend backend;
    const Field name = map.required("backend");
    name.as_choice({"cpu", "cuda", "npu", "mlu"});
    backend.backend = name.as_string();
    backend.device = map.required("device").as_string();
    const Field runtime_field = map.required("runtime");
    backend.runtime = read_runtime(runtime_field);
    backend.location = runtime_field.location();
    map.done();
    evidence.backends.push_back(std::move(backend));
  }
  const bool pair =
      evidence.check == LadderStep::boundary || evidence.check == LadderStep::gradient_exchange;
  if (evidence.backends.size() != (pair ? 2u : 1u)) {
    backends.fail_expected(pair ? "two backends (the first side's, then the second's)"
                                : "one backend");
  }
  const Field dtype = root.required("dtype");
  dtype.as_choice({"fp32", "bf16", "fp16"});
  evidence.dtype = dtype.as_string();
  const Field passed = root.required("passed");
  evidence.passed = passed.as_bool();
  for (const Field& element : root.required("results").elements()) {
    MapReader map(element);
    LadderEvidenceResult result;
    result.what = map.required("what").as_string();
    result.max_abs_error = map.required("max_abs_error").as_number(0.0, DBL_MAX);
    result.max_rel_error = map.required("max_rel_error").as_number(0.0, DBL_MAX);
    result.tolerance = map.required("tolerance").as_number(0.0, DBL_MAX);
    result.passed = map.required("passed").as_bool();
    map.done();
    evidence.results.push_back(std::move(result));
  }
  for (const Field& element : root.required("notes").elements())
    evidence.notes.push_back(element.as_string());
  root.done();
  // The probe's rule: passed only when there are results and every one passed.
  const bool all_passed =
      !evidence.results.empty() &&
      std::all_of(evidence.results.begin(), evidence.results.end(),
                  [](const LadderEvidenceResult& r) { return r.passed; });
  if (evidence.passed && !all_passed)
    passed.fail_expected("false, as a result did not pass or there is none");
  return evidence;
}

}  // namespace hetplan::formats
