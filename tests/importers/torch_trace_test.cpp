// PyTorch profiler (Kineto) trace importer on real exports (tests/importers/data, copied byte for
// byte from HolisticTraceAnalysis' test data, gunzipped; see
// ../shared/data/tool-outputs/README.md) and on malformed variants
// (tests/importers/data/bad/trace-*, cut from the MI250 export). Expected values are read straight
// from the fixtures: these are parser checks.
#include "importers/torch_trace.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "tests/formats/test_support.hpp"

namespace hetplan::importers {
namespace {

using hetplan::testing::input_error_of;

const std::string kData = std::string(HETPLAN_SOURCE_DIR) + "/tests/importers/data/";
const std::string kBad = kData + "bad/";

// CUDA 8 x A100 export: cpu_op, cuda_runtime, kernel, gpu_memcpy, gpu_memset, flows.
const std::string kA100 = kData + "torch-profiler-trace-a100-simple-add-rank0.json";
// ROCm 6.2 export on MI250 (its device name prints as "AMD Radeon Graphics"); float timestamps.
const std::string kMi250 = kData + "torch-profiler-trace-mi250-rocm6.2-minitoy-train.json";

constexpr double kUs = 1e-6;

int total_count(const std::vector<TraceOp>& ops) {
  return std::accumulate(ops.begin(), ops.end(), 0,
                         [](int sum, const TraceOp& op) { return sum + op.count; });
}

bool sorted_by_time(const std::vector<TraceOp>& ops) {
  return std::is_sorted(ops.begin(), ops.end(), [](const TraceOp& a, const TraceOp& b) {
    return a.total_s > b.total_s || (a.total_s == b.total_s && a.name < b.name);
  });
}

std::string trace_error(const std::string& name) {
  return input_error_of([&] { (void)import_torch_trace(kBad + name); });
}

std::string text_error(const std::string& text) {
  return input_error_of([&] { (void)parse_torch_trace(text, "t.json"); });
}

TEST(TorchTraceA100, DevicesAndRank) {
  const TorchTrace trace = import_torch_trace(kA100);
  ASSERT_EQ(trace.devices.size(), 8u);
  for (const std::string& device : trace.devices) EXPECT_EQ(device, "NVIDIA A100-PG509-200");
  EXPECT_EQ(trace.rank, 0);  // "distributedInfo": {"rank": 0}
}

TEST(TorchTraceA100, KernelsAggregatedByName) {
  const TorchTrace trace = import_torch_trace(kA100);
  // 79 "kernel" events under 16 names.
  EXPECT_EQ(total_count(trace.kernels), 79);
  ASSERT_EQ(trace.kernels.size(), 16u);
  EXPECT_TRUE(sorted_by_time(trace.kernels));
  // Longest in total: six ampere_sgemm launches, 2673 us together, the longest 868 us.
  const TraceOp& top = trace.kernels[0];
  EXPECT_EQ(top.name, "ampere_sgemm_32x32_sliced1x4_tn");
  EXPECT_EQ(top.category, "kernel");
  EXPECT_EQ(top.count, 6);
  EXPECT_NEAR(top.total_s, 2673 * kUs, 1e-12);
  EXPECT_NEAR(top.max_s, 868 * kUs, 1e-12);
  EXPECT_EQ(trace.kernels[1].name, "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1");
  EXPECT_EQ(trace.kernels[1].count, 2);
  // Most frequent: the clamp kernel, 14 launches.
  const auto clamp = std::find_if(
      trace.kernels.begin(), trace.kernels.end(),
      [](const TraceOp& op) { return op.name.find("launch_clamp_scalar") != std::string::npos; });
  ASSERT_NE(clamp, trace.kernels.end());
  EXPECT_EQ(clamp->count, 14);
  EXPECT_NEAR(clamp->total_s, 686 * kUs, 1e-12);
}

TEST(TorchTraceA100, MemoryAndCpuOps) {
  const TorchTrace trace = import_torch_trace(kA100);
  ASSERT_EQ(trace.memory_ops.size(), 2u);
  EXPECT_EQ(trace.memory_ops[0].name, "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(trace.memory_ops[0].category, "gpu_memcpy");
  EXPECT_EQ(trace.memory_ops[0].count, 16);
  EXPECT_EQ(trace.memory_ops[1].name, "Memset (Device)");
  EXPECT_EQ(trace.memory_ops[1].category, "gpu_memset");
  EXPECT_EQ(trace.memory_ops[1].count, 3);
  // 359 "cpu_op" events under 37 names; aten::to is the longest in total.
  EXPECT_EQ(total_count(trace.cpu_ops), 359);
  EXPECT_EQ(trace.cpu_ops.size(), 37u);
  EXPECT_TRUE(sorted_by_time(trace.cpu_ops));
  EXPECT_EQ(trace.cpu_ops[0].name, "aten::to");
  EXPECT_EQ(trace.cpu_ops[0].category, "cpu_op");
  EXPECT_EQ(trace.cpu_ops[0].count, 20);
}

TEST(TorchTraceA100, SpanFromFirstToLastEvent) {
  // The profiler span starts at ts 1694039968933321; "Record Window End" is at 1694040010536061.
  EXPECT_NEAR(import_torch_trace(kA100).span_s, (1694040010536061 - 1694039968933321) * kUs, 1e-9);
}

TEST(TorchTraceMi250, RocmExport) {
  const TorchTrace trace = import_torch_trace(kMi250);
  ASSERT_EQ(trace.devices.size(), 4u);
  EXPECT_EQ(trace.devices[0], "AMD Radeon Graphics");
  EXPECT_FALSE(trace.rank);  // no distributedInfo
  // ROCm kernels use the same "kernel" category: 14 events under 12 names.
  EXPECT_EQ(total_count(trace.kernels), 14);
  ASSERT_EQ(trace.kernels.size(), 12u);
  EXPECT_TRUE(sorted_by_time(trace.kernels));
  EXPECT_EQ(trace.kernels[0].name.substr(0, 40), "Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_M");
  EXPECT_EQ(trace.kernels[0].count, 1);
  EXPECT_NEAR(trace.kernels[0].total_s, 17.600 * kUs, 1e-12);
  ASSERT_EQ(trace.memory_ops.size(), 1u);
  EXPECT_EQ(trace.memory_ops[0].name, "Memcpy HtoD (Host -> Device)");
  EXPECT_EQ(trace.memory_ops[0].count, 2);
  EXPECT_NEAR(trace.memory_ops[0].total_s, (15.720 + 22.441) * kUs, 1e-12);
  EXPECT_EQ(total_count(trace.cpu_ops), 70);
  EXPECT_EQ(trace.cpu_ops.size(), 42u);
  // Float timestamps: 4203669603018.756 to 4203669613175.703.
  EXPECT_NEAR(trace.span_s, 10156.947 * kUs, 1e-9);
}

TEST(TorchTraceFormats, LegacyCategoriesAndBareArray) {
  // PyTorch 1.8/1.9 exports spell the categories "Kernel", "Memcpy", "Operator"; Chrome's array
  // form has no enclosing object.
  const TorchTrace trace = parse_torch_trace(R"([
    {"ph": "X", "cat": "Operator", "name": "aten::mm", "ts": 100, "dur": 30},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "ts": 110, "dur": 5},
    {"ph": "X", "cat": "Kernel", "name": "volta_sgemm", "ts": 120, "dur": 20},
    {"ph": "X", "cat": "Kernel", "name": "volta_sgemm", "ts": 150, "dur": 40},
    {"ph": "X", "cat": "Memcpy", "name": "Memcpy DtoH", "ts": 195, "dur": 5},
    {"ph": "M", "name": "process_name", "ts": 0, "args": {"name": "python"}}
  ])",
                                             "legacy.json");
  EXPECT_TRUE(trace.devices.empty());
  ASSERT_EQ(trace.kernels.size(), 1u);
  EXPECT_EQ(trace.kernels[0].category, "kernel");
  EXPECT_EQ(trace.kernels[0].count, 2);
  EXPECT_NEAR(trace.kernels[0].total_s, 60 * kUs, 1e-15);
  EXPECT_NEAR(trace.kernels[0].max_s, 40 * kUs, 1e-15);
  ASSERT_EQ(trace.memory_ops.size(), 1u);
  EXPECT_EQ(trace.memory_ops[0].category, "gpu_memcpy");
  ASSERT_EQ(trace.cpu_ops.size(), 1u);
  EXPECT_EQ(trace.cpu_ops[0].category, "cpu_op");
  // From ts 100 to 195 + 5; the metadata event's ts 0 does not count.
  EXPECT_NEAR(trace.span_s, 100 * kUs, 1e-15);
}

TEST(TorchTraceFormats, EmptyEventList) {
  const TorchTrace trace = parse_torch_trace(R"({"traceEvents": []})", "empty.json");
  EXPECT_TRUE(trace.kernels.empty());
  EXPECT_EQ(trace.span_s, 0);
}

// --- Malformed traces: one test per fixture, exact messages.

TEST(TorchTraceErrors, TruncatedDownload) {
  EXPECT_EQ(trace_error("trace-truncated.json"),
            kBad +
                "trace-truncated.json:126:86: traceEvents[13]: expected well-formed JSON, got "
                "an invalid string: missing closing quote");
}

TEST(TorchTraceErrors, NoTraceEvents) {
  // The real file starts with an empty line; the top-level object opens on line 2.
  EXPECT_EQ(trace_error("trace-no-trace-events.json"),
            kBad +
                "trace-no-trace-events.json:2:1: traceEvents: expected an array of trace "
                "events, got none");
}

TEST(TorchTraceErrors, TraceEventsNotAList) {
  EXPECT_EQ(trace_error("trace-events-object.json"),
            kBad +
                "trace-events-object.json:39:18: traceEvents: expected an array of trace "
                "events, got an object");
}

TEST(TorchTraceErrors, DurationAsString) {
  EXPECT_EQ(trace_error("trace-dur-string.json"),
            kBad +
                "trace-dur-string.json:49:37: traceEvents[1].dur: expected a non-negative "
                "duration in microseconds, got \"17.600\"");
}

TEST(TorchTraceErrors, NegativeDuration) {
  EXPECT_EQ(trace_error("trace-negative-dur.json"),
            kBad +
                "trace-negative-dur.json:49:37: traceEvents[1].dur: expected a non-negative "
                "duration in microseconds, got -17.6");
}

TEST(TorchTraceErrors, EventWithoutPhase) {
  EXPECT_EQ(trace_error("trace-event-no-phase.json"),
            kBad +
                "trace-event-no-phase.json:47:3: traceEvents[1].ph: expected an event phase "
                "(\"ph\") such as \"X\", got none");
}

TEST(TorchTraceErrors, EventNotAnObject) {
  EXPECT_EQ(trace_error("trace-event-not-object.json"),
            kBad +
                "trace-event-not-object.json:47:3: traceEvents[1]: expected an event object, "
                "got 42");
}

TEST(TorchTraceErrors, TrailingComma) {
  EXPECT_EQ(trace_error("trace-trailing-comma.json"),
            kBad +
                "trace-trailing-comma.json:58:3: traceEvents: expected '[', '{', or a "
                "literal, got ']' (malformed JSON)");
}

TEST(TorchTraceErrors, DeviceWithoutName) {
  EXPECT_EQ(trace_error("trace-device-name-null.json"),
            kBad +
                "trace-device-name-null.json:14:24: deviceProperties[1].name: expected a "
                "device name string, got null");
}

TEST(TorchTraceErrors, RootNotATrace) {
  EXPECT_EQ(text_error("\n  42\n"),
            "t.json:2:3: expected a Chrome trace: an object with \"traceEvents\" or an array of "
            "events, got 42");
}

TEST(TorchTraceErrors, MissingCommaBetweenMembers) {
  EXPECT_EQ(text_error("{\"traceEvents\": [{\"ph\": \"X\"\n \"ts\": 1}]}"),
            "t.json:2:2: traceEvents[0]: expected '}', got \"ts\" (malformed JSON)");
}

TEST(TorchTraceErrors, EmptyText) {
  EXPECT_EQ(text_error(""),
            "t.json:1:1: expected '[', '{', or a literal, got the end of the file (malformed "
            "JSON)");
}

TEST(TorchTraceErrors, PathologicalNesting) {
  const std::string text =
      "{\"traceEvents\": [{\"args\": " + std::string(100, '[') + std::string(100, ']') + "}]}";
  // The 65th level opens at column 88.
  EXPECT_EQ(text_error(text),
            "t.json:1:88: traceEvents[0].args[0][0][0][0][0]...: expected at most 64 levels of "
            "nesting, got deeper");
  // A megabyte of brackets is refused as quickly.
  EXPECT_EQ(text_error(std::string(1 << 20, '[')),
            "t.json:1:65: [0][0][0][0][0][0][0][0]...: expected at most 64 levels of nesting, "
            "got deeper");
}

TEST(TorchTraceErrors, MissingFile) {
  EXPECT_EQ(trace_error("no-such-trace.json"),
            kBad + "no-such-trace.json: cannot open the file for reading");
}

TEST(TorchTraceErrors, FileOver256MiB) {
  // A sparse file: its size is checked before anything is read.
  const auto path = std::filesystem::temp_directory_path() /
                    ("hetplan-oversized-" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(path, std::ios::binary);
    out.seekp((std::streamoff{256} << 20));
    out.put('\n');
  }
  const std::string error = input_error_of([&] { (void)import_torch_trace(path.string()); });
  std::filesystem::remove(path);
  EXPECT_EQ(error, path.string() + ": expected a trace of at most 256 MiB, got 268435457 bytes");
}

}  // namespace
}  // namespace hetplan::importers
