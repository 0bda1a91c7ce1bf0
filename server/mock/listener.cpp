#include "server/mock/listener.hpp"

#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace platoon::mock {

namespace {
int open_one(const sockaddr_storage& addr, socklen_t len, std::string& error) {
  const int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
    error = std::string("SO_REUSEPORT: ") + std::strerror(errno);
    close(fd);
    return -1;
  }
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    error = std::string("bind: ") + std::strerror(errno);
    close(fd);
    return -1;
  }
  if (listen(fd, SOMAXCONN) != 0) {
    error = std::string("listen: ") + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

void set_port(sockaddr_storage& addr, uint16_t port) {
  if (addr.ss_family == AF_INET6)
    reinterpret_cast<sockaddr_in6&>(addr).sin6_port = htons(port);
  else
    reinterpret_cast<sockaddr_in&>(addr).sin_port = htons(port);
}
}  // namespace

bool open_listeners(const std::string& host, uint16_t port, int count, Listeners& out, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0) {
    error = "cannot resolve --host '" + host + "': " + gai_strerror(rc);
    return false;
  }
  sockaddr_storage addr{};
  const socklen_t len = res->ai_addrlen;
  std::memcpy(&addr, res->ai_addr, len);
  freeaddrinfo(res);

  out = Listeners{};
  set_port(addr, port);
  for (int i = 0; i < count; ++i) {
    const int fd = open_one(addr, len, error);
    if (fd < 0) {
      error = host + ":" + std::to_string(port) + ": " + error;
      for (int f : out.fds) close(f);
      out.fds.clear();
      return false;
    }
    if (i == 0) {
      // Port 0: the first bind picks the port, the others join it.
      sockaddr_storage bound{};
      socklen_t blen = sizeof bound;
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen);
      port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                               : reinterpret_cast<sockaddr_in&>(bound).sin_port);
      set_port(addr, port);
    }
    out.fds.push_back(fd);
  }
  out.port = port;
  return true;
}

}  // namespace platoon::mock
