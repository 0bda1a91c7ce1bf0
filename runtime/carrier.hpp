// One scheduler thread: a carrier (event loop + fibers), a pool-mode event loop, or a pool
// worker (fibers only, from a shared submission queue and siblings' queues).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

#include "runtime/inbox.hpp"
#include "runtime/run_queue.hpp"
#include "runtime/sanitizer.hpp"
#include "runtime/stats.hpp"
#include "runtime/stats_table.hpp"

struct event_base;
struct event;

namespace platoon::rt {

class Fiber;
struct RuntimeImpl;

struct EventBaseDeleter { void operator()(event_base* b) const; };
struct EventDeleter { void operator()(event* e) const; };
using EventBasePtr = std::unique_ptr<event_base, EventBaseDeleter>;
using EventPtr = std::unique_ptr<event, EventDeleter>;
EventBasePtr make_precise_event_base();

class Carrier {
 public:
  enum class Kind : uint8_t { carrier, event_loop, worker };

  Carrier(RuntimeImpl& rt, Kind kind, int index, int cpu);
  ~Carrier();
  Carrier(const Carrier&) = delete;
  Carrier& operator=(const Carrier&) = delete;

  void start();   // starts the thread and waits until it is named, pinned and ready
  void join();

  // Any thread.
  void push_remote(Fiber* f);        // via the inbox; wakes the carrier if it sleeps
  bool wake();                       // wakes it if it sleeps; true if this call woke it
  bool is_sleeping() const { return sleeping_.load(std::memory_order_seq_cst) != 0; }
  uint32_t backlog() const { return runq_.stealable_size() + inbox_->size(); }
  CarrierStats snapshot() const;

  // The carrier's own thread.
  void push_local(Fiber* f);
  Fiber* running() const { return running_.load(std::memory_order_relaxed); }
  // Any thread: the carrier is inside a fiber right now (a thief's cue: its queue waits).
  bool busy() const { return running_.load(std::memory_order_relaxed) != nullptr; }
  void note_io_event() { ++io_events_now_; }
  std::vector<Fiber*>& fiber_cache() { return fiber_cache_; }
  LiveCarrierStats& live_stats() { return stats_; }

  event_base* base() const { return base_.get(); }  // null for workers
  const Kind kind;
  const int index;
  const int cpu;          // pinned CPU or -1
  std::string name;
  std::string llc;        // CPUs sharing this carrier's last-level cache (sysfs), when pinned
  std::atomic<pid_t> tid{0};

 private:
  void main();
  void loop();
  uint32_t poll(bool block);
  uint32_t drain();
  bool steal();
  void idle();
  bool spin_before_sleep();
  void run(Fiber* f);
  void after_switch_out(Fiber* f);
  uint32_t take_inbox();
  bool has_work() const;

  RuntimeImpl& rt_;
  RunQueue runq_;
  Inbox own_inbox_;
  Inbox* inbox_;                 // own_inbox_, or the pool's submission queue for workers
  EventBasePtr base_;
  EventPtr wake_ev_;
  int wake_fd_ = -1;             // eventfd, carriers and event loops
  alignas(64) std::atomic<uint32_t> sleeping_{0};  // futex word for workers
  std::atomic<Fiber*> running_{nullptr};  // written by the carrier, read by thieves
  uint32_t io_events_now_ = 0;
  uint32_t last_drain_ = 0;
  uint64_t budget_ticks_;  // the drain budget in BudgetClock ticks
  uint64_t spin_ticks_;    // the idle spin in BudgetClock ticks
  uint32_t rng_;
  std::vector<Fiber*> fiber_cache_;
  san::StackId stack_id_;
  void* asan_fake_stack_ = nullptr;
  LiveCarrierStats stats_;
  StatsSlot table_slot_;   // this thread's row of platoon_runtime_stats, while it runs
  std::thread thread_;
  std::atomic<bool> ready_{false};

  friend class Fiber;
};

// The carrier running on the calling thread, or null. Not inlined: a fiber that migrates
// between threads must not reuse a thread-local address cached across a switch.
Carrier* current_carrier();

uint64_t now_ns();

}  // namespace platoon::rt
