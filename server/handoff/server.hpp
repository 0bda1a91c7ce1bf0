// The handoff server: listeners on every carrier (or event loop), a fiber per connection that
// reads requests and hands each GET /fruits off to a fiber that calls the backend.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "runtime/runtime.hpp"
#include "server/handoff/backend_client.hpp"
#include "server/handoff/config.hpp"
#include "server/handoff/failure_log.hpp"
#include "server/handoff/limits.hpp"

namespace platoon::server {

struct ServerCounters {
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<int64_t> connections_open{0};
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> responses_2xx{0}, responses_4xx{0}, responses_5xx{0};
  std::atomic<uint64_t> backend_errors{0};
  std::atomic<uint64_t> connections_rejected{0};  // past max_connections: accepted and closed at once
  std::atomic<uint64_t> request_timeouts{0};      // a started request not complete in request_timeout
  FailureLog connection_failures;                 // no fiber stack, or an exception escaped
};

class Server {
 public:
  explicit Server(Config cfg);
  // Binds every listener; false (with `error`) when it cannot.
  bool start(std::string& error);
  uint16_t port() const { return port_; }
  rt::Runtime& runtime() { return *rt_; }
  const ServerCounters& counters() const { return counters_; }
  // The connection cap in force (from the config, or derived from the fd and mapping limits).
  const ConnectionLimit& connection_limit() const { return limit_; }
  void stop();

 private:
  void accept_loop(rt::Socket listener);
  void run_connection(rt::Socket conn);
  void serve_connection(rt::Socket& conn);
  void request_timed_out(rt::Socket& conn);
  std::string handle(const std::string& method, const std::string& url, bool& close_after);
  void fetch_fruits(int& status, std::string& body, std::string& error);

  Config cfg_;
  std::unique_ptr<rt::Runtime> rt_;
  std::unique_ptr<BackendClient> backend_;
  ServerCounters counters_;
  ConnectionLimit limit_;
  uint16_t port_ = 0;
};

}  // namespace platoon::server
