// Runs simulations in worker processes (hetplan-twin), several at once: each gets its input as
// JSON on standard input and answers with JSON on standard output. A worker that rejects its
// input, dies (SimGrid aborts on internal assertions) or answers garbage becomes an error
// message; it never takes the caller down.
#pragma once

#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "sim/twin_input.hpp"

namespace hetplan::sim::twin {

struct WorkerCommand {
  std::string executable;  // path of hetplan-twin
};

// What became of one worker: its answer, or one line saying what went wrong.
template <typename Result>
struct WorkerOutcome {
  std::optional<Result> result;
  std::string error;  // when there is no result: one line saying what went wrong
  long peak_rss_kib = 0;  // the worker's peak resident memory
  bool cancelled = false;  // stopped by the caller's stop request (error says so)
};
using Outcome = WorkerOutcome<TwinResult>;
using PoolOutcome = WorkerOutcome<TwinPoolResult>;

// One outcome per input, in input order. At most `parallel` workers run at a time. A stop
// request (from any thread) kills the running workers within about 50 ms and starts no more;
// their outcomes are cancelled.
std::vector<Outcome> run_workers(const std::vector<TwinInput>& inputs,
                                 const WorkerCommand& command, int parallel,
                                 std::stop_token stop = {});

// A pool's jobs simulated together, in one worker.
PoolOutcome run_pool_worker(const TwinPoolInput& pool, const WorkerCommand& command,
                            std::stop_token stop = {});

// The worker next to the running executable (both are built into one folder).
std::string worker_beside_this_executable();

}  // namespace hetplan::sim::twin
