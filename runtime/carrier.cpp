#include "runtime/carrier.hpp"

#include <cstdio>
#include <ctime>
#include <event2/event.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/budget_clock.hpp"
#include "runtime/fiber.hpp"
#include "runtime/probes.hpp"
#include "runtime/runtime_impl.hpp"
#include "runtime/topology.hpp"

namespace platoon::rt {

namespace {
thread_local Carrier* tls_carrier = nullptr;

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}
void futex_wake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void on_wake_fd(evutil_socket_t fd, short, void*) {
  uint64_t v;
  while (read(fd, &v, sizeof v) == sizeof v) {
  }
}
}  // namespace

__attribute__((noinline)) Carrier* current_carrier() {
  Carrier* c = tls_carrier;
  asm volatile("" : "+r"(c));  // keep the compiler from caching the TLS address across calls
  return c;
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void EventBaseDeleter::operator()(event_base* b) const { event_base_free(b); }
void EventDeleter::operator()(event* e) const { event_free(e); }

EventBasePtr make_precise_event_base() {
  // Precise timers: libevent's default monotonic clock is coarse (4 ms here), useless for
  // sleep_for and I/O timeouts measured in microseconds.
  event_config* cfg = event_config_new();
  event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
  event_config_require_features(cfg, EV_FEATURE_ET);
  EventBasePtr base(event_base_new_with_config(cfg));
  event_config_free(cfg);
  if (!base) throw std::runtime_error("cannot create an event loop (libevent epoll backend)");
  return base;
}

Carrier::Carrier(RuntimeImpl& rt, Kind k, int idx, int pinned_cpu)
    : kind(k), index(idx), cpu(pinned_cpu), rt_(rt),
      runq_(k == Kind::worker || rt.carrier_stealing()),
      inbox_(k == Kind::worker ? &rt.pool_submissions : &own_inbox_),
      budget_ticks_(BudgetClock::get().ticks_for_ns(static_cast<uint64_t>(rt.opts.budget.count()) * 1000)),
      spin_ticks_(BudgetClock::get().ticks_for_ns(static_cast<uint64_t>(rt.opts.idle_spin.count()) * 1000)),
      rng_(0x9e3779b9u * static_cast<uint32_t>(idx + 1)) {
  const char* base_name = k == Kind::carrier ? "carrier" : k == Kind::event_loop ? "eventloop" : "worker";
  name = std::string(base_name) + "-" + std::to_string(idx);
  if (cpu >= 0) {
    name += "@cpu" + std::to_string(cpu);
    if (name.size() > 15) name = std::string(base_name).substr(0, 1) + std::to_string(idx) + "@cpu" + std::to_string(cpu);
    llc = llc_shared_cpus(cpu);
  }
  if (k != Kind::worker) {
    base_ = make_precise_event_base();
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) throw std::runtime_error("eventfd failed");
    wake_ev_.reset(event_new(base_.get(), wake_fd_, EV_READ | EV_PERSIST, on_wake_fd, nullptr));
    event_add(wake_ev_.get(), nullptr);
  }
}

Carrier::~Carrier() {
  wake_ev_.reset();
  base_.reset();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void Carrier::start() {
  thread_ = std::thread([this] { main(); });
  while (!ready_.load(std::memory_order_acquire)) std::this_thread::yield();
}

void Carrier::join() {
  if (thread_.joinable()) thread_.join();
}

void Carrier::main() {
  tls_carrier = this;
  tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
  pthread_setname_np(pthread_self(), name.c_str());
  if (cpu >= 0) pin_current_thread(cpu);
  if (rt_.opts.carrier_nice) setpriority(PRIO_PROCESS, static_cast<id_t>(tid.load()), *rt_.opts.carrier_nice);
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    size_t size = 0;
    pthread_attr_getstack(&attr, &addr, &size);
    stack_id_.bottom = addr;
    stack_id_.size = size;
    pthread_attr_destroy(&attr);
  }
  stack_id_.tsan_fiber = san::tsan_current();
  table_slot_ = StatsSlot::claim(tid.load());
  // A tracer attaches here only to raise the `stats` semaphore; the hit itself is rare.
  PLATOON_PROBE1(stats, &platoon_runtime_stats);
  ready_.store(true, std::memory_order_release);
  loop();
  PLATOON_PROBE1(stats, &platoon_runtime_stats);
  table_slot_.release();
  tls_carrier = nullptr;
}

// The carrier loop: poll, drain with a budget, steal, sleep. Sleep only when a whole round
// found neither I/O nor fibers to run.
void Carrier::loop() {
  while (!rt_.stopping.load(std::memory_order_relaxed)) {
    stats_.cycles.add();
    const uint32_t io = poll(false);
    const uint32_t ran = drain();
    if (io || ran) continue;
    if (steal()) continue;
    idle();
  }
}

// Runs the loop's ready callbacks without blocking (or blocking until one, when idle). The
// callbacks only mark fibers runnable; fibers run in drain().
uint32_t Carrier::poll(bool block) {
  if (!base_) return 0;
  io_events_now_ = 0;
  event_base_loop(base_.get(), block ? EVLOOP_ONCE : EVLOOP_NONBLOCK);
  const uint32_t n = io_events_now_;
  stats_.io_events.add(n);
  PLATOON_PROBE2(poll, index, n);
  if (rt_.opts.on_poll && !block)
    rt_.opts.on_poll(PollObservation{index, now_ns(), n, last_drain_});
  return n;
}

uint32_t Carrier::take_inbox() {
  uint32_t max = UINT32_MAX;
  if (kind == Kind::worker) {
    // Share the submission queue: take a worker's share, not all of it.
    const uint32_t waiting = inbox_->size();
    const uint32_t workers = static_cast<uint32_t>(rt_.workers.size());
    max = waiting / workers + 1;
  }
  return inbox_->take(max, [this](Fiber* f) { runq_.push(f); });
}

// Runs runnable fibers until the queue is empty or the budget is spent; at least one fiber
// runs per drain, so the budget is overshot by at most one fiber's run.
uint32_t Carrier::drain() {
  take_inbox();
  const uint32_t depth = runq_.size();
  last_drain_ = 0;
  if (depth == 0) return 0;
  // Read once: a tracer that attaches mid-drain is counted from the next drain on.
  const bool book = PLATOON_PROBE_ENABLED(stats);
  stats_.queue_depth_high_water.max(depth);
  PLATOON_PROBE2(drain_start, index, depth);
  const uint64_t start = now_ns();
  const BudgetClock& clock = BudgetClock::get();
  const uint64_t deadline = clock.now() + budget_ticks_;
  uint32_t ran = 0;
  while (Fiber* f = runq_.pop()) {
    run(f);
    ++ran;
    if (clock.now() >= deadline) {
      if (!runq_.empty()) stats_.budget_cuts.add();
      break;
    }
  }
  stats_.fibers_run.add(ran);
  last_drain_ = ran;
  if (book) table_slot_.drain(depth, ran, now_ns() - start);
  if (PLATOON_PROBE_ENABLED(drain_end)) STAP_PROBE3(platoon, drain_end, index, ran, now_ns() - start);
  if (PLATOON_PROBE_ENABLED(drain)) STAP_PROBE4(platoon, drain, index, depth, ran, now_ns() - start);
  return ran;
}

// Stealing policy (carrier mode with work_stealing, and pool workers always):
//  - when: only when a whole round found no I/O and no fibers of its own;
//  - which victim: siblings of the same kind, the ones sharing our last-level cache first,
//    starting at a random one; a carrier only while it is inside a fiber (pool workers always);
//  - how many: half of the victim's stealable run queue (at least one); if that is empty, half
//    of a carrier victim's inbox (fibers handed to it that it has not picked up, e.g. because
//    it is stuck in a long fiber);
//  - afterwards: a stolen carrier-mode fiber runs here until it next yields or parks, then goes
//    back to its home carrier, whose loop watches its sockets.
bool Carrier::steal() {
  const bool may_steal = kind == Kind::worker || (kind == Kind::carrier && rt_.carrier_stealing());
  if (!may_steal) return false;
  if (kind == Kind::carrier) rt_.thief_waking.store(false, std::memory_order_relaxed);
  auto& siblings = kind == Kind::worker ? rt_.workers : rt_.carriers;
  const size_t n = siblings.size();
  if (n < 2) return false;
  rng_ ^= rng_ << 13; rng_ ^= rng_ >> 17; rng_ ^= rng_ << 5;
  const size_t first = rng_ % n;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < n; ++k) {
      Carrier* v = siblings[(first + k) % n].get();
      // Carriers are robbed only while they are inside a fiber: a carrier that is polling or
      // waking up will run its own queue next, and its fibers' affinity is worth keeping.
      if (v == this || (v->kind == Kind::carrier && !v->busy())) continue;
      const bool near = llc.empty() || v->llc == llc;
      if (near != (pass == 0)) continue;
      uint32_t taken = v->runq_.steal_half([this](Fiber* f) { runq_.push(f); });
      if (taken == 0 && v->kind == Kind::carrier) {
        const uint32_t waiting = v->own_inbox_.size();
        if (waiting) taken = v->own_inbox_.take(waiting - waiting / 2, [this](Fiber* f) { runq_.push(f); });
      }
      if (taken) {
        stats_.steals.add();
        stats_.stolen_fibers.add(taken);
        if (PLATOON_PROBE_ENABLED(stats)) table_slot_.steal(taken);
        PLATOON_PROBE3(steal, index, v->index, taken);
        return true;
      }
    }
  }
  return false;
}

bool Carrier::has_work() const {
  if (!runq_.empty() || inbox_->size() != 0 || rt_.stopping.load()) return true;
  if (kind == Kind::carrier && rt_.carrier_stealing()) {
    // A sibling's backlog that appeared as we announced sleep: steal it instead of sleeping.
    for (const auto& c : rt_.carriers)
      if (c.get() != this && c->busy() && c->backlog() != 0) return true;
  }
  return false;
}

// Announces sleep, checks once more for work (a waker that missed the flag pushed before
// this check), then blocks: in epoll_wait for carriers, on a futex for workers.
void Carrier::idle() {
  if (spin_before_sleep()) return;
  auto& idle_count = kind == Kind::worker ? rt_.idle_workers : rt_.idle_carriers;
  sleeping_.store(1, std::memory_order_seq_cst);
  idle_count.fetch_add(1);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with wake_thief's fence
  if (has_work()) {
    sleeping_.store(0);
    idle_count.fetch_sub(1);
    return;
  }
  PLATOON_PROBE1(carrier_sleep, index);
  stats_.sleeps.add();
  if (base_) {
    poll(true);
  } else {
    while (sleeping_.load() == 1 && !rt_.stopping.load()) futex_wait(&sleeping_, 1);
  }
  sleeping_.store(0);
  idle_count.fetch_sub(1);
  PLATOON_PROBE1(carrier_wake, index);
}

// The optional idle spin: poll without blocking until I/O or a fiber shows up, or the spin
// time is over (then sleep as usual). True when work arrived.
bool Carrier::spin_before_sleep() {
  if (rt_.opts.idle_spin.count() <= 0) return false;
  const BudgetClock& clock = BudgetClock::get();
  const uint64_t end = clock.now() + spin_ticks_;
  while (clock.now() < end && !rt_.stopping.load(std::memory_order_relaxed)) {
    if (poll(false) != 0 || !runq_.empty() || inbox_->size() != 0) return true;
    if (!base_) __builtin_ia32_pause();
  }
  return false;
}

bool Carrier::wake() {
  if (sleeping_.load(std::memory_order_seq_cst) == 0) return false;
  if (sleeping_.exchange(0) == 0) return false;
  stats_.wakeups.add();
  if (base_) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t r = write(wake_fd_, &one, sizeof one);
  } else {
    futex_wake(&sleeping_);
  }
  return true;
}

void Carrier::push_remote(Fiber* f) {
  inbox_->push(f);  // seq_cst: ordered before the sleeping_ check in wake()
  if (!wake() && rt_.carrier_stealing() && kind == Kind::carrier) rt_.wake_thief(this);  // it is busy
}

void Carrier::push_local(Fiber* f) {
  runq_.push(f);
  if (kind == Kind::worker) {
    rt_.wake_worker();  // like ForkJoinPool's signalWork: new work wakes an idle worker
  } else if (rt_.carrier_stealing() && busy()) {
    rt_.wake_thief(this);  // queued behind the fiber running now
  }
}

void Carrier::run(Fiber* f) {
  if (f->home && f->home != this) stats_.off_home_runs.add();
  running_.store(f, std::memory_order_relaxed);
  // seq_cst, not release: a Dekker pair with unpark(). An unpark that finds the fiber `queued`
  // does nothing and relies on the fiber, once running, to see whatever the unparker wrote
  // before it (e.g. a posted counter). With a release store the fiber's first loads after the
  // switch can be satisfied before this store is visible (x86 store buffer): the unparker still
  // reads `queued` and returns, the fiber reads the old data and parks (running -> parked
  // succeeds), and the unpark is lost. seq_cst here (xchg) and in unpark()'s load forbid that:
  // either unpark sees `running` (-> notified) or the fiber sees the unparker's writes.
  f->state.store(FiberState::running, std::memory_order_seq_cst);
  f->resume(stack_id_, &asan_fake_stack_);
  running_.store(nullptr, std::memory_order_relaxed);
  after_switch_out(f);
}

// Runs on the carrier's stack once the fiber's context is saved, so publishing it to a queue
// here cannot let another thread resume a stack that is still in use.
void Carrier::after_switch_out(Fiber* f) {
  switch (f->action) {
    case SwitchAction::yield:
      if (f->state.exchange(FiberState::queued) == FiberState::notified) f->permit = true;
      rt_.schedule(f);
      break;
    case SwitchAction::park: {
      FiberState expected = FiberState::running;
      if (!f->state.compare_exchange_strong(expected, FiberState::parked)) {
        f->state.store(FiberState::queued);  // unparked while still running
        rt_.schedule(f);
      }
      break;
    }
    case SwitchAction::finish:
      rt_.recycle(f);
      break;
    case SwitchAction::none:
      break;
  }
}

CarrierStats Carrier::snapshot() const {
  CarrierStats s;
  s.index = index;
  s.name = name;
#define PLATOON_COPY_COUNTER(member, writer, family, help) s.member = stats_.member.get();
  PLATOON_CARRIER_COUNTERS(PLATOON_COPY_COUNTER)
#undef PLATOON_COPY_COUNTER
  return s;
}

}  // namespace platoon::rt
