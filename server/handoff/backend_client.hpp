// The blocking HTTP call to the backend, from a fiber, over keep-alive connections pooled per
// carrier (pool mode: one shared pool, since its fibers have no carrier).
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "runtime/io.hpp"
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
  size_t idle_connections() const;

 private:
  struct Pool {
    std::mutex mu;  // held for a push or pop only, never across I/O
    std::vector<rt::Socket> idle;
  };
  Pool& pool_here();
  rt::Socket take(Pool& p, bool& reused, int& err);
  void give_back(Pool& p, rt::Socket s);
  bool call_once(rt::Socket& s, const std::string& request, BackendReply& out);

  const Config& cfg_;
  std::vector<Pool> pools_;  // one per carrier, plus a shared one at the end
};

}  // namespace platoon::server
