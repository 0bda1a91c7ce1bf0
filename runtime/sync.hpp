// Fiber synchronisation: a mutex, a condition variable and a bounded channel. Waiting parks the
// fiber (never the carrier thread). Usable across carriers and from pool workers, from fibers
// only: lock/wait from a plain thread throws std::logic_error.
#pragma once

#include <atomic>
#include <deque>
#include <mutex>
#include <optional>

namespace platoon::rt {

class Fiber;

// A short spin lock guarding wait lists; held for a few instructions, never across a park.
class SpinLock {
 public:
  void lock() {
    while (flag_.exchange(true, std::memory_order_acquire))
      while (flag_.load(std::memory_order_relaxed)) __builtin_ia32_pause();
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

// One waiting fiber; lives on that fiber's stack while it waits.
struct Waiter {
  Fiber* fiber;
  std::atomic<bool> woken{false};
};

// Fibers waiting for something, FIFO. Callers hold the owner's SpinLock.
class WaitList {
 public:
  void add(Waiter* w) { q_.push_back(w); }
  Waiter* pop() {
    if (q_.empty()) return nullptr;
    Waiter* w = q_.front();
    q_.pop_front();
    return w;
  }
  bool empty() const { return q_.empty(); }

 private:
  std::deque<Waiter*> q_;
};

// Wakes a popped waiter. After `woken` is set the Waiter may be gone, so read the fiber first.
void wake(Waiter* w);
// Parks the calling fiber until wake(w).
void wait_for_wake(Waiter& w);

class Mutex {
 public:
  void lock();
  bool try_lock();
  void unlock();

 private:
  SpinLock guard_;
  bool locked_ = false;
  WaitList waiters_;  // unlock() hands the mutex directly to the first of them
};

class CondVar {
 public:
  void wait(std::unique_lock<Mutex>& lk);
  template <typename Pred>
  void wait(std::unique_lock<Mutex>& lk, Pred pred) {
    while (!pred()) wait(lk);
  }
  void notify_one();
  void notify_all();

 private:
  SpinLock guard_;
  WaitList waiters_;
};

// Bounded multi-producer multi-consumer channel of T.
template <typename T>
class Channel {
 public:
  explicit Channel(size_t capacity) : cap_(capacity ? capacity : 1) {}

  // false if the channel is closed.
  bool send(T v) {
    std::unique_lock lk(mu_);
    not_full_.wait(lk, [&] { return closed_ || q_.size() < cap_; });
    if (closed_) return false;
    q_.push_back(std::move(v));
    not_empty_.notify_one();
    return true;
  }
  // nullopt once the channel is closed and drained.
  std::optional<T> recv() {
    std::unique_lock lk(mu_);
    not_empty_.wait(lk, [&] { return closed_ || !q_.empty(); });
    if (q_.empty()) return std::nullopt;
    T v = std::move(q_.front());
    q_.pop_front();
    not_full_.notify_one();
    return v;
  }
  void close() {
    std::unique_lock lk(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  Mutex mu_;
  CondVar not_empty_, not_full_;
  std::deque<T> q_;
  size_t cap_;
  bool closed_ = false;
};

}  // namespace platoon::rt
