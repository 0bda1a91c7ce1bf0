#include "server/handoff/server.hpp"

#include <cerrno>
#include <cstring>

#include "runtime/sync.hpp"
#include "server/common/fruits.hpp"
#include "server/common/http_parser.hpp"
#include "server/handoff/metrics.hpp"

namespace platoon::server {

namespace {
const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 502: return "Bad Gateway";
    case 504: return "Gateway Timeout";
    default: return "Error";
  }
}

std::string response(int status, const std::string& content_type, const std::string& body, bool close) {
  std::string r;
  r.reserve(128 + body.size());
  r += "HTTP/1.1 ";
  r += std::to_string(status);
  r += ' ';
  r += reason(status);
  r += "\r\nContent-Type: ";
  r += content_type;
  r += "\r\nContent-Length: ";
  r += std::to_string(body.size());
  r += close ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n";
  r += body;
  return r;
}

std::string error_body(const std::string& message) { return message + "\n"; }
}  // namespace

Server::Server(Config cfg) : cfg_(std::move(cfg)) {}

bool Server::start(std::string& error) {
  rt_ = std::make_unique<rt::Runtime>(cfg_.runtime);
  backend_ = std::make_unique<BackendClient>(cfg_, rt_->carrier_count());
  // Each carrier (event loop in pool mode) owns a SO_REUSEPORT listener, created on that
  // carrier so that its loop (or the master poller) watches it. Port 0: the first listener
  // picks a port and the others join it.
  for (int i = 0; i < rt_->carrier_count(); ++i) {
    std::atomic<int> err{-1};
    std::atomic<uint16_t> bound{0};
    rt::JoinHandle h = rt_->spawn_joinable(
        [&, i] {
          int e = 0;
          rt::Socket l = rt::Socket::listen_tcp(cfg_.host, i == 0 ? cfg_.port : port_, true, e);
          if (l.valid()) bound = l.local_port();
          err = e;
          if (!l.valid()) return;
          rt_->spawn([this, s = std::make_shared<rt::Socket>(std::move(l))]() mutable {
            accept_loop(std::move(*s));
          }, rt::here());
        },
        rt::on_carrier(i));
    h.join();
    if (err != 0) {
      error = "cannot listen on " + cfg_.host + ":" + std::to_string(i == 0 ? cfg_.port : port_) + ": " +
              std::strerror(err);
      return false;
    }
    if (i == 0) port_ = bound;
  }
  return true;
}

void Server::stop() {
  if (rt_) rt_->shutdown();
}

void Server::accept_loop(rt::Socket listener) {
  for (;;) {
    int err = 0;
    rt::Socket conn = listener.accept(rt::kNoTimeout, err);
    if (!conn.valid()) {
      if (err == EMFILE || err == ENFILE) rt::this_fiber::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    counters_.connections_accepted.fetch_add(1, std::memory_order_relaxed);
    rt_->spawn([this, s = std::make_shared<rt::Socket>(std::move(conn))]() mutable {
      serve_connection(std::move(*s));
    }, rt::here());
  }
}

// One keep-alive connection: read, parse, answer, in order (pipelined requests too).
void Server::serve_connection(rt::Socket conn) {
  counters_.connections_open.fetch_add(1, std::memory_order_relaxed);
  http::Parser parser(http::Parser::Kind::request, cfg_.max_header_bytes, 1 << 20);
  std::string in;
  std::string out;
  char buf[16384];
  bool open = true;
  while (open) {
    // Answer every complete request already buffered.
    size_t off = 0;
    for (;;) {
      size_t used = 0;
      const auto st = parser.parse(in.data() + off, in.size() - off, used);
      off += used;
      if (st == http::Parser::Status::need_more) break;
      if (st == http::Parser::Status::error) {
        const int status = parser.error_status();
        out += response(status, "text/plain", error_body(parser.error()), true);
        counters_.responses_4xx.fetch_add(1, std::memory_order_relaxed);
        open = false;
        break;
      }
      counters_.requests.fetch_add(1, std::memory_order_relaxed);
      bool close_after = !parser.message().keep_alive;
      out += handle(parser.message().method, parser.message().url, close_after);
      if (close_after) { open = false; break; }
    }
    in.erase(0, off);
    if (!out.empty()) {
      if (!conn.write_all(out.data(), out.size(), cfg_.request_timeout).ok()) break;
      out.clear();
    }
    if (!open) break;
    // Idle between requests; a request that has started must arrive within request_timeout.
    const auto timeout = in.empty() ? cfg_.idle_timeout : cfg_.request_timeout;
    const rt::IoResult r = conn.read(buf, sizeof buf, timeout);
    if (!r.ok() || r.n == 0) break;
    in.append(buf, static_cast<size_t>(r.n));
  }
  conn.close();
  counters_.connections_open.fetch_sub(1, std::memory_order_relaxed);
}

std::string Server::handle(const std::string& method, const std::string& url, bool& close_after) {
  auto answer = [&](int status, const std::string& type, const std::string& body) {
    auto& c = status < 300 ? counters_.responses_2xx : status < 500 ? counters_.responses_4xx : counters_.responses_5xx;
    c.fetch_add(1, std::memory_order_relaxed);
    return response(status, type, body, close_after);
  };
  const std::string path = url.substr(0, url.find('?'));
  if (method != "GET") return answer(405, "text/plain", error_body("only GET is served"));
  if (path == "/metrics") return answer(200, "text/plain; version=0.0.4", prometheus_metrics(*rt_, counters_, backend_->open_connections()));
  if (path != "/fruits") return answer(404, "text/plain", error_body("not found: " + path));

  // The handoff: the blocking backend call and the JSON work run in their own fiber — on this
  // carrier in carrier mode, on the worker pool in pool mode — while this one waits.
  int status = 0;
  std::string body;
  std::string error;
  rt_->spawn_joinable([&] {
    BackendReply reply = backend_->get("/fruits");
    if (reply.gateway_status) {
      status = reply.gateway_status;
      error = reply.error;
      return;
    }
    if (reply.status != 200) {
      status = 502;
      error = "backend answered " + std::to_string(reply.status);
      return;
    }
    if (cfg_.passthrough) {
      status = 200;
      body = std::move(reply.body);
      return;
    }
    std::vector<fruits::Fruit> parsed;
    if (!fruits::parse(reply.body, parsed, error)) {
      status = 502;
      error = "backend body: " + error;
      return;
    }
    status = 200;
    body = fruits::compact_json(parsed);
  }, rt::handoff()).join();
  if (status != 200) {
    counters_.backend_errors.fetch_add(1, std::memory_order_relaxed);
    return answer(status, "text/plain", error_body(error));
  }
  return answer(200, "application/json", body);
}

}  // namespace platoon::server
