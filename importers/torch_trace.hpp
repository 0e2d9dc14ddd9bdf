// PyTorch profiler traces: the Chrome trace JSON that Kineto exports
// ({"traceEvents": [...], "deviceProperties": [...], "distributedInfo": {...}, ...}), also in
// Chrome's bare array form ([{event}, ...]). Complete events ("ph": "X") are aggregated by
// category and name; their "ts" and "dur" are microseconds, converted to seconds here.
//
// Categories: "kernel" (CUDA and ROCm alike; "Kernel" in PyTorch 1.8/1.9 exports), "gpu_memcpy"
// and "gpu_memset" ("Memcpy", "Memset"), "cpu_op" ("Operator"). Other categories (cuda_runtime,
// user_annotation, python_function, ...) count towards span_s only.
//
// The text is read as a stream of events, so a large trace is never held as a JSON tree.
// Malformed input (invalid JSON, no traceEvents, an event field of the wrong type, nesting
// deeper than 64 levels, more than 256 MiB) is an InputError naming file:line:column, the JSON
// path ("traceEvents[12].dur") and what was expected.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace hetplan::importers {

// Complete events of one category and name.
struct TraceOp {
  std::string name;
  std::string category;  // normalised: "kernel", "gpu_memcpy", "gpu_memset" or "cpu_op"
  int count = 0;
  double total_s = 0;  // summed durations
  double max_s = 0;    // longest single event
};

struct TorchTrace {
  std::vector<std::string> devices;  // deviceProperties[*].name, in order (empty for CPU-only)
  std::optional<int> rank;           // distributedInfo.rank, when present
  // Each list sorted by total time, longest first, then by name.
  std::vector<TraceOp> kernels;     // GPU kernels
  std::vector<TraceOp> memory_ops;  // GPU memcpy and memset
  std::vector<TraceOp> cpu_ops;     // CPU operators (aten::..., autograd::...)
  // From the earliest "ts" to the latest end (ts + dur) over all events except metadata
  // ("ph": "M"); 0 when the trace has no timed event.
  double span_s = 0;
};

// Parses the text of a trace; file_name is used in error messages only.
TorchTrace parse_torch_trace(const std::string& text, const std::string& file_name);

// Reads and parses a trace file (at most 256 MiB; gunzip .json.gz exports first).
TorchTrace import_torch_trace(const std::string& path);

}  // namespace hetplan::importers
