// Calibration from published microbenchmarks: readers of the tables in ../shared/data/microbench
// (CSV files whose `#` header comments name the source, hardware and units) into calibration
// samples, one CalibrationBundle per chip, and the published-run validation with profiles
// calibrated from those bundles. Only microbenchmarks (GEMM, memory, attention and collective
// measurements) are read here, never end-to-end training figures.
// docs/validation.md#calibrated-from-microbenchmarks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/calibration.hpp"
#include "core/chip.hpp"
#include "validation/calibrate.hpp"
#include "validation/published_runs.hpp"

namespace hetplan::validation {

// ---------------------------------------------------------------------------------------------
// The CSV layer

// One data row: its cells and where each starts.
struct CsvRow {
  int line = 0;                    // 1-based
  std::vector<std::string> cells;  // unquoted, as written
  std::vector<int> columns;        // 1-based column where each cell starts
};

// A microbenchmark table. Lines whose first non-blank character is `#` are comments; the first
// other line names the columns; blank lines are ignored. A field may be quoted ("a, b"), with ""
// for a quote inside. Every row has as many fields as the header.
struct CsvTable {
  std::string file;
  std::vector<std::string> comments;  // the text after `#`, in order
  std::vector<std::string> header;
  int header_line = 0;
  std::vector<CsvRow> rows;

  bool has(std::string_view column) const;
  // The cell of `row` under `column`. Throws InputError at the header if there is no such column.
  const std::string& text(const CsvRow& row, std::string_view column) const;
  // The cell as a finite number. Throws InputError "file:line:column: <column>: expected a
  // number, got "..."" otherwise.
  double number(const CsvRow& row, std::string_view column) const;
  // Throws InputError at the cell: "file:line:column: <column>: <message>".
  [[noreturn]] void fail(const CsvRow& row, std::string_view column,
                         const std::string& message) const;
  // Where the rows come from, read from the comments: "owner/repo @ <7-digit commit>" when the
  // comments name a GitHub repository and a 40-digit commit, else the first comment line.
  std::string source() const;
};

// Throws InputError (file:line:column) on a malformed table.
CsvTable parse_microbench_csv(const std::string& text, const std::string& file);
CsvTable read_microbench_csv(const std::string& path);

// ---------------------------------------------------------------------------------------------
// Readers: the rows of one table for one piece of hardware, as calibration samples. Each
// reader names in `skipped` ("file:line: why", or "file: N rows ...: why") every matching row
// it does not turn into a sample.

struct MicrobenchRows {
  std::string source;  // "<file name> (<owner/repo> @ <commit>)"
  std::vector<GemmSample> gemm;
  std::vector<MemorySample> memory;
  std::vector<ElementwiseSample> elementwise;
  std::vector<AttentionSample> attention;
  std::vector<CollectiveSample> collectives;
  std::vector<std::string> skipped;
  bool empty() const;
};

// mleng_mamf_matmul.csv (ml-engineering's Maximum Achievable Matmul FLOPS table): the best
// shape of each dtype of `accelerator` (the accelerator column, e.g. "NVIDIA A100 SXM").
MicrobenchRows read_mamf_matmul(const std::string& path, const std::string& accelerator);

// mamf_gpu_benchmark_optuna.csv (mag-/gpu_benchmark's optuna search and its Ascend fork): the
// rows of `device` that print a shape. bf16, torch.mm(A[M,N], B[N,K]) (layout nn).
MicrobenchRows read_mamf_optuna(const std::string& path, const std::string& device);

// azure_ai_benchmarking_guide_a100_h100_h200.csv, rows of `gpu` (e.g. "A100-SXM4-80GB"):
// cuBLASLt GEMMs, BabelStream kernels (memory samples) and the 8-GPU all-reduce bus bandwidths
// (collective samples at the nccl-tests sizes the labels abbreviate).
MicrobenchRows read_azure_benchmarking_guide(const std::string& path, const std::string& gpu);

// flagperf_operation_gemm.csv, rows of `chip` (e.g. "A100_40_SXM") run with torch's own kernels
// (impl nativetorch): mm and addmm (nn), linear (nt), timed by kernel time.
MicrobenchRows read_flagperf_operation_gemm(const std::string& path, const std::string& chip);

// limulidae_910b_vs_a800.csv, rows of `accelerator` ("910B" or "A800"): element-wise kernels
// (the table counts input bytes only) and all-reduce / all-gather algorithm bandwidths.
MicrobenchRows read_limulidae(const std::string& path, const std::string& accelerator);

// flashattention_figures_a100_h100.csv, rows of `gpu` (e.g. "A100 80GB SXM4"): FlashAttention-2
// forward+backward throughput as fused-attention samples (kernel "sdpa").
MicrobenchRows read_flash_attention_figures(const std::string& path, const std::string& gpu);

// An nccl-tests table (mleng_allreduce_curves.csv, nccltests_*.csv): the rows whose
// `series_column` is `series`, as samples of `collective` over `ranks` ranks. A `collective`
// column (all_reduce_perf, ...) and a `gpus` column override the arguments. Sizes come from
// size_B or size_bytes, times from oop_time_us or time_us (else size / algbw_GBps). Only the
// collectives in `keep` become samples.
MicrobenchRows read_nccl_tests(const std::string& path, const std::string& series_column,
                               const std::string& series, const std::string& collective, int ranks,
                               const std::vector<std::string>& keep);

// ---------------------------------------------------------------------------------------------
// Bundles and calibrated profiles

// The chips the published runs use, as keys of microbench_bundle:
//   "A100": A100 SXM4 80 GB (and 40 GB and A800 rows where the silicon is the same: GEMMs,
//           element-wise kernels), all-reduce on 8 A100 with NVLink 3 (600 GB/s);
//   "A800": as A100, with the A800's own collectives (NVLink at 400 GB/s) in place of A100's;
//   "H100": H100 SXM5 80 GB;
//   "910B": Ascend 910B (the 910B2C of the optuna search).
std::vector<std::string> microbench_chips();

// Every sample the microbenchmark folder holds for `chip`, with the bundle's file naming the
// CSVs and their source commits. Throws InputError for an unknown chip or a malformed table.
CalibrationBundle microbench_bundle(const std::string& microbench_dir, const std::string& chip);

// calibrate() on a microbenchmark bundle, with what published tables need on top of a probe
// bundle:
// - fp16 and bf16 GEMMs are pooled onto the reference dtype (bf16 where the profile has its
//   peak), each time scaled by the ratio of the two peaks: the compute model's one efficiency
//   curve per chip, fitted to every 16-bit GEMM the sources measured;
// - the profile keeps its runtime and framework (the sources' versions differ);
// - an all-reduce measured at one size says nothing about latency: the latency then stays the
//   base profile's.
Calibration calibrate_from_microbenchmarks(const ChipProfile& base, const CalibrationBundle& bundle,
                                           const std::string& label);

struct CalibratedValidation {
  ValidationReport report;
  std::vector<Calibration> calibrations;  // one per calibrated profile
  std::vector<CalibrationBundle> bundles;
};

// Calibrates the profiles the published runs use (nvidia-a100-sxm4-80gb from "A100",
// nvidia-a800-sxm4-80gb also from "A100", nvidia-h100-sxm5-80gb from "H100", ascend-910b from
// "910B"), writes them to
// `calibrated_folder` (created if missing) under their base file names, copies the folder's
// other profiles beside them unchanged, and predicts the published runs in `folder` with them.
CalibratedValidation validate_published_runs_calibrated(const std::string& folder,
                                                        const std::string& profiles_folder,
                                                        const std::string& microbench_dir,
                                                        const std::string& calibrated_folder);

}  // namespace hetplan::validation
