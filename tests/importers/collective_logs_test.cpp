// Collective-benchmark importers on real tool output (tests/importers/data, copied byte for byte
// from public repositories; see ../shared/data/tool-outputs/README.md) and on malformed
// variants (tests/importers/data/bad). The expected values are read straight from the fixture
// text: these are parser checks, not model expectations.
#include "importers/collective_logs.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/formats/test_support.hpp"
#include "tests/support/temp_folder.hpp"

namespace hetplan::importers {
namespace {

using hetplan::testing::input_error_of;
using hetplan::testing::replaced;

const std::string kData = std::string(HETPLAN_SOURCE_DIR) + "/tests/importers/data/";
const std::string kBad = kData + "bad/";

const std::string kFiveCollectives =
    kData + "nccl-tests-5colls-h100-4rank-1node-nccltests2.17.8.log";
const std::string kTwoNodes =
    kData + "nccl-tests-alltoall-sendrecv-h100-2rank-2node-nccltests2.17.8.log";
const std::string kHcclAllReduce = kData + "hccl-test-allreduce-8npu-doc-example-oam-tools.txt";
const std::string kHcclRetcode7 = kData + "hccl-test-error-retcode7-doc-example-oam-tools.txt";
// Built by hand from the alltoall table of kTwoNodes, in the layout of nccl-tests' JSON writer
// (src/util.cu, JSON_FILE_VERSION 3): one line, '/' escaped, doubles as "%lf".
const std::string kJson =
    kData + "synthetic-from-text-nccl-tests-alltoall-h100-2rank-2node-v3.json";
// The same document pretty-printed (as `jq .` or json.dumps(indent=2) would).
const std::string kJsonPretty =
    kData + "synthetic-from-text-nccl-tests-alltoall-h100-2rank-2node-v3-pretty.json";

constexpr double kGBps = 1e9;  // nccl-tests' and hccl_test's GB/s
constexpr double kUs = 1e-6;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string import_error(const std::string& path) {
  return input_error_of([&] { (void)import_collective_log(path); });
}

// ---------------------------------------------------------------------------------------------
// nccl-tests text

TEST(NcclTestsText, FiveCollectivesInOneLog) {
  const auto sweeps = parse_nccl_tests(read(kFiveCollectives), "five.log");
  ASSERT_EQ(sweeps.size(), 5u);
  const std::vector<std::string> expected{"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                                          "sendrecv"};
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    SCOPED_TRACE(expected[i]);
    const CollectiveSweep& sweep = sweeps[i];
    EXPECT_EQ(sweep.collective, expected[i]);
    EXPECT_EQ(sweep.tool, "nccl-tests");
    EXPECT_EQ(sweep.version, "2.17.8");
    EXPECT_EQ(sweep.library_version, "2.29.2");  // nccl-library=22902
    EXPECT_EQ(sweep.ranks, 4);
    EXPECT_EQ(sweep.devices, std::vector<std::string>(4, "NVIDIA H100 80GB HBM3"));
    ASSERT_EQ(sweep.points.size(), 10u);
    EXPECT_EQ(sweep.points.front().bytes, 33554432.0);
    EXPECT_EQ(sweep.points.back().bytes, 17179869184.0);
    for (const auto& point : sweep.points) {
      EXPECT_EQ(point.collective, expected[i]);
      EXPECT_EQ(point.dtype, "double");
      EXPECT_EQ(point.check_passed, std::optional<bool>(true));
    }
  }
  // Each run's header line: 14 in the first block, then every 31 lines.
  EXPECT_EQ(to_string(sweeps[0].location), "five.log:14:1");
  EXPECT_EQ(to_string(sweeps[1].location), "five.log:45:1");
  EXPECT_EQ(to_string(sweeps[4].location), "five.log:138:1");
}

TEST(NcclTestsText, AllReduceFirstRowInSiUnits) {
  // "    33554432       4194304    double     sum      -1   171.88  195.22  292.83       0
  //    173.28  193.64  290.46       0"
  const auto sweeps = parse_nccl_tests(read(kFiveCollectives), "five.log");
  const CollectivePoint& point = sweeps.at(0).points.at(0);
  EXPECT_EQ(to_string(point.location), "five.log:16:5");
  EXPECT_EQ(point.count, 4194304);
  EXPECT_EQ(point.redop, "sum");
  EXPECT_DOUBLE_EQ(point.out_of_place_time_s.value(), 171.88 * kUs);
  EXPECT_DOUBLE_EQ(point.out_of_place_algbw.value(), 195.22 * kGBps);
  EXPECT_DOUBLE_EQ(point.out_of_place_busbw.value(), 292.83 * kGBps);
  EXPECT_DOUBLE_EQ(point.in_place_time_s.value(), 173.28 * kUs);
  EXPECT_DOUBLE_EQ(point.in_place_algbw.value(), 193.64 * kGBps);
  EXPECT_DOUBLE_EQ(point.in_place_busbw.value(), 290.46 * kGBps);
  // Last all_reduce row: "17179869184  2147483648 ... 70128.7  244.98  367.46 ..."
  const CollectivePoint& last = sweeps.at(0).points.back();
  EXPECT_EQ(last.count, 2147483648);
  EXPECT_DOUBLE_EQ(last.out_of_place_time_s.value(), 70128.7 * kUs);
  EXPECT_DOUBLE_EQ(last.out_of_place_busbw.value(), 367.46 * kGBps);
}

TEST(NcclTestsText, AlltoallRedopNoneAndInPlaceNotChecked) {
  const auto sweeps = parse_nccl_tests(read(kFiveCollectives), "five.log");
  const CollectiveSweep& alltoall = sweeps.at(3);
  ASSERT_EQ(alltoall.collective, "alltoall");
  // "  1073741824      33554432    double    none      -1  2386.68  449.89  337.42       0
  //    2368.36  453.37  340.03    N/A"
  const CollectivePoint& point = alltoall.points.at(5);
  EXPECT_EQ(point.bytes, 1073741824.0);
  EXPECT_EQ(point.redop, "none");
  EXPECT_DOUBLE_EQ(point.in_place_busbw.value(), 340.03 * kGBps);
  // The out-of-place #wrong is 0; the in-place N/A counts as not checked.
  EXPECT_EQ(point.check_passed, std::optional<bool>(true));
}

TEST(NcclTestsText, TwoNodeAlltoallAndSendrecv) {
  const auto sweeps = parse_nccl_tests(read(kTwoNodes), "two.log");
  ASSERT_EQ(sweeps.size(), 2u);
  EXPECT_EQ(sweeps[0].collective, "alltoall");
  EXPECT_EQ(sweeps[1].collective, "sendrecv");
  for (const auto& sweep : sweeps) {
    EXPECT_EQ(sweep.ranks, 2);
    ASSERT_EQ(sweep.points.size(), 3u);
    EXPECT_EQ(sweep.points.front().bytes, 4294967296.0);
    EXPECT_EQ(sweep.points.back().bytes, 17179869184.0);
  }
  // "  8589934592     536870912    double    none      -1   110523   77.72   38.86 ..."
  EXPECT_DOUBLE_EQ(sweeps[0].points[1].out_of_place_time_s.value(), 110523 * kUs);
  EXPECT_DOUBLE_EQ(sweeps[0].points[1].out_of_place_busbw.value(), 38.86 * kGBps);
  // " 17179869184    2147483648    double     sum      -1   392397   43.78   43.78 ..."
  EXPECT_DOUBLE_EQ(sweeps[1].points[2].out_of_place_busbw.value(), 43.78 * kGBps);
  EXPECT_EQ(sweeps[1].points[2].count, 2147483648);
}

// The printed busbw is algbw times nccl-tests' factor; checks bus_bandwidth_factor against the
// tool's own numbers (each printed with two decimals).
TEST(NcclTestsText, PrintedBusBandwidthMatchesTheFactor) {
  for (const auto& sweep : parse_nccl_tests(read(kFiveCollectives), "five.log")) {
    SCOPED_TRACE(sweep.collective);
    const auto factor = bus_bandwidth_factor(sweep.collective, sweep.ranks);
    ASSERT_TRUE(factor.has_value());
    for (const auto& point : sweep.points) {
      EXPECT_NEAR(point.out_of_place_algbw.value() * *factor, point.out_of_place_busbw.value(),
                  0.01 * kGBps);
      EXPECT_NEAR(point.in_place_algbw.value() * *factor, point.in_place_busbw.value(),
                  0.01 * kGBps);
    }
  }
}

TEST(NcclTestsText, DebugLinesInsideTheTableAreSkipped) {
  std::string text = read(kTwoNodes);
  text =
      replaced(text, "  8589934592     536870912",
               "cnode3-002:2207955:2207955 [0] NCCL INFO comm 0x5 rank 0 nranks 2 - Init COMPLETE\n"
               "10-0-0-1:1:1 [0] NCCL INFO Channel 00/02\n"
               "-------------------------------------------------------\n"
               "  8589934592     536870912");
  const auto sweeps = parse_nccl_tests(text, "debug.log");
  ASSERT_EQ(sweeps.size(), 2u);
  EXPECT_EQ(sweeps[0].points.size(), 3u);
}

// rccl-tests prints "rccl-tests: Version ..." without '#', and an "RCCL version" line. The text
// follows ROCm/ROCm issue #5571's all_reduce_perf output (two rows kept).
TEST(NcclTestsText, RcclTestsHeader) {
  const std::string text =
      "$ mpirun -np 2 ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 1\n"
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 "
      "agg iters: 1 validation: 1 graph: 0\n"
      "#\n"
      "rccl-tests: Version develop:33cc4df\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid   4791 on     corona device  0 [0000:07:00] AMD Radeon AI PRO "
      "R9700\n"
      "#  Rank  1 Group  0 Pid   5418 on     bootes device  0 [0000:07:00] AMD Radeon AI PRO "
      "R9700\n"
      "RCCL version : 2.27.7-develop:29e1567\n"
      "#\n"
      "#                                                              out-of-place                "
      "       in-place          \n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong                               \n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
      "(us)  (GB/s)  (GB/s)                                      \n"
      "           8             2     float     sum      -1    47.35    0.00    0.00      0    "
      "45.17    0.00    0.00      0\n"
      "   134217728      33554432     float     sum      -1    12463   10.77   10.77      0    "
      "12457   10.77   10.77      0\n"
      "# Errors with asterisks indicate errors that have exceeded the maximum threshold.\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 3.51213 \n"
      "#\n"
      "# Collective test concluded: all_reduce_perf\n";
  const auto sweeps = parse_nccl_tests(text, "rccl.log");
  ASSERT_EQ(sweeps.size(), 1u);
  EXPECT_EQ(sweeps[0].tool, "rccl-tests");
  EXPECT_EQ(sweeps[0].version, "develop:33cc4df");
  EXPECT_EQ(sweeps[0].library_version, "2.27.7-develop:29e1567");
  EXPECT_EQ(sweeps[0].collective, "all_reduce");
  EXPECT_EQ(sweeps[0].ranks, 2);
  EXPECT_EQ(sweeps[0].devices, std::vector<std::string>(2, "AMD Radeon AI PRO R9700"));
  ASSERT_EQ(sweeps[0].points.size(), 2u);
  EXPECT_EQ(sweeps[0].points[1].dtype, "float");
  EXPECT_DOUBLE_EQ(sweeps[0].points[1].in_place_time_s.value(), 12457 * kUs);
}

// Older nccl-tests: no "Collective test starting" line, no root column, an "error" column
// instead of "#wrong". The collective comes from the command line.
TEST(NcclTestsText, OldHeaderWithoutRootColumn) {
  const std::string text =
      "$ ./build/all_reduce_perf -b 8 -e 16 -f 2 -g 2\n"
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 "
      "validation: 1\n"
      "#\n"
      "# Using devices\n"
      "#   Rank  0 Pid  56417 on host device  0 [0x1b] Tesla V100-SXM2-16GB\n"
      "#   Rank  1 Pid  56417 on host device  1 [0x1c] Tesla V100-SXM2-16GB\n"
      "#\n"
      "#                                                     out-of-place                       "
      "in-place\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   "
      "algbw   busbw  error\n"
      "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  "
      "(GB/s)  (GB/s)\n"
      "           8             2   float     sum    37.46    0.00    0.00  1e-07    36.63    "
      "0.00    0.00  1e-07\n"
      "          16             4   float     sum    37.90    0.00    0.00  0e+00    36.92    "
      "0.00    0.00  0e+00\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 0.00 \n";
  const auto sweeps = parse_nccl_tests(text, "old.log");
  ASSERT_EQ(sweeps.size(), 1u);
  EXPECT_EQ(sweeps[0].collective, "all_reduce");
  EXPECT_EQ(sweeps[0].ranks, 2);
  EXPECT_EQ(sweeps[0].devices.at(1), "Tesla V100-SXM2-16GB");
  ASSERT_EQ(sweeps[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(sweeps[0].points[1].in_place_time_s.value(), 36.92 * kUs);
  EXPECT_FALSE(sweeps[0].points[1].check_passed.has_value());
}

TEST(NcclTestsText, HintsFillOnlyWhatTheLogDoesNotSay) {
  const auto from_log = parse_nccl_tests(read(kTwoNodes), "two.log", {"all_reduce", 64});
  EXPECT_EQ(from_log.at(0).collective, "alltoall");
  EXPECT_EQ(from_log.at(0).ranks, 2);

  std::string text = read(kTwoNodes);
  text = replaced(text, "# Collective test starting: alltoall_perf\n", "");
  text = replaced(text, "# Collective test concluded: alltoall_perf\n", "");
  const auto hinted = parse_nccl_tests(text, "two.log", {"all_gather", 0});
  EXPECT_EQ(hinted.at(0).collective, "all_gather");
  EXPECT_EQ(hinted.at(0).points.at(0).collective, "all_gather");
  EXPECT_EQ(hinted.at(1).collective, "sendrecv");
  EXPECT_EQ(parse_nccl_tests(text, "two.log").at(0).collective, "");
}

TEST(NcclTestsText, WrongCountAboveZeroFailsTheCheck) {
  std::string text = read(kTwoNodes);
  text = replaced(text, "38.93       0", "38.93       3");
  const auto sweeps = parse_nccl_tests(text, "two.log");
  EXPECT_EQ(sweeps.at(0).points.at(0).check_passed, std::optional<bool>(false));
  EXPECT_EQ(sweeps.at(0).points.at(1).check_passed, std::optional<bool>(true));
}

TEST(NcclTestsTextErrors, RowMissingAColumn) {
  EXPECT_EQ(import_error(kBad + "nccl-tests-row-missing-column.log"),
            kBad +
                "nccl-tests-row-missing-column.log:15:3: row: expected 13 columns as in the table "
                "header on line 12, got 12");
}

TEST(NcclTestsTextErrors, BusBandwidthNotANumber) {
  EXPECT_EQ(import_error(kBad + "nccl-tests-busbw-not-a-number.log"),
            kBad +
                "nccl-tests-busbw-not-a-number.log:14:73: alltoall.out_of_place.busbw: expected a "
                "non-negative bandwidth in GB/s, got \"38,93\"");
}

TEST(NcclTestsTextErrors, NegativeSize) {
  EXPECT_EQ(import_error(kBad + "nccl-tests-negative-size.log"),
            kBad +
                "nccl-tests-negative-size.log:36:2: sendrecv.size: expected a non-negative integer "
                "number of bytes, got \"-4294967296\"");
}

// A measured time is never 0: a row that says so (nccl-tests prints two decimals of a
// microsecond) has no bandwidth to give and is refused at its cell, in every format.
TEST(NcclTestsTextErrors, ZeroTime) {
  std::string text = read(kFiveCollectives);
  const std::string row = "    33554432       4194304    double     sum      -1   171.88";
  const auto at = text.find(row);
  ASSERT_NE(at, std::string::npos);
  text.replace(at + row.size() - 6, 6, "  0.00");
  EXPECT_EQ(input_error_of([&] { (void)parse_nccl_tests(text, "z.log", {}); }),
            "z.log:16:58: all_reduce.out_of_place.time: expected a positive time in "
            "microseconds, got \"0.00\"");
}

// The same in nccl-tests' JSON (-J) and in hccl_test's table.
TEST(CollectiveLogErrors, ZeroTimeInTheOtherFormats) {
  std::string json = read(kJson);
  const std::string time = "\"out_of_place\":{\"time\":55165.900000";
  const auto at = json.find(time);
  ASSERT_NE(at, std::string::npos);
  json.replace(at, time.size(), "\"out_of_place\":{\"time\":0.000000");
  const std::string json_error =
      input_error_of([&] { (void)parse_nccl_tests_json(json, "z.json", {}); });
  EXPECT_NE(json_error.find("results[0].out_of_place.time: expected a positive time in "
                            "microseconds, got 0.000000"),
            std::string::npos)
      << json_error;
  EXPECT_TRUE(json_error.starts_with("z.json:1:")) << json_error;

  std::string hccl = read(kHcclAllReduce);
  const std::string row = "16384             |     858.80    |";
  const auto row_at = hccl.find(row);
  ASSERT_NE(row_at, std::string::npos);
  hccl.replace(row_at, row.size(), "16384             |       0.00    |");
  EXPECT_EQ(input_error_of([&] { (void)parse_hccl_test(hccl, "z.txt", {"all_reduce", 8}); }),
            "z.txt:4:27: all_reduce.avg_time: expected a positive time in microseconds, got "
            "\"0.00\"");
}

// A NUL byte (a log cut by a crash is often padded with them) is refused where it is, before
// anything is read from the log.
TEST(NcclTestsTextErrors, NulByte) {
  std::string text = read(kFiveCollectives);
  const auto line_16 = text.find("    33554432       4194304    double");
  ASSERT_NE(line_16, std::string::npos);
  text.insert(line_16 + 4, 1, '\0');
  test::TempFolder folder;
  const std::string path = folder.file("nul.log");
  std::ofstream(path, std::ios::binary) << text;
  EXPECT_EQ(import_error(path), path + ":16:5: expected text, got a NUL byte");
}

TEST(NcclTestsTextErrors, LogWithoutTable) {
  EXPECT_EQ(import_error(kBad + "nccl-tests-no-table.log"),
            kBad +
                "nccl-tests-no-table.log:11:1: expected a nccl-tests result table (a \"#  size  count  "
                "type ...\" header line followed by rows), got none");
}

TEST(NcclTestsTextErrors, HeaderWithoutRows) {
  EXPECT_EQ(import_error(kBad + "nccl-tests-header-without-rows.log"),
            kBad +
                "nccl-tests-header-without-rows.log:12:1: table: expected result rows under the "
                "table header, got none");
}

TEST(NcclTestsTextErrors, EmptyText) {
  EXPECT_EQ(input_error_of([] { (void)parse_nccl_tests("", "empty.log"); }),
            "empty.log:1:1: expected a nccl-tests result table (a \"#  size  count  type ...\" header "
            "line followed by rows), got none");
}

TEST(NcclTestsTextErrors, HeaderWithoutBandwidthColumns) {
  std::string text = read(kTwoNodes);
  text = replaced(
      text,
      "#       size         count      type   redop    root     time   algbw   busbw  "
      "#wrong     time   algbw   busbw  #wrong \n#        (B)    (elements)                "
      "               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n  "
      "4294967296     268435456",
      "#       size         count      type   redop    root     time  #wrong\n  "
      "4294967296     268435456");
  EXPECT_EQ(
      input_error_of([&] { (void)parse_nccl_tests(text, "two.log"); }),
      "two.log:12:1: table: expected a header with size, count, type, and one or two groups "
      "of time, algbw and busbw columns, got \"size         count      type   redop    ...\"");
}

// ---------------------------------------------------------------------------------------------
// nccl-tests -J JSON

void expect_alltoall_json(const std::vector<CollectiveSweep>& sweeps) {
  ASSERT_EQ(sweeps.size(), 1u);
  const CollectiveSweep& sweep = sweeps[0];
  EXPECT_EQ(sweep.tool, "nccl-tests");
  EXPECT_EQ(sweep.version, "");
  EXPECT_EQ(sweep.library_version, "2.29.2");
  EXPECT_EQ(sweep.collective, "alltoall");  // from args[0], ".\/build\/alltoall_perf"
  EXPECT_EQ(sweep.ranks, 2);                // 2 processes x 1 thread x 1 GPU
  EXPECT_EQ(sweep.devices, std::vector<std::string>(2, "NVIDIA H100 80GB HBM3"));
  ASSERT_EQ(sweep.points.size(), 3u);
  EXPECT_EQ(sweep.points.front().bytes, 4294967296.0);
  EXPECT_EQ(sweep.points.back().bytes, 17179869184.0);
  const CollectivePoint& first = sweep.points.front();
  EXPECT_EQ(first.collective, "alltoall");
  EXPECT_EQ(first.count, 268435456);
  EXPECT_EQ(first.dtype, "double");
  EXPECT_EQ(first.redop, "none");
  EXPECT_DOUBLE_EQ(first.out_of_place_time_s.value(), 55165.9 * kUs);
  EXPECT_DOUBLE_EQ(first.out_of_place_algbw.value(), 77.86 * kGBps);
  EXPECT_DOUBLE_EQ(first.out_of_place_busbw.value(), 38.93 * kGBps);
  EXPECT_DOUBLE_EQ(first.in_place_busbw.value(), 43.70 * kGBps);
  EXPECT_EQ(first.check_passed, std::optional<bool>(true));  // nwrong 0 out of place, null in place
}

TEST(NcclTestsJson, WriterLayout) {
  expect_alltoall_json(parse_nccl_tests_json(read(kJson), "a.json"));
}

TEST(NcclTestsJson, PrettyPrinted) {
  const auto sweeps = parse_nccl_tests_json(read(kJsonPretty), "a.json");
  expect_alltoall_json(sweeps);
  EXPECT_EQ(to_string(sweeps.at(0).location), "a.json:58:14");
  EXPECT_EQ(to_string(sweeps.at(0).points.at(1).location), "a.json:80:5");
}

TEST(NcclTestsJson, AgreesWithTheTextLogAndWithNlohmann) {
  const auto from_json = parse_nccl_tests_json(read(kJson), "a.json");
  const auto from_text = parse_nccl_tests(read(kTwoNodes), "two.log");
  const auto reference = nlohmann::json::parse(read(kJson));
  ASSERT_EQ(reference.at("results").size(), from_json.at(0).points.size());
  for (std::size_t i = 0; i < from_json.at(0).points.size(); ++i) {
    const CollectivePoint& json_point = from_json[0].points[i];
    const CollectivePoint& text_point = from_text.at(0).points.at(i);
    const auto& result = reference["results"][i];
    EXPECT_EQ(json_point.bytes, result["size"].get<double>());
    EXPECT_DOUBLE_EQ(json_point.in_place_algbw.value(),
                     result["in_place"]["alg_bw"].get<double>() * kGBps);
    EXPECT_EQ(json_point.bytes, text_point.bytes);
    EXPECT_DOUBLE_EQ(json_point.out_of_place_busbw.value(), text_point.out_of_place_busbw.value());
    EXPECT_DOUBLE_EQ(json_point.in_place_time_s.value(), text_point.in_place_time_s.value());
  }
}

TEST(NcclTestsJson, CpuTimeNullSideAndNan) {
  std::string text = read(kJsonPretty);
  // -C 1 writes "cpu_time"; trace replay writes "out_of_place": null; NaN is written as "nan".
  text = replaced(text, "\"time\": 55165.9,", "\"cpu_time\": 55165.9,");
  text = replaced(text,
                  "\"out_of_place\": {\n        \"time\": 110523.0,\n        \"alg_bw\": 77.72,\n"
                  "        \"bus_bw\": 38.86,\n        \"nwrong\": 0.0\n      },",
                  "\"out_of_place\": null,");
  text = replaced(text, "\"bus_bw\": 43.72,", "\"bus_bw\": \"nan\",");
  const auto sweeps = parse_nccl_tests_json(text, "a.json");
  const auto& points = sweeps.at(0).points;
  EXPECT_DOUBLE_EQ(points.at(0).out_of_place_time_s.value(), 55165.9 * kUs);
  EXPECT_FALSE(points.at(1).out_of_place_time_s.has_value());
  EXPECT_FALSE(points.at(1).check_passed.has_value());
  EXPECT_DOUBLE_EQ(points.at(1).in_place_busbw.value(), 43.73 * kGBps);
  EXPECT_FALSE(points.at(2).in_place_busbw.has_value());
  EXPECT_DOUBLE_EQ(points.at(2).in_place_algbw.value(), 87.44 * kGBps);
}

TEST(NcclTestsJson, EscapesInStrings) {
  std::string text = read(kJson);
  text = replaced(text, "\"NVIDIA H100 80GB HBM3\"},{",
                  "\"NVIDIA \\u00e9\\ud83d\\ude00 \\\"x\\\"\"},{");
  const auto sweeps = parse_nccl_tests_json(text, "a.json");
  EXPECT_EQ(sweeps.at(0).devices.at(0), "NVIDIA \xc3\xa9\xf0\x9f\x98\x80 \"x\"");
}

TEST(NcclTestsJsonErrors, Truncated) {
  EXPECT_EQ(import_error(kBad + "nccl-tests-json-truncated.json"),
            kBad + "nccl-tests-json-truncated.json:90:1: expected a string key, got end of input");
}

TEST(NcclTestsJsonErrors, BusBandwidthAsString) {
  EXPECT_EQ(import_error(kBad + "nccl-tests-json-busbw-string.json"),
            kBad +
                "nccl-tests-json-busbw-string.json:68:19: results[0].out_of_place.bus_bw: "
                "expected a non-negative bandwidth in GB/s, got \"38.93\"");
}

TEST(NcclTestsJsonErrors, NegativeSize) {
  EXPECT_EQ(import_error(kBad + "nccl-tests-json-negative-size.json"),
            kBad +
                "nccl-tests-json-negative-size.json:102:15: results[2].size: expected a "
                "non-negative integer number of bytes, got -17179869184");
}

TEST(NcclTestsJsonErrors, MissingCount) {
  EXPECT_EQ(
      import_error(kBad + "nccl-tests-json-missing-count.json"),
      kBad + "nccl-tests-json-missing-count.json:80:5: results[1].count: missing required key");
}

TEST(NcclTestsJsonErrors, UnknownVersion) {
  EXPECT_EQ(import_error(kBad + "nccl-tests-json-version-4.json"),
            kBad +
                "nccl-tests-json-version-4.json:2:14: version: expected a JSON file version from 1 "
                "to 3, got 4");
}

// The writer prints an infinite double with "%lf", which is not JSON.
TEST(NcclTestsJsonErrors, InfiniteTime) {
  EXPECT_EQ(import_error(kBad + "nccl-tests-json-infinite-time.json"),
            kBad + "nccl-tests-json-infinite-time.json:108:17: expected a JSON value, got 'i'");
}

TEST(NcclTestsJsonErrors, ResultsNotAList) {
  EXPECT_EQ(import_error(kBad + "nccl-tests-json-results-not-a-list.json"),
            kBad +
                "nccl-tests-json-results-not-a-list.json:58:14: results: expected a list of "
                "results, got an object");
}

TEST(NcclTestsJsonErrors, Syntax) {
  auto error = [](const std::string& text) {
    return input_error_of([&] { (void)parse_nccl_tests_json(text, "j.json"); });
  };
  EXPECT_EQ(error(""), "j.json:1:1: expected a JSON value, got end of input");
  EXPECT_EQ(error("[1, 2"), "j.json:1:6: expected ',' or ']', got end of input");
  EXPECT_EQ(error("{\"version\": 3,}"), "j.json:1:15: expected a string key, got '}'");
  EXPECT_EQ(error("{\"version\": 3} x"),
            "j.json:1:16: expected the end of the JSON document, got 'x'");
  EXPECT_EQ(error("{\"a\": 1,\n \"a\": 2}"), "j.json:2:2: expected unique keys, got \"a\" twice");
  EXPECT_EQ(error("{\"a\": \"x\ny\"}"),
            "j.json:1:9: expected '\"' to close the string or an escaped control character, got "
            "byte 0x0a");
  EXPECT_EQ(error("{\"a\": 01}"), "j.json:1:8: expected ',' or '}', got '1'");
  EXPECT_EQ(error("{\"a\": -}"), "j.json:1:8: expected a digit, got '}'");
  EXPECT_EQ(error("{\"a\": \"\\ud800\"}"),
            "j.json:1:14: expected a low surrogate \\uDC00-\\uDFFF, got '\"'");
  EXPECT_EQ(error(std::string(100, '[')),
            "j.json:1:65: expected at most 64 levels of nesting, got deeper");
  EXPECT_EQ(error("[]"), "j.json:1:1: expected a JSON object (nccl-tests -J output), got a list");
  EXPECT_EQ(error("{\"results\": []}"), "j.json:1:1: version: missing required key");
  EXPECT_EQ(error("{\"version\": 3, \"results\": []}"),
            "j.json:1:27: results: expected at least one result, got a list");
}

// ---------------------------------------------------------------------------------------------
// hccl_test

TEST(HcclTest, DocumentationExample) {
  const auto sweeps = parse_hccl_test(read(kHcclAllReduce), "hccl.txt");
  ASSERT_EQ(sweeps.size(), 1u);
  const CollectiveSweep& sweep = sweeps[0];
  EXPECT_EQ(sweep.tool, "hccl_test");
  EXPECT_EQ(sweep.collective, "");  // the output does not name it
  EXPECT_EQ(sweep.ranks, 0);
  EXPECT_EQ(to_string(sweep.location), "hccl.txt:2:1");
  ASSERT_EQ(sweep.points.size(), 14u);
  EXPECT_EQ(sweep.points.front().bytes, 8192.0);
  EXPECT_EQ(sweep.points.back().bytes, 67108864.0);
  // "8192              |     764.55    |       0.00998        | success"
  const CollectivePoint& first = sweep.points.front();
  EXPECT_DOUBLE_EQ(first.out_of_place_time_s.value(), 764.55 * kUs);
  EXPECT_DOUBLE_EQ(first.out_of_place_algbw.value(), 0.00998 * kGBps);
  EXPECT_FALSE(first.out_of_place_busbw.has_value());  // rank count unknown
  EXPECT_FALSE(first.in_place_time_s.has_value());
  EXPECT_EQ(first.count, 0);
  EXPECT_EQ(first.check_passed, std::optional<bool>(true));
  EXPECT_EQ(to_string(first.location), "hccl.txt:3:1");
}

TEST(HcclTest, HintsGiveTheBusBandwidth) {
  const auto sweeps = parse_hccl_test(read(kHcclAllReduce), "hccl.txt", {"all_reduce", 8});
  const CollectiveSweep& sweep = sweeps.at(0);
  EXPECT_EQ(sweep.collective, "all_reduce");
  EXPECT_EQ(sweep.ranks, 8);
  // "67108864          |    2630.20    |      23.76245        | success"; 2 (n - 1) / n = 1.75
  EXPECT_DOUBLE_EQ(sweep.points.back().out_of_place_busbw.value(), 23.76245 * kGBps * 1.75);
  EXPECT_EQ(sweep.points.back().collective, "all_reduce");
}

// The command the documentation shows above its example output.
TEST(HcclTest, CommandLineInTheLog) {
  const std::string text =
      "# mpirun -n 8 ./bin/all_reduce_test -b 8K -e 64M -f 2 -d fp32 -o sum -p 8\n" +
      read(kHcclAllReduce);
  const auto sweeps = parse_hccl_test(text, "hccl.txt", {"all_gather", 16});
  const CollectiveSweep& sweep = sweeps.at(0);
  EXPECT_EQ(sweep.collective, "all_reduce");
  EXPECT_EQ(sweep.ranks, 8);
  EXPECT_EQ(sweep.points.at(0).dtype, "fp32");
  EXPECT_EQ(sweep.points.at(0).redop, "sum");
  // "1048576           |    1778.30    |       0.54916        | success"
  EXPECT_EQ(sweep.points.at(7).bytes, 1048576.0);
  EXPECT_DOUBLE_EQ(sweep.points.at(7).out_of_place_busbw.value(), 0.54916 * kGBps * 1.75);
}

// The tool's source prints "aveg_time(us):" where its documentation shows "avg_time(us):", and
// "NULL" when the data check is off.
TEST(HcclTest, SourceSpellingAndNoCheck) {
  std::string text = read(kHcclAllReduce);
  text = replaced(text, "|   avg_time(us): |", "| aveg_time(us): |");
  text = replaced(text, "0.00998        | success", "0.00998        | NULL");
  const auto sweeps = parse_hccl_test(text, "hccl.txt");
  ASSERT_EQ(sweeps.at(0).points.size(), 14u);
  EXPECT_FALSE(sweeps.at(0).points.at(0).check_passed.has_value());
  EXPECT_DOUBLE_EQ(sweeps.at(0).points.at(13).out_of_place_time_s.value(), 2630.20 * kUs);
}

TEST(HcclTestErrors, Retcode7) {
  EXPECT_EQ(import_error(kHcclRetcode7),
            kHcclRetcode7 +
                ":2:1: run: expected a result table, got retcode 7 from "
                "./common/src/hccl_test_common.cc:538: This is an error in "
                "init_hcclComm.");
}

TEST(HcclTestErrors, TimeNotANumber) {
  EXPECT_EQ(import_error(kBad + "hccl-test-time-not-a-number.txt"),
            kBad +
                "hccl-test-time-not-a-number.txt:3:25: avg_time: expected a positive time in "
                "microseconds, got \"-nan\"");
}

TEST(HcclTestErrors, RowMissingAColumn) {
  EXPECT_EQ(import_error(kBad + "hccl-test-row-missing-column.txt"),
            kBad +
                "hccl-test-row-missing-column.txt:4:1: row: expected 4 columns separated by '|' as "
                "in the table header on line 2, got 3");
}

TEST(HcclTestErrors, UnknownCheckResult) {
  EXPECT_EQ(import_error(kBad + "hccl-test-unknown-check-result.txt"),
            kBad +
                "hccl-test-unknown-check-result.txt:5:60: check_result: expected success, failed "
                "or NULL, got \"passed\"");
}

TEST(HcclTestErrors, HeaderWithoutRows) {
  EXPECT_EQ(import_error(kBad + "hccl-test-header-without-rows.txt"),
            kBad +
                "hccl-test-header-without-rows.txt:2:1: table: expected result rows under the "
                "table header, got none");
}

TEST(HcclTestErrors, FieldNamesTheCollectiveWhenKnown) {
  EXPECT_EQ(input_error_of([] {
              (void)parse_hccl_test(read(kBad + "hccl-test-time-not-a-number.txt"), "h.txt",
                                    {"all_reduce", 8});
            }),
            "h.txt:3:25: all_reduce.avg_time: expected a positive time in microseconds, got "
            "\"-nan\"");
}

TEST(HcclTestErrors, UnknownHeaderColumn) {
  std::string text = read(kHcclAllReduce);
  text = replaced(text, "alg_bandwidth(GB/s):", "bus_bandwidth(GB/s):");
  EXPECT_EQ(input_error_of([&] { (void)parse_hccl_test(text, "h.txt"); }),
            "h.txt:2:39: table: expected a column data_size(Bytes):, aveg_time(us):, "
            "avg_time(us):, alg_bandwidth(GB/s): or check_result:, got \"bus_bandwidth(GB/s):\"");
}

TEST(HcclTestErrors, EmptyText) {
  EXPECT_EQ(input_error_of([] { (void)parse_hccl_test("\n\n", "h.txt"); }),
            "h.txt:3:1: expected a hccl_test result table (a \"data_size(Bytes): | aveg_time(us): | "
            "...\" header followed by rows), got none");
}

// ---------------------------------------------------------------------------------------------
// Format sniffing and files

TEST(CollectiveLogFormat, SniffsEachFixture) {
  EXPECT_EQ(sniff_collective_log(read(kFiveCollectives)), CollectiveLogFormat::nccl_tests_text);
  EXPECT_EQ(sniff_collective_log(read(kTwoNodes)), CollectiveLogFormat::nccl_tests_text);
  EXPECT_EQ(sniff_collective_log(read(kJson)), CollectiveLogFormat::nccl_tests_json);
  EXPECT_EQ(sniff_collective_log(read(kJsonPretty)), CollectiveLogFormat::nccl_tests_json);
  EXPECT_EQ(sniff_collective_log(read(kHcclAllReduce)), CollectiveLogFormat::hccl_test);
  EXPECT_EQ(sniff_collective_log(read(kHcclRetcode7)), CollectiveLogFormat::hccl_test);
  EXPECT_EQ(sniff_collective_log(read(kBad + "collective-unknown-format.txt")), std::nullopt);
  EXPECT_EQ(sniff_collective_log(""), std::nullopt);
}

TEST(CollectiveLogFormat, ImportDispatches) {
  EXPECT_EQ(import_collective_log(kFiveCollectives).size(), 5u);
  EXPECT_EQ(import_collective_log(kJson).at(0).collective, "alltoall");
  const auto hccl = import_collective_log(kHcclAllReduce, {"all_reduce", 8});
  EXPECT_EQ(hccl.at(0).tool, "hccl_test");
  EXPECT_TRUE(hccl.at(0).points.at(0).out_of_place_busbw.has_value());
}

TEST(CollectiveLogFormat, UnknownFormat) {
  EXPECT_EQ(import_error(kBad + "collective-unknown-format.txt"),
            kBad +
                "collective-unknown-format.txt:1:1: expected nccl-tests or rccl-tests output (text or "
                "-J JSON) or hccl_test output, got none of their headers");
}

TEST(CollectiveLogFormat, EmptyFile) {
  EXPECT_EQ(import_error(kBad + "collective-empty.log"),
            kBad +
                "collective-empty.log:1:1: expected nccl-tests or rccl-tests output (text or -J JSON) "
                "or hccl_test output, got an empty file");
}

TEST(CollectiveLogFormat, MissingFile) {
  EXPECT_EQ(import_error(kBad + "no-such-file.log"),
            kBad + "no-such-file.log: cannot open the file for reading");
}

TEST(CollectiveLogFormat, FileOver64MiB) {
  const auto path =
      std::filesystem::temp_directory_path() /
      ("hetplan-collective-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
       "-big.log");
  { std::ofstream(path.string()) << "# nccl-tests version 2.17.8\n"; }
  std::filesystem::resize_file(path, (std::uintmax_t{64} << 20) + 1);  // sparse
  const std::string message = import_error(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(message, path.string() + ": expected a file of at most 64 MiB, got 67108865 bytes");
}

TEST(BusBandwidthFactor, NcclTestsDefinitions) {
  EXPECT_EQ(bus_bandwidth_factor("all_reduce", 8), 1.75);
  EXPECT_EQ(bus_bandwidth_factor("all_gather", 4), 0.75);
  EXPECT_EQ(bus_bandwidth_factor("reduce_scatter", 4), 0.75);
  EXPECT_EQ(bus_bandwidth_factor("alltoall", 2), 0.5);
  EXPECT_EQ(bus_bandwidth_factor("broadcast", 8), 1.0);
  EXPECT_EQ(bus_bandwidth_factor("reduce", 8), 1.0);
  EXPECT_EQ(bus_bandwidth_factor("sendrecv", 2), 1.0);
  EXPECT_EQ(bus_bandwidth_factor("all_reduce", 0), std::nullopt);
  EXPECT_EQ(bus_bandwidth_factor("hypercube", 8), std::nullopt);
  EXPECT_EQ(bus_bandwidth_factor("", 8), std::nullopt);
}

}  // namespace
}  // namespace hetplan::importers
