// Test support: a blocking HTTP/1.1 client over loopback with timeouts, for asserting what a
// server answers (status, body, whether it closed the connection).
#pragma once

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

#include "server/common/http_parser.hpp"

namespace platoon::test {

class Conn {
 public:
  explicit Conn(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) { close(fd_); fd_ = -1; }
    const int one = 1;
    if (fd_ >= 0) setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Conn() { if (fd_ >= 0) close(fd_); }
  Conn(Conn&& o) noexcept : fd_(o.fd_), pending_(std::move(o.pending_)) { o.fd_ = -1; }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  bool send_all(const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
      const ssize_t n = ::send(fd_, s.data() + done, s.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads one response (its bytes into raw when given); status 0 when the connection closed or
  // timed out first, or the response was malformed.
  http::Message read_response(int timeout_ms = 5000, std::string* raw = nullptr) {
    http::Parser p(http::Parser::Kind::response, 1 << 16, 1 << 24);
    if (raw) raw->clear();
    for (;;) {
      if (!pending_.empty()) {
        size_t used = 0;
        const auto st = p.parse(pending_.data(), pending_.size(), used);
        if (raw) raw->append(pending_, 0, used);
        pending_.erase(0, used);
        if (st == http::Parser::Status::message) return p.message();
        if (st == http::Parser::Status::error) return {};
      }
      pollfd pf{fd_, POLLIN, 0};
      if (poll(&pf, 1, timeout_ms) <= 0) return {};
      char buf[16384];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return {};
      pending_.append(buf, static_cast<size_t>(n));
    }
  }

  // True when the peer closes within the timeout (EOF or reset), having read and dropped data.
  bool closed_within(int timeout_ms) {
    for (;;) {
      pollfd pf{fd_, POLLIN, 0};
      if (poll(&pf, 1, timeout_ms) <= 0) return false;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
  }

  // True when the peer closes (EOF or reset) within the timeout with nothing more to read.
  bool closed_by_peer(int timeout_ms = 5000) {
    if (!pending_.empty()) return false;
    pollfd pf{fd_, POLLIN, 0};
    if (poll(&pf, 1, timeout_ms) <= 0) return false;
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

  http::Message get(const std::string& path) {
    if (!send_all("GET " + path + " HTTP/1.1\r\nHost: test\r\n\r\n")) return {};
    return read_response();
  }

 private:
  int fd_ = -1;
  std::string pending_;
};

}  // namespace platoon::test
