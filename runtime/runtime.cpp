#include "runtime/runtime.hpp"

#include <cstdio>
#include <event2/thread.h>
#include <mutex>
#include <stdexcept>

#include "runtime/carrier.hpp"
#include "runtime/fiber.hpp"
#include "runtime/probes.hpp"
#include "runtime/runtime_impl.hpp"
#include "runtime/topology.hpp"

namespace platoon::rt {

namespace {
constexpr std::size_t kFiberCacheKeep = 256;

void use_libevent_threads() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (evthread_use_pthreads() != 0) throw std::runtime_error("libevent: evthread_use_pthreads failed");
  });
}

Carrier* pick_carrier(RuntimeImpl& rt, Placement where) {
  Carrier* cur = current_carrier();
  switch (where.kind) {
    case Placement::Kind::carrier:
      if (where.index < 0 || where.index >= static_cast<int>(rt.carriers.size()))
        throw std::out_of_range("spawn: no carrier " + std::to_string(where.index));
      return rt.carriers[static_cast<size_t>(where.index)].get();
    case Placement::Kind::here:
      if (!cur || cur->kind == Carrier::Kind::worker)
        throw std::logic_error("spawn(here()): the caller is not on a carrier");
      return cur;
    case Placement::Kind::handoff:
    case Placement::Kind::automatic:
      if (rt.opts.scheduler == Scheduler::pool) return nullptr;  // the worker pool
      if (cur && cur->kind == Carrier::Kind::carrier) return cur;
      return rt.carriers[rt.round_robin.fetch_add(1, std::memory_order_relaxed) % rt.carriers.size()].get();
  }
  return nullptr;
}
}  // namespace

RuntimeImpl::RuntimeImpl(Runtime& o, Options op) : owner(o), opts(std::move(op)), arena(opts.stack_size) {
  if (opts.carriers < 1) throw std::invalid_argument("carriers must be at least 1");
  if (opts.budget.count() < 1) throw std::invalid_argument("budget must be at least 1 us");
  use_libevent_threads();
  const bool pool = opts.scheduler == Scheduler::pool;
  const std::vector<int> cpus = opts.pin ? allowed_cpus() : std::vector<int>{};
  auto cpu_for = [&](int i, const char* what) {
    if (!opts.pin) return -1;
    if (i < static_cast<int>(cpus.size())) return cpus[static_cast<size_t>(i)];
    warnings.push_back(std::string(what) + "-" + std::to_string(i) + " floats: more " + what +
                       "s than the " + std::to_string(cpus.size()) + " CPUs this process may use");
    return -1;
  };
  const auto carrier_kind = pool ? Carrier::Kind::event_loop : Carrier::Kind::carrier;
  for (int i = 0; i < opts.carriers; ++i)
    carriers.push_back(std::make_unique<Carrier>(*this, carrier_kind, i, cpu_for(i, pool ? "eventloop" : "carrier")));
  if (pool) {
    const int nworkers = opts.workers > 0 ? opts.workers : opts.carriers;
    for (int i = 0; i < nworkers; ++i)
      workers.push_back(std::make_unique<Carrier>(*this, Carrier::Kind::worker, i, cpu_for(i, "worker")));
  }
  if (pool || opts.poller == PollerMode::master) master = std::make_unique<MasterPoller>(opts.poller_nice);
  for (const auto& w : warnings) std::fprintf(stderr, "platoon: warning: %s\n", w.c_str());
  if (master) master->start();
  for (auto& c : carriers) c->start();
  for (auto& w : workers) w->start();
}

RuntimeImpl::~RuntimeImpl() { shutdown(); }

void RuntimeImpl::shutdown() {
  if (stopped) return;
  stopped = true;
  stopping.store(true);
  for (auto& c : carriers) { c->wake(); }
  for (auto& w : workers) { w->wake(); }
  // A carrier between its stopping check and its sleep is woken by the has_work() check.
  for (auto& c : carriers) c->join();
  for (auto& w : workers) w->join();
  if (master) master->stop();
  arena.unwind_all();
}

Fiber* RuntimeImpl::new_fiber(std::function<void()> fn, Placement where, std::shared_ptr<detail::JoinState> j) {
  Carrier* home = pick_carrier(*this, where);
  Carrier* cur = current_carrier();
  Fiber* f;
  if (cur) {
    auto& cache = cur->fiber_cache();
    if (!cache.empty()) {
      f = cache.back();
      cache.pop_back();
    } else {
      f = arena.take_batch_or_new(cache);  // may throw (no stack): then nothing was spawned
    }
    cur->live_stats().fibers_spawned.add();
  } else {
    outside_spawned.fetch_add(1, std::memory_order_relaxed);
    f = arena.take_shared();
  }
  f->id = (f->id & ~0xffffffffull) | ((f->id + 1) & 0xffffffffull);  // record << 32 | generation
  f->runtime = this;
  f->prepare(std::move(fn), home, std::move(j));
  return f;
}

void RuntimeImpl::recycle(Fiber* f) {
  f->state.store(FiberState::finished, std::memory_order_relaxed);
  Carrier* cur = current_carrier();
  if (!cur) {
    outside_finished.fetch_add(1, std::memory_order_relaxed);
    arena.give_shared(f);
    return;
  }
  cur->live_stats().fibers_finished.add();
  auto& cache = cur->fiber_cache();
  cache.push_back(f);
  if (cache.size() > 2 * kFiberCacheKeep) arena.give_batch(cache, kFiberCacheKeep);
}

void RuntimeImpl::schedule(Fiber* f) {
  Carrier* cur = current_carrier();
  if (f->home) {
    if (cur == f->home) cur->push_local(f);
    else f->home->push_remote(f);
    return;
  }
  if (cur && cur->kind == Carrier::Kind::worker) {
    cur->push_local(f);
  } else {
    pool_submissions.push(f);
    wake_worker();
  }
}

void RuntimeImpl::wake_worker() {
  if (idle_workers.load(std::memory_order_seq_cst) == 0) return;
  for (auto& w : workers)
    if (w.get() != current_carrier() && w->wake()) return;
}

// Like Go's wakep: new work on a carrier that is busy wakes one idle sibling to steal it, and
// only one such wakeup is outstanding at a time (the thief clears thief_waking when it has
// looked). The fence pairs with the one in Carrier::idle(): either we see the thief idle, or
// it sees our backlog before it sleeps.
void RuntimeImpl::wake_thief(const Carrier* busy) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (idle_carriers.load(std::memory_order_seq_cst) == 0) return;
  if (busy->backlog() == 0) return;
  if (thief_waking.exchange(true)) return;
  for (auto& c : carriers)
    if (c.get() != busy && c.get() != current_carrier() && c->wake()) return;
  thief_waking.store(false);
}

event_base* RuntimeImpl::io_base_for_current() {
  Carrier* cur = current_carrier();
  if (opts.poller == PollerMode::master || !cur || !cur->base()) {
    if (master) return master->base();
    if (cur && cur->base()) return cur->base();
    return carriers.front()->base();
  }
  return cur->base();
}

// ---- Runtime ----

Runtime::Runtime(Options opts) : impl_(std::make_unique<RuntimeImpl>(*this, std::move(opts))) {}
Runtime::~Runtime() { shutdown(); }

void Runtime::spawn(std::function<void()> fn, Placement where) {
  impl_->schedule(impl_->new_fiber(std::move(fn), where, nullptr));
}

JoinHandle Runtime::spawn_joinable(std::function<void()> fn, Placement where) {
  auto state = std::make_shared<detail::JoinState>();
  impl_->schedule(impl_->new_fiber(std::move(fn), where, state));
  return JoinHandle(std::move(state));
}

void Runtime::shutdown() { impl_->shutdown(); }
const Options& Runtime::options() const { return impl_->opts; }
int Runtime::carrier_count() const { return static_cast<int>(impl_->carriers.size()); }
int Runtime::worker_count() const { return static_cast<int>(impl_->workers.size()); }
std::vector<std::string> Runtime::warnings() const { return impl_->warnings; }

std::vector<CarrierStats> Runtime::stats() const {
  std::vector<CarrierStats> out;
  for (auto& c : impl_->carriers) out.push_back(c->snapshot());
  for (auto& w : impl_->workers) out.push_back(w->snapshot());
  return out;
}

uint64_t Runtime::live_fibers() const {
  uint64_t spawned = impl_->outside_spawned.load(), finished = impl_->outside_finished.load();
  for (const auto& s : stats()) {
    spawned += s.fibers_spawned;
    finished += s.fibers_finished;
  }
  return spawned - finished;
}

size_t Runtime::fiber_records() const { return impl_->arena.allocated(); }

std::vector<ThreadInfo> Runtime::threads() const {
  std::vector<ThreadInfo> out;
  for (auto& c : impl_->carriers) out.push_back({c->name, c->tid.load(), c->cpu});
  for (auto& w : impl_->workers) out.push_back({w->name, w->tid.load(), w->cpu});
  if (impl_->master) out.push_back({impl_->master->name, impl_->master->tid.load(), -1});
  return out;
}

// ---- fibers ----

void JoinHandle::join() {
  if (!state_) return;
  if (this_fiber::in_fiber()) {
    Fiber* me = this_fiber::self();
    state_->waiter.store(me, std::memory_order_seq_cst);
    while (state_->done.load(std::memory_order_seq_cst) == 0) this_fiber::park();
    state_->waiter.store(nullptr);
  } else {
    while (state_->done.load() == 0) state_->done.wait(0);
  }
}

bool JoinHandle::done() const { return !state_ || state_->done.load() != 0; }

void unpark(Fiber* f) {
  // seq_cst: pairs with the seq_cst store of `running` in Carrier::run() (see there); when we
  // read `queued` and return, the fiber's next run must see the caller's earlier writes.
  FiberState s = f->state.load(std::memory_order_seq_cst);
  for (;;) {
    switch (s) {
      case FiberState::running:
        if (f->state.compare_exchange_weak(s, FiberState::notified)) return;
        break;
      case FiberState::parked:
        if (f->state.compare_exchange_weak(s, FiberState::queued)) {
          PLATOON_PROBE2(unpark, f->home ? f->home->index : -1, f->id);
          f->runtime->schedule(f);
          return;
        }
        break;
      default:
        return;  // queued, already notified, or finished
    }
  }
}

}  // namespace platoon::rt
