#include "formats/writers.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace hetplan::formats {

std::string plan_yaml(const Plan& plan, const std::string& comment) {
  std::ostringstream out;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) out << "# " << line << "\n";
  out << "schema: hetplan/plan/v1\n";
  out << "name: " << plan.name << "\n";
  out << "schedule: " << to_string(plan.schedule) << "\n";
  if (plan.virtual_stages > 1) out << "virtual_stages: " << plan.virtual_stages << "\n";
  if (plan.micro_batch) out << "micro_batch: " << *plan.micro_batch << "\n";
  if (plan.recompute) out << "recompute: " << to_string(*plan.recompute) << "\n";
  if (plan.zero_stage) out << "zero_stage: " << *plan.zero_stage << "\n";
  if (plan.dtype) out << "dtype: " << to_string(*plan.dtype) << "\n";
  out << "stages:\n";
  for (const auto& stage : plan.stages) {
    out << "  - {island: " << stage.island << ", first_layer: " << stage.first_layer
        << ", num_layers: " << stage.num_layers << ", tp: " << stage.tp << ", dp: " << stage.dp
        << "}\n";
  }
  return out.str();
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path target(path);
  const std::filesystem::path temporary =
      target.parent_path() / ("." + target.filename().string() + ".tmp" +
                              std::to_string(static_cast<long>(::getpid())));
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << text;
    file.flush();
    if (!file) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      throw std::runtime_error(path + ": cannot write (" + std::strerror(errno) + ")");
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, target, error);
  if (error) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw std::runtime_error(path + ": cannot replace (" + error.message() + ")");
  }
}

}  // namespace hetplan::formats
