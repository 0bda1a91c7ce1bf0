#include "server/load/url.hpp"

#include <cctype>
#include <cstring>
#include <netdb.h>
#include <strings.h>

namespace platoon::load {

namespace {

// http:// in any case; https:// gets its own message, it is the likely mistake.
bool check_scheme(const std::string& text, const std::string& scheme, std::string& error) {
  if (text.size() >= 8 && strncasecmp(text.c_str(), "https://", 8) == 0) {
    error = "https is not supported (plain http:// only): " + text;
    return false;
  }
  if (text.size() < scheme.size() || strncasecmp(text.c_str(), scheme.c_str(), scheme.size()) != 0) {
    error = "URL must start with http://, got '" + text + "'";
    return false;
  }
  return true;
}

// "host", "host:port" or "[v6]:port" → out.host and the port's text (empty when absent).
bool split_authority(const std::string& text, const std::string& authority, Url& out,
                     std::string& port_text, std::string& error) {
  if (authority.find('@') != std::string::npos) {
    error = "user info in URLs is not supported: " + text;
    return false;
  }
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
  return true;
}

bool check_host(const std::string& text, const std::string& authority, const Url& out, std::string& error) {
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
  return true;
}

// Decimal digits only, 1..65535; out.port keeps its default when port_text is empty.
bool parse_port(const std::string& text, const std::string& port_text, Url& out, std::string& error) {
  if (port_text.empty()) return true;
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
  return true;
}

// The request target after the authority: the fragment dropped, at least "/".
bool parse_target(const std::string& text, size_t auth_end, Url& out, std::string& error) {
  std::string target = text.substr(auth_end);
  if (const size_t hash = target.find('#'); hash != std::string::npos) target.resize(hash);
  if (target.empty() || target[0] == '?') target = "/" + target;
  for (char c : target)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      error = "URL path has spaces or control characters: '" + text + "'";
      return false;
    }
  out.target = target;
  return true;
}

}  // namespace

bool parse_url(const std::string& text, Url& out, std::string& error) {
  out = Url{};
  out.text = text;
  const std::string scheme = "http://";
  if (!check_scheme(text, scheme, error)) return false;
  const size_t auth_begin = scheme.size();
  size_t auth_end = text.find_first_of("/?#", auth_begin);
  if (auth_end == std::string::npos) auth_end = text.size();
  const std::string authority = text.substr(auth_begin, auth_end - auth_begin);
  std::string port_text;
  if (!split_authority(text, authority, out, port_text, error) || !check_host(text, authority, out, error) ||
      !parse_port(text, port_text, out, error) || !parse_target(text, auth_end, out, error))
    return false;
  out.host_header = authority;
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
