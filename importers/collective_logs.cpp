#include "importers/collective_logs.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "core/input_file.hpp"
#include "importers/located_json.hpp"
#include "core/units.hpp"

namespace hetplan::importers {
namespace {

constexpr std::size_t kMaxFileBytes = std::size_t{64} << 20;

// The tools print microseconds and GB/s; core/units owns the factors.
double si_factor(std::string_view one_unit, Dimension dimension) {
  return parse_quantity(one_unit, dimension).value();
}
const double kMicrosecond = si_factor("1 us", Dimension::duration);
const double kGigabytePerSecond = si_factor("1 GB/s", Dimension::bandwidth);

// ---------------------------------------------------------------------------------------------
// Text helpers

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
  return text;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

struct Line {
  std::string_view text;  // without the line break (and without a trailing '\r')
  int number = 0;         // 1-based
};

std::vector<Line> lines_of(std::string_view text) {
  std::vector<Line> lines;
  int number = 1;
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({line, number++});
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

struct Token {
  std::string_view text;
  int column = 0;  // 1-based, in the line
};

std::vector<Token> tokens_of(std::string_view line) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_blank(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_blank(line[i])) ++i;
    if (i > start) tokens.push_back({line.substr(start, i - start), static_cast<int>(start) + 1});
  }
  return tokens;
}

// Column (1-based) of `part`, a view into `line`.
int column_in(std::string_view line, std::string_view part) {
  return static_cast<int>(part.data() - line.data()) + 1;
}

std::optional<double> non_negative_number(std::string_view text) {
  double value = 0.0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (result.ec != std::errc{} || result.ptr != text.data() + text.size() ||
      !std::isfinite(value) || value < 0.0) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::int64_t> integer(std::string_view text) {
  std::int64_t value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (result.ec != std::errc{} || result.ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<std::int64_t> non_negative_integer(std::string_view text) {
  const auto value = integer(text);
  if (!value || *value < 0) return std::nullopt;
  return value;
}

// A row of a result table starts with a number (a size); a leading sign is read too, so that a
// negative size is reported rather than skipped. Anything else inside a table (NCCL_DEBUG lines
// "host:pid:tid [0] NCCL INFO ...", MPI banners, "-----" rules) is not a row.
bool is_row_candidate(std::string_view trimmed) {
  if (trimmed.empty()) return false;
  const auto first = tokens_of(trimmed).front().text;
  if (contains(first, ":")) return false;
  if (is_digit(first.front())) return true;
  return first.size() > 1 && (first.front() == '-' || first.front() == '+') && is_digit(first[1]);
}

// "./build/all_reduce_perf" with suffix "_perf" -> "all_reduce"; empty when the token is not
// such a binary. Also strips "_perf_mpi" (the MPI build's name in some packages).
std::string collective_from_binary(std::string_view token, std::string_view suffix) {
  const auto slash = token.rfind('/');
  if (slash != std::string_view::npos) token.remove_prefix(slash + 1);
  std::string_view name;
  const std::string mpi_suffix = std::string(suffix) + "_mpi";
  if (token.size() > mpi_suffix.size() && token.ends_with(mpi_suffix)) {
    name = token.substr(0, token.size() - mpi_suffix.size());
  } else if (token.size() > suffix.size() && token.ends_with(suffix)) {
    name = token.substr(0, token.size() - suffix.size());
  } else {
    return "";
  }
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || is_digit(c) || c == '_')) return "";
  }
  if (name == "send_recv") return "sendrecv";  // hccl_test spells it with an underscore
  return std::string(name);
}

// NCCL's version code (NCCL_VERSION(X,Y,Z)): X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z
// before. Returns the text unchanged when it is not a code.
std::string nccl_version_text(std::string_view code_text) {
  const auto code = non_negative_integer(code_text);
  if (!code || *code == 0) return std::string(code_text);
  const std::int64_t major = *code >= 10000 ? *code / 10000 : *code / 1000;
  const std::int64_t minor = *code >= 10000 ? (*code % 10000) / 100 : (*code % 1000) / 100;
  const std::int64_t patch = *code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string field_name(std::string_view collective, std::string_view rest) {
  if (collective.empty()) return std::string(rest);
  return std::string(collective) + "." + std::string(rest);
}

// Copies the sweep's collective into its points; with `derive`, also sets the bus bandwidth
// from the algorithm bandwidth (for hccl_test, which prints no bus bandwidth).
void finish_sweep(CollectiveSweep& sweep, bool derive) {
  for (auto& point : sweep.points) point.collective = sweep.collective;
  if (!derive) return;
  const auto factor = bus_bandwidth_factor(sweep.collective, sweep.ranks);
  if (!factor) return;
  const double bus_per_alg = *factor;
  for (auto& point : sweep.points) {
    if (point.out_of_place_algbw)
      point.out_of_place_busbw = *point.out_of_place_algbw * bus_per_alg;
    if (point.in_place_algbw) point.in_place_busbw = *point.in_place_algbw * bus_per_alg;
  }
}

// ---------------------------------------------------------------------------------------------
// nccl-tests / rccl-tests text

// How the collective of a table is found, first match wins:
//   1. "# Collective test starting: all_reduce_perf" (nccl-tests >= 2.13 and rccl-tests print it
//      before each run; both real fixtures have it);
//   2. a command line earlier in the same run that names a *_perf binary
//      ("mpirun -np 8 ./build/all_reduce_perf -b 8 -e 8G"), as logs of older versions show;
//   3. "# Collective test concluded: all_reduce_perf" after the table;
//   4. LogHints::collective;
// else it stays empty. A run (block) starts at "# nccl-tests version", "# Collective test
// starting", "# nThread", "# Using devices", "rccl-tests: Version" or a command line that comes
// after the previous run's table.
class NcclTextParser {
 public:
  NcclTextParser(const std::string& text, const std::string& file, const LogHints& hints)
      : text_(text), file_(file), hints_(hints) {}

  std::vector<CollectiveSweep> parse() {
    for (const Line& line : lines_of(text_)) read_line(line);
    close_table();
    if (sweeps_.empty()) {
      throw InputError(location_at(file_, text_, text_.size()), "",
                       "expected a nccl-tests result table (a \"#  size  count  type ...\" header "
                       "line followed by rows), got none");
    }
    for (auto& sweep : sweeps_) {
      if (sweep.collective.empty()) sweep.collective = hints_.collective;
      if (sweep.ranks == 0) sweep.ranks = hints_.ranks;
      finish_sweep(sweep, false);
    }
    return std::move(sweeps_);
  }

 private:
  enum class Kind {
    size,
    count,
    type,
    redop,
    root,
    time,
    algbw,
    busbw,
    wrong,
    error,
    timestamp,
    other
  };

  struct Column {
    Kind kind = Kind::other;
    int group = -1;         // index into Table::group_names for time / algbw / busbw / #wrong
    std::string name;       // as in the header, without a leading '#'
    std::size_t width = 1;  // tokens it takes in a row (the timestamp is "date time")
  };

  struct Table {
    std::vector<Column> columns;
    std::vector<std::string> group_names;  // "out_of_place", "in_place"
    std::size_t tokens = 0;
    int header_line = 0;
  };

  struct Block {
    std::string tool = "nccl-tests";
    std::string version;
    std::string library_version;
    std::string started;    // from "# Collective test starting:"
    std::string commanded;  // from a command line
    std::vector<std::string> devices;
    bool has_table = false;
  };

  [[noreturn]] void fail(int line, int column, std::string field, std::string message) const {
    throw InputError({file_, line, column}, std::move(field), std::move(message));
  }

  void read_line(const Line& line) {
    const std::string_view trimmed = trim(line.text);
    if (trimmed.empty()) return;
    if (trimmed.front() == '#') {
      read_comment(trim(trimmed.substr(1)), line);
      return;
    }
    if (starts_with(trimmed, "rccl-tests:")) {
      start_block();
      block_.tool = "rccl-tests";
      std::string_view rest = trim(trimmed.substr(std::string_view("rccl-tests:").size()));
      if (starts_with(rest, "Version"))
        rest = trim(rest.substr(std::string_view("Version").size()));
      block_.version = std::string(rest);
      return;
    }
    if (starts_with(trimmed, "RCCL version")) {
      block_.tool = "rccl-tests";
      const auto colon = trimmed.find(':');
      if (colon != std::string_view::npos) {
        block_.library_version = std::string(trim(trimmed.substr(colon + 1)));
      }
      return;
    }
    if (table_open_ && is_row_candidate(trimmed)) {
      read_row(line);
      return;
    }
    for (const Token& token : tokens_of(trimmed)) {
      std::string name = collective_from_binary(token.text, "_perf");
      if (!name.empty()) {
        start_block();
        block_.commanded = std::move(name);
        return;
      }
    }
  }

  void read_comment(std::string_view body, const Line& line) {
    const auto tokens = tokens_of(body);
    if (tokens.empty()) return;
    if (starts_with(body, "nccl-tests version")) {
      start_block();
      block_.tool = "nccl-tests";
      if (tokens.size() > 2) block_.version = std::string(tokens[2].text);
      for (const Token& token : tokens) {
        if (starts_with(token.text, "nccl-library=")) {
          block_.library_version =
              nccl_version_text(token.text.substr(std::string_view("nccl-library=").size()));
        }
      }
    } else if (starts_with(body, "Collective test starting:")) {
      start_block();
      block_.started = collective_from_binary(
          trim(body.substr(std::string_view("Collective test starting:").size())), "_perf");
    } else if (starts_with(body, "nThread") || starts_with(body, "Using devices")) {
      start_block();
    } else if (tokens[0].text == "Rank" && tokens.size() > 1 && integer(tokens[1].text)) {
      start_block();
      block_.devices.push_back(device_of_rank_line(body, tokens));
    } else if (starts_with(body, "Collective test concluded:")) {
      close_table();
      const std::string name = collective_from_binary(
          trim(body.substr(std::string_view("Collective test concluded:").size())), "_perf");
      if (!sweeps_.empty() && sweeps_.back().collective.empty()) sweeps_.back().collective = name;
    } else if (starts_with(body, "Out of bounds values") ||
               starts_with(body, "Avg bus bandwidth")) {
      close_table();
    } else if (tokens[0].text == "size" && tokens.size() > 1 && tokens[1].text == "count") {
      open_table(body, line);
    } else if (contains(body, "out-of-place") || contains(body, "in-place")) {
      pending_groups_.clear();
      for (const Token& token : tokens) {
        if (starts_with(token.text, "out-of-place")) pending_groups_.push_back("out_of_place");
        if (starts_with(token.text, "in-place")) pending_groups_.push_back("in_place");
      }
    }
  }

  // "Rank  0 Group  0 Pid 4175036 on cnode3-002 device  0 [0000:1b:00] NVIDIA H100 80GB HBM3"
  // (rccl-tests may omit "Group"): the text after the device's bus id.
  static std::string device_of_rank_line(std::string_view body, const std::vector<Token>& tokens) {
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (tokens[i].text != "device" || !integer(tokens[i + 1].text)) continue;
      const std::size_t after =
          static_cast<std::size_t>(tokens[i + 1].column - 1) + tokens[i + 1].text.size();
      std::string_view rest = trim(body.substr(after));
      if (starts_with(rest, "[")) {
        const auto close = rest.find(']');
        rest = close == std::string_view::npos ? std::string_view{} : trim(rest.substr(close + 1));
      }
      return std::string(rest);
    }
    return "";
  }

  void start_block() {
    if (!block_.has_table) return;
    close_table();
    block_ = Block{};
  }

  void open_table(std::string_view body, const Line& line) {
    close_table();
    const int header_column = static_cast<int>(line.text.find('#')) + 1;
    Table table;
    table.header_line = line.number;
    int groups = 0;
    bool has_size = false;
    bool has_count = false;
    bool has_type = false;
    std::vector<int> algbw_per_group(2, 0);
    std::vector<int> busbw_per_group(2, 0);
    bool well_formed = true;
    for (const Token& token : tokens_of(body)) {
      Column column;
      column.name = std::string(starts_with(token.text, "#") ? token.text.substr(1) : token.text);
      const std::string_view name = token.text;
      if (name == "size") {
        column.kind = Kind::size;
        well_formed = well_formed && !has_size;
        has_size = true;
      } else if (name == "count") {
        column.kind = Kind::count;
        well_formed = well_formed && !has_count;
        has_count = true;
      } else if (name == "type") {
        column.kind = Kind::type;
        has_type = true;
      } else if (name == "redop") {
        column.kind = Kind::redop;
      } else if (name == "root") {
        column.kind = Kind::root;
      } else if (name == "time" || name == "cputime") {
        column.kind = Kind::time;
        ++groups;
      } else if (name == "algbw" || name == "busbw") {
        column.kind = name == "algbw" ? Kind::algbw : Kind::busbw;
        if (groups == 0 || groups > 2) {
          well_formed = false;
        } else {
          auto& seen = name == "algbw" ? algbw_per_group : busbw_per_group;
          ++seen[static_cast<std::size_t>(groups - 1)];
        }
      } else if (name == "#wrong") {
        column.kind = Kind::wrong;
      } else if (name == "error") {
        column.kind = Kind::error;
      } else if (name == "timestamp") {
        column.kind = Kind::timestamp;
        column.width = 2;
      }
      if (column.kind == Kind::time || column.kind == Kind::algbw || column.kind == Kind::busbw ||
          column.kind == Kind::wrong || column.kind == Kind::error) {
        column.group = groups - 1;
      }
      table.tokens += column.width;
      table.columns.push_back(std::move(column));
    }
    well_formed = well_formed && has_size && has_count && has_type && groups >= 1 && groups <= 2;
    for (int g = 0; well_formed && g < groups; ++g) {
      well_formed = algbw_per_group[static_cast<std::size_t>(g)] == 1 &&
                    busbw_per_group[static_cast<std::size_t>(g)] == 1;
    }
    if (!well_formed) {
      fail(line.number, header_column, "table",
           "expected a header with size, count, type, and one or two groups of time, algbw and "
           "busbw columns, got " +
               hetplan::quoted(body));
    }
    const bool distinct_groups =
        pending_groups_.size() != 2 || pending_groups_[0] != pending_groups_[1];
    if (pending_groups_.size() == static_cast<std::size_t>(groups) && distinct_groups) {
      table.group_names = pending_groups_;
    } else {
      table.group_names = {"out_of_place", "in_place"};
      table.group_names.resize(static_cast<std::size_t>(groups));
    }
    pending_groups_.clear();

    CollectiveSweep sweep;
    sweep.tool = block_.tool;
    sweep.version = block_.version;
    sweep.library_version = block_.library_version;
    sweep.collective = !block_.started.empty()     ? block_.started
                       : !block_.commanded.empty() ? block_.commanded
                                                   : std::string();
    sweep.devices = block_.devices;
    sweep.ranks = !block_.devices.empty() ? static_cast<int>(block_.devices.size()) : 0;
    sweep.location = {file_, line.number, header_column};
    sweeps_.push_back(std::move(sweep));
    table_ = std::move(table);
    table_open_ = true;
    block_.has_table = true;
  }

  void close_table() {
    if (!table_open_) return;
    table_open_ = false;
    CollectiveSweep& sweep = sweeps_.back();
    if (sweep.points.empty()) {
      fail(sweep.location.line, sweep.location.column, "table",
           "expected result rows under the table header, got none");
    }
  }

  void read_row(const Line& line) {
    CollectiveSweep& sweep = sweeps_.back();
    const auto tokens = tokens_of(line.text);
    if (tokens.size() != table_.tokens) {
      fail(line.number, tokens.front().column, "row",
           "expected " + std::to_string(table_.tokens) +
               " columns as in the table header on line " + std::to_string(table_.header_line) +
               ", got " + std::to_string(tokens.size()));
    }
    CollectivePoint point;
    point.location = {file_, line.number, tokens.front().column};
    bool checked = false;
    bool passed = true;
    std::size_t index = 0;
    for (const Column& column : table_.columns) {
      const Token& token = tokens[index];
      index += column.width;
      const std::string group =
          column.group >= 0 ? table_.group_names[static_cast<std::size_t>(column.group)] + "."
                            : std::string();
      const bool in_place = group == "in_place.";
      auto bad = [&](std::string_view expected) {
        fail(line.number, token.column, field_name(sweep.collective, group + column.name),
             "expected " + std::string(expected) + ", got " + hetplan::quoted(token.text));
      };
      switch (column.kind) {
        case Kind::size: {
          const auto bytes = non_negative_integer(token.text);
          if (!bytes) bad("a non-negative integer number of bytes");
          point.bytes = static_cast<double>(*bytes);
          break;
        }
        case Kind::count: {
          const auto count = non_negative_integer(token.text);
          if (!count) bad("a non-negative integer element count");
          point.count = *count;
          break;
        }
        case Kind::type:
          point.dtype = std::string(token.text);
          break;
        case Kind::redop:
          point.redop = std::string(token.text);
          break;
        case Kind::root:
          if (!integer(token.text)) bad("an integer root rank");
          break;
        case Kind::time: {
          // A measured time is never 0: a row that says so has no bandwidth to give.
          const auto us = non_negative_number(token.text);
          if (!us || *us <= 0) bad("a positive time in microseconds");
          (in_place ? point.in_place_time_s : point.out_of_place_time_s) = *us * kMicrosecond;
          break;
        }
        case Kind::algbw:
        case Kind::busbw: {
          const auto gbps = non_negative_number(token.text);
          if (!gbps) bad("a non-negative bandwidth in GB/s");
          const double value = *gbps * kGigabytePerSecond;
          if (column.kind == Kind::algbw) {
            (in_place ? point.in_place_algbw : point.out_of_place_algbw) = value;
          } else {
            (in_place ? point.in_place_busbw : point.out_of_place_busbw) = value;
          }
          break;
        }
        case Kind::wrong: {
          if (token.text == "N/A") break;
          // rccl-tests marks counts above its threshold with an asterisk.
          std::string_view count = token.text;
          if (count.size() > 1 && count.back() == '*') count.remove_suffix(1);
          const auto wrong = non_negative_number(count);
          if (!wrong) bad("a count of wrong elements or N/A");
          checked = true;
          passed = passed && *wrong == 0.0;
          break;
        }
        case Kind::error:
          if (token.text != "N/A" && !non_negative_number(token.text)) bad("a number or N/A");
          break;
        case Kind::timestamp:
        case Kind::other:
          break;
      }
    }
    if (checked) point.check_passed = passed;
    sweep.points.push_back(std::move(point));
  }

  const std::string& text_;
  const std::string& file_;
  const LogHints& hints_;
  std::vector<CollectiveSweep> sweeps_;
  Block block_;
  Table table_;
  bool table_open_ = false;
  std::vector<std::string> pending_groups_;
};

using Json = LocatedJson;

// ---------------------------------------------------------------------------------------------
// nccl-tests -J JSON
//
// Read as NVIDIA/nccl-tests src/util.cu writes it (JSON_FILE_VERSION 3; versions 1 and 2 have
// the same fields used here):
//   { "version": 3, "start_time": "...", "args": ["./build/all_reduce_perf", "-b", ...],
//     "env": [...], "nccl_version": 22902,
//     "config": { "nthreads": 1, "ngpus": 1, ..., "devices": [ { "rank": 0, "group": 0,
//                 "pid": 1, "hostname": "...", "device": 0, "device_hex": "0000:1b:00",
//                 "device_info": "NVIDIA H100 80GB HBM3" }, ... ] },
//     "results": [ { "size": 33554432, "count": 4194304, "type": "double", "redop": "sum",
//                    "root": "    -1",
//                    "out_of_place": { "time": 171.880000, "alg_bw": 195.220000,
//                                      "bus_bw": 292.830000, "nwrong": 0.000000 },
//                    "in_place": { ... }, "actual_iterations": 20, "experiment_name": "" } ],
//     "out_of_bounds": {...}, "average_bus_bandwidth": {...}, "errors": [], "end_time": "..." }
// Details of that writer followed here: "time" is "cpu_time" under -C 1; "out_of_place" is null
// (or "in_place" absent) when a side was not run; "nwrong" is null when not checked; a NaN
// double is written as the string "nan" (read as no value); "root" is a padded string ("%6i");
// "devices" holds one entry per process (the first device line of each), so the rank count is
// devices * nthreads * ngpus. The collective comes from args[0] ("all_reduce_perf"); the file
// names no nccl-tests version. Keys not listed are ignored, as the writer adds keys over time.
class NcclJsonReader {
 public:
  NcclJsonReader(const std::string& file, const LogHints& hints) : file_(file), hints_(hints) {}

  std::vector<CollectiveSweep> read(const Json& root) {
    if (root.kind != Json::Kind::object) expected(root, "", "a JSON object (nccl-tests -J output)");
    const Json& version = required(root, "", "version");
    const auto version_number = as_integer(version, "version", "a JSON file version from 1 to 3");
    if (version_number < 1 || version_number > 3) {
      expected(version, "version", "a JSON file version from 1 to 3");
    }

    CollectiveSweep sweep;
    sweep.tool = "nccl-tests";
    if (const Json* args = root.find("args")) {
      if (args->kind != Json::Kind::array) expected(*args, "args", "a list of strings");
      if (!args->items.empty()) {
        const Json& program = args->items.front();
        if (program.kind != Json::Kind::string) expected(program, "args[0]", "a string");
        sweep.collective = collective_from_binary(program.text, "_perf");
      }
    }
    if (const Json* nccl = root.find("nccl_version")) {
      const auto code = as_integer(*nccl, "nccl_version", "an NCCL version code such as 22902");
      sweep.library_version = nccl_version_text(std::to_string(code));
    }
    if (const Json* config = root.find("config")) read_config(*config, sweep);

    const Json& results = required(root, "", "results");
    if (results.kind != Json::Kind::array) expected(results, "results", "a list of results");
    if (results.items.empty()) expected(results, "results", "at least one result");
    sweep.location = at(results);
    for (std::size_t i = 0; i < results.items.size(); ++i) {
      sweep.points.push_back(read_result(results.items[i], "results[" + std::to_string(i) + "]"));
    }
    if (sweep.collective.empty()) sweep.collective = hints_.collective;
    if (sweep.ranks == 0) sweep.ranks = hints_.ranks;
    finish_sweep(sweep, false);
    std::vector<CollectiveSweep> sweeps;
    sweeps.push_back(std::move(sweep));
    return sweeps;
  }

 private:
  SourceLocation at(const Json& value) const { return {file_, value.line, value.column}; }

  [[noreturn]] void expected(const Json& value, const std::string& path,
                             std::string_view what) const {
    throw InputError(at(value), path, "expected " + std::string(what) + ", got " + describe(value));
  }

  const Json& required(const Json& object, const std::string& path, std::string_view key) const {
    const Json* value = object.find(key);
    if (value == nullptr) {
      throw InputError(at(object), path.empty() ? std::string(key) : path + "." + std::string(key),
                       "missing required key");
    }
    return *value;
  }

  std::int64_t as_integer(const Json& value, const std::string& path, std::string_view what) const {
    if (value.kind != Json::Kind::number) expected(value, path, what);
    const auto number = integer(value.text);
    if (!number) expected(value, path, what);
    return *number;
  }

  std::int64_t as_count(const Json& value, const std::string& path, std::string_view what) const {
    const auto number = as_integer(value, path, what);
    if (number < 0) expected(value, path, what);
    return number;
  }

  // A non-negative number; the string "nan" (how the writer prints NaN) is no value.
  std::optional<double> as_measure(const Json& value, const std::string& path,
                                   std::string_view what) const {
    if (value.kind == Json::Kind::string && value.text == "nan") return std::nullopt;
    if (value.kind != Json::Kind::number) expected(value, path, what);
    const auto number = non_negative_number(value.text);
    if (!number) expected(value, path, what);
    return number;
  }

  std::string as_string(const Json& value, const std::string& path) const {
    if (value.kind != Json::Kind::string) expected(value, path, "a string");
    return value.text;
  }

  void read_config(const Json& config, CollectiveSweep& sweep) const {
    if (config.kind != Json::Kind::object) expected(config, "config", "an object");
    std::int64_t per_process = 1;
    for (const char* key : {"nthreads", "ngpus"}) {
      if (const Json* value = config.find(key)) {
        const auto n = as_count(*value, std::string("config.") + key, "a positive integer");
        if (n < 1 || n > 1000000)
          expected(*value, std::string("config.") + key, "a positive integer");
        per_process *= n;
      }
    }
    const Json* devices = config.find("devices");
    if (devices == nullptr) return;
    if (devices->kind != Json::Kind::array)
      expected(*devices, "config.devices", "a list of devices");
    for (std::size_t i = 0; i < devices->items.size(); ++i) {
      const Json& device = devices->items[i];
      const std::string path = "config.devices[" + std::to_string(i) + "]";
      if (device.kind != Json::Kind::object) expected(device, path, "an object");
      const Json* info = device.find("device_info");
      sweep.devices.push_back(info != nullptr ? as_string(*info, path + ".device_info") : "");
    }
    const std::int64_t ranks = static_cast<std::int64_t>(devices->items.size()) * per_process;
    if (ranks > 100000000) expected(*devices, "config.devices", "at most 1e8 ranks in all");
    sweep.ranks = static_cast<int>(ranks);
  }

  CollectivePoint read_result(const Json& result, const std::string& path) const {
    if (result.kind != Json::Kind::object) expected(result, path, "an object");
    CollectivePoint point;
    point.location = at(result);
    point.bytes = static_cast<double>(as_count(required(result, path, "size"), path + ".size",
                                               "a non-negative integer number of bytes"));
    point.count = as_count(required(result, path, "count"), path + ".count",
                           "a non-negative integer element count");
    point.dtype = as_string(required(result, path, "type"), path + ".type");
    if (const Json* redop = result.find("redop")) point.redop = as_string(*redop, path + ".redop");
    if (const Json* root = result.find("root")) {
      const bool ok = root->kind == Json::Kind::number ? integer(root->text).has_value()
                                                       : root->kind == Json::Kind::string &&
                                                             integer(trim(root->text)).has_value();
      if (!ok) expected(*root, path + ".root", "an integer root rank");
    }
    bool checked = false;
    bool passed = true;
    bool any_side = false;
    for (const bool in_place : {false, true}) {
      const std::string key = in_place ? "in_place" : "out_of_place";
      const Json* side = result.find(key);
      if (side == nullptr || side->kind == Json::Kind::null) continue;
      const std::string side_path = path + (in_place ? ".in_place" : ".out_of_place");
      if (side->kind != Json::Kind::object) expected(*side, side_path, "an object or null");
      any_side = true;
      const Json* time = side->find("time");
      std::string_view time_key = ".time";
      if (time == nullptr) {
        time = side->find("cpu_time");
        time_key = ".cpu_time";
      }
      if (time == nullptr) {
        throw InputError(at(*side), side_path + ".time", "missing required key");
      }
      const auto us = as_measure(*time, side_path + std::string(time_key),
                                 "a positive time in microseconds");
      if (us && *us <= 0) expected(*time, side_path + std::string(time_key),
                                   "a positive time in microseconds");
      const auto alg = as_measure(required(*side, side_path, "alg_bw"), side_path + ".alg_bw",
                                  "a non-negative bandwidth in GB/s");
      const auto bus = as_measure(required(*side, side_path, "bus_bw"), side_path + ".bus_bw",
                                  "a non-negative bandwidth in GB/s");
      auto& time_s = in_place ? point.in_place_time_s : point.out_of_place_time_s;
      auto& algbw = in_place ? point.in_place_algbw : point.out_of_place_algbw;
      auto& busbw = in_place ? point.in_place_busbw : point.out_of_place_busbw;
      if (us) time_s = *us * kMicrosecond;
      if (alg) algbw = *alg * kGigabytePerSecond;
      if (bus) busbw = *bus * kGigabytePerSecond;
      if (const Json* wrong = side->find("nwrong");
          wrong != nullptr && wrong->kind != Json::Kind::null) {
        const auto count =
            as_measure(*wrong, side_path + ".nwrong", "a count of wrong elements or null");
        if (count) {
          checked = true;
          passed = passed && *count == 0.0;
        }
      }
    }
    if (!any_side) {
      throw InputError(at(result), path + ".in_place",
                       "expected in_place or out_of_place results, got neither");
    }
    if (checked) point.check_passed = passed;
    return point;
  }

  const std::string& file_;
  const LogHints& hints_;
};

// ---------------------------------------------------------------------------------------------
// hccl_test
//
// HcclOpBaseTest::print_execution_time prints, on the root rank,
//   "%-15s | %-12s | %-18s | %s\n" with "data_size(Bytes):", "aveg_time(us):",
//   "alg_bandwidth(GB/s):", "check_result:" (the documentation shows "avg_time(us):"), then rows
//   "%-17llu | %-14.2f | %-20.5f | success|failed|NULL".
// Before the table, HcclTest::init_hcclComm prints "the minbytes is ..., maxbytes is ..., iters
// is ..., warmup_iters is ...". A failing call prints "hccl interface return err <file>:<line>,
// retcode: <n>" and "This is an error in <function>.". The output names neither the collective
// nor the rank count: they come from a command line in the log ("mpirun -n 8
// ./bin/all_reduce_test -b 8K -e 64M -f 2 -d fp32 -o sum -p 8": the binary, mpirun's -n/-np,
// and the test's -d and -o) or from the hints.
class HcclParser {
 public:
  HcclParser(const std::string& text, const std::string& file, const LogHints& hints)
      : text_(text), file_(file), hints_(hints) {}

  std::vector<CollectiveSweep> parse() {
    const auto lines = lines_of(text_);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const Line& line = lines[i];
      const std::string_view trimmed = trim(line.text);
      if (trimmed.empty()) continue;
      if (contains(trimmed, "return err") && contains(trimmed, "retcode:")) {
        fail_run(line, i + 1 < lines.size() ? trim(lines[i + 1].text) : std::string_view{});
      }
      if (starts_with(trimmed, "the minbytes is")) {
        close_table();
      } else if (contains(trimmed, "data_size(Bytes)")) {
        open_table(line);
      } else if (table_open_ && is_row_candidate(trimmed)) {
        read_row(line);
      } else {
        read_command(trimmed);
      }
    }
    close_table();
    if (sweeps_.empty()) {
      throw InputError(location_at(file_, text_, text_.size()), "",
                       "expected a hccl_test result table (a \"data_size(Bytes): | "
                       "aveg_time(us): | ...\" header followed by rows), got none");
    }
    for (auto& sweep : sweeps_) finish_sweep(sweep, true);
    return std::move(sweeps_);
  }

 private:
  enum class Kind { size, time, algbw, check };
  struct Column {
    Kind kind;
    std::string name;  // for error messages: "data_size", "aveg_time", ...
  };
  struct Command {
    std::string collective;
    int ranks = 0;
    std::string dtype;
    std::string redop;
  };

  [[noreturn]] void fail(int line, int column, std::string field, std::string message) const {
    throw InputError({file_, line, column}, std::move(field), std::move(message));
  }

  // "hccl interface return err ./common/src/hccl_test_common.cc:538, retcode: 7"
  [[noreturn]] void fail_run(const Line& line, std::string_view next) const {
    const std::string_view trimmed = trim(line.text);
    std::string_view where;
    const auto err = trimmed.find("return err");
    const auto comma = trimmed.rfind(',');
    if (err != std::string_view::npos && comma != std::string_view::npos && comma > err) {
      where = trim(trimmed.substr(err + 10, comma - err - 10));
      // One documented variant repeats the phrase: "return errreturn err ./common/...".
      while (starts_with(where, "return err")) where = trim(where.substr(10));
    }
    std::string_view retcode = trim(trimmed.substr(trimmed.find("retcode:") + 8));
    std::string message = "expected a result table, got retcode " + std::string(retcode);
    if (!where.empty()) message += " from " + std::string(where);
    if (starts_with(next, "This is an error in")) message += ": " + std::string(next);
    fail(line.number, column_in(line.text, trimmed), "run", message);
  }

  void read_command(std::string_view trimmed) {
    const auto tokens = tokens_of(trimmed);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string name = collective_from_binary(tokens[i].text, "_test");
      if (name.empty()) continue;
      close_table();
      Command command;
      command.collective = std::move(name);
      for (std::size_t j = 0; j + 1 < i; ++j) {  // mpirun's options come before the binary
        const auto option = tokens[j].text;
        if (option == "-n" || option == "-np" || option == "--np" || option == "--n") {
          const auto ranks = non_negative_integer(tokens[j + 1].text);
          if (ranks && *ranks >= 1 && *ranks <= 100000000) command.ranks = static_cast<int>(*ranks);
        }
      }
      for (std::size_t j = i + 1; j + 1 < tokens.size(); ++j) {  // the test's own options
        if (tokens[j].text == "-d" || tokens[j].text == "--datatype") {
          command.dtype = std::string(tokens[j + 1].text);
        }
        if (tokens[j].text == "-o" || tokens[j].text == "--op") {
          command.redop = std::string(tokens[j + 1].text);
        }
      }
      command_ = std::move(command);
      return;
    }
  }

  void open_table(const Line& line) {
    close_table();
    std::vector<Column> columns;
    bool has_size = false;
    bool has_time = false;
    bool has_algbw = false;
    std::string_view rest = line.text;
    while (true) {
      const auto bar = rest.find('|');
      const std::string_view cell = trim(rest.substr(0, bar));
      std::string_view name = cell;
      if (!name.empty() && name.back() == ':') name.remove_suffix(1);
      Column column{Kind::check, std::string(name)};
      bool duplicate = false;
      if (name == "data_size(Bytes)") {
        column = {Kind::size, "data_size"};
        duplicate = has_size;
        has_size = true;
      } else if (name == "aveg_time(us)" || name == "avg_time(us)") {
        column = {Kind::time, name == "avg_time(us)" ? "avg_time" : "aveg_time"};
        duplicate = has_time;
        has_time = true;
      } else if (name == "alg_bandwidth(GB/s)") {
        column = {Kind::algbw, "alg_bandwidth"};
        duplicate = has_algbw;
        has_algbw = true;
      } else if (name == "check_result") {
        column = {Kind::check, "check_result"};
      } else {
        fail(line.number, column_in(line.text, cell.empty() ? rest : cell), "table",
             "expected a column data_size(Bytes):, aveg_time(us):, avg_time(us):, "
             "alg_bandwidth(GB/s): or check_result:, got " +
                 hetplan::quoted(cell));
      }
      if (duplicate) {
        fail(line.number, column_in(line.text, cell), "table",
             "expected each column once, got " + hetplan::quoted(cell) + " twice");
      }
      columns.push_back(std::move(column));
      if (bar == std::string_view::npos) break;
      rest.remove_prefix(bar + 1);
    }
    if (!has_size || !has_time || !has_algbw) {
      fail(line.number, column_in(line.text, trim(line.text)), "table",
           "expected data_size(Bytes):, aveg_time(us): and alg_bandwidth(GB/s): columns, got " +
               hetplan::quoted(trim(line.text)));
    }
    CollectiveSweep sweep;
    sweep.tool = "hccl_test";
    sweep.collective = !command_.collective.empty() ? command_.collective : hints_.collective;
    sweep.ranks = command_.ranks > 0 ? command_.ranks : hints_.ranks;
    sweep.location = {file_, line.number, column_in(line.text, trim(line.text))};
    sweeps_.push_back(std::move(sweep));
    columns_ = std::move(columns);
    header_line_ = line.number;
    table_open_ = true;
  }

  void close_table() {
    if (!table_open_) return;
    table_open_ = false;
    const CollectiveSweep& sweep = sweeps_.back();
    if (sweep.points.empty()) {
      fail(sweep.location.line, sweep.location.column, "table",
           "expected result rows under the table header, got none");
    }
  }

  void read_row(const Line& line) {
    CollectiveSweep& sweep = sweeps_.back();
    std::vector<std::string_view> cells;
    std::string_view rest = line.text;
    while (true) {
      const auto bar = rest.find('|');
      cells.push_back(trim(rest.substr(0, bar)));
      if (bar == std::string_view::npos) break;
      rest.remove_prefix(bar + 1);
    }
    const int first_column = column_in(line.text, trim(line.text));
    if (cells.size() != columns_.size()) {
      fail(line.number, first_column, "row",
           "expected " + std::to_string(columns_.size()) +
               " columns separated by '|' as in the table header on line " +
               std::to_string(header_line_) + ", got " + std::to_string(cells.size()));
    }
    CollectivePoint point;
    point.location = {file_, line.number, first_column};
    point.dtype = command_.dtype;
    point.redop = command_.redop;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const std::string_view cell = cells[i];
      const int column = column_in(line.text, cell);
      auto bad = [&](std::string_view expected) {
        fail(line.number, column, field_name(sweep.collective, columns_[i].name),
             "expected " + std::string(expected) + ", got " + hetplan::quoted(cell));
      };
      switch (columns_[i].kind) {
        case Kind::size: {
          const auto bytes = non_negative_integer(cell);
          if (!bytes) bad("a non-negative integer number of bytes");
          point.bytes = static_cast<double>(*bytes);
          break;
        }
        case Kind::time: {
          const auto us = non_negative_number(cell);
          if (!us || *us <= 0) bad("a positive time in microseconds");
          point.out_of_place_time_s = *us * kMicrosecond;
          break;
        }
        case Kind::algbw: {
          const auto gbps = non_negative_number(cell);
          if (!gbps) bad("a non-negative bandwidth in GB/s");
          point.out_of_place_algbw = *gbps * kGigabytePerSecond;
          break;
        }
        case Kind::check:
          if (cell == "success") {
            point.check_passed = true;
          } else if (cell == "failed") {
            point.check_passed = false;
          } else if (cell != "NULL") {
            bad("success, failed or NULL");
          }
          break;
      }
    }
    sweep.points.push_back(std::move(point));
  }

  const std::string& text_;
  const std::string& file_;
  const LogHints& hints_;
  std::vector<CollectiveSweep> sweeps_;
  std::vector<Column> columns_;
  Command command_;
  int header_line_ = 0;
  bool table_open_ = false;
};

bool has_nccl_tests_marker(std::string_view text) {
  for (const Line& line : lines_of(text)) {
    const std::string_view trimmed = trim(line.text);
    if (starts_with(trimmed, "rccl-tests: Version")) return true;
    if (!starts_with(trimmed, "#")) continue;
    const std::string_view body = trim(trimmed.substr(1));
    if (starts_with(body, "nccl-tests version") || starts_with(body, "Collective test starting:") ||
        starts_with(body, "nThread ") || starts_with(body, "Using devices")) {
      return true;
    }
    const auto tokens = tokens_of(body);
    if (tokens.size() > 2 && tokens[0].text == "size" && tokens[1].text == "count") return true;
  }
  return false;
}

bool has_hccl_test_marker(std::string_view text) {
  return contains(text, "data_size(Bytes)") || contains(text, "the minbytes is ") ||
         (contains(text, "return err") && contains(text, "retcode:"));
}

}  // namespace

std::optional<double> bus_bandwidth_factor(std::string_view collective, int ranks) {
  if (ranks < 1) return std::nullopt;
  const double n = ranks;
  if (collective == "all_reduce") return 2.0 * (n - 1.0) / n;
  if (collective == "all_gather" || collective == "reduce_scatter" || collective == "alltoall" ||
      collective == "gather" || collective == "scatter") {
    return (n - 1.0) / n;
  }
  if (collective == "broadcast" || collective == "reduce" || collective == "sendrecv") return 1.0;
  return std::nullopt;
}

std::vector<CollectiveSweep> parse_nccl_tests(const std::string& text, const std::string& file_name,
                                              const LogHints& hints) {
  return NcclTextParser(text, file_name, hints).parse();
}

std::vector<CollectiveSweep> parse_nccl_tests_json(const std::string& text,
                                                   const std::string& file_name,
                                                   const LogHints& hints) {
  const Json root = parse_located_json(text, file_name);
  return NcclJsonReader(file_name, hints).read(root);
}

std::vector<CollectiveSweep> parse_hccl_test(const std::string& text, const std::string& file_name,
                                             const LogHints& hints) {
  return HcclParser(text, file_name, hints).parse();
}

std::optional<CollectiveLogFormat> sniff_collective_log(std::string_view text) {
  text = without_bom(text);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return std::nullopt;
  if (text[first] == '{') return CollectiveLogFormat::nccl_tests_json;
  if (has_nccl_tests_marker(text)) return CollectiveLogFormat::nccl_tests_text;
  if (has_hccl_test_marker(text)) return CollectiveLogFormat::hccl_test;
  return std::nullopt;
}

std::vector<CollectiveSweep> import_collective_log(const std::string& path, const LogHints& hints) {
  const std::string text = read_input_file(path, kMaxFileBytes);
  refuse_nul_bytes(text, path, "text");

  const auto format = sniff_collective_log(text);
  if (!format) {
    throw InputError(location_at(path, text, 0), "",
                     "expected nccl-tests or rccl-tests output (text or -J JSON) or hccl_test "
                     "output, got " +
                         std::string(text.find_first_not_of(" \t\r\n") == std::string::npos
                                         ? "an empty file"
                                         : "none of their headers"));
  }
  switch (*format) {
    case CollectiveLogFormat::nccl_tests_text:
      return parse_nccl_tests(text, path, hints);
    case CollectiveLogFormat::nccl_tests_json:
      return parse_nccl_tests_json(text, path, hints);
    case CollectiveLogFormat::hccl_test:
      return parse_hccl_test(text, path, hints);
  }
  return {};
}

}  // namespace hetplan::importers
