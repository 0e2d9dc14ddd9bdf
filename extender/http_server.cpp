#include "extender/http_server.hpp"

#include <gnutls/gnutls.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <stdexcept>
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

std::size_t count_headers(const Request& request, std::string_view name) {
  std::size_t count = 0;
  for (const auto& header : request.headers) count += iequals(header.first, name) ? 1 : 0;
  return count;
}

unsigned whole_seconds(std::chrono::milliseconds span) {
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(span).count();
  return static_cast<unsigned>(std::max<long long>(seconds, 1));
}

// What a connection remembers between its requests (the library's socket context).
struct ConnectionState {
  Clock::time_point opened = Clock::now();
  std::size_t requests = 0;
};

// One request on its way through the server: its head and body as they arrive, then the
// answer a worker made for it.
struct Exchange {
  enum class Phase { reading, queued, answered, refused };
  MHD_Connection* connection = nullptr;
  Request request;
  Clock::time_point deadline;
  std::size_t reserved = 0;  // body bytes counted against the budget
  Phase phase = Phase::reading;
  Response response;
};

// An answer's bytes, alive while the library writes them.
struct Held {
  std::string body;
  struct Budget* budget;
};

// Bytes held for requests and answers. Large bodies may not use the reserve kept for small ones.
struct Budget {
  std::mutex mutex;
  std::size_t held = 0;
  std::size_t peak = 0;
  std::size_t limit = 0;
  std::size_t reserve_for_small = 0;

  bool take(std::size_t bytes, bool small) {
    std::lock_guard lock(mutex);
    const std::size_t room = small ? limit : limit - std::min(limit, reserve_for_small);
    if (held > room || bytes > room - held) return false;
    held += bytes;
    peak = std::max(peak, held);
    return true;
  }
  // Answers: already computed, counted whatever the budget says (bounded by answer_factor).
  void force(std::size_t bytes) {
    std::lock_guard lock(mutex);
    held += bytes;
    peak = std::max(peak, held);
  }
  void give(std::size_t bytes) {
    std::lock_guard lock(mutex);
    held -= std::min(held, bytes);
  }
};

extern "C" void free_held(void* cls) {
  auto* held = static_cast<Held*>(cls);
  held->budget->give(held->body.size());
  delete held;
}

}  // namespace

const std::string* Request::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return &value;
  }
  return nullptr;
}

struct Server::Impl {
  Limits limits;
  Handler handler;
  ErrorBody error_body;
  HeadCheck head_check;
  Tls tls;
  int listen_fd = -1;
  Budget budget;

  std::mutex mutex;  // guards what follows
  std::condition_variable changed;
  bool stopping = false;
  bool workers_done = false;
  bool large_busy = false;  // a worker is answering a request with a body over small_body  // set by run() after the drain: workers return once the queue is empty
  std::deque<Exchange*> queue;  // complete requests waiting for a worker (connections suspended)
  std::size_t in_flight = 0;    // exchanges begun and not completed
  std::size_t suspended = 0;    // connections suspended for a worker
  std::vector<std::thread> workers;

  std::atomic<std::size_t> answered{0};
  std::atomic<std::size_t> refused_budget{0};
  std::atomic<std::size_t> dropped_gone{0};

  Impl(Limits l, Handler h, ErrorBody e, HeadCheck c, Tls t)
      : limits(std::move(l)),
        handler(std::move(h)),
        error_body(std::move(e)),
        head_check(std::move(c)),
        tls(std::move(t)) {
    budget.limit = limits.budget;
    budget.reserve_for_small = limits.small_reserve;
  }

  // Queues `response` on the connection; its bytes are counted until the library frees them.
  MHD_Result send(MHD_Connection* connection, Response response) {
    auto* held = new Held{std::move(response.body), &budget};
    budget.force(held->body.size());
    MHD_Response* answer = MHD_create_response_from_buffer_with_free_callback_cls(
        held->body.size(), held->body.data(), &free_held, held);
    if (!answer) {
      free_held(held);
      return MHD_NO;
    }
    MHD_add_response_header(answer, MHD_HTTP_HEADER_CONTENT_TYPE, response.content_type.c_str());
    for (const auto& [name, value] : response.headers)
      MHD_add_response_header(answer, name.c_str(), value.c_str());
    const MHD_Result queued =
        MHD_queue_response(connection, static_cast<unsigned>(response.status), answer);
    MHD_destroy_response(answer);
    return queued;
  }

  MHD_Result refuse(Exchange& exchange, int status, const std::string& message,
                    std::vector<std::pair<std::string, std::string>> headers = {}) {
    exchange.phase = Exchange::Phase::refused;
    Response response;
    response.status = status;
    response.body = error_body(message);
    response.headers = std::move(headers);
    return send(exchange.connection, std::move(response));
  }

  bool client_certificate_verified(MHD_Connection* connection) const {
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!info || !info->tls_session) return false;
    auto session = static_cast<gnutls_session_t>(info->tls_session);
    unsigned status = 0;
    return gnutls_certificate_verify_peers2(session, &status) == GNUTLS_E_SUCCESS && status == 0;
  }

  // The head of a request has come: check it and reserve its body, or refuse it unread.
  MHD_Result begin(MHD_Connection* connection, const char* url, const char* method,
                   const char* version, void** context) {
    auto* exchange = new Exchange;
    exchange->connection = connection;
    *context = exchange;
    {
      std::lock_guard lock(mutex);
      ++in_flight;
    }
    Request& request = exchange->request;
    request.method = method ? method : "";
    request.path = url ? url : "";
    request.path = request.path.substr(0, request.path.find('?'));
    request.version = version ? version : "";
    MHD_get_connection_values(
        connection, MHD_HEADER_KIND,
        [](void* cls, MHD_ValueKind, const char* key, const char* value) {
          static_cast<Request*>(cls)->headers.emplace_back(key ? key : "", value ? value : "");
          return MHD_YES;
        },
        &request);
    // A connection's first request counts from the accept: a head sent slowly counts too.
    Clock::time_point start = Clock::now();
    if (const MHD_ConnectionInfo* info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        info && info->socket_context) {
      auto* state = static_cast<ConnectionState*>(info->socket_context);
      if (state->requests++ == 0) start = state->opened;
    }
    exchange->deadline = start + limits.request_deadline;

    if (!tls.client_ca.empty() && !client_certificate_verified(connection))
      return refuse(*exchange, 403, "a client certificate signed by the extender's CA is required");
    if (const std::size_t hosts = count_headers(request, "Host"); hosts != 1)
      return refuse(*exchange, 400, "expected one Host header, got " + std::to_string(hosts));
    if (request.header("Origin"))
      return refuse(*exchange, 403, "requests from web pages (with an Origin header) are refused");
    if (head_check) {
      Response refusal;
      if (!head_check(request, refusal)) {
        exchange->phase = Exchange::Phase::refused;
        return send(connection, std::move(refusal));
      }
    }
    const std::size_t lengths = count_headers(request, "Content-Length");
    if (lengths > 0 && request.header("Transfer-Encoding"))
      return refuse(*exchange, 400, "both Content-Length and Transfer-Encoding");
    std::size_t length = 0;
    if (lengths > 0) {
      const std::string& declared = *request.header("Content-Length");
      for (const auto& [name, value] : request.headers) {
        if (iequals(name, "Content-Length") && value != declared)
          return refuse(*exchange, 400, "conflicting Content-Length headers");
      }
      if (declared.empty() || declared.size() > 18 ||
          declared.find_first_not_of("0123456789") != std::string::npos)
        return refuse(*exchange, 400, "Content-Length is not a number of bytes");
      length = std::stoull(declared);
    }
    const bool has_body = length > 0 || request.header("Transfer-Encoding");
    if (has_body && !limits.content_type.empty()) {
      const std::string* type = request.header("Content-Type");
      std::string media = type ? type->substr(0, type->find(';')) : "";
      while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.pop_back();
      if (!iequals(media, limits.content_type))
        return refuse(*exchange, 415, "expected Content-Type: " + limits.content_type + ", got " +
                                          (type ? "\"" + type->substr(0, 64) + "\"" : std::string("none")));
    }
    if (length > limits.max_body) return refuse(*exchange, 413, "request body too large");
    if (Clock::now() > exchange->deadline) return refuse(*exchange, 408, deadline_message());
    if (length > 0 && !budget.take(length, length <= limits.small_body)) {
      refused_budget.fetch_add(1, std::memory_order_relaxed);
      return refuse(*exchange, 503, "the server holds as many request bytes as it may; retry",
                    {{"Retry-After", "1"}});
    }
    exchange->reserved = length;
    // While the body comes, a client silent for the request deadline is disconnected.
    MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT,
                              whole_seconds(limits.request_deadline));
    return MHD_YES;
  }

  std::string deadline_message() const {
    return "request not complete within " + std::to_string(limits.request_deadline.count()) +
           " ms";
  }

  // A piece of the body.
  MHD_Result take(Exchange& exchange, const char* data, std::size_t size) {
    std::string& body = exchange.request.body;
    if (Clock::now() > exchange.deadline) return refuse(exchange, 408, deadline_message());
    if (size > limits.max_body - body.size()) return refuse(exchange, 413, "request body too large");
    if (body.size() + size > exchange.reserved) {  // chunked: reserved as it comes
      const std::size_t more = body.size() + size - exchange.reserved;
      if (!budget.take(more, body.size() + size <= limits.small_body)) {
        refused_budget.fetch_add(1, std::memory_order_relaxed);
        return refuse(exchange, 503, "the server holds as many request bytes as it may; retry",
                      {{"Retry-After", "1"}});
      }
      exchange.reserved += more;
    }
    body.append(data, size);
    return MHD_YES;
  }

  // The whole body has come: a worker answers while the connection waits.
  MHD_Result dispatch(Exchange& exchange) {
    if (Clock::now() > exchange.deadline) return refuse(exchange, 408, deadline_message());
    if (exchange.request.body.size() <= limits.inline_body) {
      // Answered here, on the polling thread: for the usual small request the hand-off costs
      // more than the work, and libmicrohttpd 0.9.75 was seen to drop the answer to a resumed
      // connection whose client had half-closed (docs/extender.md#http).
      answer(exchange);
      exchange.phase = Exchange::Phase::refused;  // sent once
      return send(exchange.connection, std::move(exchange.response));
    }
    exchange.phase = Exchange::Phase::queued;
    MHD_suspend_connection(exchange.connection);
    {
      std::lock_guard lock(mutex);
      ++suspended;
      queue.push_back(&exchange);
    }
    changed.notify_all();
    return MHD_YES;
  }

  // Whether the client reset its connection (a half-close still wants its answer).
  static bool client_gone(MHD_Connection* connection) {
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!info) return true;
    char byte = 0;
    const ssize_t got = ::recv(info->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  }

  void answer(Exchange& exchange) {
    Response& response = exchange.response;
    if (client_gone(exchange.connection)) {
      dropped_gone.fetch_add(1, std::memory_order_relaxed);
      response.status = 503;
      response.body = error_body("the client has gone");
    } else {
      try {
        handler(exchange.request, response);
      } catch (const std::exception& error) {
        response = Response{};
        response.status = 500;
        response.body = error_body(std::string("internal error: ") + error.what());
      }
      answered.fetch_add(1, std::memory_order_relaxed);
      const std::size_t request_bytes = exchange.request.body.size() + 1024;
      const std::size_t bound = std::max<std::size_t>(64 << 10, limits.answer_factor * request_bytes);
      if (response.body.size() > bound) {
        response = Response{};
        response.status = 500;
        response.body = error_body("the answer would be larger than " +
                                   std::to_string(limits.answer_factor) +
                                   " times the request; refused");
      }
    }
    const std::size_t size = exchange.request.body.size();
    std::string().swap(exchange.request.body);
    budget.give(exchange.reserved);
    exchange.reserved = 0;
    if (size >= limits.trim_after) malloc_trim(0);
  }

  // The first queued request a worker may take: any small one; a large one only while no other
  // large one is being answered (parsing a body takes tens of times its size: one at a time
  // bounds that; small requests go on meanwhile).
  std::deque<Exchange*>::iterator next_eligible() {
    return std::find_if(queue.begin(), queue.end(), [&](const Exchange* exchange) {
      return exchange->request.body.size() <= limits.small_body || !large_busy;
    });
  }

  void work() {
    for (;;) {
      Exchange* exchange = nullptr;
      bool large = false;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return next_eligible() != queue.end() || (workers_done && queue.empty()); });
        const auto at = next_eligible();
        if (at == queue.end()) return;
        exchange = *at;
        queue.erase(at);
        large = exchange->request.body.size() > limits.small_body;
        if (large) large_busy = true;
      }
      answer(*exchange);
      {
        std::lock_guard lock(mutex);
        exchange->phase = Exchange::Phase::answered;
        --suspended;
        if (large) large_busy = false;
        MHD_resume_connection(exchange->connection);
      }
      changed.notify_all();
    }
  }

  void completed(MHD_Connection* connection, void** context) {
    auto* exchange = static_cast<Exchange*>(*context);
    if (!exchange) return;
    *context = nullptr;
    budget.give(exchange->reserved);
    delete exchange;
    MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT,
                              static_cast<unsigned>(limits.idle_timeout.count()));
    {
      std::lock_guard lock(mutex);
      --in_flight;
    }
    changed.notify_all();
  }

  static MHD_Result on_request(void* cls, MHD_Connection* connection, const char* url,
                               const char* method, const char* version, const char* data,
                               std::size_t* size, void** context) {
    auto* self = static_cast<Impl*>(cls);
    auto* exchange = static_cast<Exchange*>(*context);
    if (!exchange) return self->begin(connection, url, method, version, context);
    switch (exchange->phase) {
      case Exchange::Phase::reading:
        if (*size > 0) {
          const std::size_t got = *size;
          *size = 0;
          return self->take(*exchange, data, got);
        }
        return self->dispatch(*exchange);
      case Exchange::Phase::answered:
        exchange->phase = Exchange::Phase::refused;  // sent once
        return self->send(connection, std::move(exchange->response));
      case Exchange::Phase::queued:
      case Exchange::Phase::refused:
        *size = 0;  // the rest of a refused body is not kept
        return MHD_YES;
    }
    return MHD_NO;
  }

  static void on_completed(void* cls, MHD_Connection* connection, void** context,
                           MHD_RequestTerminationCode) {
    static_cast<Impl*>(cls)->completed(connection, context);
  }

  static void on_connection(void*, MHD_Connection*, void** socket_context,
                            MHD_ConnectionNotificationCode code) {
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      *socket_context = new ConnectionState;
    } else {
      delete static_cast<ConnectionState*>(*socket_context);
      *socket_context = nullptr;
    }
  }
};

Server::Server(Limits limits, Handler handler, ErrorBody error_body, HeadCheck head_check, Tls tls)
    : impl_(std::make_unique<Impl>(std::move(limits), std::move(handler), std::move(error_body),
                                   std::move(head_check), std::move(tls))) {}

Server::~Server() {
  stop();
  if (impl_->listen_fd >= 0) ::close(impl_->listen_fd);
}

int Server::bind(const std::string& host, int port) {
  if (impl_->listen_fd >= 0) return -1;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found) != 0)
    return -1;
  int fd = -1;
  for (addrinfo* at = found; at; at = at->ai_next) {
    fd = ::socket(at->ai_family, at->ai_socktype | SOCK_CLOEXEC, at->ai_protocol);
    if (fd < 0) continue;
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd, at->ai_addr, at->ai_addrlen) == 0 && ::listen(fd, impl_->limits.backlog) == 0)
      break;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(found);
  if (fd < 0) return -1;
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    ::close(fd);
    return -1;
  }
  impl_->listen_fd = fd;
  if (bound.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port);
  return ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
}

bool Server::run() {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.mutex);
    if (impl.stopping || impl.listen_fd < 0) return true;
  }
  std::vector<MHD_OptionItem> options = {
      {MHD_OPTION_LISTEN_SOCKET, impl.listen_fd, nullptr},
      {MHD_OPTION_THREAD_POOL_SIZE, static_cast<intptr_t>(impl.limits.io_threads), nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(impl.limits.max_connections), nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<intptr_t>(impl.limits.connection_buffer), nullptr},
      // Until a connection's first request is complete; then idle_timeout between requests.
      {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(whole_seconds(impl.limits.request_deadline)), nullptr},
      {MHD_OPTION_STRICT_FOR_CLIENT, 1, nullptr},
      {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Impl::on_completed), &impl},
      {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&Impl::on_connection), &impl},
  };
  // poll(2), level-triggered: with 0.9.75's edge-triggered epoll, fuzzing left a valid request
  // unanswered with every polling thread waiting in epoll_wait without a timeout.
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME;
  if (impl.tls.enabled()) {
    flags |= MHD_USE_TLS;
    options.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, impl.tls.certificate.data()});
    options.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, impl.tls.key.data()});
    if (!impl.tls.client_ca.empty())
      options.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, impl.tls.client_ca.data()});
  }
  options.push_back({MHD_OPTION_END, 0, nullptr});
  MHD_Daemon* daemon = MHD_start_daemon(flags, 0, nullptr, nullptr, &Impl::on_request, &impl,
                                        MHD_OPTION_ARRAY, options.data(), MHD_OPTION_END);
  if (!daemon) return false;
  for (std::size_t i = 0; i < impl.limits.threads; ++i) impl.workers.emplace_back([&impl] { impl.work(); });

  std::unique_lock lock(impl.mutex);
  impl.changed.wait(lock, [&] { return impl.stopping; });
  // Drain: no new connections; what is being read or answered gets limits.drain to finish.
  lock.unlock();
  const MHD_socket quiet = MHD_quiesce_daemon(daemon);
  lock.lock();
  impl.changed.wait_for(lock, impl.limits.drain, [&] { return impl.in_flight == 0; });
  impl.changed.wait(lock, [&] { return impl.suspended == 0; });  // workers always resume
  impl.workers_done = true;
  lock.unlock();
  impl.changed.notify_all();
  for (auto& worker : impl.workers) worker.join();
  impl.workers.clear();
  MHD_stop_daemon(daemon);
  if (quiet != MHD_INVALID_SOCKET) ::close(quiet);
  impl.listen_fd = -1;
  return true;
}

void Server::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->changed.notify_all();
}

Counters Server::counters() const {
  Counters out;
  out.answered = impl_->answered.load();
  out.refused_budget = impl_->refused_budget.load();
  out.dropped_gone = impl_->dropped_gone.load();
  std::lock_guard lock(impl_->budget.mutex);
  out.held_bytes = impl_->budget.held;
  out.held_peak = impl_->budget.peak;
  return out;
}

}  // namespace hetplan::extender::http
