// The runtime's shared state, seen by carriers, the master poller and the fiber API.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "runtime/carrier.hpp"
#include "runtime/fiber.hpp"
#include "runtime/inbox.hpp"
#include "runtime/master_poller.hpp"
#include "runtime/options.hpp"

namespace platoon::rt {

struct RuntimeImpl {
  RuntimeImpl(Runtime& owner, Options o);
  ~RuntimeImpl();

  Runtime& owner;
  const Options opts;
  FiberArena arena;
  std::vector<std::unique_ptr<Carrier>> carriers;  // carriers, or pool-mode event loops
  std::vector<std::unique_ptr<Carrier>> workers;   // pool mode
  std::unique_ptr<MasterPoller> master;
  Inbox pool_submissions;
  std::vector<std::string> warnings;
  std::atomic<bool> stopping{false};
  std::atomic<uint32_t> idle_carriers{0};
  std::atomic<uint32_t> idle_workers{0};
  std::atomic<bool> thief_waking{false};  // a thief was woken and has not looked yet (one at a time)
  std::atomic<uint32_t> round_robin{0};
  // Fibers spawned or finished on threads that are not carriers (carriers count their own).
  std::atomic<uint64_t> outside_spawned{0}, outside_finished{0};
  bool stopped = false;

  bool carrier_stealing() const { return opts.scheduler == Scheduler::carrier && opts.work_stealing; }

  Fiber* new_fiber(std::function<void()> fn, Placement where, std::shared_ptr<detail::JoinState> j);
  void recycle(Fiber* f);
  // Makes `f` runnable where it belongs: its home carrier, or the pool.
  void schedule(Fiber* f);
  // Stealing policy: when a carrier has a backlog, wake one idle sibling to come and steal.
  void wake_thief(const Carrier* busy);
  void wake_worker();
  // Where a fiber's timers and fd registrations go when called from the current thread.
  event_base* io_base_for_current();
  void shutdown();
};

}  // namespace platoon::rt
