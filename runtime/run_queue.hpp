// A carrier's local run queue: a 256-slot ring that siblings may steal from (tokio's design:
// the owner pushes at the tail, everyone takes from the head with a CAS), backed by an
// owner-only overflow list that keeps FIFO order when the ring is full.
//
// With stealing disabled runtime-wide no other thread ever touches the head, so the owner's pop
// skips the CAS (`stealable` false).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>

namespace platoon::rt {

class Fiber;

class RunQueue {
 public:
  static constexpr uint32_t kCapacity = 256;

  explicit RunQueue(bool stealable) : stealable_(stealable) {}

  // Owner only.
  void push(Fiber* f) {
    if (overflow_.empty()) {
      const uint32_t t = tail_.load(std::memory_order_relaxed);
      const uint32_t h = head_.load(std::memory_order_acquire);
      if (t - h < kCapacity) {
        slots_[t % kCapacity].store(f, std::memory_order_relaxed);
        tail_.store(t + 1, std::memory_order_release);
        return;
      }
    }
    overflow_.push_back(f);
  }

  // Owner only. FIFO: the ring holds the oldest fibers, the overflow the newer ones.
  Fiber* pop() {
    Fiber* f = pop_ring();
    if (f || overflow_.empty()) return f;
    refill_from_overflow();
    return pop_ring();
  }

  // Owner only: fibers queued right now.
  uint32_t size() const {
    return ring_size() + static_cast<uint32_t>(overflow_.size());
  }
  bool empty() const { return size() == 0; }

  // Any thread: roughly how many fibers a thief could take.
  uint32_t stealable_size() const { return ring_size(); }

  // Thief: moves up to half of the ring (at least one) into `out` (owner side of the thief's
  // own queue is not touched here). Returns how many were taken.
  template <typename Sink>
  uint32_t steal_half(Sink&& out) {
    for (;;) {
      uint32_t h = head_.load(std::memory_order_acquire);
      const uint32_t t = tail_.load(std::memory_order_acquire);
      const uint32_t n = t - h;
      if (n == 0 || n > kCapacity) return 0;
      const uint32_t take = n - n / 2;
      std::array<Fiber*, kCapacity> grabbed;
      for (uint32_t i = 0; i < take; ++i)
        grabbed[i] = slots_[(h + i) % kCapacity].load(std::memory_order_relaxed);
      // The CAS fails if the owner or another thief moved the head meanwhile; only then could
      // the slots we read have been reused.
      if (head_.compare_exchange_weak(h, h + take, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        for (uint32_t i = 0; i < take; ++i) out(grabbed[i]);
        return take;
      }
    }
  }

 private:
  uint32_t ring_size() const {
    return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire);
  }

  Fiber* pop_ring() {
    uint32_t h = head_.load(std::memory_order_acquire);
    for (;;) {
      const uint32_t t = tail_.load(std::memory_order_relaxed);
      if (h == t) return nullptr;
      Fiber* f = slots_[h % kCapacity].load(std::memory_order_relaxed);
      if (!stealable_) {
        head_.store(h + 1, std::memory_order_release);
        return f;
      }
      if (head_.compare_exchange_weak(h, h + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
        return f;
    }
  }

  void refill_from_overflow() {
    while (!overflow_.empty()) {
      const uint32_t t = tail_.load(std::memory_order_relaxed);
      const uint32_t h = head_.load(std::memory_order_acquire);
      if (t - h >= kCapacity) break;
      slots_[t % kCapacity].store(overflow_.front(), std::memory_order_relaxed);
      tail_.store(t + 1, std::memory_order_release);
      overflow_.pop_front();
    }
  }

  const bool stealable_;
  alignas(64) std::atomic<uint32_t> head_{0};
  alignas(64) std::atomic<uint32_t> tail_{0};
  std::array<std::atomic<Fiber*>, kCapacity> slots_{};
  std::deque<Fiber*> overflow_;
};

}  // namespace platoon::rt
