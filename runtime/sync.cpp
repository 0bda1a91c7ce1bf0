#include "runtime/sync.hpp"

#include "runtime/runtime.hpp"

namespace platoon::rt {

void wake(Waiter* w) {
  Fiber* f = w->fiber;
  w->woken.store(true, std::memory_order_seq_cst);
  unpark(f);
}

void wait_for_wake(Waiter& w) {
  while (!w.woken.load(std::memory_order_seq_cst)) this_fiber::park();
}

void Mutex::lock() {
  Fiber* me = this_fiber::self();  // throws outside a fiber: before the spin lock is taken
  guard_.lock();
  if (!locked_) {
    locked_ = true;
    guard_.unlock();
    return;
  }
  Waiter w{me};
  waiters_.add(&w);
  guard_.unlock();
  wait_for_wake(w);  // woken by unlock() with the mutex already ours
}

bool Mutex::try_lock() {
  std::lock_guard g(guard_);
  if (locked_) return false;
  locked_ = true;
  return true;
}

void Mutex::unlock() {
  guard_.lock();
  Waiter* next = waiters_.pop();
  if (!next) locked_ = false;
  guard_.unlock();
  if (next) wake(next);
}

void CondVar::wait(std::unique_lock<Mutex>& lk) {
  Waiter w{this_fiber::self()};
  guard_.lock();
  waiters_.add(&w);
  guard_.unlock();
  lk.unlock();
  wait_for_wake(w);
  lk.lock();
}

void CondVar::notify_one() {
  guard_.lock();
  Waiter* w = waiters_.pop();
  guard_.unlock();
  if (w) wake(w);
}

void CondVar::notify_all() {
  guard_.lock();
  WaitList all;
  while (Waiter* w = waiters_.pop()) all.add(w);
  guard_.unlock();
  while (Waiter* w = all.pop()) wake(w);
}

}  // namespace platoon::rt
