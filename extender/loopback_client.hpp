// Test support for the extender's tests and fuzz target: a raw TCP client on loopback, for
// requests an HTTP client library would not send (half heads, pipelining, resets).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace hetplan::extender::loopback {

// A socket connected to 127.0.0.1:port, or -1.
inline int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Writes all of `bytes`; false when the peer stops taking them (it answered and closed).
inline bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// How many whole HTTP responses (head and Content-Length bytes of body) `text` holds; interim
// 100 Continue answers are not counted.
inline std::size_t whole_responses(const std::string& text) {
  std::size_t count = 0;
  for (std::size_t at = 0;;) {
    const std::size_t head = text.find("\r\n\r\n", at);
    if (head == std::string::npos) return count;
    std::string lower = text.substr(at, head - at);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::size_t field = lower.find("\r\ncontent-length:");
    if (lower.rfind("http/1.1 100 ", 0) == 0) {
      at = head + 4;
      continue;
    }
    if (field == std::string::npos) return count;
    const std::size_t end = head + 4 + std::strtoull(lower.c_str() + field + 17, nullptr, 10);
    if (text.size() < end) return count;
    ++count;
    at = end;
  }
}

}  // namespace hetplan::extender::loopback
