// libFuzzer target: the bytes a client sends the exporter, through the listener's own path: a
// TCP connection to the bound port, evhttp's parser, the connection tracker, basic auth (a
// bcrypt hash of cost 4, so that distinct credentials stay cheap), the configured headers and a
// handler. Each input is one connection: written, half-closed, and the loop turned until the
// exporter has answered and closed it or a short budget runs out. Crashes, leaks and sanitizer
// reports are what it looks for; the listener's own limits (header size, deadline, connection
// cap) keep every input bounded. A 200 reply to an input without the right credentials aborts:
// the check was bypassed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <map>
#include <memory>
#include <string>

#include "tui/web/listener.hpp"

namespace {

using platoon::web::HttpListener;

HttpListener& listener(int& port) {
  static int bound_port = 0;
  static std::unique_ptr<HttpListener> l = [] {
    std::string error;
    bool bad = false;
    platoon::web::ListenerSecurity sec;
    sec.auth = std::make_unique<platoon::web::BasicAuth>(
        std::map<std::string, std::string>{{"prometheus", "$2b$04$arvrtATDehAdS2zvZoljXO7/YyWqxAc6PJmPeXGrlwE5vMhmmg9BG"}});
    sec.headers = {{"X-Content-Type-Options", "nosniff"}};
    auto made = HttpListener::open("127.0.0.1:0", error, bad, std::move(sec));
    if (!made) {
      std::fprintf(stderr, "http_request_fuzz: %s\n", error.c_str());
      std::abort();
    }
    made->serve([](std::string_view path) {
      return platoon::web::HttpResponse{path == "/metrics" ? 200 : 404, "text/plain", std::string(path) + "\n"};
    });
    const std::string a = made->bound_address();
    bound_port = std::atoi(a.substr(a.rfind(':') + 1).c_str());
    return made;
  }();
  port = bound_port;
  return *l;
}

// The only Authorization that passes: "prometheus:fuzz" in base64.
bool has_credentials(const uint8_t* data, size_t size) {
  static const std::string token = "cHJvbWV0aGV1czpmdXp6";
  return std::string_view(reinterpret_cast<const char*>(data), size).find(token) != std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int port = 0;
  HttpListener& l = listener(port);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  // Closed with a reset, not into TIME_WAIT: ten minutes of inputs would use up the ports.
  const linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);  // EINPROGRESS: the loop accepts it
  size_t sent = 0;
  bool closed = false;
  char sink[4096];
  // At most ~200 turns: enough for the exporter to read, answer and close; a request it is
  // still waiting on is dropped with the socket.
  for (int turn = 0; turn < 200 && !closed; ++turn) {
    l.turn();
    if (sent < size) {
      const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
      if (sent == size) shutdown(fd, SHUT_WR);
    } else if (size == 0 && turn == 1) {
      shutdown(fd, SHUT_WR);
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, turn < 20 ? 0 : 1) > 0) {
      const ssize_t n = recv(fd, sink, sizeof sink, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN)) closed = true;
      // A 200 needs the right credentials in the input: anything else is a way around the check.
      if (n >= 12 && std::memcmp(sink, "HTTP/1.1 200", 12) == 0 && !has_credentials(data, size)) std::abort();
    }
  }
  close(fd);
  for (int i = 0; i < 4; ++i) l.turn();  // the exporter sees the close and frees the connection
  return 0;
}
