#include "runtime/fiber.hpp"

#include <cstdio>
#include <exception>

#include "runtime/carrier.hpp"

namespace platoon::rt {

void Fiber::prepare(std::function<void()> task, Carrier* home_carrier,
                    std::shared_ptr<detail::JoinState> join) {
  task_ = std::move(task);
  join_ = std::move(join);
  home = home_carrier;
  action = SwitchAction::none;
  permit = false;
  next = nullptr;
  state.store(FiberState::queued, std::memory_order_relaxed);
  make_context();
}

void Fiber::run_task() {
  try {
    std::function<void()> task = std::move(task_);
    task();
  } catch (boost::context::detail::forced_unwind const&) {
    throw;  // the runtime is unwinding a suspended fiber at shutdown
  } catch (std::exception const& e) {
    std::fprintf(stderr, "platoon: uncaught exception in fiber %llu: %s\n",
                 static_cast<unsigned long long>(id), e.what());
    std::terminate();
  } catch (...) {
    std::fprintf(stderr, "platoon: uncaught exception in fiber %llu\n",
                 static_cast<unsigned long long>(id));
    std::terminate();
  }
  if (join_) {
    std::shared_ptr<detail::JoinState> j = std::move(join_);
    j->done.store(1, std::memory_order_seq_cst);
    j->done.notify_all();
    if (Fiber* w = j->waiter.exchange(nullptr)) unpark(w);
  }
  action = SwitchAction::finish;
}

FiberArena::~FiberArena() = default;

Fiber* FiberArena::make_locked() {
  auto f = std::make_unique<Fiber>(stack_bytes_);
  f->id = static_cast<uint64_t>(all_.size() + 1) << 32;
  all_.push_back(std::move(f));
  return all_.back().get();
}

Fiber* FiberArena::take_batch_or_new(std::vector<Fiber*>& cache) {
  std::lock_guard lk(mu_);
  const std::size_t n = std::min<std::size_t>(free_.size(), 64);
  for (std::size_t i = 0; i < n; ++i) {
    cache.push_back(free_.back());
    free_.pop_back();
  }
  if (!cache.empty()) {
    Fiber* f = cache.back();
    cache.pop_back();
    return f;
  }
  return make_locked();
}

void FiberArena::give_batch(std::vector<Fiber*>& cache, std::size_t keep) {
  std::lock_guard lk(mu_);
  while (cache.size() > keep) {
    free_.push_back(cache.back());
    cache.pop_back();
  }
}

Fiber* FiberArena::take_shared() {
  std::lock_guard lk(mu_);
  if (free_.empty()) return make_locked();
  Fiber* f = free_.back();
  free_.pop_back();
  return f;
}

void FiberArena::give_shared(Fiber* f) {
  std::lock_guard lk(mu_);
  free_.push_back(f);
}

std::size_t FiberArena::allocated() const {
  std::lock_guard lk(mu_);
  return all_.size();
}

void FiberArena::unwind_all() {
  std::vector<Fiber*> live;
  {
    std::lock_guard lk(mu_);
    for (auto& f : all_) if (f->ctx) live.push_back(f.get());
  }
  for (Fiber* f : live) f->unwind();
}

}  // namespace platoon::rt
