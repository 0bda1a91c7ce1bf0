// http://host[:port][/path][?query] → host, port, request target; and its resolution.
#pragma once

#include <cstdint>
#include <string>
#include <sys/socket.h>

namespace platoon::load {

struct Url {
  std::string text;    // as given
  std::string host;    // without brackets for IPv6 literals
  uint16_t port = 80;
  std::string target;  // path and query, at least "/"
  std::string host_header;  // "host" or "host:port", as wrk sends it
};

// False, with a one-line reason in `error`, when `text` is not an http:// URL we can load.
bool parse_url(const std::string& text, Url& out, std::string& error);

struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
};
// getaddrinfo on host and port; the first stream address.
bool resolve(const Url& url, Endpoint& out, std::string& error);

}  // namespace platoon::load
