// Fibers handed to a carrier by other threads (spawn, unpark), or the pool's shared submission
// queue. A mutex-protected FIFO: producers are other threads, consumers are the owner (all at
// once) and thieves (a share). `size` lets the owner check for work without the lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "runtime/fiber.hpp"

namespace platoon::rt {

class Inbox {
 public:
  void push(Fiber* f) {
    std::lock_guard lk(mu_);
    f->next = nullptr;
    if (tail_) tail_->next = f; else head_ = f;
    tail_ = f;
    size_.store(size_.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
  }

  uint32_t size() const { return size_.load(std::memory_order_seq_cst); }

  // Takes up to `max` fibers, oldest first, and hands each to `out`.
  template <typename Sink>
  uint32_t take(uint32_t max, Sink&& out) {
    if (size() == 0) return 0;
    Fiber* list;
    uint32_t n = 0;
    {
      std::lock_guard lk(mu_);
      list = head_;
      Fiber* last = nullptr;
      for (Fiber* f = head_; f && n < max; f = f->next) { last = f; ++n; }
      if (n == 0) return 0;
      head_ = last->next;
      if (!head_) tail_ = nullptr;
      last->next = nullptr;
      size_.store(size_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
    }
    while (list) {
      Fiber* f = list;
      list = f->next;
      f->next = nullptr;
      out(f);
    }
    return n;
  }

 private:
  std::mutex mu_;
  Fiber* head_ = nullptr;
  Fiber* tail_ = nullptr;
  std::atomic<uint32_t> size_{0};
};

}  // namespace platoon::rt
