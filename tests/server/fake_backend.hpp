// Test support: a backend whose behaviour a test switches at run time, to drive the handoff
// server's fault paths (502, 504) and its recovery. A thread per connection: fault tests use
// few connections.
#pragma once

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "server/common/fruits.hpp"

namespace platoon::test {

class FakeBackend {
 public:
  enum class Mode { ok, slow, close, garbage, status500 };

  FakeBackend() {
    lfd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(lfd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(lfd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    listen(lfd_, 1024);
    socklen_t len = sizeof sa;
    getsockname(lfd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~FakeBackend() {
    stop_ = true;
    shutdown(lfd_, SHUT_RDWR);
    acceptor_.join();
    {
      std::lock_guard lk(mu_);
      for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : conns_) t.join();
    close(lfd_);
  }
  int port() const { return port_; }
  void set(Mode m, int delay_ms = 0) { mode_ = m; delay_ms_ = delay_ms; }
  int requests() const { return requests_; }

 private:
  void accept_loop() {
    while (!stop_) {
      const int fd = accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard lk(mu_);
      fds_.push_back(fd);
      conns_.emplace_back([this, fd] { serve(fd); });
    }
  }
  void serve(int fd) {
    std::string in;
    char buf[4096];
    while (!stop_) {
      const auto end = in.find("\r\n\r\n");
      if (end == std::string::npos) {
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
        continue;
      }
      in.erase(0, end + 4);
      ++requests_;
      const Mode m = mode_;
      if (m == Mode::close) break;
      if (m == Mode::slow) {
        for (int waited = 0; waited < delay_ms_ && !stop_; waited += 10)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      std::string resp;
      if (m == Mode::garbage) {
        resp = "THIS IS NOT HTTP\r\n\r\n";
      } else {
        const std::string& body = m == Mode::status500 ? std::string("oops") : fruits::backend_body();
        resp = std::string(m == Mode::status500 ? "HTTP/1.1 500 Internal Server Error" : "HTTP/1.1 200 OK") +
               "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
               "\r\n\r\n" + body;
      }
      if (send(fd, resp.data(), resp.size(), MSG_NOSIGNAL) < 0) break;
      if (m == Mode::garbage) break;
    }
    shutdown(fd, SHUT_RDWR);
    std::lock_guard lk(mu_);
    for (auto& f : fds_) if (f == fd) f = -1;
    close(fd);
  }

  int lfd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<Mode> mode_{Mode::ok};
  std::atomic<int> delay_ms_{0};
  std::atomic<int> requests_{0};
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> conns_;
  std::thread acceptor_;
};

}  // namespace platoon::test
