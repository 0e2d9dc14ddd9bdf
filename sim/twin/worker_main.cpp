// hetplan-twin: the simulation worker. Reads one TwinInput as JSON on standard input, checks
// it, simulates the step on SimGrid and writes the TwinResult as JSON on standard output; with
// a trace path in the input, also writes the Chrome trace there. A pool ({"pool": ...}) is
// simulated together and answered with a TwinPoolResult. One simulation per process:
// SimGrid keeps global state, and a second engine in one process gives wrong times.
//
// Exit codes: 0 done; 2 the input was rejected (one line on standard error says why). A SimGrid
// assertion aborts the process; the caller reports the signal.
#include <malloc.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "sim/twin/engine.hpp"
#include "sim/twin/json.hpp"
#include "sim/twin/trace.hpp"

namespace {

constexpr std::size_t kMaxInputBytes = 64u << 20;

int reject(const std::string& why) {
  std::cerr << "hetplan-twin: input rejected: " << why << "\n";
  return 2;
}

}  // namespace

int main() {
  using namespace hetplan::sim;
#if !HETPLAN_TWIN_JEMALLOC
  // One simulation, then exit: SimGrid makes and frees millions of small objects (activities,
  // actions, route vectors). The worker links jemalloc for them (docs/twin.md#speed); a build
  // without it (the sanitizers') tunes glibc's allocator instead: keep what was taken (no
  // trimming, the heap grown 64 MiB at a time) and serve objects up to 160 bytes from the fast
  // bins.
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
  mallopt(M_MXFAST, 160);
#endif
  // Die with the process that started us (killed, crashed or interrupted), never simulate on
  // as an orphan. The parent names itself in HETPLAN_TWIN_PARENT: if it is already gone when
  // the death signal is armed, stop now.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (const char* parent = std::getenv("HETPLAN_TWIN_PARENT")) {
    if (std::to_string(getppid()) != parent) return 1;
  }
  std::string text;
  {
    char buffer[1 << 16];
    std::size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, stdin)) > 0) {
      text.append(buffer, got);
      if (text.size() > kMaxInputBytes) return reject("more than 64 MiB of input");
    }
  }
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return reject(e.what());
  }
  auto rejected = [](const std::vector<std::string>& problems) {
    std::string all;
    for (const auto& problem : problems) all += (all.empty() ? "" : "; ") + problem;
    return reject(all);
  };
  if (twin::is_pool(document)) {
    TwinPoolInput pool;
    try {
      pool = twin::pool_from_json(document);
    } catch (const std::exception& e) {
      return reject(e.what());
    }
    if (const auto problems = check_twin_pool(pool); !problems.empty()) return rejected(problems);
    std::cout << twin::to_json(twin::simulate_pool(pool)).dump() << "\n";
    std::cout.flush();
    return std::cout ? 0 : 1;
  }
  TwinInput input;
  try {
    input = twin::input_from_json(document);
  } catch (const std::exception& e) {
    return reject(e.what());
  }
  if (const auto problems = check_twin_input(input); !problems.empty()) return rejected(problems);

  twin::Timeline timeline;
  const bool tracing = !input.trace_path.empty();
  const TwinResult result = twin::simulate_step(input, tracing ? &timeline : nullptr);
  if (tracing) {
    std::ofstream out(input.trace_path, std::ios::binary | std::ios::trunc);
    if (out) twin::write_chrome_trace(out, input, timeline);
    out.flush();
    if (!out) {
      std::cerr << "hetplan-twin: cannot write the trace to " << input.trace_path << "\n";
      return 1;
    }
  }
  std::cout << twin::to_json(result).dump() << "\n";
  std::cout.flush();
  return std::cout ? 0 : 1;
}
