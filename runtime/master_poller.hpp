// The master poller: one thread with its own epoll (libevent base) that watches fibers' fds and
// hands readiness to their home carriers through the carriers' wakeups (Loom's Master-Poller).
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <sys/types.h>
#include <thread>

#include "runtime/carrier.hpp"

namespace platoon::rt {

class MasterPoller {
 public:
  explicit MasterPoller(std::optional<int> nice);
  ~MasterPoller();
  void start();
  void stop();
  event_base* base() const { return base_.get(); }
  std::atomic<pid_t> tid{0};
  const std::string name = "master-poller";

 private:
  std::optional<int> nice_;
  EventBasePtr base_;
  std::thread thread_;
  std::atomic<bool> ready_{false};
};

}  // namespace platoon::rt
