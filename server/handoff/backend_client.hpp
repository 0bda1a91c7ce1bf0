// The blocking HTTP call to the backend, from a fiber, over keep-alive connections pooled per
// carrier (pool mode: one shared pool, since its fibers have no carrier).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/io.hpp"
#include "runtime/sync.hpp"
#include "server/handoff/config.hpp"

namespace platoon::server {

struct BackendReply {
  int status = 0;          // the backend's status, or 0 when the call failed
  std::string body;
  int gateway_status = 0;  // 502 or 504 when the call failed
  std::string error;
};

class BackendClient {
 public:
  BackendClient(const Config& cfg, int carriers);
  BackendReply get(const std::string& path);
  int64_t open_connections() const { return open_total_.load(std::memory_order_relaxed); }

 private:
  // At most `max_backend_connections` connections per pool, idle or busy; a fiber that finds
  // none waits for one to come back (fiber mutex and condition: waiting parks the fiber).
  struct Pool {
    rt::Mutex mu;
    rt::CondVar returned;
    std::vector<rt::Socket> idle;
    size_t open = 0;
  };
  Pool& pool_here();
  rt::Socket take(Pool& p, bool& reused, int& err);
  void give_back(Pool& p, rt::Socket s);  // an invalid socket: it was closed
  bool call_once(rt::Socket& s, const std::string& request, BackendReply& out);

  const Config& cfg_;
  std::vector<Pool> pools_;  // one per carrier, plus a shared one at the end
  std::atomic<int64_t> open_total_{0};
};

}  // namespace platoon::server
