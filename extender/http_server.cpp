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

enum class Wait { ready, timeout, stopped, failed };

// Waits until `fd` is ready for `events`, `stop_fd` (when not -1) is readable, or the deadline.
Wait wait_for(int fd, short events, int stop_fd, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Wait::timeout;
    pollfd fds[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
    const int n = ::poll(fds, stop_fd >= 0 ? 2 : 1,
                         static_cast<int>(std::min<long long>(left.count(), INT_MAX)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Wait::failed;
    }
    if (n == 0) continue;  // the deadline is checked again above
    if (stop_fd >= 0 && (fds[1].revents & POLLIN)) return Wait::stopped;
    if (fds[0].revents & (events | POLLHUP | POLLERR)) return Wait::ready;
    if (fds[0].revents & POLLNVAL) return Wait::failed;
  }
}

bool write_all(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    if (wait_for(fd, POLLOUT, -1, deadline) != Wait::ready) return false;
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

// Connection workers with a bounded queue: when it is full the accepting thread waits, and
// further clients wait in the kernel's listen backlog.
class Pool {
 public:
  Pool(std::size_t threads, std::size_t max_queued) : max_queued_(max_queued) {
    workers_.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() { finish(); }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // False when the pool is finishing and the job was not taken.
  bool enqueue(std::function<void()> job, const std::atomic<bool>& stopping) {
    std::unique_lock lock(mutex_);
    while (jobs_.size() >= max_queued_ && !finishing_ && !stopping) {
      room_.wait_for(lock, std::chrono::milliseconds(50));
    }
    if (finishing_ || stopping) return false;
    jobs_.push_back(std::move(job));
    work_.notify_one();
    return true;
  }

  // Runs every queued job, then joins the workers.
  void finish() {
    {
      std::lock_guard lock(mutex_);
      finishing_ = true;
    }
    work_.notify_all();
    room_.notify_all();
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
      room_.notify_one();
      job();
    }
  }

  std::size_t max_queued_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable room_;
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

struct Server::Impl {
  Limits limits;
  Handler handler;
  ErrorBody error_body;
  int listen_fd = -1;
  int stop_fd = -1;  // an eventfd, readable once stop() was called
  std::atomic<bool> stopping{false};

  void refuse(int fd, const Request* request, const Refusal& refusal, Clock::time_point started) {
    Response response;
    response.status = refusal.status;
    response.body = error_body(refusal.message);
    if (write_all(fd, render(request, response, false), Clock::now() + limits.write_deadline)) {
      // Read what the client still sends for a moment before closing: closing with unread
      // bytes makes the kernel reset the connection, and the client may lose the answer.
      ::shutdown(fd, SHUT_WR);
      const auto until = std::min(started + limits.request_deadline,
                                  Clock::now() + std::chrono::milliseconds(500));
      char sink[4096];
      while (wait_for(fd, POLLIN, -1, until) == Wait::ready &&
             ::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
      }
    }
  }

  // Serves the requests of one connection, one at a time, then returns (the caller closes).
  void serve(int fd) {
    std::string in;  // bytes received and not yet consumed
    for (int served = 0; served < limits.keep_alive_max; ++served) {
      // The request's clock starts when the worker begins waiting for it; its first byte must
      // come within the idle timeout (a request already received has come).
      const auto started = Clock::now();
      const auto deadline = started + limits.request_deadline;
      if (in.empty()) {
        const auto first_byte = started + std::min(limits.idle_timeout, limits.request_deadline);
        if (wait_for(fd, POLLIN, stop_fd, first_byte) != Wait::ready) return;
      }
      std::size_t head_end = std::string::npos;
      std::size_t body_start = 0;
      for (;;) {
        // Blank lines before a request line are ignored (RFC 9112 section 2.2).
        const std::size_t text = in.find_first_not_of("\r\n");
        in.erase(0, text == std::string::npos ? in.size() : text);
        if (const std::size_t crlf = in.find("\r\n\r\n"); crlf != std::string::npos) {
          head_end = crlf;
          body_start = crlf + 4;
        }
        if (const std::size_t lf = in.find("\n\n"); lf != std::string::npos && lf < head_end) {
          head_end = lf;
          body_start = lf + 2;
        }
        if (head_end != std::string::npos && head_end <= limits.max_head) break;
        if (in.size() > limits.max_head) {
          refuse(fd, nullptr, {431, "request line and headers longer than " +
                                        std::to_string(limits.max_head) + " bytes"},
                 started);
          return;
        }
        if (!receive(fd, in, deadline, started)) return;
      }
      Request request;
      if (auto refusal = parse_head(std::string_view(in).substr(0, head_end), request)) {
        refuse(fd, nullptr, *refusal, started);
        return;
      }
      std::size_t length = 0;
      if (auto refusal = body_length(request, limits.max_body, length)) {
        refuse(fd, &request, *refusal, started);
        return;
      }
      while (in.size() - body_start < length) {
        if (!receive(fd, in, deadline, started)) return;
      }
      request.body = in.substr(body_start, length);
      in.erase(0, body_start + length);

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
      const bool keep = keeps_alive(request) && served + 1 < limits.keep_alive_max && !stopping;
      const bool written =
          write_all(fd, render(&request, response, keep), Clock::now() + limits.write_deadline);
      if (request.body.size() >= limits.trim_after) {
        request = {};
        response = {};
        std::string().swap(in);
        ::malloc_trim(0);  // a large body's pages go back to the system, not to the next peak
      }
      if (!written || !keep) return;
    }
  }

  // Reads more of a request; on its deadline answers 408. False: the connection is done.
  bool receive(int fd, std::string& in, Clock::time_point deadline, Clock::time_point started) {
    switch (wait_for(fd, POLLIN, -1, deadline)) {
      case Wait::ready:
        break;
      case Wait::timeout: {
        const auto seconds = std::chrono::duration<double>(limits.request_deadline).count();
        char message[96];
        std::snprintf(message, sizeof message, "request not complete within %g s", seconds);
        refuse(fd, nullptr, {408, message}, started);
        return false;
      }
      default:
        return false;
    }
    char buffer[16384];
    const ssize_t got = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (got == 0) return false;  // the client closed
    if (got < 0) return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
    in.append(buffer, static_cast<std::size_t>(got));
    return true;
  }
};

Server::Server(Limits limits, Handler handler, ErrorBody error_body)
    : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->handler = std::move(handler);
  impl_->error_body = std::move(error_body);
  impl_->stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

Server::~Server() {
  stop();
  if (impl_->listen_fd >= 0) ::close(impl_->listen_fd);
  if (impl_->stop_fd >= 0) ::close(impl_->stop_fd);
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
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
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
  if (s.listen_fd < 0 || s.stop_fd < 0 || s.stopping) return;
  Pool pool(s.limits.threads, s.limits.queued);
  for (;;) {
    const Wait wait = wait_for(s.listen_fd, POLLIN, s.stop_fd, Clock::time_point::max());
    if (wait == Wait::stopped || wait == Wait::failed) break;
    if (wait != Wait::ready) continue;
    const int fd = ::accept4(s.listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors (EMFILE, ENFILE) or memory: wait a moment instead of spinning.
      if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    const bool taken = pool.enqueue(
        [&s, fd] {
          s.serve(fd);
          ::close(fd);
        },
        s.stopping);
    if (!taken) ::close(fd);
  }
  pool.finish();
}

void Server::stop() {
  impl_->stopping = true;
  if (impl_->stop_fd >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t ignored = ::write(impl_->stop_fd, &one, sizeof one);
  }
}

}  // namespace hetplan::extender::http
