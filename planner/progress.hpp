// Progress and stopping for long work (the plan search; sweeps build on it). Plain C++: a front
// end implements the observer to draw a progress line or bar, and sets the stop token from
// another thread (a Cancel button, a signal handler, a deadline of its own). The core never
// prints.
#pragma once

#include <atomic>
#include <cstddef>
#include <string_view>

namespace hetplan::planner {

struct SearchProgress {
  std::string_view phase;          // the search's current phase ("single-island", ...)
  std::size_t settings_done = 0;   // (dtype, micro-batch, recompute, ZeRO, schedule, dp) tried
  std::size_t settings_total = 0;  // all it will try
  std::size_t evaluations = 0;     // plans scored so far
  std::size_t pruned = 0;          // candidates a bound proved could not beat the best
};

// Called on the thread that called the search: at the start, after each setting (settings are
// searched in batches, side by side, and reported as each batch completes) and once at the end
// (settings_done == settings_total unless it stopped early). Keep it short; the search waits.
class SearchObserver {
 public:
  virtual ~SearchObserver() = default;
  virtual void on_progress(const SearchProgress& progress) = 0;
};

// Asks a running search to stop. Any thread may call request_stop(); the search notices it at
// its next check (within a few thousand plans, on every thread) and returns the best plans found so far, saying
// that it stopped (SearchResult::stopped).
class StopToken {
 public:
  void request_stop() { stop_.store(true, std::memory_order_relaxed); }
  bool stop_requested() const { return stop_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> stop_{false};
};

}  // namespace hetplan::planner
