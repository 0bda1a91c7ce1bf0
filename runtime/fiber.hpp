// The fiber record: a Boost.Context fiber, its stack and its scheduling state. Records are owned
// by the FiberArena and recycled; queues hold non-owning pointers.
#pragma once

#include <atomic>
#include <boost/context/fiber.hpp>
#include <cstdint>
#include <event2/event_struct.h>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/runtime.hpp"
#include "runtime/sanitizer.hpp"
#include "runtime/stack.hpp"

namespace platoon::rt {

struct RuntimeImpl;

// Scheduling state, changed with atomics because unpark comes from any thread.
enum class FiberState : uint8_t {
  queued,    // in a run queue or inbox, or about to be
  running,   // on a carrier
  notified,  // running, and unpark() arrived: its next park returns at once
  parked,    // switched out, waiting for unpark()
  finished,  // returned; the record is being recycled
};

// What a fiber asks its carrier to do once it has switched out.
enum class SwitchAction : uint8_t { none, yield, park, finish };

class Fiber {
 public:
  explicit Fiber(std::size_t stack_bytes);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Builds a fresh context for `task` on this record's stack.
  void prepare(std::function<void()> task, Carrier* home, std::shared_ptr<detail::JoinState> join);
  // Carrier side: switches into the fiber until it switches out; `self` is the carrier's stack.
  void resume(const san::StackId& self, void** self_fake_stack);
  // Fiber side: switches to the carrier that resumed it, asking it to do `a`.
  void switch_out(SwitchAction a);
  // Unwinds a suspended fiber on the calling thread (shutdown).
  void unwind();

  uint64_t id = 0;
  Carrier* home = nullptr;  // null: a pool fiber
  RuntimeImpl* runtime = nullptr;
  boost::context::fiber ctx;    // the suspended fiber, while not running
  boost::context::fiber sched;  // the carrier context that resumed it, while running
  SwitchAction action = SwitchAction::none;
  std::atomic<FiberState> state{FiberState::queued};
  bool permit = false;      // an unpark consumed by yield, kept for the next park
  Fiber* next = nullptr;    // intrusive link for inboxes and free lists
  struct event timer {};    // sleep_for and I/O timeouts
  std::atomic<bool> timer_fired{false};
  void* asan_fake_stack = nullptr;
  san::StackId stack_id;                  // this fiber's stack
  const san::StackId* resumer = nullptr;   // the stack of the carrier running it

 private:
  void make_context();  // context.cpp
  void run_task();      // the fiber's body, up to its last switch
  GuardedStack stack_;
  std::function<void()> task_;
  std::shared_ptr<detail::JoinState> join_;
};

// The record's timer, for sleep_for and I/O deadlines: when it fires, `timer_fired` is set and
// the fiber unparked. The timer lives in `base` (any thread's loop; libevent locks it).
void arm_timer(Fiber* f, event_base* base, uint64_t deadline_ns);
void disarm_timer(Fiber* f);

// Owns every fiber record. Records are recycled through per-carrier caches (no lock) that
// spill to and refill from a shared pool (one lock per batch), so fibers spawned on one thread
// and finished on another do not grow the arena.
class FiberArena {
 public:
  explicit FiberArena(std::size_t stack_bytes) : stack_bytes_(stack_bytes) {}
  ~FiberArena();
  Fiber* take_batch_or_new(std::vector<Fiber*>& cache);  // refills `cache`, returns one record
  void give_batch(std::vector<Fiber*>& cache, std::size_t keep);  // spills above `keep`
  Fiber* take_shared();   // for threads outside the runtime
  void give_shared(Fiber* f);
  std::size_t allocated() const;
  // Runs each record's destructor-time cleanup: unwinds fibers still suspended. Call after
  // every carrier has stopped.
  void unwind_all();

 private:
  std::size_t stack_bytes_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Fiber>> all_;
  std::vector<Fiber*> free_;
  uint64_t next_id_ = 1;
  Fiber* make_locked();
};

}  // namespace platoon::rt
