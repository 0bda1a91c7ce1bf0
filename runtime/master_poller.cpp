#include "runtime/master_poller.hpp"

#include <event2/event.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace platoon::rt {

MasterPoller::MasterPoller(std::optional<int> nice) : nice_(nice), base_(make_precise_event_base()) {}

MasterPoller::~MasterPoller() { stop(); }

void MasterPoller::start() {
  thread_ = std::thread([this] {
    tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
    pthread_setname_np(pthread_self(), name.c_str());
    if (nice_) setpriority(PRIO_PROCESS, static_cast<id_t>(tid.load()), *nice_);
    ready_.store(true, std::memory_order_release);
    // Callbacks run here only unpark fibers; their carriers do the work.
    event_base_loop(base_.get(), EVLOOP_NO_EXIT_ON_EMPTY);
  });
  while (!ready_.load(std::memory_order_acquire)) std::this_thread::yield();
}

void MasterPoller::stop() {
  if (!thread_.joinable()) return;
  event_base_loopbreak(base_.get());
  thread_.join();
}

}  // namespace platoon::rt
