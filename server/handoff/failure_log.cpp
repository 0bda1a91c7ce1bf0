#include "server/handoff/failure_log.hpp"

#include <chrono>
#include <cstdio>

namespace platoon::server {

void FailureLog::note(const char* what, const char* why) {
  total_.fetch_add(1, std::memory_order_relaxed);
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
  int64_t next = next_log_ns_.load(std::memory_order_relaxed);
  // One thread wins the right to log this second; the others only count.
  if (now < next || !next_log_ns_.compare_exchange_strong(next, now + 1'000'000'000, std::memory_order_relaxed)) {
    unlogged_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t more = unlogged_.exchange(0, std::memory_order_relaxed);
  std::fprintf(stderr, "platoon-server: %s: %s; connection closed, serving on (%llu more since the last report)\n",
               what, why, static_cast<unsigned long long>(more));
}

}  // namespace platoon::server
