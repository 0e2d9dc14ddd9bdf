#include "cli/sweep_command.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "core/error.hpp"
#include "formats/loaders.hpp"
#include "formats/writers.hpp"
#include "sim/twin/runner.hpp"
#include "sweep/job.hpp"
#include "sweep/sweep.hpp"

extern "C" void remove_scratch_and_die(int signal_number);  // cli/main.cpp

namespace hetplan::cli {
namespace {

namespace fs = std::filesystem;

// Points done / total, rate, ETA and failures on stderr, redrawn in place, when stderr is a
// terminal (a log or a pipe gets nothing).
class SweepProgressLine : public sweep::SweepObserver {
 public:
  explicit SweepProgressLine(std::string name)
      : name_(std::move(name)), enabled_(isatty(STDERR_FILENO) != 0),
        start_(std::chrono::steady_clock::now()) {}
  ~SweepProgressLine() override {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
  }
  void on_point(const sweep::SweepProgress& p) override {
    if (!enabled_) return;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const std::size_t run = p.done - p.reused;
    const double rate = seconds > 0 ? static_cast<double>(run) / seconds : 0;
    char eta[32] = "-";
    if (rate > 0) std::snprintf(eta, sizeof eta, "%.0f s", static_cast<double>(p.total - p.done) / rate);
    std::fprintf(stderr, "\r\033[Ksweep %s: %zu of %zu points, %.2f points/s, ETA %s, %zu failed%s",
                 name_.c_str(), p.done, p.total, rate, eta, p.failed,
                 p.reused ? (", " + std::to_string(p.reused) + " from an earlier run").c_str() : "");
    std::fflush(stderr);
    drawn_ = true;
  }

 private:
  std::string name_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

planner::StopToken* g_sweep_stop = nullptr;
extern "C" void stop_sweep_on_signal(int) {
  if (g_sweep_stop) g_sweep_stop->request_stop();  // a lock-free atomic store
  std::signal(SIGINT, remove_scratch_and_die);
}

sweep::Shard parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  auto number = [](const std::string& digits) -> std::optional<std::size_t> {
    if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    return std::stoul(digits);
  };
  const auto index = slash == std::string::npos ? std::nullopt : number(text.substr(0, slash));
  const auto count = slash == std::string::npos ? std::nullopt : number(text.substr(slash + 1));
  if (!index || !count || *count < 1 || *index >= *count)
    throw InputError({"sweep", 0, 0}, "--shard",
                     "expected I/N with 0 <= I < N (\"0/3\"), got \"" + text + "\"");
  return {*index, *count};
}

void write_results(const std::string& out_dir, const std::vector<std::string>& paths,
                   const std::vector<sweep::PointResult>& points) {
  // Written file by file: the folder also holds points/ (which a folder exchange would refuse).
  try {
    formats::write_file_atomically((fs::path(out_dir) / "results.jsonl").string(),
                                   sweep::results_jsonl(points));
    formats::write_file_atomically((fs::path(out_dir) / "results.csv").string(),
                                   sweep::results_csv(paths, points));
  } catch (const std::runtime_error& failure) {
    throw InputError({out_dir, 0, 0}, "--out", failure.what());
  }
}

// A lock on a sweep's --out for the run (flock on its .lock file), released when it goes.
class OutputFolderLock {
 public:
  OutputFolderLock() = default;
  OutputFolderLock(const OutputFolderLock&) = delete;
  OutputFolderLock& operator=(const OutputFolderLock&) = delete;
  ~OutputFolderLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  // False when another process holds it.
  bool take(const fs::path& file) {
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return false;
    return ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
  }

 private:
  int fd_ = -1;
};

// What a sweep's --out says of the results it holds: the sweep and its inputs.
std::string out_identity(const sweep::Sweep& loaded, const std::string& inputs) {
  return "sweep: " + loaded.name + "\ninputs: " + inputs + "\n";
}

// Makes --out and points/ in it, takes the folder's lock, refuses a folder holding another
// sweep's results (another name, or other inputs: the base files, the settings, the version),
// and removes what a killed run of this sweep left half-written (points/.KEY.json.tmpPID).
void prepare_out_folder(const std::string& out_dir, const sweep::Sweep& loaded,
                        const std::string& inputs, OutputFolderLock& lock) {
  const fs::path out(out_dir);
  const fs::path points_dir = out / "points";
  std::error_code error;
  fs::create_directories(points_dir, error);
  if (error)
    throw InputError({out_dir, 0, 0}, "--out",
                     "expected a folder hetplan can create, got " + error.message());
  if (!lock.take(out / ".lock"))
    throw InputError({out_dir, 0, 0}, "--out",
                     "expected a folder no other sweep is writing to, got one a running sweep "
                     "holds");
  const fs::path identity_file = out / "sweep.txt";
  const std::string identity = out_identity(loaded, inputs);
  if (fs::is_regular_file(identity_file, error)) {
    const std::string held = formats::read_text_file(identity_file.string());
    if (held != identity) {
      const auto name_end = held.find('\n');
      const std::string held_name =
          held.rfind("sweep: ", 0) == 0 ? held.substr(7, name_end - 7) : "?";
      throw InputError({identity_file.string(), 1, 1}, "--out",
                       "expected a folder of sweep " + loaded.name +
                           "'s results with these inputs, or a new one, got the results of "
                           "sweep " + held_name +
                           (held_name == loaded.name ? " with other inputs (base files, settings "
                                                       "or version)"
                                                     : "") +
                           ": choose another --out");
    }
  } else {
    try {
      formats::write_file_atomically(identity_file.string(), identity);
    } catch (const std::runtime_error& failure) {
      throw InputError({out_dir, 0, 0}, "--out", failure.what());
    }
  }
  // Left by a run killed while writing a point: never a result (the rename did not happen).
  for (const auto& entry : fs::directory_iterator(points_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".") && name.find(".json.tmp") != std::string::npos)
      fs::remove(entry.path(), error);
  }
}

}  // namespace

int run_sweep_command(const SweepCommand& command) {
  const sweep::Sweep loaded = sweep::load_sweep(command.sweep_file);
  sweep::SweepOptions options;
  options.jobs = command.jobs > 0 ? command.jobs
                                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!command.shard.empty()) options.shard = parse_shard(command.shard);
  options.twin_worker = sim::twin::worker_beside_this_executable();
  options.max_seconds = command.max_seconds;
  if (command.resume && command.out_dir.empty())
    throw InputError({"sweep", 0, 0}, "--resume", "expected --out DIR too (the results to resume)");
  const fs::path points_dir = fs::path(command.out_dir) / "points";
  OutputFolderLock lock;
  if (!command.out_dir.empty()) {
    // The folder is made only for a sweep that runs (a refused one leaves nothing), held for
    // this run alone, and kept to one sweep's results.
    options.started = [&](const std::string& inputs) {
      prepare_out_folder(command.out_dir, loaded, inputs, lock);
    };
    // Each finished point, at once: an interrupted sweep resumes from them.
    options.finished = [&](const sweep::PointResult& point) {
      try {
        formats::write_file_atomically((points_dir / (point.key + ".json")).string(),
                                       point.line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
      } catch (const std::runtime_error& failure) {
        throw InputError({command.out_dir, 0, 0}, "--out", failure.what());
      }
    };
  }
  if (command.resume) {
    options.earlier = [&](const std::string& key) -> std::optional<nlohmann::ordered_json> {
      const fs::path file = points_dir / (key + ".json");
      std::error_code error;
      if (!fs::is_regular_file(file, error)) return std::nullopt;
      try {
        auto line = nlohmann::ordered_json::parse(formats::read_text_file(file.string()));
        if (line.is_object() && line.value("key", "") == key) return line;
      } catch (const std::exception&) {
      }
      return std::nullopt;  // unreadable: run the point again
    };
  }
  planner::StopToken stop;
  options.stop = &stop;
  std::optional<sweep::SweepResult> result;
  {
    SweepProgressLine progress(loaded.name);
    options.observer = &progress;
    g_sweep_stop = &stop;
    const auto previous = std::signal(SIGINT, stop_sweep_on_signal);
    result = sweep::run_sweep(loaded, options);
    std::signal(SIGINT, previous);
    g_sweep_stop = nullptr;
  }
  std::size_t failed = 0;
  for (const auto& point : result->points) failed += point.ok ? 0 : 1;
  if (command.out_dir.empty()) {
    std::cout << sweep::results_jsonl(result->points);
  } else {
    write_results(command.out_dir, sweep::axis_paths(loaded), result->points);
    std::cout << "sweep " << loaded.name << ": " << result->points.size() << " points";
    if (options.shard.count > 1)
      std::cout << " (shard " << options.shard.index << "/" << options.shard.count << " of "
                << result->total_points << ")";
    std::cout << ", " << failed << " failed; results in "
              << (fs::path(command.out_dir) / "results.jsonl").string() << " and results.csv\n";
  }
  if (result->stopped) {
    std::cerr << "stopped (" << result->stopped_by << "): " << result->points.size()
              << " points ran before the stop"
              << (command.out_dir.empty() ? "" : "; --resume runs the rest") << "\n";
  }
  return 0;
}

namespace {

// The axis paths of results, from their first point's values.
std::vector<std::string> paths_of(const std::vector<sweep::PointResult>& points) {
  std::vector<std::string> paths;
  if (!points.empty() && points.front().line.contains("values")) {
    for (const auto& [path, value] : points.front().line["values"].items()) paths.push_back(path);
  }
  return paths;
}

}  // namespace

int run_sweep_job(const SweepJobCommand& command) {
  const sweep::Sweep loaded = sweep::load_sweep(command.sweep_file);
  sweep::JobOptions options;
  options.shards = command.shards;
  options.image = command.image;
  options.name = command.name;
  options.results_claim = command.results_claim;
  options.namespace_name = command.namespace_name;
  options.scheduler = command.scheduler;
  options.cpus = command.cpus;
  std::vector<formats::NamedText> files;
  for (auto& file : sweep::sweep_job(loaded, options)) files.push_back({file.name, std::move(file.text)});
  try {
    formats::write_folder_atomically(command.out_dir, files);
  } catch (const std::exception& failure) {
    throw InputError({command.out_dir, 0, 0}, "--out", failure.what());
  }
  const std::string name = command.name.empty() ? loaded.name : command.name;
  const std::string ns = command.namespace_name.empty() ? "" : " -n " + command.namespace_name;
  const fs::path out(command.out_dir);
  std::cout << "wrote " << (out / "configmap.yaml").string() << ", " << (out / "job.yaml").string()
            << " and " << (out / "merge-job.yaml").string() << " (" << command.shards
            << " shards; results on the claim " << command.results_claim << ")\n"
            << "run:\n"
            << "  kubectl" << ns << " apply -f " << (out / "configmap.yaml").string() << " -f "
            << (out / "job.yaml").string() << "\n"
            << "  kubectl" << ns << " wait --for=condition=complete --timeout=24h job/" << name << "\n"
            << "  kubectl" << ns << " apply -f " << (out / "merge-job.yaml").string() << "\n";
  return 0;
}

int run_sweep_report(const std::string& folder, const std::string& out_file) {
  const std::string results = (fs::path(folder) / "results.jsonl").string();
  const auto points = sweep::merge_results({{results, formats::read_text_file(results)}});
  const std::vector<std::string> paths = paths_of(points);
  const fs::path html = out_file.empty() ? fs::path(folder) / "report.html" : fs::path(out_file);
  std::vector<std::string> written;
  try {
    for (const auto& chart : sweep::report_charts(paths, points)) {
      const fs::path svg = html.parent_path() / (html.stem().string() + "-" + chart.name + ".svg");
      formats::write_file_atomically(svg.string(), chart.svg);
      written.push_back(svg.string());
    }
    formats::write_file_atomically(html.string(), sweep::report_html(paths, points));
  } catch (const std::runtime_error& failure) {
    throw InputError({html.string(), 0, 0}, "--out", failure.what());
  }
  std::cout << "wrote " << html.string() << " (" << points.size() << " points, " << written.size()
            << " charts, each also as SVG beside it)\n";
  return 0;
}

int run_sweep_merge(const std::vector<std::string>& folders, const std::string& out_dir) {
  std::vector<std::pair<std::string, std::string>> parts;
  for (const auto& folder : folders) {
    const std::string file = (fs::path(folder) / "results.jsonl").string();
    parts.emplace_back(file, formats::read_text_file(file));
  }
  const auto merged = sweep::merge_results(parts);
  const std::vector<std::string> paths = paths_of(merged);
  std::size_t total = 0;
  if (!merged.empty()) total = merged.front().line["points"].get<std::size_t>();
  std::error_code error;
  fs::create_directories(out_dir, error);
  if (error)
    throw InputError({out_dir, 0, 0}, "--out", "expected a folder hetplan can create, got " + error.message());
  write_results(out_dir, paths, merged);
  std::cout << "merged " << merged.size() << " of " << total << " points into "
            << (fs::path(out_dir) / "results.jsonl").string() << "\n";
  if (merged.size() != total) std::cerr << "note: " << total - merged.size() << " points missing\n";
  return 0;
}

}  // namespace hetplan::cli
