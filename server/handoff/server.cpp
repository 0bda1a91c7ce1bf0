#include "server/handoff/server.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <optional>

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
  // One backend pool per carrier plus one for threads that are not carriers.
  limit_ = derive_connection_limit(cfg_.max_backend_connections * static_cast<size_t>(rt_->carrier_count() + 1));
  if (cfg_.max_connections > 0) limit_.max_connections = cfg_.max_connections;
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
      // Out of descriptors or kernel memory: the pending connection stays in the backlog, so
      // retrying at once would spin; let closing connections free some first.
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM)
        rt::this_fiber::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    counters_.connections_accepted.fetch_add(1, std::memory_order_relaxed);
    // Counted open from accept (not from the fiber's start) so that a burst accepted before any
    // fiber runs still meets the cap. Past it: close at once, which costs no fiber and no stack.
    if (counters_.connections_open.fetch_add(1, std::memory_order_relaxed) >=
        static_cast<int64_t>(limit_.max_connections)) {
      counters_.connections_open.fetch_sub(1, std::memory_order_relaxed);
      counters_.connections_rejected.fetch_add(1, std::memory_order_relaxed);
      conn.close();
      continue;
    }
    // spawn throws std::bad_alloc when no stack can be mapped (vm.max_map_count, address space):
    // that connection is closed (the socket is owned by the failed task) and the loop goes on.
    try {
      rt_->spawn([this, s = std::make_shared<rt::Socket>(std::move(conn))]() mutable {
        run_connection(std::move(*s));
      }, rt::here());
    } catch (const std::exception& e) {
      counters_.connections_open.fetch_sub(1, std::memory_order_relaxed);
      counters_.connection_failures.note("cannot start a connection fiber", e.what());
    }
  }
}

// The connection fiber's body: whatever escapes serving (a handoff fiber that cannot get a stack,
// an allocation failing) ends this connection only. Only std::exception is caught: the runtime
// unwinds parked fibers at shutdown with an exception of its own that must pass.
void Server::run_connection(rt::Socket conn) {
  try {
    serve_connection(conn);
  } catch (const std::exception& e) {
    counters_.connection_failures.note("connection failed", e.what());
  }
  conn.close();
  counters_.connections_open.fetch_sub(1, std::memory_order_relaxed);
}

// One keep-alive connection: read, parse, answer, in order (pipelined requests too).
void Server::serve_connection(rt::Socket& conn) {
  using Clock = std::chrono::steady_clock;
  http::Parser parser(http::Parser::Kind::request, cfg_.max_header_bytes, 1 << 20);
  std::string in;
  std::string out;
  char buf[16384];
  bool open = true;
  // When the request being received got its first byte; empty between requests. The parser
  // consumes a partial head, so an empty buffer cannot tell an idle connection from a started
  // request: this does, and the request timeout runs from it to the message's end.
  std::optional<Clock::time_point> started;
  Clock::time_point last_read = Clock::now();
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
      // Bytes left over belong to the next (pipelined) request, which began with the last read.
      started.reset();
      if (off < in.size()) started = last_read;
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
    rt::Timeout timeout = cfg_.idle_timeout;
    if (started) {
      const auto left = *started + cfg_.request_timeout - Clock::now();
      if (left <= Clock::duration::zero()) {
        request_timed_out(conn);
        break;
      }
      timeout = std::chrono::duration_cast<rt::Timeout>(left);
    }
    const rt::IoResult r = conn.read(buf, sizeof buf, timeout);
    if (started && r.timed_out()) {
      request_timed_out(conn);
      break;
    }
    if (!r.ok() || r.n == 0) break;
    last_read = Clock::now();
    if (!started) started = last_read;
    in.append(buf, static_cast<size_t>(r.n));
  }
}

// A request that started but did not arrive in full within request_timeout: 408, then close.
void Server::request_timed_out(rt::Socket& conn) {
  counters_.request_timeouts.fetch_add(1, std::memory_order_relaxed);
  counters_.responses_4xx.fetch_add(1, std::memory_order_relaxed);
  const std::string r = response(408, "text/plain", error_body("request not received in time"), true);
  // The client is slow by definition: give the answer a short, bounded chance.
  conn.write_all(r.data(), r.size(), std::chrono::milliseconds(100));
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
  // carrier in carrier mode, on the worker pool in pool mode — while this one waits. What it
  // throws (memory running out) is carried back and rethrown here, so it ends this connection
  // (run_connection) instead of escaping a fiber, which would end the process. Only
  // std::exception: the runtime's shutdown unwinding of a parked fiber must pass.
  int status = 0;
  std::string body;
  std::string error;
  std::exception_ptr failed;
  rt_->spawn_joinable([&] {
    try {
      fetch_fruits(status, body, error);
    } catch (const std::exception&) {
      failed = std::current_exception();
    }
  }, rt::handoff()).join();
  if (failed) std::rethrow_exception(failed);
  if (status != 200) {
    counters_.backend_errors.fetch_add(1, std::memory_order_relaxed);
    return answer(status, "text/plain", error_body(error));
  }
  return answer(200, "application/json", body);
}

// The handoff fiber's work: ask the backend, check and re-encode its fruits.
void Server::fetch_fruits(int& status, std::string& body, std::string& error) {
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
}

}  // namespace platoon::server
