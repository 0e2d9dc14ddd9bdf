#include "extender/http_server.hpp"

#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

namespace hetplan::extender::http {
namespace {

using Clock = std::chrono::steady_clock;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// RFC 9110 token characters (methods, header names).
bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos)
      return false;
  }
  return true;
}

// Waits until `fd` can take more bytes; false at the deadline or on an error.
bool writable_by(int fd, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd ready{fd, POLLOUT, 0};
    const int n = ::poll(&ready, 1, static_cast<int>(std::min<long long>(left.count(), INT_MAX)));
    if (n < 0 && errno != EINTR) return false;
    if (n <= 0) continue;  // interrupted, or the deadline is checked again above
    if (ready.revents & (POLLERR | POLLNVAL)) return false;
    if (ready.revents & (POLLOUT | POLLHUP)) return true;
  }
}

bool write_all(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    if (!writable_by(fd, deadline)) return false;
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// A request that cannot be served, and what to answer.
struct Refusal {
  int status = 400;
  std::string message;
};

// Parses the request line and headers (`head`, without the blank line that ends it).
std::optional<Refusal> parse_head(std::string_view head, Request& request) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    const std::size_t end = head.find('\n');
    std::string_view line = head.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (end == std::string_view::npos) break;
    head.remove_prefix(end + 1);
  }
  if (lines.empty()) return Refusal{400, "malformed request: no request line"};
  const std::string_view line = lines.front();
  const std::size_t first = line.find(' ');
  const std::size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  if (second == std::string_view::npos || line.find(' ', second + 1) != std::string_view::npos)
    return Refusal{400, "malformed request line: expected METHOD TARGET HTTP/1.1"};
  const std::string_view method = line.substr(0, first);
  const std::string_view target = line.substr(first + 1, second - first - 1);
  const std::string_view version = line.substr(second + 1);
  if (!is_token(method)) return Refusal{400, "malformed request line: bad method"};
  if (target.empty() || target.front() != '/')
    return Refusal{400, "malformed request line: the target must be a path"};
  for (const char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return Refusal{400, "malformed request line: control byte in the target"};
  }
  if (version.substr(0, 5) != "HTTP/") return Refusal{400, "malformed request line: not HTTP"};
  if (version != "HTTP/1.1" && version != "HTTP/1.0")
    return Refusal{505, "HTTP version " + std::string(version) + " not supported: use HTTP/1.1"};
  request.method = method;
  request.path = target.substr(0, target.find('?'));
  request.version = version;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string_view header = lines[i];
    if (header.front() == ' ' || header.front() == '\t')
      return Refusal{400, "malformed header: folded lines are not accepted"};
    const std::size_t colon = header.find(':');
    if (colon == std::string_view::npos || !is_token(header.substr(0, colon)))
      return Refusal{400, "malformed header line " + std::to_string(i + 1)};
    std::string_view value = header.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    for (const char c : value) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
        return Refusal{400, "malformed header line " + std::to_string(i + 1) + ": control byte"};
    }
    request.headers.emplace_back(header.substr(0, colon), value);
  }
  return std::nullopt;
}

// The body's length from Content-Length, or a refusal. A method that carries a body needs one.
std::optional<Refusal> body_length(const Request& request, std::size_t max_body,
                                   std::size_t& length) {
  length = 0;
  if (request.header("Transfer-Encoding"))
    return Refusal{411, "chunked request bodies are not accepted: send Content-Length"};
  const std::string* declared = nullptr;
  for (const auto& [name, value] : request.headers) {
    if (!iequals(name, "Content-Length")) continue;
    if (declared && *declared != value) return Refusal{400, "conflicting Content-Length headers"};
    declared = &value;
  }
  const std::string& m = request.method;
  const bool carries_body = m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE";
  if (!declared) {
    if (carries_body) return Refusal{411, "a request needs a Content-Length"};
    return std::nullopt;
  }
  if (declared->empty() || declared->size() > 18 ||
      declared->find_first_not_of("0123456789") != std::string::npos)
    return Refusal{400, "Content-Length is not a number of bytes"};
  length = std::stoull(*declared);
  if (length > max_body) return Refusal{413, "request body too large"};
  return std::nullopt;
}

bool keeps_alive(const Request& request) {
  const std::string* connection = request.header("Connection");
  if (request.version == "HTTP/1.0") return connection && iequals(*connection, "keep-alive");
  return !(connection && iequals(*connection, "close"));
}

std::string render(const Request* request, const Response& response, bool keep_alive) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                    std::string(reason_phrase(response.status)) + "\r\n";
  out += "Content-Type: " + response.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  if (!request || request->method != "HEAD") out += response.body;
  return out;
}

// The workers that answer complete requests. Its queue needs no bound of its own: each open
// connection has at most one request in it (Limits::max_connections).
class Pool {
 public:
  explicit Pool(std::size_t threads) {
    workers_.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() { finish(); }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  void enqueue(std::function<void()> job) {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
    work_.notify_one();
  }

  // Runs every queued job, then joins the workers.
  void finish() {
    {
      std::lock_guard lock(mutex_);
      finishing_ = true;
    }
    work_.notify_all();
    for (auto& worker : workers_) worker.join();
    workers_.clear();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        work_.wait(lock, [&] { return !jobs_.empty() || finishing_; });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  bool finishing_ = false;
};

}  // namespace

const std::string* Request::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return &value;
  }
  return nullptr;
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

// One client connection. The I/O thread owns it while it waits for or reads a request, or
// drains after a refusal; a worker owns it while it answers a complete request.
struct Connection {
  enum class State { idle, reading, draining };
  int fd = -1;
  State state = State::idle;
  std::string in;  // bytes received and not yet consumed
  Clock::time_point until;  // idle: the next request's first byte; reading: the request's
                            // deadline; draining: when to close
  int served = 0;
  // Once the head of the current request is parsed.
  std::optional<Request> head;
  std::size_t body_start = 0;
  std::size_t length = 0;
  ~Connection() {
    if (fd >= 0) ::close(fd);
  }
};
using ConnectionPtr = std::shared_ptr<Connection>;

struct Server::Impl {
  Limits limits;
  Handler handler;
  ErrorBody error_body;
  int listen_fd = -1;
  int stop_fd = -1;  // an eventfd, readable once stop() was called
  int wake_fd = -1;  // an eventfd, readable when a worker hands a kept-alive connection back
  std::atomic<bool> stopping{false};
  std::mutex returned_mutex;
  std::vector<ConnectionPtr> returned;  // kept-alive connections workers handed back
  std::atomic<std::size_t> busy{0};     // connections a worker holds

  // Writes a refusal without waiting (it is small) and lets the connection drain: reading what
  // the client still sends for a moment before closing keeps the kernel from resetting the
  // connection before the client has read the answer.
  void refuse(Connection& c, const Request* request, const Refusal& refusal) {
    Response response;
    response.status = refusal.status;
    response.body = error_body(refusal.message);
    const std::string out = render(request, response, false);
    const ssize_t sent = ::send(c.fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    c.in.clear();
    c.head.reset();
    if (sent != static_cast<ssize_t>(out.size())) {
      c.state = Connection::State::draining;
      c.until = Clock::now();  // closes at the next look
      return;
    }
    ::shutdown(c.fd, SHUT_WR);
    c.state = Connection::State::draining;
    c.until = Clock::now() + std::chrono::milliseconds(500);
  }

  // Parses what a reading connection has; true when a whole request is there.
  bool complete(Connection& c) {
    if (!c.head) {
      // Blank lines before a request line are ignored (RFC 9112 section 2.2).
      const std::size_t text = c.in.find_first_not_of("\r\n");
      c.in.erase(0, text == std::string::npos ? c.in.size() : text);
      std::size_t head_end = std::string::npos;
      if (const std::size_t crlf = c.in.find("\r\n\r\n"); crlf != std::string::npos) {
        head_end = crlf;
        c.body_start = crlf + 4;
      }
      if (const std::size_t lf = c.in.find("\n\n"); lf != std::string::npos && lf < head_end) {
        head_end = lf;
        c.body_start = lf + 2;
      }
      if (head_end == std::string::npos || head_end > limits.max_head) {
        if (c.in.size() > limits.max_head || head_end != std::string::npos) {
          refuse(c, nullptr, {431, "request line and headers longer than " +
                                       std::to_string(limits.max_head) + " bytes"});
        }
        return false;
      }
      Request request;
      if (auto refusal = parse_head(std::string_view(c.in).substr(0, head_end), request)) {
        refuse(c, nullptr, *refusal);
        return false;
      }
      if (auto refusal = body_length(request, limits.max_body, c.length)) {
        refuse(c, &request, *refusal);
        return false;
      }
      c.head = std::move(request);
    }
    return c.in.size() - c.body_start >= c.length;
  }

  // A worker answers the connection's complete request, then hands it back or closes it.
  std::function<void()> answer(ConnectionPtr c) {
    return [this, c] {
      Request request = std::move(*c->head);
      c->head.reset();
      request.body = c->in.substr(c->body_start, c->length);
      c->in.erase(0, c->body_start + c->length);
      Response response;
      try {
        handler(request, response);
      } catch (const std::bad_alloc&) {
        response = {};
        response.status = 503;
        response.body = error_body("out of memory");
      } catch (...) {
        response = {};
        response.status = 500;
        response.body = error_body("internal error");
      }
      const bool keep = keeps_alive(request) && c->served + 1 < limits.keep_alive_max && !stopping;
      const bool written =
          write_all(c->fd, render(&request, response, keep), Clock::now() + limits.write_deadline);
      if (request.body.size() >= limits.trim_after) {
        request = {};
        response = {};
        c->in.shrink_to_fit();
        ::malloc_trim(0);  // a large body's pages go back to the system, not to the next peak
      }
      if (written && keep) {
        ++c->served;
        c->state = Connection::State::idle;
        c->until = Clock::now() + limits.idle_timeout;
        std::lock_guard lock(returned_mutex);
        returned.push_back(c);
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t ignored = ::write(wake_fd, &one, sizeof one);
      }
      --busy;
    };
  }

  // Reads what a connection has; false when it is done (closed by the client, an error).
  bool read_from(Connection& c) {
    char buffer[65536];
    const ssize_t got = ::recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (got == 0) return false;
    if (got < 0) return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
    if (c.state == Connection::State::draining) return true;
    if (c.state == Connection::State::idle) {
      c.state = Connection::State::reading;
      c.until = Clock::now() + limits.request_deadline;
    }
    c.in.append(buffer, static_cast<std::size_t>(got));
    return true;
  }

  void serve(Pool& pool) {
    std::vector<ConnectionPtr> open;
    std::vector<pollfd> fds;
    std::vector<char> drop;
    // Bytes all reading connections may hold together: beyond it they are read no further
    // until some request completes or meets its deadline.
    const std::size_t budget = 4 * limits.max_body + (1 << 20);
    for (;;) {
      {
        std::lock_guard lock(returned_mutex);
        for (auto& c : returned) open.push_back(std::move(c));
        returned.clear();
      }
      std::size_t buffered = 0;
      for (const auto& c : open) buffered += c->in.size();
      fds.clear();
      fds.push_back({stop_fd, POLLIN, 0});
      fds.push_back({wake_fd, POLLIN, 0});
      const bool room = open.size() + busy < limits.max_connections;
      fds.push_back({room ? listen_fd : -1, POLLIN, 0});
      auto next = Clock::time_point::max();
      for (const auto& c : open) {
        const bool read = c->state != Connection::State::reading || buffered < budget;
        fds.push_back({c->fd, static_cast<short>(read ? POLLIN : 0), 0});
        next = std::min(next, c->until);
      }
      int timeout = -1;
      if (next != Clock::time_point::max()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now());
        timeout = static_cast<int>(std::clamp<long long>(left.count(), 0, INT_MAX));
      }
      if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) break;
      if (fds[0].revents & POLLIN) break;  // stopped
      if (fds[1].revents & POLLIN) {
        std::uint64_t count = 0;
        [[maybe_unused]] const ssize_t ignored = ::read(wake_fd, &count, sizeof count);
      }
      drop.assign(open.size(), 0);
      const auto now = Clock::now();
      for (std::size_t i = 0; i < open.size(); ++i) {
        Connection& c = *open[i];
        if (fds[3 + i].revents & (POLLIN | POLLHUP | POLLERR)) {
          if (!read_from(c)) {
            drop[i] = 1;
            continue;
          }
        }
        // A kept-alive connection handed back may already hold the next request.
        if (c.state == Connection::State::idle && !c.in.empty()) {
          c.state = Connection::State::reading;
          c.until = now + limits.request_deadline;
        }
        if (c.state == Connection::State::reading && complete(c)) {
          ++busy;
          pool.enqueue(answer(open[i]));
          drop[i] = 2;  // a worker holds it now
          continue;
        }
        if (now >= c.until) {
          if (c.state == Connection::State::reading) {
            const auto seconds = std::chrono::duration<double>(limits.request_deadline).count();
            char message[96];
            std::snprintf(message, sizeof message, "request not complete within %g s", seconds);
            refuse(c, nullptr, {408, message});
          } else {
            drop[i] = 1;  // idle too long, or drained
          }
        }
      }
      std::size_t kept = 0;
      for (std::size_t i = 0; i < open.size(); ++i) {
        if (!drop[i]) open[kept++] = std::move(open[i]);
      }
      open.resize(kept);
      if (room && (fds[2].revents & POLLIN)) accept_all(open);
    }
  }

  void accept_all(std::vector<ConnectionPtr>& open) {
    while (open.size() + busy < limits.max_connections) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        // Out of descriptors (EMFILE, ENFILE) or memory: wait a moment instead of spinning.
        if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return;
      }
      int yes = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      auto c = std::make_shared<Connection>();
      c->fd = fd;
      // The first request's first byte, like a kept-alive connection's next one.
      c->until = Clock::now() + std::min(limits.idle_timeout, limits.request_deadline);
      open.push_back(std::move(c));
    }
  }
};

Server::Server(Limits limits, Handler handler, ErrorBody error_body)
    : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->handler = std::move(handler);
  impl_->error_body = std::move(error_body);
  impl_->stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  impl_->wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

Server::~Server() {
  stop();
  if (impl_->listen_fd >= 0) ::close(impl_->listen_fd);
  if (impl_->stop_fd >= 0) ::close(impl_->stop_fd);
  if (impl_->wake_fd >= 0) ::close(impl_->wake_fd);
}

int Server::bind(const std::string& host, int port) {
  if (impl_->listen_fd >= 0 || port < 0 || port > 65535) return -1;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found) != 0)
    return -1;
  int bound = -1;
  for (addrinfo* a = found; a && bound < 0; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR alone: a second server binding the same port fails (SO_REUSEPORT would let
    // it share the connections silently).
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, impl_->limits.backlog) == 0) {
      bound = fd;
    } else {
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (bound < 0) return -1;
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  if (::getsockname(bound, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    ::close(bound);
    return -1;
  }
  impl_->listen_fd = bound;
  return address.ss_family == AF_INET6
             ? ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port)
             : ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

void Server::run() {
  Impl& s = *impl_;
  if (s.listen_fd < 0 || s.stop_fd < 0 || s.wake_fd < 0 || s.stopping) return;
  {
    Pool pool(s.limits.threads);
    s.serve(pool);
    pool.finish();  // the requests workers hold are answered; they hand nothing back now
  }
  std::lock_guard lock(s.returned_mutex);
  s.returned.clear();  // closes them
}

void Server::stop() {
  impl_->stopping = true;
  if (impl_->stop_fd >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t ignored = ::write(impl_->stop_fd, &one, sizeof one);
  }
}

}  // namespace hetplan::extender::http
