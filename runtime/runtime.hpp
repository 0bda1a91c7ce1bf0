// platoon's carrier runtime: fibers (Boost.Context) on carrier threads (libevent loops).
//
// Carrier mode: every carrier is an OS thread with its own event loop and run queue; a fiber
// stays on the carrier it was spawned on (its home) and its sockets are watched by that
// carrier's loop (or by the master poller in PollerMode::master).
// Pool mode (the ForkJoinPool stand-in): `carriers` event-loop threads run only the fibers spawned
// on them, and `workers` threads run pool fibers from work-stealing queues, with no affinity;
// pool fibers' sockets are watched by the master poller.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

#include "runtime/options.hpp"
#include "runtime/stats.hpp"

namespace platoon::rt {

class Fiber;
class Carrier;
class MasterPoller;
struct RuntimeImpl;

// Where a spawned fiber runs.
struct Placement {
  enum class Kind : uint8_t { automatic, carrier, here, handoff } kind = Kind::automatic;
  int index = -1;
};
// automatic: carrier mode: the current carrier, or round robin from outside the runtime;
//            pool mode: the worker pool.
inline Placement on_carrier(int i) { return {Placement::Kind::carrier, i}; }
// The carrier (or event loop) of the calling fiber.
inline Placement here() { return {Placement::Kind::here, -1}; }
// Where a handler hands blocking work off to: carrier mode keeps it on the current carrier
// (the custom scheduler's point); pool mode sends it to the worker pool.
inline Placement handoff() { return {Placement::Kind::handoff, -1}; }

namespace detail {
struct JoinState {
  std::atomic<uint32_t> done{0};
  std::atomic<Fiber*> waiter{nullptr};
};
}  // namespace detail

// Waits for a fiber spawned with spawn_joinable. join() parks a calling fiber, or blocks a
// calling OS thread.
class JoinHandle {
 public:
  JoinHandle() = default;
  explicit JoinHandle(std::shared_ptr<detail::JoinState> s) : state_(std::move(s)) {}
  void join();
  bool done() const;
  bool valid() const { return state_ != nullptr; }

 private:
  std::shared_ptr<detail::JoinState> state_;
};

struct ThreadInfo {
  std::string name;  // carrier-0, carrier-1@cpu1, eventloop-0, worker-0, master-poller
  pid_t tid = 0;
  int cpu = -1;      // pinned CPU, -1 when floating
};

class Runtime {
 public:
  explicit Runtime(Options opts);
  ~Runtime();  // shutdown()
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  void spawn(std::function<void()> fn, Placement where = {});
  JoinHandle spawn_joinable(std::function<void()> fn, Placement where = {});

  // Stops every thread and joins it; fibers still parked are unwound. Idempotent.
  void shutdown();

  const Options& options() const;
  int carrier_count() const;
  int worker_count() const;
  std::vector<CarrierStats> stats() const;        // carriers (or event loops), then workers
  std::vector<ThreadInfo> threads() const;        // every thread the runtime started
  std::vector<std::string> warnings() const;      // e.g. more carriers than CPUs
  uint64_t live_fibers() const;   // spawned and not yet finished (approximate while running)
  size_t fiber_records() const;   // fiber records (stacks) allocated: the high-water mark

  // Implementation access for the runtime's own files.
  RuntimeImpl& impl() { return *impl_; }

 private:
  std::unique_ptr<RuntimeImpl> impl_;
};

// The calling fiber's view of the runtime. Everything here must be called from a fiber unless
// it says otherwise.
namespace this_fiber {
bool in_fiber();            // any thread
Fiber* self();
void yield();
// Parks until unpark(self()). May return spuriously: always park in a loop on a condition.
void park();
void sleep_for(std::chrono::nanoseconds d);
int carrier_index();        // index of the carrier running the caller; -1 on a pool worker
int home_index();           // the caller's home carrier; -1 for pool fibers
Runtime* runtime();         // any thread inside the runtime; null elsewhere
uint64_t id();
}  // namespace this_fiber

// CLOCK_MONOTONIC in nanoseconds (the clock of budgets, timers and deadlines).
uint64_t now_ns();

// Makes a parked fiber runnable again on its home carrier (or the pool). Any thread.
void unpark(Fiber* f);

}  // namespace platoon::rt
