#include "validation/microbench.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "core/input_file.hpp"
#include "core/units.hpp"
#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "models/collectives.hpp"
#include "models/compute.hpp"

namespace hetplan::validation {
namespace {

// The tables print TFLOPS, TB/s, GB/s and microseconds; core/units owns the factors.
double si_factor(std::string_view one_unit, Dimension dimension) {
  return parse_quantity(one_unit, dimension).value();
}
const double kTeraflops = si_factor("1 TFLOPS", Dimension::flop_rate);
const double kTerabytePerSecond = si_factor("1 TB/s", Dimension::bandwidth);
const double kGigabytePerSecond = si_factor("1 GB/s", Dimension::bandwidth);
const double kMicrosecond = si_factor("1 us", Dimension::duration);
const double kMegabyte = si_factor("1 MB", Dimension::bytes);

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

std::optional<double> parse_number(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

// Splits one CSV line into fields and the 1-based column where each starts.
std::vector<std::pair<std::string, int>> split_fields(std::string_view line,
                                                      const std::string& file, int line_no) {
  std::vector<std::pair<std::string, int>> fields;
  std::size_t i = 0;
  while (true) {
    const int column = static_cast<int>(i) + 1;
    std::string field;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size())
          throw InputError({file, line_no, column}, "", "unterminated quoted field");
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += line[i++];
      }
      if (i < line.size() && line[i] != ',') {
        throw InputError({file, line_no, static_cast<int>(i) + 1}, "",
                         std::string("expected ',' after a quoted field, got '") + line[i] + "'");
      }
    } else {
      while (i < line.size() && line[i] != ',') field += line[i++];
    }
    fields.emplace_back(std::move(field), column);
    if (i >= line.size()) break;
    ++i;  // the comma
    if (i == line.size()) {
      fields.emplace_back(std::string(), static_cast<int>(i) + 1);
      break;
    }
  }
  return fields;
}

// Rows a reader leaves out, grouped by reason, for the bundle's `skipped`.
class Skips {
 public:
  explicit Skips(std::string file) : file_(std::move(file)) {}
  void add(int line, const std::string& why) {
    auto [it, inserted] = lines_.try_emplace(why);
    if (inserted) order_.push_back(why);
    it->second.push_back(line);
  }
  void flush(std::vector<std::string>& out) const {
    for (const auto& why : order_) {
      const auto& lines = lines_.at(why);
      if (lines.size() == 1) {
        out.push_back(file_ + ":" + std::to_string(lines.front()) + ": " + why);
        continue;
      }
      std::string list;
      constexpr std::size_t kShown = 6;
      for (std::size_t i = 0; i < lines.size() && i < kShown; ++i)
        list += (i ? ", " : "") + std::to_string(lines[i]);
      if (lines.size() > kShown) list += ", ...";
      out.push_back(file_ + ": " + std::to_string(lines.size()) + " rows (lines " + list +
                    "): " + why);
    }
  }

 private:
  std::string file_;
  std::vector<std::string> order_;
  std::map<std::string, std::vector<int>> lines_;
};

MicrobenchRows start(const CsvTable& table) {
  MicrobenchRows rows;
  rows.source = file_name(table.file) + " (" + table.source() + ")";
  return rows;
}

std::optional<DType> dtype_named(std::string_view text) {
  if (text == "bf16" || text == "BF16") return DType::bf16;
  if (text == "fp16" || text == "FP16") return DType::fp16;
  if (text == "fp32" || text == "FP32") return DType::fp32;
  if (text == "fp8" || text == "fp8_e4m3fn") return DType::fp8;
  if (text == "FP32(TF32 evidently)") return DType::tf32;
  return std::nullopt;
}

GemmSample gemm_from_tflops(DType dtype, std::string layout, double m, double n, double k,
                            double tflops) {
  GemmSample s;
  s.dtype = dtype;
  s.layout = std::move(layout);
  s.m = m;
  s.n = n;
  s.k = k;
  s.seconds = 2.0 * m * n * k / (tflops * kTeraflops);
  return s;
}

// "1024x10240x5120" -> {1024, 10240, 5120}.
std::optional<std::array<double, 3>> parse_shape(std::string_view text) {
  std::array<double, 3> out{};
  for (int i = 0; i < 3; ++i) {
    const std::size_t x = text.find('x');
    const std::string_view part = i < 2 ? text.substr(0, x) : text;
    if (i < 2 && x == std::string_view::npos) return std::nullopt;
    const auto value = parse_number(part);
    if (!value || *value < 1) return std::nullopt;
    out[static_cast<std::size_t>(i)] = *value;
    if (i < 2) text.remove_prefix(x + 1);
  }
  return out;
}

// nccl-tests size labels ("1K", "65K", "132K", "33M", "8G") abbreviate the powers of two that
// `-b 8 -e 8G -f 2` runs, some in binary and some in decimal multiples: the nearest power of two.
std::optional<double> size_from_label(std::string_view label) {
  if (label.empty() || label.find_first_not_of("0123456789.KMG") != std::string_view::npos)
    return std::nullopt;
  const auto bytes = parse_quantity(std::string(label) + "B", Dimension::bytes);
  if (!bytes || *bytes < 1) return std::nullopt;
  return std::exp2(std::round(std::log2(*bytes)));
}

std::string collective_name(std::string name) {
  if (name.ends_with("_perf")) name.resize(name.size() - 5);
  if (name == "alltoall") return "all_to_all";  // nccl-tests names it after its binary
  return name;
}

double bus_factor_of(const std::string& collective, int ranks) {
  if (collective == "all_reduce") return models::bus_factor(models::Collective::all_reduce, ranks);
  if (collective == "all_gather") return models::bus_factor(models::Collective::all_gather, ranks);
  if (collective == "reduce_scatter")
    return models::bus_factor(models::Collective::reduce_scatter, ranks);
  return 1.0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// CsvTable

bool CsvTable::has(std::string_view column) const {
  return std::find(header.begin(), header.end(), column) != header.end();
}

const std::string& CsvTable::text(const CsvRow& row, std::string_view column) const {
  const auto it = std::find(header.begin(), header.end(), column);
  if (it == header.end()) {
    throw InputError({file, header_line, 1}, "",
                     "expected a column named " + hetplan::quoted(column) + " in the header");
  }
  return row.cells[static_cast<std::size_t>(it - header.begin())];
}

void CsvTable::fail(const CsvRow& row, std::string_view column, const std::string& message) const {
  const auto it = std::find(header.begin(), header.end(), column);
  const int col =
      it == header.end() ? 1 : row.columns[static_cast<std::size_t>(it - header.begin())];
  throw InputError({file, row.line, col}, std::string(column), message);
}

double CsvTable::number(const CsvRow& row, std::string_view column) const {
  const std::string& cell = text(row, column);
  const auto value = parse_number(cell);
  if (!value) fail(row, column, "expected a number, got " + hetplan::quoted(cell));
  return *value;
}

namespace {

// "github.com/OWNER/NAME" in `line`: OWNER/NAME, or empty. Scanned by hand, as are the other
// patterns of this file: std::regex's matcher recurses once per character and overflows the
// stack on a long line.
std::string github_repo(const std::string& line) {
  auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
  };
  constexpr std::string_view kHost = "github.com/";
  for (std::size_t at = line.find(kHost); at != std::string::npos; at = line.find(kHost, at + 1)) {
    std::size_t i = at + kHost.size();
    const std::size_t owner = i;
    while (i < line.size() && name_char(line[i])) ++i;
    if (i == owner || i >= line.size() || line[i] != '/') continue;
    const std::size_t name = ++i;
    while (i < line.size() && name_char(line[i])) ++i;
    if (i > name) return line.substr(owner, i - owner);
  }
  return "";
}

// A whole word of exactly 40 lowercase hexadecimal digits in `line` (a git commit), or empty.
std::string commit_hash(const std::string& line) {
  auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  };
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  for (std::size_t i = 0; i < line.size();) {
    if (!word_char(line[i])) {
      ++i;
      continue;
    }
    std::size_t end = i;
    bool all_hex = true;
    for (; end < line.size() && word_char(line[end]); ++end) all_hex &= hex(line[end]);
    if (all_hex && end - i == 40) return line.substr(i, 40);
    i = end;
  }
  return "";
}

}  // namespace

std::string CsvTable::source() const {
  std::string found_repo, found_commit;
  for (const auto& line : comments) {
    if (found_repo.empty()) found_repo = github_repo(line);
    if (found_commit.empty()) found_commit = commit_hash(line).substr(0, 7);
  }
  if (!found_repo.empty() && !found_commit.empty()) return found_repo + " @ " + found_commit;
  if (!found_repo.empty()) return found_repo;
  // No repository and commit: the first comment's text after "Source:", to its first comma.
  if (!comments.empty()) {
    std::string first = comments.front();
    if (const auto at = first.find("Source:"); at != std::string::npos) first.erase(0, at + 7);
    first = first.substr(0, first.find(','));
    while (!first.empty() && first.front() == ' ') first.erase(first.begin());
    while (!first.empty() && first.back() == ' ') first.pop_back();
    return first;
  }
  return "source not stated";
}

CsvTable parse_microbench_csv(const std::string& text, const std::string& file) {
  CsvTable table;
  table.file = file;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) continue;
    if (line[first] == '#') {
      table.comments.emplace_back(line.substr(first + 1));
      continue;
    }
    auto fields = split_fields(line, file, line_no);
    if (table.header.empty()) {
      std::set<std::string> seen;
      for (const auto& [name, column] : fields) {
        if (name.empty())
          throw InputError({file, line_no, column}, "", "expected a column name, got an empty one");
        if (!seen.insert(name).second)
          throw InputError({file, line_no, column}, "", "duplicate column name " + hetplan::quoted(name));
        table.header.push_back(name);
      }
      table.header_line = line_no;
      continue;
    }
    if (fields.size() != table.header.size()) {
      const int column = fields.size() > table.header.size() ? fields[table.header.size()].second
                                                             : static_cast<int>(line.size()) + 1;
      throw InputError({file, line_no, column}, "",
                       "expected " + std::to_string(table.header.size()) +
                           " fields as in the header, got " + std::to_string(fields.size()));
    }
    CsvRow row;
    row.line = line_no;
    for (auto& [cell, column] : fields) {
      row.cells.push_back(std::move(cell));
      row.columns.push_back(column);
    }
    table.rows.push_back(std::move(row));
  }
  if (table.header.empty())
    throw InputError({file, 0, 0}, "", "expected a header line naming the columns, found none");
  return table;
}

CsvTable read_microbench_csv(const std::string& path) {
  return parse_microbench_csv(formats::read_text_file(path), path);
}

bool MicrobenchRows::empty() const {
  return gemm.empty() && memory.empty() && elementwise.empty() && attention.empty() &&
         collectives.empty();
}

// ---------------------------------------------------------------------------------------------
// Readers

MicrobenchRows read_mamf_matmul(const std::string& path, const std::string& accelerator) {
  const CsvTable table = read_microbench_csv(path);
  MicrobenchRows out = start(table);
  Skips skips(file_name(path));
  for (const auto& row : table.rows) {
    if (table.text(row, "accelerator") != accelerator) continue;
    const auto dtype = dtype_named(table.text(row, "dtype"));
    if (!dtype) {
      skips.add(row.line, "dtype " + hetplan::quoted(table.text(row, "dtype")) + " not modelled");
      continue;
    }
    const auto shape = parse_shape(table.text(row, "best_shape_MxNxK"));
    if (!shape) {
      table.fail(row, "best_shape_MxNxK",
                 "expected MxNxK, got " + hetplan::quoted(table.text(row, "best_shape_MxNxK")));
    }
    // mamf-finder's layout changed across versions and the table does not say which ran.
    out.gemm.push_back(gemm_from_tflops(*dtype, "unstated", (*shape)[0], (*shape)[1], (*shape)[2],
                                        table.number(row, "mamf_tflops")));
  }
  skips.flush(out.skipped);
  return out;
}

MicrobenchRows read_mamf_optuna(const std::string& path, const std::string& device) {
  const CsvTable table = read_microbench_csv(path);
  MicrobenchRows out = start(table);
  Skips skips(file_name(path));
  for (const auto& row : table.rows) {
    if (table.text(row, "device") != device) continue;
    if (table.text(row, "M").empty() || table.text(row, "N").empty() ||
        table.text(row, "K").empty()) {
      skips.add(row.line, "best value of the search with no shape printed");
      continue;
    }
    // mamf-finder (mag-/gpu_benchmark): A[M,N] @ B[N,K] in bf16, N the shared dimension.
    out.gemm.push_back(gemm_from_tflops(DType::bf16, "nn", table.number(row, "M"),
                                        table.number(row, "K"), table.number(row, "N"),
                                        table.number(row, "tflops")));
  }
  skips.flush(out.skipped);
  return out;
}

namespace {

// "m=4096 n=4096 k=4096" -> the three dimensions (each 1 to 10^9), or nothing.
std::optional<std::array<double, 3>> gemm_shape(const std::string& param) {
  std::array<double, 3> shape{};
  std::size_t i = 0;
  for (std::size_t d = 0; d < 3; ++d) {
    const std::string key = std::string(1, "mnk"[d]) + "=";
    if (d > 0) {
      if (i >= param.size() || param[i] != ' ') return std::nullopt;
      ++i;
    }
    if (param.compare(i, key.size(), key) != 0) return std::nullopt;
    i += key.size();
    const std::size_t digits = i;
    while (i < param.size() && std::isdigit(static_cast<unsigned char>(param[i])) != 0) ++i;
    if (i == digits || i - digits > 9) return std::nullopt;
    shape[d] = std::stod(param.substr(digits, i - digits));
  }
  if (i != param.size() || shape[0] < 1 || shape[1] < 1 || shape[2] < 1) return std::nullopt;
  return shape;
}

}  // namespace

MicrobenchRows read_azure_benchmarking_guide(const std::string& path, const std::string& gpu) {
  const CsvTable table = read_microbench_csv(path);
  MicrobenchRows out = start(table);
  Skips skips(file_name(path));
  // BabelStream's default arrays: 2^25 doubles; the kernels' traffic in arrays.
  constexpr double kStreamElements = 33554432.0;
  constexpr double kDoubleBytes = 8.0;
  const std::map<std::string, std::pair<std::string, double>> stream = {{"Copy", {"copy", 2}},
                                                                        {"Mul", {"scale", 2}},
                                                                        {"Add", {"add", 3}},
                                                                        {"Triad", {"triad", 3}},
                                                                        {"Dot", {"dot", 2}}};
  auto expect_unit = [&](const CsvRow& row, const std::string& unit) {
    if (table.text(row, "unit") != unit)
      table.fail(row, "unit", "expected " + unit + ", got " + hetplan::quoted(table.text(row, "unit")));
  };
  for (const auto& row : table.rows) {
    if (table.text(row, "gpu") != gpu) continue;
    const std::string& kind = table.text(row, "kind");
    const std::string& param = table.text(row, "param");
    if (kind.starts_with("gemm_cublaslt_")) {
      const auto dtype = dtype_named(kind.substr(std::string("gemm_cublaslt_").size()));
      if (!dtype)
        table.fail(row, "kind", "expected gemm_cublaslt_fp16 or _fp8, got " + hetplan::quoted(kind));
      const auto shape = gemm_shape(param);
      if (!shape)
        table.fail(row, "param", "expected \"m=M n=N k=K\", got " + hetplan::quoted(param));
      expect_unit(row, "TFLOPS");
      out.gemm.push_back(gemm_from_tflops(*dtype, "unstated", (*shape)[0], (*shape)[1], (*shape)[2],
                                          table.number(row, "value")));
    } else if (kind == "hbm_babelstream") {
      const auto it = stream.find(param);
      if (it == stream.end())
        table.fail(row, "param", "expected Copy, Mul, Add, Triad or Dot, got " + hetplan::quoted(param));
      expect_unit(row, "TB/s");
      MemorySample s;
      s.kernel = it->second.first;
      s.bytes = it->second.second * kStreamElements * kDoubleBytes;
      s.seconds = s.bytes / (table.number(row, "value") * kTerabytePerSecond);
      out.memory.push_back(s);
    } else if (kind == "nccl_allreduce_busbw_8gpu_inplace") {
      const auto bytes = size_from_label(param);
      if (!bytes)
        table.fail(row, "param", "expected a size such as \"65K\", got " + hetplan::quoted(param));
      expect_unit(row, "GB/s");
      constexpr int kRanks = 8;
      CollectiveSample s;
      s.collective = "all_reduce";
      s.ranks = kRanks;
      s.bytes = *bytes;
      s.seconds = *bytes * bus_factor_of(s.collective, kRanks) /
                  (table.number(row, "value") * kGigabytePerSecond);
      out.collectives.push_back(s);
    } else if (kind == "flash_attention") {
      skips.add(row.line,
                "flash attention: the source does not say whether the value is the "
                "forward, the backward or both");
    } else {
      skips.add(row.line, kind + ": not a calibrated parameter");
    }
  }
  skips.flush(out.skipped);
  return out;
}

MicrobenchRows read_flagperf_operation_gemm(const std::string& path, const std::string& chip) {
  const CsvTable table = read_microbench_csv(path);
  MicrobenchRows out = start(table);
  Skips skips(file_name(path));
  for (const auto& row : table.rows) {
    if (table.text(row, "chip") != chip) continue;
    const std::string& op = table.text(row, "op");
    if (table.text(row, "impl") != "nativetorch") {
      skips.add(row.line, "impl " + hetplan::quoted(table.text(row, "impl")) +
                              ": training frameworks run torch's own (cuBLAS) kernels");
      continue;
    }
    if (op == "bmm") {
      skips.add(row.line, "bmm: a batched GEMM, which a GEMM sample cannot state");
      continue;
    }
    if (op == "mv") {
      skips.add(row.line, "mv: a matrix-vector product, bound by memory");
      continue;
    }
    if (op != "mm" && op != "addmm" && op != "linear") {
      skips.add(row.line, "op " + hetplan::quoted(op) + " not read");
      continue;
    }
    const auto dtype = dtype_named(table.text(row, "dtype"));
    if (!dtype) {
      skips.add(row.line, "dtype not stated");
      continue;
    }
    if (*dtype == DType::fp32 || *dtype == DType::tf32) {
      skips.add(row.line,
                "fp32 / tf32: one shape per layout fixes no efficiency curve, and the "
                "profiles' curve is fitted in 16-bit");
      continue;
    }
    if (table.text(row, "kerneltime_us").empty()) {
      skips.add(row.line, "no kernel time published");
      continue;
    }
    GemmSample s;
    s.dtype = *dtype;
    s.layout = op == "linear" ? "nt" : "nn";  // F.linear is x W^T; mm and addmm a[M,N] b[N,K]
    s.m = table.number(row, "M");
    s.n = table.number(row, "N");
    s.k = table.number(row, "K");
    s.seconds = table.number(row, "kerneltime_us") * kMicrosecond;
    out.gemm.push_back(s);
  }
  skips.flush(out.skipped);
  return out;
}

MicrobenchRows read_limulidae(const std::string& path, const std::string& accelerator) {
  const CsvTable table = read_microbench_csv(path);
  MicrobenchRows out = start(table);
  Skips skips(file_name(path));
  // Neither the element count nor the message size of a table value is printed. A bandwidth is
  // the same at any size in t = bytes / B, so each value is placed at one size: 2^28 fp32
  // elements, and the collective script's largest message (8000 MB), where latency is least.
  constexpr double kElements = 268435456.0;
  const double message_bytes = 8000 * kMegabyte;
  for (const auto& row : table.rows) {
    if (table.text(row, "accelerator") != accelerator) continue;
    const std::string& kind = table.text(row, "kind");
    const std::string& what = table.text(row, "dtype_or_op");
    if (kind == "compute") {
      skips.add(row.line, "best of a shape search whose shape is not printed");
    } else if (kind == "all_reduce" || kind == "all_gather") {
      if (table.text(row, "unit") != "GB/s")
        table.fail(row, "unit", "expected GB/s, got " + hetplan::quoted(table.text(row, "unit")));
      // torch.distributed bandwidth = the global tensor's bytes / time: algorithm bandwidth.
      CollectiveSample s;
      s.collective = kind;
      s.ranks = static_cast<int>(table.number(row, "cards"));
      s.bytes = message_bytes;
      s.seconds = message_bytes / (table.number(row, "value") * kGigabytePerSecond);
      out.collectives.push_back(s);
    } else if (kind == "mem_bw") {
      std::string op;
      if (what == "torch.exp") op = "exp";
      if (what == "torch.nn.Sigmoid") op = "sigmoid";
      if (op.empty()) {
        skips.add(row.line, hetplan::quoted(what) +
                                ": a chain of unfused kernels whose count and "
                                "traffic the table does not give");
        continue;
      }
      if (table.text(row, "unit") != "GB/s")
        table.fail(row, "unit", "expected GB/s, got " + hetplan::quoted(table.text(row, "unit")));
      // The table's bandwidth counts the fp32 input only; the kernel also writes its output.
      ElementwiseSample s;
      s.op = op;
      s.dtype = DType::fp32;
      s.elements = kElements;
      s.seconds = kElements * bytes_per_element(DType::fp32) /
                  (table.number(row, "value") * kGigabytePerSecond);
      out.elementwise.push_back(s);
    } else {
      skips.add(row.line, "kind " + hetplan::quoted(kind) + " not read");
    }
  }
  skips.flush(out.skipped);
  return out;
}

MicrobenchRows read_flash_attention_figures(const std::string& path, const std::string& gpu) {
  const CsvTable table = read_microbench_csv(path);
  MicrobenchRows out = start(table);
  Skips skips(file_name(path));
  // benchmark_flash_attention.py: hidden 2048 split into heads of `headdim`, batch 16k / seqlen;
  // forward FLOPs 4 b s^2 heads d (half when causal), backward 2.5x, fwd+bwd 3.5x.
  constexpr int kHidden = 2048;
  constexpr int kTokens = 16384;
  constexpr double kBackwardShare = 2.5, kTotalShare = 3.5;
  for (const auto& row : table.rows) {
    if (table.text(row, "gpu") != gpu) continue;
    if (table.text(row, "method") != "FlashAttention-2" || table.text(row, "pass") != "fwd+bwd") {
      skips.add(row.line,
                "not FlashAttention-2 forward+backward (the kernel training runs use; "
                "other methods and forward-only figures are not fitted)");
      continue;
    }
    const std::string& cell = table.text(row, "tflops");
    const auto tflops = parse_number(cell);
    if (!tflops) {
      if (cell == "OOM") {
        skips.add(row.line, "out of memory");
      } else if (cell.find("occluded") != std::string::npos) {
        skips.add(row.line, "label occluded or partly occluded on the chart");
      } else {
        table.fail(row, "tflops",
                   "expected a number, OOM or an occlusion note, got " + hetplan::quoted(cell));
      }
      continue;
    }
    const std::string& causal = table.text(row, "causal");
    if (causal != "True" && causal != "False")
      table.fail(row, "causal", "expected True or False, got " + hetplan::quoted(causal));
    const double head_dim = table.number(row, "headdim");
    const double seq = table.number(row, "seqlen");
    if (head_dim < 1 || std::fmod(kHidden, head_dim) != 0)
      table.fail(row, "headdim",
                 "expected a divisor of 2048, got " + hetplan::quoted(table.text(row, "headdim")));
    if (seq < 1 || std::fmod(kTokens, seq) != 0)
      table.fail(row, "seqlen",
                 "expected a divisor of 16384, got " + hetplan::quoted(table.text(row, "seqlen")));
    AttentionSample s;
    s.dtype = DType::fp16;
    s.batch = static_cast<int>(kTokens / seq);
    s.heads = static_cast<int>(kHidden / head_dim);
    s.seq = static_cast<int>(seq);
    s.head_dim = static_cast<int>(head_dim);
    s.causal = causal == "True";
    s.kernel = "sdpa";
    const double forward_flops =
        (s.causal ? 0.5 : 1.0) * 4.0 * s.batch * s.heads * seq * seq * head_dim;
    // The chart gives forward+backward together; its FLOP convention splits the time 1 : 2.5.
    const double total_s = kTotalShare * forward_flops / (*tflops * kTeraflops);
    s.forward_s = total_s / kTotalShare;
    s.backward_s = total_s * kBackwardShare / kTotalShare;
    out.attention.push_back(s);
  }
  skips.flush(out.skipped);
  return out;
}

MicrobenchRows read_nccl_tests(const std::string& path, const std::string& series_column,
                               const std::string& series, const std::string& collective, int ranks,
                               const std::vector<std::string>& keep) {
  const CsvTable table = read_microbench_csv(path);
  MicrobenchRows out = start(table);
  Skips skips(file_name(path));
  const std::string size_column = table.has("size_B") ? "size_B" : "size_bytes";
  const std::string time_column = table.has("oop_time_us") ? "oop_time_us" : "time_us";
  for (const auto& row : table.rows) {
    if (table.text(row, series_column) != series) continue;
    CollectiveSample s;
    s.collective =
        table.has("collective") ? collective_name(table.text(row, "collective")) : collective;
    s.ranks = table.has("gpus") ? static_cast<int>(table.number(row, "gpus")) : ranks;
    if (std::find(keep.begin(), keep.end(), s.collective) == keep.end()) {
      skips.add(row.line, s.collective + " not used for this chip");
      continue;
    }
    s.bytes = table.number(row, size_column);
    if (!table.text(row, time_column).empty()) {
      s.seconds = table.number(row, time_column) * kMicrosecond;
    } else if (table.has("algbw_GBps")) {
      s.seconds = s.bytes / (table.number(row, "algbw_GBps") * kGigabytePerSecond);
    } else {
      skips.add(row.line, "no time printed");
      continue;
    }
    if (s.seconds <= 0 || s.bytes <= 0 || s.ranks < 2)
      table.fail(row, time_column, "expected a positive time, size and rank count");
    out.collectives.push_back(s);
  }
  skips.flush(out.skipped);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Bundles

namespace {

struct BundleBuilder {
  CalibrationBundle bundle;
  std::vector<std::string> sources;

  void add(MicrobenchRows rows) {
    auto append = [](auto& to, auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(bundle.gemm, rows.gemm);
    append(bundle.memory, rows.memory);
    append(bundle.elementwise, rows.elementwise);
    append(bundle.attention, rows.attention);
    append(bundle.collectives, rows.collectives);
    append(bundle.skipped, rows.skipped);
    if (!rows.empty() && std::find(sources.begin(), sources.end(), rows.source) == sources.end())
      sources.push_back(rows.source);
  }
  // Drops the collectives of `rows` with a note, keeping everything else.
  void add_without_collectives(MicrobenchRows rows, const std::string& why) {
    if (!rows.collectives.empty()) {
      bundle.skipped.push_back(rows.source.substr(0, rows.source.find(' ')) + ": " +
                               std::to_string(rows.collectives.size()) +
                               " collective rows: " + why);
      rows.collectives.clear();
    }
    add(std::move(rows));
  }
};

}  // namespace

std::vector<std::string> microbench_chips() {
  return {"A100", "A800", "H100", "910B"};
}

CalibrationBundle microbench_bundle(const std::string& microbench_dir, const std::string& chip) {
  const auto chips = microbench_chips();
  if (std::find(chips.begin(), chips.end(), chip) == chips.end()) {
    throw InputError({microbench_dir, 0, 0}, "chip",
                     "expected A100, A800, H100 or 910B, got " + hetplan::quoted(chip));
  }
  auto at = [&](const char* name) { return microbench_dir + "/" + name; };
  const std::vector<std::string> all_reduce{"all_reduce"};
  BundleBuilder b;
  std::string device;
  if (chip == "A100" || chip == "A800") {
    const bool a800 = chip == "A800";
    device = a800 ? "NVIDIA A800-SXM4-80GB (A100 silicon, NVLink 400 GB/s); GEMMs, element-wise "
                    "kernels and attention of A100 SXM4 80/40 GB"
                  : "NVIDIA A100-SXM4-80GB; GEMMs also of A100-SXM4-40GB and A800, element-wise "
                    "kernels of A800";
    // GEMMs: the A100 40 GB, 80 GB and A800 share the die and its clocks.
    b.add(read_mamf_matmul(at("mleng_mamf_matmul.csv"), "NVIDIA A100 SXM"));
    b.add(read_mamf_optuna(at("mamf_gpu_benchmark_optuna.csv"), "NVIDIA A100 SXM"));
    const std::string nvlink3 =
        "measured over NVLink 3 at 600 GB/s; the A800's NVLink runs at 400 GB/s";
    if (a800) {
      b.add_without_collectives(
          read_azure_benchmarking_guide(at("azure_ai_benchmarking_guide_a100_h100_h200.csv"),
                                        "A100-SXM4-80GB"),
          nvlink3);
    } else {
      b.add(read_azure_benchmarking_guide(at("azure_ai_benchmarking_guide_a100_h100_h200.csv"),
                                          "A100-SXM4-80GB"));
    }
    b.add(read_flagperf_operation_gemm(at("flagperf_operation_gemm.csv"), "A100_40_SXM"));
    if (a800) {
      b.add(read_limulidae(at("limulidae_910b_vs_a800.csv"), "A800"));
    } else {
      b.add_without_collectives(
          read_limulidae(at("limulidae_910b_vs_a800.csv"), "A800"),
          "A800 collectives run over NVLink at 400 GB/s, not A100's 600 GB/s");
    }
    b.add(
        read_flash_attention_figures(at("flashattention_figures_a100_h100.csv"), "A100 80GB SXM4"));
    if (!a800) {
      b.add(read_nccl_tests(at("mleng_allreduce_curves.csv"), "series", "A100_8gpu_nccltests",
                            "all_reduce", 8, all_reduce));
      b.add(read_nccl_tests(at("nccltests_a100_40g_oci_roce_sweep.csv"), "series", "1node_8gpu",
                            "all_reduce", 8, all_reduce));
    }
    b.bundle.skipped.push_back(
        "multi-node collectives (nccltests_a100_40g_oci_roce_sweep.csv 2node_16gpu, "
        "oci_a100_roce_points.csv, issue_thread_points.csv): calibrate() fits the intra-node "
        "link only");
    b.bundle.skipped.push_back(
        "flagperf_base_benchmarks.csv: A100 rows are of the 40 GB part (other HBM); its GEMM "
        "figures are single values of an unstated statistic");
  } else if (chip == "H100") {
    device = "NVIDIA H100 80GB HBM3 (SXM5)";
    b.add(read_mamf_matmul(at("mleng_mamf_matmul.csv"), "NVIDIA H100 SXM"));
    b.add(read_mamf_optuna(at("mamf_gpu_benchmark_optuna.csv"), "NVIDIA H100 SXM 80GB"));
    b.add(read_mamf_optuna(at("mamf_gpu_benchmark_optuna.csv"), "NVIDIA H100 SXM"));
    b.add_without_collectives(
        read_azure_benchmarking_guide(at("azure_ai_benchmarking_guide_a100_h100_h200.csv"),
                                      "H100 80GB HBM3"),
        "single-node all-reduce uses NVLink SHARP (NVLS) from about 2 MiB, above the wire rate; "
        "the smaller sizes alone cannot fix a bandwidth");
    b.add(
        read_flash_attention_figures(at("flashattention_figures_a100_h100.csv"), "H100 80GB SXM5"));
    b.add(read_nccl_tests(at("nccltests_h100_cluster01_xxrjun.csv"), "tag", "N1_G8", "", 8,
                          {"all_gather", "reduce_scatter", "all_to_all"}));
  } else {
    device = "Huawei Ascend 910B (910B2C in the optuna search; the limulidae SKU is not stated)";
    b.add(read_mamf_optuna(at("mamf_gpu_benchmark_optuna.csv"), "Ascend910B2C"));
    b.add(read_limulidae(at("limulidae_910b_vs_a800.csv"), "910B"));
    b.bundle.skipped.push_back(
        "flagperf_base_benchmarks.csv: Ascend GEMM figures (computation-BF16 304.277) name no "
        "shape");
  }
  CalibrationBundle& bundle = b.bundle;
  bundle.file = "published microbenchmarks:";
  for (std::size_t i = 0; i < b.sources.size(); ++i) bundle.file += (i ? "; " : " ") + b.sources[i];
  bundle.probe_version = "none (published tables)";
  bundle.started = "as published";
  bundle.host.hostname = "as published (see each source)";
  bundle.host.backend = "published";
  bundle.host.device = device;
  bundle.host.torch = "as published";
  bundle.host.runtime = {"software", "as published"};
  for (const auto& s : bundle.gemm) bundle.dtypes[s.dtype] = true;
  for (const auto& s : bundle.attention) bundle.dtypes[s.dtype] = true;
  return bundle;
}

Calibration calibrate_from_microbenchmarks(const ChipProfile& base, const CalibrationBundle& bundle,
                                           const std::string& label) {
  CalibrationBundle pooled = bundle;
  const DType reference = base.peak(DType::bf16) ? DType::bf16 : DType::fp16;
  const DType other = reference == DType::bf16 ? DType::fp16 : DType::bf16;
  int moved = 0;
  if (base.peak(reference) && base.peak(other)) {
    const double scale = *base.peak(other) / *base.peak(reference);
    for (auto& s : pooled.gemm) {
      if (s.dtype != other) continue;
      s.seconds *= scale;
      s.dtype = reference;
      ++moved;
    }
  }
  Calibration out = calibrate(base, {pooled}, label);
  // calibrate() names a skipped entry's bundle file; this bundle's "file" is the list of every
  // table it read, and each skipped entry names its own table already.
  const std::string named = pooled.file + ": skipped ";
  for (auto& note : out.notes)
    if (note.rfind(named, 0) == 0) note = "skipped " + note.substr(named.size());
  if (moved > 0) {
    out.notes.push_back(std::to_string(moved) + " " + std::string(to_string(other)) +
                        " GEMMs pooled with the " + std::string(to_string(reference)) +
                        " ones, scaled by the ratio of their peaks");
  }
  // A GEMM curve's half-dimension needs shapes that differ: with fewer than three forward shapes
  // (H100 has one MAMF best shape) it is not fitted but stays the base profile's (or the
  // prior), and the rates are fitted at it.
  std::vector<GemmSample> forward, backward;
  for (const auto& s : pooled.gemm) {
    if (s.dtype == reference)
      (s.layout == "nn" || s.layout == "tn" ? backward : forward).push_back(s);
  }
  if (forward.empty()) std::swap(forward, backward);
  std::set<std::array<double, 3>> shapes;
  for (const auto& s : forward) shapes.insert({s.m, s.n, s.k});
  constexpr std::size_t kShapesForHalfDim = 3;
  if (!forward.empty() && shapes.size() < kShapesForHalfDim && base.peak(reference)) {
    ChipProfile& p = out.profile;
    const double half_dim =
        base.efficiency.gemm_half_dim.value_or(models::EfficiencyDefaults{}.gemm_half_dim);
    auto rate_at = [&](const std::vector<GemmSample>& samples) {
      double log_sum = 0;
      for (const auto& s : samples) {
        auto g = [&](double x) { return x / (x + half_dim); };
        log_sum += std::log(2.0 * s.m * s.n * s.k / (s.seconds * g(s.m) * g(s.n) * g(s.k)));
      }
      return std::exp(log_sum / static_cast<double>(samples.size()));
    };
    const double peak = *base.peak(reference);
    // Fitted at the prior's half-dimension, the curve's maximum lies above the measured rate (its
    // g(m) g(n) g(k) is below 1 at every shape), and a large GEMM would be predicted faster than
    // any the chip was seen to run. These few shapes are the bests of shape searches (MAMF:
    // the maximum achievable matmul FLOPS), so no GEMM runs faster: the maximum is capped at
    // the fastest one measured, of either layout.
    double fastest = 0;
    for (const auto* samples : {&forward, &backward})
      for (const auto& s : *samples) fastest = std::max(fastest, 2.0 * s.m * s.n * s.k / s.seconds);
    const double ceiling = std::min(1.0, fastest / peak);
    const double fitted = rate_at(forward) / peak;
    p.efficiency.gemm_max = std::min(ceiling, fitted);
    if (!backward.empty())
      p.efficiency.gemm_backward_max = std::min(ceiling, rate_at(backward) / peak);
    p.efficiency.gemm_half_dim = base.efficiency.gemm_half_dim;
    const std::string path = "efficiency.gemm.half_dim";
    p.cited_by.erase(path);
    p.cited_by.erase(path + ".value");
    for (const std::string& key : {path, path + ".value"})
      if (base.cited_by.contains(key)) p.cited_by[key] = base.cited_by.at(key);
    char text[200];
    std::snprintf(text, sizeof text,
                  "%zu forward GEMM shape(s): half-dimension not fitted, kept at %.4g; "
                  "efficiency %.4g fitted at it, at most %.4g (the fastest GEMM measured)",
                  shapes.size(), half_dim, fitted, ceiling);
    out.notes.push_back(text);
  }

  // The sources ran different software; the profile's stack stays the base's.
  out.profile.runtime = base.runtime;
  out.profile.framework_adapter = base.framework_adapter;

  // Latency from an all-reduce group that has a single size is not determined.
  std::map<int, std::set<double>> sizes;
  for (const auto& s : bundle.collectives)
    if (s.collective == "all_reduce") sizes[s.ranks].insert(s.bytes);
  if (!sizes.empty() && sizes.rbegin()->second.size() < 2) {
    ChipProfile& p = out.profile;
    const std::string path = "efficiency.intra_node_collectives.latency";
    p.efficiency.intra_latency = base.efficiency.intra_latency;
    p.cited_by.erase(path);
    p.cited_by.erase(path + ".value");
    for (const std::string& key : {path, path + ".value"})
      if (base.cited_by.contains(key)) p.cited_by[key] = base.cited_by.at(key);
    out.notes.push_back("all-reduce over " + std::to_string(sizes.rbegin()->first) +
                        " ranks measured at one size: its bus bandwidth is fitted, its latency "
                        "stays the base profile's");
  }
  carry_comments(base, out.profile);  // a number restored to the base's keeps its comment
  return out;
}

CalibratedValidation validate_published_runs_calibrated(const std::string& folder,
                                                        const std::string& profiles_folder,
                                                        const std::string& microbench_dir,
                                                        const std::string& calibrated_folder) {
  std::error_code error;
  std::filesystem::create_directories(calibrated_folder, error);
  if (error)
    throw InputError({calibrated_folder, 0, 0}, "", "cannot create the folder: " + error.message());
  CalibratedValidation out;
  // Each profile, the bundle it is calibrated from, and, when that bundle's collectives ran on
  // another chip's links, that chip: the fit is made at those links' bandwidth (what the
  // samples measured) and the efficiency it gives is kept at the profile's own.
  struct Entry {
    std::string id, chip, links_of;
  };
  const std::vector<Entry> profiles = {
      {"nvidia-a100-sxm4-80gb", "A100", ""},
      // The A800 from the A100's tables, as before it had a profile of its own: the A100's
      // all-reduce curve fits latency and efficiency, which the A800's three single points of
      // unstated size cannot (docs/validation.md#calibrated-from-microbenchmarks).
      {"nvidia-a800-sxm4-80gb", "A100", "nvidia-a100-sxm4-80gb"},
      {"nvidia-h100-sxm5-80gb", "H100", ""},
      {"ascend-910b", "910B", ""}};
  for (const auto& [id, chip, links_of] : profiles) {
    const ChipProfile base = formats::load_chip(profiles_folder + "/" + id + ".yaml");
    CalibrationBundle bundle = microbench_bundle(microbench_dir, chip);
    ChipProfile fit_base = base;
    if (!links_of.empty()) {
      fit_base.intra_node.bandwidth =
          formats::load_chip(profiles_folder + "/" + links_of + ".yaml").intra_node.bandwidth;
    }
    Calibration calibration = calibrate_from_microbenchmarks(fit_base, bundle, "microbench");
    calibration.profile.intra_node.bandwidth = base.intra_node.bandwidth;
    if (!links_of.empty())
      calibration.notes.push_back("collectives fitted on " + links_of + "'s links");
    std::string comment = "calibrated by hetplan from the published microbenchmarks in " +
                          microbench_dir + " (chip " + chip + ")";
    for (const auto& note : calibration.notes) comment += "\n  " + note;
    formats::write_file_atomically(calibrated_folder + "/" + id + ".yaml",
                                   formats::chip_yaml(calibration.profile, comment));
    out.calibrations.push_back(std::move(calibration));
    out.bundles.push_back(std::move(bundle));
  }
  // The profiles no table calibrates (a 910B3, a first-generation 910) predict with their own
  // figures, as without --microbench: copied beside the calibrated ones.
  std::vector<std::filesystem::path> others;
  for (const auto& entry : std::filesystem::directory_iterator(profiles_folder, error)) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string id = entry.path().stem().string();
    if (std::none_of(profiles.begin(), profiles.end(),
                     [&](const Entry& calibrated) { return calibrated.id == id; }))
      others.push_back(entry.path());
  }
  std::sort(others.begin(), others.end());
  for (const auto& path : others) {
    formats::write_file_atomically(
        calibrated_folder + "/" + path.filename().string(),
        read_input_file(path.string(), std::size_t{1} << 20, "a chip profile"));
  }
  out.report = validate_published_runs(folder, calibrated_folder);
  return out;
}

}  // namespace hetplan::validation
