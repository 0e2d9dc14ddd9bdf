#include "sim/twin/runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "core/scratch_files.hpp"
#include "sim/twin/json.hpp"

extern char** environ;

namespace hetplan::sim::twin {
namespace {

constexpr std::size_t kMaxOutputBytes = 64u << 20;
constexpr std::size_t kErrorTail = 600;

struct Pipe {
  int read = -1;
  int write = -1;
  bool open() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    read = fds[0];
    write = fds[1];
    return true;
  }
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The last line of what the worker wrote on standard error, trimmed to a message.
std::string last_words(const std::string& err) {
  std::string text = err;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const auto newline = text.rfind('\n');
  if (newline != std::string::npos) text = text.substr(newline + 1);
  if (text.size() > kErrorTail) text = "..." + text.substr(text.size() - kErrorTail);
  return text;
}

constexpr int kStopPollMs = 50;  // how often a running worker looks at the stop request

struct Run {
  std::string error;  // empty: the worker answered
  long peak_rss_kib = 0;
  bool cancelled = false;
};

Run cancelled_outcome(const std::string& who) {
  Run outcome;
  outcome.cancelled = true;
  outcome.error = who + " was cancelled";
  return outcome;
}

// Runs one worker on `request`; on success outcome.error is empty and `answer` holds what it
// wrote on standard output.
Run run_process(const std::string& request, const std::string& who,
                const WorkerCommand& command, const std::stop_token& stop, std::string& answer) {
  Run outcome;
  if (stop.stop_requested()) return cancelled_outcome(who);
  Pipe in, out, err;
  if (!in.open() || !out.open() || !err.open()) {
    outcome.error = who + " could not start: " + std::strerror(errno);
    return outcome;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write, 1);
  posix_spawn_file_actions_adddup2(&actions, err.write, 2);
  std::string program = command.executable;
  char* argv[] = {program.data(), nullptr};
  // The worker arms a death signal and checks that this process is still its parent
  // (worker_main.cpp): it never outlives us.
  std::string parent = "HETPLAN_TWIN_PARENT=" + std::to_string(getpid());
  std::vector<char*> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "HETPLAN_TWIN_PARENT=", 20) != 0) env.push_back(*e);
  env.push_back(parent.data());
  env.push_back(nullptr);
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, env.data());
  posix_spawn_file_actions_destroy(&actions);
  close_fd(in.read);
  close_fd(out.write);
  close_fd(err.write);
  if (spawned != 0) {
    close_fd(in.write);
    close_fd(out.read);
    close_fd(err.read);
    outcome.error = who + " could not start " + command.executable + ": " +
                    std::strerror(spawned);
    return outcome;
  }
  // A signal that ends this process ends the worker before it removes the trace the worker may
  // be writing (core/scratch_files.hpp); it has read no request yet, so it has written nothing.
  std::optional<ScratchProcess> registered(std::in_place, pid);

  // Feed standard input while draining both outputs, so that no pipe fills up and blocks.
  std::string stdout_text, stderr_text;
  std::size_t written = 0;
  fcntl(in.write, F_SETFL, O_NONBLOCK);
  bool too_much = false;
  bool stopped = false;
  const int timeout = stop.stop_possible() ? kStopPollMs : -1;
  while (out.read >= 0 || err.read >= 0 || in.write >= 0) {
    if (stop.stop_requested()) {
      // Its answer no longer matters: kill it and stop listening (a process it started might
      // hold the pipes open).
      stopped = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd fds[3];
    int n = 0;
    if (in.write >= 0) fds[n++] = {in.write, POLLOUT, 0};
    if (out.read >= 0) fds[n++] = {out.read, POLLIN, 0};
    if (err.read >= 0) fds[n++] = {err.read, POLLIN, 0};
    if (::poll(fds, static_cast<nfds_t>(n), timeout) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < n; ++k) {
      if (fds[k].revents == 0) continue;
      if (fds[k].fd == in.write) {
        const ssize_t put = ::write(in.write, request.data() + written, request.size() - written);
        if (put > 0) written += static_cast<std::size_t>(put);
        if (put < 0 && errno != EAGAIN && errno != EINTR) close_fd(in.write);  // worker gone
        if (written == request.size()) close_fd(in.write);
        continue;
      }
      char buffer[1 << 16];
      const ssize_t got = ::read(fds[k].fd, buffer, sizeof buffer);
      if (got <= 0) {
        if (got < 0 && errno == EINTR) continue;
        if (fds[k].fd == out.read) close_fd(out.read);
        else close_fd(err.read);
        continue;
      }
      std::string& sink = fds[k].fd == out.read ? stdout_text : stderr_text;
      if (sink.size() < kMaxOutputBytes) {
        sink.append(buffer, static_cast<std::size_t>(got));
      } else if (!too_much) {
        too_much = true;
        ::kill(pid, SIGKILL);
      }
    }
  }
  close_fd(in.write);
  close_fd(out.read);
  close_fd(err.read);
  // Registered until it has exited, reaped only after: its id names no other process meanwhile.
  siginfo_t exited{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &exited, WEXITED | WNOWAIT) < 0 &&
         errno == EINTR) {
  }
  registered.reset();
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  outcome.peak_rss_kib = usage.ru_maxrss;

  if (stopped) {
    outcome = cancelled_outcome(who);
    outcome.peak_rss_kib = usage.ru_maxrss;
  } else if (too_much) {
    outcome.error = who + " failed: the worker wrote more than 64 MiB";
  } else if (WIFSIGNALED(status)) {
    outcome.error = who + " failed: the worker was killed by signal " +
                    std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
    const std::string words = last_words(stderr_text);
    if (!words.empty()) outcome.error += ": " + words;
  } else if (WEXITSTATUS(status) != 0) {
    const std::string words = last_words(stderr_text);
    outcome.error = who + " failed (worker exit code " + std::to_string(WEXITSTATUS(status)) +
                    ")" + (words.empty() ? "" : ": " + words);
  } else {
    answer = std::move(stdout_text);
  }
  return outcome;
}

// Runs one worker on `request` and reads its answer with `parse`.
template <typename Result, typename Parse>
WorkerOutcome<Result> run_and_read(const std::string& request, const std::string& who,
                                   const WorkerCommand& command, const std::stop_token& stop,
                                   Parse parse) {
  std::string answer;
  const Run run = run_process(request, who, command, stop, answer);
  WorkerOutcome<Result> outcome;
  outcome.error = run.error;
  outcome.peak_rss_kib = run.peak_rss_kib;
  outcome.cancelled = run.cancelled;
  if (!outcome.error.empty()) return outcome;
  try {
    outcome.result = parse(nlohmann::json::parse(answer));
  } catch (const std::exception& e) {
    outcome.error = who + " failed: the worker's answer is unreadable: " + e.what();
  }
  return outcome;
}

Outcome run_one(const TwinInput& input, const WorkerCommand& command, const std::stop_token& stop) {
  return run_and_read<TwinResult>(to_json(input).dump(), "the simulation of plan " + input.plan,
                                  command, stop, result_from_json);
}

}  // namespace

std::vector<Outcome> run_workers(const std::vector<TwinInput>& inputs,
                                 const WorkerCommand& command, int parallel,
                                 std::stop_token stop) {
  // A worker that dies while its input is written would raise SIGPIPE here; the write's EPIPE
  // is handled instead.
  ::signal(SIGPIPE, SIG_IGN);
  std::vector<Outcome> outcomes(inputs.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < inputs.size(); i = next++)
      outcomes[i] = run_one(inputs[i], command, stop);
  };
  const std::size_t threads =
      std::min(inputs.size(), static_cast<std::size_t>(std::max(1, parallel)));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
  return outcomes;
}

PoolOutcome run_pool_worker(const TwinPoolInput& pool, const WorkerCommand& command,
                            std::stop_token stop) {
  ::signal(SIGPIPE, SIG_IGN);
  std::string plans;
  for (const TwinInput& job : pool.jobs) plans += (plans.empty() ? "" : " + ") + job.plan;
  return run_and_read<TwinPoolResult>(to_json(pool).dump(), "the simulation of the pool " + plans,
                                      command, stop, pool_result_from_json);
}

std::string worker_beside_this_executable() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "hetplan-twin";
  return (self.parent_path() / "hetplan-twin").string();
}

}  // namespace hetplan::sim::twin
