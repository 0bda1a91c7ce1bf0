#include "server/load/url.hpp"

#include <cctype>
#include <cstring>
#include <netdb.h>
#include <strings.h>

namespace platoon::load {

bool parse_url(const std::string& text, Url& out, std::string& error) {
  out = Url{};
  out.text = text;
  const std::string scheme = "http://";
  if (text.size() >= 8 && strncasecmp(text.c_str(), "https://", 8) == 0) {
    error = "https is not supported (plain http:// only): " + text;
    return false;
  }
  if (text.size() < scheme.size() || strncasecmp(text.c_str(), scheme.c_str(), scheme.size()) != 0) {
    error = "URL must start with http://, got '" + text + "'";
    return false;
  }
  const size_t auth_begin = scheme.size();
  size_t auth_end = text.find_first_of("/?#", auth_begin);
  if (auth_end == std::string::npos) auth_end = text.size();
  std::string authority = text.substr(auth_begin, auth_end - auth_begin);
  if (authority.find('@') != std::string::npos) {
    error = "user info in URLs is not supported: " + text;
    return false;
  }
  std::string port_text;
  if (!authority.empty() && authority[0] == '[') {  // [v6]:port
    const size_t close = authority.find(']');
    if (close == std::string::npos) {
      error = "unterminated IPv6 literal in '" + text + "'";
      return false;
    }
    out.host = authority.substr(1, close - 1);
    const std::string rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') {
        error = "bad authority in '" + text + "'";
        return false;
      }
      port_text = rest.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string::npos) port_text = authority.substr(colon + 1);
  }
  if (out.host.empty()) {
    error = "URL has no host: '" + text + "'";
    return false;
  }
  for (char c : out.host)
    if (std::isspace(static_cast<unsigned char>(c))) {
      error = "bad host in '" + text + "'";
      return false;
    }
  if (authority.find(':') != std::string::npos && !authority.empty() && authority.back() == ':') {
    error = "empty port in '" + text + "'";
    return false;
  }
  if (!port_text.empty()) {
    long port = 0;
    for (char c : port_text) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || port > 65535) {
        error = "bad port '" + port_text + "' in '" + text + "'";
        return false;
      }
      port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) {
      error = "port out of range (1..65535) in '" + text + "'";
      return false;
    }
    out.port = static_cast<uint16_t>(port);
  }
  std::string target = text.substr(auth_end);
  if (const size_t hash = target.find('#'); hash != std::string::npos) target.resize(hash);
  if (target.empty() || target[0] == '?') target = "/" + target;
  for (char c : target)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      error = "URL path has spaces or control characters: '" + text + "'";
      return false;
    }
  out.target = target;
  out.host_header = text.substr(auth_begin, auth_end - auth_begin);
  return true;
}

bool resolve(const Url& url, Endpoint& out, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(url.port);
  const int rc = getaddrinfo(url.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res) {
    error = "cannot resolve host '" + url.host + "': " + gai_strerror(rc);
    return false;
  }
  std::memcpy(&out.addr, res->ai_addr, res->ai_addrlen);
  out.len = res->ai_addrlen;
  out.family = res->ai_family;
  freeaddrinfo(res);
  return true;
}

}  // namespace platoon::load
