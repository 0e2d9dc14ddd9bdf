// The flow-level simulation of one training step on SimGrid (docs/twin.md). This is the only
// code that talks to SimGrid. It runs inside the worker process (sim/twin/worker_main.cpp):
// SimGrid allows one engine per process and aborts the process on internal assertions, so a
// process calls simulate_step at most once, and only with input check_twin_input accepted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/twin_input.hpp"

namespace hetplan::sim::twin {

// What happened on one stage replica (its tp ranks share it) or on a stage's gradient
// synchronisation, for the timeline.
enum class EventKind : std::uint8_t {
  forward,
  backward,
  send,
  receive_wait,
  sync_wait,
  optimizer,
  reduce_scatter,
  all_gather,
  all_reduce,
  all_to_all,   // an expert-parallel exchange: the all-to-alls of one pass of one micro-batch
  expert_wait,  // waiting for the other replicas of the expert-parallel group to arrive
};
std::string_view to_string(EventKind kind);

struct Event {
  int stage = 0;
  int replica = -1;  // -1: the stage's gradient synchronisation
  EventKind kind = EventKind::forward;
  int micro_batch = -1;
  int chunk = -1;
  double start_s = 0;
  double end_s = 0;
};

// A stage-boundary transfer from one replica to the next stage's, for the trace's arrows: it
// leaves when the sender starts sending and is taken when the receiver starts the operation
// that needs it.
struct Arrow {
  int from_stage = 0;
  int to_stage = 0;
  int replica = 0;
  bool gradients = false;  // backward: the gradients of the activations
  double sent_s = 0;
  double taken_s = 0;
};

struct Timeline {
  std::vector<Event> events;
  std::vector<Arrow> arrows;  // in the order the receivers took them
};

// Simulates one step. `timeline` (may be null) receives every event when given.
TwinResult simulate_step(const TwinInput& input, Timeline* timeline);

// Simulates a pool's jobs together on one fabric (docs/twin.md#pool); only with input
// check_twin_pool accepted, and like simulate_step at most once per process.
TwinPoolResult simulate_pool(const TwinPoolInput& pool);

}  // namespace hetplan::sim::twin
