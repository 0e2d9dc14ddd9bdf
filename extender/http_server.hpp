// The extender's HTTP/1.1 server: one I/O thread reads every open connection (poll) and gives
// each request a total deadline, not only one per read; a pool of workers answers complete
// requests. A client sending a byte every few seconds holds no worker and delays no one else
// (docs/extender.md#limits).
// It speaks only what kube-scheduler's extender client sends: requests with a Content-Length
// body (or none), keep-alive, no chunked bodies, no pipelining beyond one request at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hetplan::extender::http {

struct Request {
  std::string method;
  std::string path;  // the target without its query
  std::string version;
  std::vector<std::pair<std::string, std::string>> headers;  // names as sent
  std::string body;
  // The first header of this name (case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond type, length, connection
};

struct Limits {
  std::size_t max_head = 16 << 10;  // request line and headers, bytes; beyond: 431
  std::size_t max_body = 8 << 20;   // bytes; a larger Content-Length: 413, the body is not read
  // From a request's first byte to its last: beyond it the server answers 408 and closes.
  std::chrono::milliseconds request_deadline{10'000};
  std::chrono::milliseconds idle_timeout{1'000};    // between requests of a kept-alive connection
  std::chrono::milliseconds write_deadline{5'000};  // to write one response
  int keep_alive_max = 100;                         // requests per connection
  std::size_t threads = 4;                          // workers answering complete requests
  // Open connections; beyond them new ones wait in the kernel's backlog. The requests being
  // read hold at most 4 x max_body + 1 MiB together; beyond that they are read no further until
  // one completes or meets its deadline.
  std::size_t max_connections = 512;
  int backlog = 128;                                // connections waiting in the kernel
  // After a request of at least this many bytes the worker returns free heap to the system.
  std::size_t trim_after = 1 << 20;
};

// Answers a complete, well-formed request. May throw; the server then answers 500.
using Handler = std::function<void(const Request&, Response&)>;
// The body of a response the server writes itself (a malformed request, a timeout).
using ErrorBody = std::function<std::string(std::string_view message)>;

class Server {
 public:
  Server(Limits limits, Handler handler, ErrorBody error_body);
  ~Server();  // stops and closes the socket; join the thread in run() first
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port (port 0: any free port) with SO_REUSEADDR and listens. Returns the port, or
  // -1 when it cannot bind.
  int bind(const std::string& host, int port);
  // Accepts and serves until stop(); returns at once when stop() came first or nothing is bound.
  // Returns after the requests workers hold are answered; other connections are closed.
  void run();
  // Thread-safe; any time, also before run().
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reason phrase of an HTTP status ("Bad Request"); "Unknown" for codes the server never sends.
std::string_view reason_phrase(int status);

}  // namespace hetplan::extender::http
