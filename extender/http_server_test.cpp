// The extender's HTTP server (http_server.cpp) on loopback with a small echo handler: what a
// client sends the way curl and Go's net/http send it (chunked bodies, Expect: 100-continue,
// pipelining, a half-close), what it refuses before reading a body (Host, Content-Type, Origin,
// a client certificate), and what slow, greedy or vanished clients cannot take from others.
#include "extender/http_server.hpp"
#include "extender/loopback_client.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace hetplan::extender::http {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using loopback::connect_loopback;
using loopback::send_all;
using loopback::whole_responses;

[[maybe_unused]] const bool kPipeIgnored = std::signal(SIGPIPE, SIG_IGN) != SIG_ERR;

std::string error_json(std::string_view message) {
  return "{\"Error\": \"" + std::string(message) + "\"}";
}

// A server answering every POST with its body, from a thread; stopped and joined at the end.
class Serving {
 public:
  explicit Serving(Limits limits = {}, Handler handler = {}, Tls tls = {})
      : server_(limits,
                handler ? handler : Handler([this](const Request& request, Response& response) {
                  ++calls;
                  response.body = request.body;
                }),
                error_json, {}, std::move(tls)) {
    port_ = server_.bind("127.0.0.1", 0);
    thread_ = std::thread([this] { started_ = server_.run(); });
  }
  ~Serving() {
    server_.stop();
    thread_.join();
  }
  Serving(const Serving&) = delete;
  Serving& operator=(const Serving&) = delete;

  int port() const { return port_; }
  Server& server() { return server_; }
  std::atomic<int> calls{0};

 private:
  Server server_;
  int port_ = -1;
  bool started_ = false;
  std::thread thread_;
};


// Reads until the connection closes, `responses` whole responses have come, or nothing comes
// for `quiet`. (A client that half-closes is answered, but the connection may stay open until
// the client closes it: the helper does not wait for the close.)
std::string read_for(int fd, std::chrono::milliseconds quiet = 2000ms, std::size_t responses = 1) {
  std::string out;
  char buffer[65536];
  for (;;) {
    if (whole_responses(out) >= responses) break;
    pollfd ready{fd, POLLIN, 0};
    if (poll(&ready, 1, static_cast<int>(quiet.count())) <= 0) break;
    const ssize_t got = recv(fd, buffer, sizeof buffer, 0);
    if (got <= 0) break;
    out.append(buffer, static_cast<std::size_t>(got));
  }
  return out;
}

// Sends `bytes` on a new connection, half-closes it when asked, and returns all that comes back.
std::string exchange(int port, const std::string& bytes, bool half_close = true,
                     std::size_t responses = 1) {
  const int fd = connect_loopback(port);
  if (fd < 0) return "";
  send_all(fd, bytes);
  if (half_close) shutdown(fd, SHUT_WR);
  std::string answer = read_for(fd, 2000ms, responses);
  close(fd);
  return answer;
}

std::string post(const std::string& body, const std::string& extra_headers = "",
                 const std::string& type = "application/json") {
  return "POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " + type + "\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string status_of(const std::string& answer) { return answer.substr(0, answer.find("\r\n")); }

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

TEST(HttpServer, ChunkedBodiesAreReadWhole) {
  Serving serving;
  const std::string answer = exchange(
      serving.port(),
      "POST /x HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  EXPECT_EQ(status_of(answer), "HTTP/1.1 200 OK");
  EXPECT_TRUE(answer.ends_with("\r\n\r\nhello world")) << answer;
}

// curl sends Expect: 100-continue before bodies over 1 MiB and waits up to 1 s for the interim
// answer; a body the server would refuse is never sent.
TEST(HttpServer, ExpectContinueIsAnsweredAndARefusedBodyIsNotAskedFor) {
  Limits limits;
  limits.max_body = 1024;
  Serving serving(limits);
  const int fd = connect_loopback(serving.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, "POST /x HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
                           "Expect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  pollfd ready{fd, POLLIN, 0};
  ASSERT_EQ(poll(&ready, 1, 500), 1) << "no interim answer within 0.5 s";
  char buffer[256];
  const ssize_t got = recv(fd, buffer, sizeof buffer, 0);
  ASSERT_GT(got, 0);
  EXPECT_EQ(std::string(buffer, static_cast<std::size_t>(got)), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(send_all(fd, "hello"));
  const std::string answer = read_for(fd, 1000ms);
  close(fd);
  EXPECT_EQ(status_of(answer), "HTTP/1.1 200 OK");
  EXPECT_TRUE(answer.ends_with("hello")) << answer;

  const std::string refused =
      exchange(serving.port(), "POST /x HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
                               "Expect: 100-continue\r\nContent-Length: 2000\r\n\r\n");
  EXPECT_EQ(status_of(refused), "HTTP/1.1 413 Content Too Large");
  EXPECT_EQ(refused.find("100 Continue"), std::string::npos);
}

// Three requests written at once, then a half-close: three answers, in order; also beside a
// connection that sent half a head and closed.
TEST(HttpServer, PipelinedRequestsThenAHalfCloseAreAllAnswered) {
  Serving serving;
  const int broken = connect_loopback(serving.port());
  send_all(broken, "POST /x HTTP/1.1\r\nHost: h\r\nContent-Type: a");
  shutdown(broken, SHUT_WR);
  const std::string answer =
      exchange(serving.port(), post("[1]") + post("[22]") + post("[333]"), true, 3);
  EXPECT_EQ(count_of(answer, "HTTP/1.1 200 OK"), 3u) << answer;
  const std::size_t one = answer.find("[1]");
  const std::size_t two = answer.find("[22]");
  const std::size_t three = answer.find("[333]");
  ASSERT_NE(three, std::string::npos);
  EXPECT_LT(one, two);
  EXPECT_LT(two, three);
  EXPECT_EQ(serving.calls, 3);
  close(broken);
}

TEST(HttpServer, AMissingOrRepeatedHostIsABadRequest) {
  Serving serving;
  EXPECT_EQ(status_of(exchange(serving.port(), "POST /x HTTP/1.1\r\nContent-Type: application/json\r\n"
                                               "Content-Length: 2\r\n\r\n{}")),
            "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_of(exchange(serving.port(), "POST /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n"
                                               "Content-Type: application/json\r\n"
                                               "Content-Length: 2\r\n\r\n{}")),
            "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(serving.calls, 0);
  EXPECT_EQ(status_of(exchange(serving.port(), post("{}"))), "HTTP/1.1 200 OK");
}

// What a web page can send across sites without a preflight (a form, text/plain), and anything
// with an Origin, never reaches the handler.
TEST(HttpServer, CrossSitePostsAreRefusedUnread) {
  Serving serving;
  EXPECT_EQ(status_of(exchange(serving.port(), post("{}", "", "text/plain"))),
            "HTTP/1.1 415 Unsupported Media Type");
  EXPECT_EQ(status_of(exchange(serving.port(), post("a=1", "", "application/x-www-form-urlencoded"))),
            "HTTP/1.1 415 Unsupported Media Type");
  EXPECT_EQ(status_of(exchange(serving.port(), post("{}", "Origin: https://evil.example\r\n"))),
            "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(serving.calls, 0);
  EXPECT_EQ(status_of(exchange(serving.port(), post("{}", "", "Application/JSON; charset=utf-8"))),
            "HTTP/1.1 200 OK");
}

// Go's HTTP client keeps an idle connection for 90 s; the server must keep it longer, or a
// request written into a connection the server just closed fails.
TEST(HttpServer, KeptAliveConnectionsOutliveGosIdleTimeout) {
  EXPECT_GT(Limits{}.idle_timeout, std::chrono::seconds(90));
  Serving serving;
  const std::string answer = exchange(serving.port(), post("{}"), false);
  EXPECT_EQ(answer.find("Connection: close"), std::string::npos) << answer;
}

// Clients that ask for large answers and never read them: each answer waits in the kernel and
// the server's buffers, no worker waits for them, and others are answered at once.
TEST(HttpServer, ClientsThatNeverReadHoldNoWorker) {
  Limits limits;
  limits.threads = 2;
  limits.answer_factor = 1 << 12;
  Serving serving(limits, [](const Request& request, Response& response) {
    response.body.assign(request.body.size() > 100 ? 4 << 20 : 2, 'x');
  });
  std::vector<int> stuck;
  for (int i = 0; i < 8; ++i) {
    const int fd = connect_loopback(serving.port());
    ASSERT_GE(fd, 0);
    const int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    ASSERT_TRUE(send_all(fd, post(std::string(1000, ' '))));
    stuck.push_back(fd);
  }
  std::this_thread::sleep_for(300ms);
  for (int i = 0; i < 20; ++i) {
    const auto start = Clock::now();
    EXPECT_EQ(status_of(exchange(serving.port(), post("{}"))), "HTTP/1.1 200 OK");
    EXPECT_LT(Clock::now() - start, 1s);
  }
  for (const int fd : stuck) close(fd);
}

// Uploads that stall holding most of the budget: the next large one is refused at once with
// 503 and Retry-After, small requests keep their reserve, and the bytes held stay in the budget.
TEST(HttpServer, StalledLargeUploadsCannotShutOutSmallRequests) {
  Limits limits;
  limits.max_body = 8 << 20;
  limits.budget = 4 * limits.max_body + limits.small_reserve;
  Serving serving(limits);
  const std::size_t large = 7 << 20;
  const std::string head = "POST /x HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
                           "Content-Length: " + std::to_string(large) + "\r\n\r\n";
  std::vector<int> stalled;
  int refused = 0;
  for (int i = 0; i < 6; ++i) {
    const int fd = connect_loopback(serving.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, head));
    pollfd ready{fd, POLLIN, 0};
    if (poll(&ready, 1, 300) == 1) {
      const std::string answer = read_for(fd, 300ms);
      EXPECT_EQ(status_of(answer), "HTTP/1.1 503 Service Unavailable");
      EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos);
      ++refused;
      close(fd);
      continue;
    }
    send_all(fd, std::string(1 << 20, ' '));  // a first MiB, then nothing
    stalled.push_back(fd);
  }
  EXPECT_EQ(stalled.size(), 4u);
  EXPECT_EQ(refused, 2);
  const std::string small(200 << 10, ' ');
  for (int i = 0; i < 10; ++i) {
    const auto start = Clock::now();
    EXPECT_EQ(status_of(exchange(serving.port(), post(small))), "HTTP/1.1 200 OK");
    EXPECT_LT(Clock::now() - start, 1s);
  }
  EXPECT_LE(serving.server().counters().held_peak, limits.budget);
  for (const int fd : stalled) close(fd);
}

// Requests whose client reset the connection while they waited for the one busy worker are
// dropped, not answered.
TEST(HttpServer, WorkForAClientThatHasGoneIsDropped) {
  Limits limits;
  limits.threads = 1;
  limits.inline_body = 0;  // every request to the one worker
  std::atomic<int> calls{0};
  Serving serving(limits, [&](const Request& request, Response& response) {
    ++calls;
    std::this_thread::sleep_for(400ms);
    response.body = request.body;
  });
  const int first = connect_loopback(serving.port());
  ASSERT_TRUE(send_all(first, post("[0]")));
  std::this_thread::sleep_for(100ms);  // the worker has it
  for (int i = 0; i < 5; ++i) {
    const int fd = connect_loopback(serving.port());
    ASSERT_TRUE(send_all(fd, post("[1]")));
    std::this_thread::sleep_for(20ms);  // read and queued
    const linger reset{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    close(fd);  // RST
  }
  EXPECT_EQ(status_of(read_for(first, 3000ms)), "HTTP/1.1 200 OK");
  close(first);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(serving.server().counters().dropped_gone, 5u);
}

// An answer far larger than its request (the amplification a request could buy) is refused.
TEST(HttpServer, AnAnswerBeyondItsBoundIsRefused) {
  Limits limits;
  limits.answer_factor = 8;
  Serving serving(limits, [](const Request& request, Response& response) {
    response.body.assign(request.body.size() * 100 + 100000, 'x');
  });
  const std::string answer = exchange(serving.port(), post(std::string(2000, ' ')));
  EXPECT_EQ(status_of(answer), "HTTP/1.1 500 Internal Server Error");
  EXPECT_NE(answer.find("larger than 8 times the request"), std::string::npos);
}

// stop() while a request's body is still coming: the request is answered, then run() returns.
TEST(HttpServer, StopDrainsTheRequestsInFlight) {
  auto serving = std::make_unique<Serving>();
  const int fd = connect_loopback(serving->port());
  ASSERT_GE(fd, 0);
  const std::string request = post("[\"in flight\"]");
  ASSERT_TRUE(send_all(fd, request.substr(0, request.size() - 4)));
  std::this_thread::sleep_for(100ms);
  std::thread stopping([&] { serving.reset(); });
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(send_all(fd, request.substr(request.size() - 4)));
  const std::string answer = read_for(fd, 3000ms);
  close(fd);
  stopping.join();
  EXPECT_EQ(status_of(answer), "HTTP/1.1 200 OK");
  EXPECT_TRUE(answer.ends_with("[\"in flight\"]"));
}

// ---- TLS with client certificates, against curl -----------------------------------------

class Certificates {
 public:
  Certificates() {
    folder_ = std::filesystem::temp_directory_path() /
              ("hetplan-tls-" + std::to_string(getpid()) + "-" + std::to_string(Clock::now().time_since_epoch().count()));
    std::filesystem::create_directories(folder_);
    const std::string f = folder_.string();
    // Two CAs; the server's certificate for 127.0.0.1; a client signed by the first CA and one
    // signed by the second.
    const std::string script =
        "set -e; cd '" + f + "'; "
        "for ca in ca other; do openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
        "-keyout $ca.key -out $ca.pem -days 2 -subj /CN=$ca >/dev/null 2>&1; done; "
        "sign() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $1.key "
        "-out $1.csr -subj /CN=$1 >/dev/null 2>&1; printf '%s\\n' \"$3\" > $1.ext; "
        "openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -days 2 "
        "-extfile $1.ext -out $1.pem >/dev/null 2>&1; }; "
        "sign server ca 'subjectAltName=IP:127.0.0.1'; "
        "sign client ca 'extendedKeyUsage=clientAuth'; "
        "sign stranger other 'extendedKeyUsage=clientAuth'";
    ok_ = std::system(("sh -c \"" + escape(script) + "\"").c_str()) == 0;
  }
  ~Certificates() {
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }
  bool ok() const { return ok_; }
  std::string path(const std::string& name) const { return (folder_ / name).string(); }
  std::string text(const std::string& name) const {
    std::ifstream in(path(name));
    std::stringstream out;
    out << in.rdbuf();
    return out.str();
  }

 private:
  static std::string escape(const std::string& text) {
    std::string out;
    for (const char c : text) {
      if (c == '"' || c == '\\' || c == '$' || c == '`') out += '\\';
      out += c;
    }
    return out;
  }
  std::filesystem::path folder_;
  bool ok_ = false;
};

// curl's HTTP status for a POST over TLS ("000" when no HTTP answer came).
std::string curl_status(int port, const Certificates& certs, const std::string& client) {
  std::string command = "curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert '" +
                        certs.path("ca.pem") + "'";
  if (!client.empty())
    command += " --cert '" + certs.path(client + ".pem") + "' --key '" + certs.path(client + ".key") + "'";
  command += " -H 'Content-Type: application/json' --data-binary '{}' https://127.0.0.1:" +
             std::to_string(port) + "/x 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return "";
  char buffer[16] = {};
  const std::size_t got = fread(buffer, 1, sizeof buffer - 1, pipe);
  pclose(pipe);
  return std::string(buffer, got);
}

// curl as users run it: a 2 MiB body (curl sends Expect: 100-continue above 1 MiB and would
// wait a second for the interim answer), a chunked upload, and two requests on one kept-alive
// connection.
TEST(HttpServerCurl, LargeChunkedAndKeptAliveRequestsAreServed) {
  Serving serving;
  const std::filesystem::path body = std::filesystem::temp_directory_path() /
                                     ("hetplan-curl-body-" + std::to_string(getpid()));
  {
    std::ofstream out(body);
    out << '"' << std::string(2 << 20, 'x') << '"';
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(serving.port()) + "/x";
  auto curl = [](const std::string& args) {
    FILE* pipe = popen(("curl -s -o /dev/null --max-time 10 " + args + " 2>/dev/null").c_str(), "r");
    std::string out;
    char buffer[256];
    for (std::size_t n; pipe && (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
    if (pipe) pclose(pipe);
    return out;
  };
  const std::string json = "-H 'Content-Type: application/json' ";
  const auto start = Clock::now();
  EXPECT_EQ(curl("-w '%{http_code} %{size_upload}' " + json + "--data-binary @'" + body.string() + "' " + url),
            "200 2097154");
  EXPECT_LT(Clock::now() - start, 900ms) << "curl waited for 100 Continue";
  EXPECT_EQ(curl("-w '%{http_code}' " + json + "-H 'Transfer-Encoding: chunked' --data-binary '[1, 2]' " + url),
            "200");
  const std::string each = "-w '%{http_code} %{num_connects} ' " + json;
  EXPECT_EQ(curl(each + "--data-binary '[1]' " + url + " --next -s -o /dev/null " + each +
                 "--data-binary '[2]' " + url),
            "200 1 200 0 ");
  EXPECT_EQ(serving.calls, 4);
  std::filesystem::remove(body);
}

TEST(HttpServerTls, OnlyClientsWithACertificateTheCaSignedReachTheHandler) {
  const Certificates certs;
  ASSERT_TRUE(certs.ok()) << "openssl could not make the test's certificates";
  Tls tls{certs.text("server.pem"), certs.text("server.key"), certs.text("ca.pem")};
  Serving serving({}, {}, tls);
  EXPECT_EQ(curl_status(serving.port(), certs, "client"), "200");
  EXPECT_EQ(serving.calls, 1);
  EXPECT_EQ(curl_status(serving.port(), certs, ""), "403");
  EXPECT_EQ(curl_status(serving.port(), certs, "stranger"), "403");
  EXPECT_EQ(serving.calls, 1);
  // Plain HTTP to the TLS port gets no answer.
  EXPECT_EQ(status_of(exchange(serving.port(), post("{}"))).rfind("HTTP/1.1 200", 0), std::string::npos);
  EXPECT_EQ(serving.calls, 1);
}

TEST(HttpServerTls, WithoutAClientCaAnyTlsClientIsServed) {
  const Certificates certs;
  ASSERT_TRUE(certs.ok());
  Serving serving({}, {}, Tls{certs.text("server.pem"), certs.text("server.key"), ""});
  EXPECT_EQ(curl_status(serving.port(), certs, ""), "200");
}

TEST(HttpServerTls, TextsThatAreNotPemStopTheServerFromStarting) {
  Server server({}, [](const Request&, Response&) {}, error_json, {},
                Tls{"not a certificate", "not a key", ""});
  ASSERT_GT(server.bind("127.0.0.1", 0), 0);
  EXPECT_FALSE(server.run());
}

}  // namespace
}  // namespace hetplan::extender::http
