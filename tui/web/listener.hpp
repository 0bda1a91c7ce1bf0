// A small HTTP server for `platoon exporter`, on libevent's evhttp (one thread, one event loop):
// evhttp parses requests and enforces the header-size limit and per-connection timeouts, so a
// slow or malformed client cannot hold the exporter up. The loop also runs a periodic tick and
// ends on SIGINT/SIGTERM.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tui/web/basic_auth.hpp"
#include "tui/web/tls.hpp"

namespace platoon::web {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};
// Called for GET and HEAD only (evhttp answers other methods with 405); path without the query.
using HttpHandler = std::function<HttpResponse(std::string_view path)>;

// "HOST:PORT", ":PORT" (every interface) or "[V6]:PORT" → host (empty for every interface) and
// port; false with a message on anything else.
bool parse_listen_address(const std::string& text, std::string& host, int& port, std::string& error);

// What the web configuration file asks of the listener (web_config.hpp): TLS on every
// connection, basic authentication on every request, headers on every response. Failed
// handshakes and refused credentials are logged, at most a line per kind every 10 s.
struct ListenerSecurity {
  std::unique_ptr<TlsContext> tls;     // null: plain HTTP
  std::unique_ptr<BasicAuth> auth;     // null: no authentication
  std::vector<std::pair<std::string, std::string>> headers;
};

class HttpListener {
 public:
  // Binds and listens on `address`. On failure: null, a one-line message, and `bad_address`
  // set when the address itself was malformed (rather than, say, the port being in use).
  static std::unique_ptr<HttpListener> open(const std::string& address, std::string& error, bool& bad_address,
                                            ListenerSecurity security = {});
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Where it listens, "127.0.0.1:9464" or "[::]:9464", with the port the kernel chose for port 0.
  std::string bound_address() const;

  // Runs the loop: requests go to `handler`; `tick` runs every tick_ms and ends the loop by
  // returning false. Returns the signal that ended it, or 0.
  int run(HttpHandler handler, int tick_ms, std::function<bool()> tick);

  // For the fuzzer (tests/fuzz/http_request_fuzz.cpp), which drives the same path one request
  // at a time: set the handler once, then turn the loop over without blocking.
  void serve(HttpHandler handler);
  void turn();

  struct Impl;

 private:
  explicit HttpListener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::web
