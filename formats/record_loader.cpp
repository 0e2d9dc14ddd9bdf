// Reads validation records (docs/formats/validation-record.md).
#include <algorithm>
#include <filesystem>

#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "formats/paths.hpp"

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

}  // namespace

bool is_record_date(std::string_view text) {
  return text.size() == 10 && text[4] == '-' && text[7] == '-' &&
         std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '-'; });
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
    entry.passed = map.required("passed").as_bool();
    entry.date = read_date(map.required("date"));
    entry.evidence = resolve_relative(map.required("evidence").as_string(), file_name);
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

}  // namespace hetplan::formats
