// Runs a command through the shell and collects its standard output, for tests that check what
// a generated script does when sh runs it.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

namespace hetplan::test {

struct ShellRun {
  std::string output;  // standard output
  int status = 0;      // as pclose returns it: 0 when the command succeeded
};

inline ShellRun run_shell(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed");
  ShellRun run;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
  run.status = ::pclose(pipe);
  return run;
}

}  // namespace hetplan::test
