// Connection failures (a fiber that cannot get a stack, an exception escaping a connection) are
// counted always but written to stderr at most once a second: under the pressure that causes
// them, a line per failure would add a write per connection to the overload.
#pragma once

#include <atomic>
#include <cstdint>

namespace platoon::server {

class FailureLog {
 public:
  // Counts one failure; logs it with the number left unlogged since the previous line.
  void note(const char* what, const char* why);
  uint64_t total() const { return total_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> total_{0};
  std::atomic<uint64_t> unlogged_{0};
  std::atomic<int64_t> next_log_ns_{0};
};

}  // namespace platoon::server
