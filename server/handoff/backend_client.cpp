#include "server/handoff/backend_client.hpp"

#include <cerrno>

#include "runtime/runtime.hpp"
#include "server/common/http_parser.hpp"

namespace platoon::server {

BackendClient::BackendClient(const Config& cfg, int carriers)
    : cfg_(cfg), pools_(static_cast<size_t>(carriers) + 1) {}

BackendClient::Pool& BackendClient::pool_here() {
  const int c = rt::this_fiber::carrier_index();
  if (c < 0 || static_cast<size_t>(c) + 1 >= pools_.size()) return pools_.back();
  return pools_[static_cast<size_t>(c)];
}

rt::Socket BackendClient::take(Pool& p, bool& reused, int& err) {
  {
    std::unique_lock lk(p.mu);
    p.returned.wait(lk, [&] { return !p.idle.empty() || p.open < cfg_.max_backend_connections; });
    if (!p.idle.empty()) {
      rt::Socket s = std::move(p.idle.back());
      p.idle.pop_back();
      reused = true;
      err = 0;
      return s;
    }
    ++p.open;
    open_total_.fetch_add(1, std::memory_order_relaxed);
  }
  reused = false;
  rt::Socket s = rt::Socket::connect_tcp(cfg_.backend_host, cfg_.backend_port, cfg_.connect_timeout, err);
  if (!s.valid()) give_back(p, rt::Socket{});
  return s;
}

void BackendClient::give_back(Pool& p, rt::Socket s) {
  std::unique_lock lk(p.mu);
  if (s.valid()) p.idle.push_back(std::move(s));
  else {
    --p.open;
    open_total_.fetch_sub(1, std::memory_order_relaxed);
  }
  p.returned.notify_one();
}

// One request/response on `s`. False when the connection failed before a whole response.
bool BackendClient::call_once(rt::Socket& s, const std::string& request, BackendReply& out) {
  const rt::IoResult w = s.write_all(request.data(), request.size(), cfg_.backend_timeout);
  if (!w.ok()) {
    out.gateway_status = w.timed_out() ? 504 : 502;
    out.error = "backend write: " + w.message();
    return false;
  }
  http::Parser parser(http::Parser::Kind::response, 64 * 1024, 16 * 1024 * 1024);
  char buf[16384];
  const uint64_t deadline = rt::now_ns() + static_cast<uint64_t>(std::chrono::nanoseconds(cfg_.backend_timeout).count());
  for (;;) {
    const uint64_t now = rt::now_ns();
    const rt::Timeout left(now < deadline ? static_cast<int64_t>(deadline - now) : 0);
    const rt::IoResult r = s.read(buf, sizeof buf, left);
    if (!r.ok()) {
      out.gateway_status = r.timed_out() ? 504 : 502;
      out.error = "backend read: " + r.message();
      return false;
    }
    if (r.n == 0) {
      if (parser.finish() == http::Parser::Status::message) break;
      out.gateway_status = 502;
      out.error = "backend closed the connection";
      return false;
    }
    size_t used = 0;
    const auto st = parser.parse(buf, static_cast<size_t>(r.n), used);
    if (st == http::Parser::Status::message) break;
    if (st == http::Parser::Status::error) {
      out.gateway_status = 502;
      out.error = "backend sent a malformed response: " + parser.error();
      return false;
    }
  }
  out.status = parser.message().status;
  out.body = std::move(parser.message().body);
  out.gateway_status = 0;
  if (!parser.message().keep_alive) s.close();
  return true;
}

BackendReply BackendClient::get(const std::string& path) {
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + cfg_.backend_host + ":" +
                              std::to_string(cfg_.backend_port) + "\r\n\r\n";
  BackendReply out;
  // A pooled connection may have been closed by the backend while idle: then retry once on a
  // fresh one. A fresh connection's failure is final.
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = false;
    int err = 0;
    Pool& pool = pool_here();
    rt::Socket s = take(pool, reused, err);
    if (!s.valid()) {
      out.gateway_status = err == ETIMEDOUT ? 504 : 502;
      out.error = "backend connect: " + rt::errno_message(err);
      return out;
    }
    const bool ok = call_once(s, request, out);
    if (!ok) s.close();
    give_back(pool, std::move(s));
    if (ok || !reused || out.gateway_status == 504) return out;
  }
  return out;
}

}  // namespace platoon::server
