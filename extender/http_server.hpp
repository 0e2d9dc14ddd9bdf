// The extender's HTTP/1.1 server, on GNU libmicrohttpd (docs/extender.md#http for why that
// library). Connections are read and written by a few polling threads (poll(2), non-blocking):
// a client that sends slowly or never reads its answer holds a connection and its bytes, never a
// thread. Small complete requests are answered by the polling thread that read them, larger ones
// by a pool of workers while their connection waits suspended. Every byte the server holds for requests and answers is counted against one budget.
// Optional TLS (GnuTLS) with client certificates verified against a CA.
#pragma once

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
  std::vector<std::pair<std::string, std::string>> headers;  // names as the library gives them
  std::string body;
  // The first header of this name (case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond type and length
};

// PEM texts. Without a certificate the server speaks plain HTTP; with client_ca, only clients
// presenting a certificate that CA signed reach the handler (others get 403, their body unread).
struct Tls {
  std::string certificate;  // the server's certificate chain
  std::string key;          // its private key
  std::string client_ca;    // CA certificates client certificates must chain to; empty: none asked
  bool enabled() const { return !certificate.empty(); }
};

struct Limits {
  // Request line and headers share one buffer per connection of this many bytes; a request
  // whose head does not fit gets 431.
  std::size_t connection_buffer = 32 << 10;
  std::size_t max_body = 8 << 20;  // bytes; a larger Content-Length or chunked body: 413
  // From the request's head (for a connection's first request: from its accept) to its last
  // body byte; later, 408. While a body is read, a client silent for this long is disconnected.
  std::chrono::milliseconds request_deadline{10'000};
  // Between requests of a kept-alive connection; longer than the 90 s Go's HTTP client keeps
  // an idle connection, so that the client closes first and never writes into a closed one.
  std::chrono::seconds idle_timeout{120};
  std::size_t threads = 4;          // workers answering complete requests
  // Requests with a body of at most this many bytes are answered by the polling thread that
  // read them; larger ones go to the workers (and so cannot hold up that thread's connections).
  std::size_t inline_body = 256 << 10;
  std::size_t io_threads = 2;       // polling threads reading and writing connections
  std::size_t max_connections = 1024;  // beyond them new connections are closed at accept
  int backlog = 128;                   // connections waiting in the kernel
  // Bytes of request bodies (read or being read) and of answers (computed, being written) held
  // together. A request whose body does not fit gets 503 with Retry-After, unread. Requests
  // whose body is at most small_body draw on a reserve of small_reserve bytes of it that larger
  // ones cannot use, so that a few large uploads cannot shut out the usual small requests.
  // Workers answer at most one request larger than small_body at a time (parsing takes tens of
  // times a body's size); small ones are taken past it.
  std::size_t budget = 64 << 20;
  std::size_t small_body = 1 << 20;
  std::size_t small_reserve = 16 << 20;
  // An answer may hold at most this many times its request's bytes (and always 64 KiB); a
  // larger one is replaced by a 500.
  std::size_t answer_factor = 8;
  // A request with a body must say it is of this media type (parameters such as charset
  // allowed); others get 415. A browser's cross-site form or text/plain post cannot say it
  // without a preflight, which gets 405.
  std::string content_type = "application/json";
  // stop() waits this long for requests being read or answered to finish before it closes them.
  std::chrono::milliseconds drain{10'000};
  // After a request of at least this many bytes the worker returns free heap to the system.
  std::size_t trim_after = 1 << 20;
};

// Answers a complete, well-formed request. May throw; the server then answers 500.
using Handler = std::function<void(const Request&, Response&)>;
// The body of a response the server writes itself (a refusal, a timeout).
using ErrorBody = std::function<std::string(std::string_view message)>;
// Looks at a request's head before its body is read: false with `refusal` filled (a wrong path
// or method) answers it without reading the body.
using HeadCheck = std::function<bool(const Request& head, Response& refusal)>;

// Counts of what the server refused or dropped since it started (for tests and the load bench).
struct Counters {
  std::size_t answered = 0;        // answers a worker computed
  std::size_t refused_budget = 0;  // 503: the body did not fit the budget
  std::size_t dropped_gone = 0;    // complete requests whose client had gone before a worker took them
  std::size_t held_bytes = 0;      // bytes counted against the budget now
  std::size_t held_peak = 0;       // the most ever held at once
};

class Server {
 public:
  // Throws std::invalid_argument when the TLS texts are not PEM the library can use (checked at
  // run(): the library reads them when it starts).
  Server(Limits limits, Handler handler, ErrorBody error_body, HeadCheck head_check = {},
         Tls tls = {});
  ~Server();  // stops and closes the socket; join the thread in run() first
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port (port 0: any free port) with SO_REUSEADDR and listens. Returns the port, or
  // -1 when it cannot bind.
  int bind(const std::string& host, int port);
  // Serves until stop(); returns at once when stop() came first or nothing is bound. Returns
  // false when the library cannot start (e.g. TLS texts it refuses). Before it returns, new
  // connections are refused, requests being read or answered get up to Limits::drain to finish,
  // and every connection is closed.
  bool run();
  // Thread-safe; any time, also before run().
  void stop();
  Counters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hetplan::extender::http
