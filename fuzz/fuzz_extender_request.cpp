// The extender's request path over a real loopback connection: the bundled reference plan
// served by extender::Server (libmicrohttpd, then the head checks, the byte budget, parse_json,
// filter and prioritize). The input's first byte chooses what the rest is: raw bytes on the
// wire, or the body of a well-formed filter or prioritize POST; the answer is read whole. A
// finding: a crash or sanitizer report, a hang (libFuzzer's
// -timeout), an answer that is not HTTP, a 200 whose body is not JSON, a 5xx other than 503 to a
// well-formed POST, or a server that no longer answers a valid request.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "extender/extender.hpp"
#include "extender/loopback_client.hpp"
#include "formats/loaders.hpp"

namespace {

struct Running {
  std::unique_ptr<hetplan::extender::Server> server;
  int port = -1;
  std::thread thread;
};

Running& running() {
  static Running* instance = [] {
    std::signal(SIGPIPE, SIG_IGN);
    auto* r = new Running;
    const std::string source = HETPLAN_SOURCE_DIR;
    const auto scenario = hetplan::formats::load_scenario(source + "/scenarios/default.yaml");
    const auto plan = hetplan::formats::load_plan(source + "/plans/default-reference.yaml");
    hetplan::extender::ExtenderConfig config;
    config.max_body = 64 << 10;
    config.request_timeout = 2;
    r->server = std::make_unique<hetplan::extender::Server>(
        hetplan::extender::stage_table(scenario.cluster, plan), config);
    r->port = r->server->bind_any_port("127.0.0.1");
    if (r->port <= 0) __builtin_trap();
    r->thread = std::thread([r] { r->server->listen_after_bind(); });
    return r;  // runs until the process ends
  }();
  return *instance;
}

// Sends `bytes` and returns what comes back: until a whole response has come, the server
// closes, or `first_ms` passes before the first byte (0.3 s between later ones). The connection
// is not half-closed (kube-scheduler's Go client never half-closes); the server's tests cover
// clients that do.
std::string round_trip(const std::string& bytes, int first_ms = 300) {
  const int fd = hetplan::extender::loopback::connect_loopback(running().port);
  if (fd < 0) __builtin_trap();
  hetplan::extender::loopback::send_all(fd, bytes);  // false: the server answered and closed early
  std::string answer;
  char buffer[65536];
  for (;;) {
    pollfd ready{fd, POLLIN, 0};
    if (poll(&ready, 1, answer.empty() ? first_ms : 300) <= 0) break;
    const ssize_t got = recv(fd, buffer, sizeof buffer, 0);
    if (got <= 0) break;
    answer.append(buffer, static_cast<std::size_t>(got));
    if (hetplan::extender::loopback::whole_responses(answer) > 0) break;
  }
  close(fd);
  return answer;
}

std::string post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

int status_of(const std::string& answer) {
  if (answer.rfind("HTTP/1.1 ", 0) != 0 || answer.size() < 12) return -1;
  return std::atoi(answer.substr(9, 3).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const int mode = data[0] % 3;
  if (mode == 0) {
    const std::string answer = round_trip(rest);
    // Raw bytes: nothing, or HTTP answers.
    if (!answer.empty() && answer.rfind("HTTP/1.", 0) != 0) __builtin_trap();
  } else {
    const std::string answer =
        round_trip(post(mode == 1 ? "/hetplan/filter" : "/hetplan/prioritize", rest), 5000);
    const int status = status_of(answer);
    if (status != 200 && status != 400 && status != 413 && status != 503) {
      std::fprintf(stderr, "answer of %zu bytes: %.60s\n", answer.size(), answer.c_str());
      __builtin_trap();
    }
    if (status == 200) {
      const auto body = answer.find("\r\n\r\n");
      if (body == std::string::npos || !nlohmann::json::accept(answer.substr(body + 4))) __builtin_trap();
    }
  }
  // Still serving.
  static const std::string alive = post("/hetplan/prioritize", R"({"Pod": {}, "NodeNames": ["a"]})");
  const std::string alive_answer = round_trip(alive, 5000);
  if (status_of(alive_answer) != 200) {
    std::size_t fds = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++fds;
    std::fprintf(stderr, "a valid request after the input got: %.60s (%zu files open)\n",
                 alive_answer.c_str(), fds);
    __builtin_trap();
  }
  return 0;
}
