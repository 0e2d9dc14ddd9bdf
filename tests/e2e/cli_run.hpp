// Running the real hetplan binary from the end-to-end tests, as a user would.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/temp_folder.hpp"

namespace hetplan::e2e {

struct CliRun {
  int exit_code = -1;
  std::string out;
};

// Runs hetplan in the source folder. By default stdout and stderr are captured together;
// `redirect` replaces that (" 2>/dev/null" captures stdout alone).
inline CliRun hetplan(const std::string& args, const std::string& redirect = " 2>&1") {
  const std::string command =
      std::string("cd ") + HETPLAN_SOURCE_DIR + " && " + HETPLAN_BINARY + " " + args + redirect;
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

using test::TempFolder;

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace hetplan::e2e
