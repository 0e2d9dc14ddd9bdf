// Readers of collective-communication benchmark output into measurement sweeps:
// - nccl-tests and rccl-tests text output (one or more collectives per log),
// - nccl-tests `-J FILE` JSON output (the writer in NVIDIA/nccl-tests src/util.cu, file versions
//   1 to 3),
// - Huawei hccl_test output (the table printed by HcclOpBaseTest::print_execution_time).
//
// Everything is SI inside: bytes, seconds, bytes per second. The tools print microseconds and
// GB/s (1e9 bytes per second); the conversion factors come from core/units.
//
// Malformed input is an InputError naming file:line:column, the field being read ("row",
// "all_reduce.in_place.busbw", "results[2].out_of_place.bus_bw") and what was expected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace hetplan::importers {

// One message size of one collective.
struct CollectivePoint {
  // "all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv"
  // (or another name the tool uses, such as "gather"); empty when the log does not say.
  std::string collective;
  double bytes = 0;        // the tool's size column, in bytes (nccl-tests' per-collective meaning)
  std::int64_t count = 0;  // elements; 0 where the tool does not print it (hccl_test)
  std::string dtype;       // as printed: "float", "double", "bfloat16", "fp32"; empty if unknown
  std::string redop;       // as printed: "sum", "none" for data movement; empty if unknown
  std::optional<double> out_of_place_time_s, out_of_place_algbw, out_of_place_busbw;  // s, B/s
  std::optional<double> in_place_time_s, in_place_algbw, in_place_busbw;              // s, B/s
  // The tool's own data check: true when every reported #wrong / nwrong is 0 or hccl_test says
  // "success"; false when one is not; empty when nothing was checked ("N/A", "NULL", null).
  std::optional<bool> check_passed;
  SourceLocation location;  // the row (text) or the results entry (JSON)
};

// The points of one table: one run of one collective binary.
struct CollectiveSweep {
  std::string tool;             // "nccl-tests", "rccl-tests" or "hccl_test"
  std::string version;          // the tool's version as printed ("2.17.8", "develop:33cc4df")
  std::string library_version;  // NCCL / RCCL version ("2.29.2"); empty when not printed
  std::string collective;       // as in CollectivePoint; empty when the log does not say
  int ranks = 0;                // 0 when the log does not say
  // Device names as the log lists them, in order: text output has one per rank; nccl-tests JSON
  // has one per process (its writer keeps only the first device line of each process).
  std::vector<std::string> devices;
  std::vector<CollectivePoint> points;
  SourceLocation location;  // the table header (text) or the results list (JSON)
};

// What the caller knows about a run that its log may not say (hccl_test prints neither the
// collective nor the rank count). A value read from the log always wins over a hint.
struct LogHints {
  std::string collective;  // e.g. "all_reduce"
  int ranks = 0;           // 0: unknown
};

enum class CollectiveLogFormat { nccl_tests_text, nccl_tests_json, hccl_test };

// Text output of nccl-tests or rccl-tests (*_perf binaries); one sweep per result table.
std::vector<CollectiveSweep> parse_nccl_tests(const std::string& text, const std::string& file_name,
                                              const LogHints& hints = {});

// The JSON file nccl-tests writes with `-J FILE`; one sweep.
std::vector<CollectiveSweep> parse_nccl_tests_json(const std::string& text,
                                                   const std::string& file_name,
                                                   const LogHints& hints = {});

// hccl_test output. It prints algorithm bandwidth only: bus bandwidth is derived with
// bus_bandwidth_factor when the collective and the rank count are known (from a command line
// in the log or from the hints), else left empty. Its single measurement uses separate send and
// receive buffers, so it is stored as out-of-place.
std::vector<CollectiveSweep> parse_hccl_test(const std::string& text, const std::string& file_name,
                                             const LogHints& hints = {});

// Which of the formats above the text is, or nothing when it is none of them.
std::optional<CollectiveLogFormat> sniff_collective_log(std::string_view text);

// Reads a file (at most 64 MiB), recognises its format and parses it.
std::vector<CollectiveSweep> import_collective_log(const std::string& path,
                                                   const LogHints& hints = {});

// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): busbw = algbw * factor. Empty for a
// collective it does not define or a rank count below 1.
std::optional<double> bus_bandwidth_factor(std::string_view collective, int ranks);

}  // namespace hetplan::importers
