// Per-carrier counters: written by their carrier only, read by anyone (e.g. the server's /metrics).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace platoon::rt {

// A snapshot, plain values.
struct CarrierStats {
  int index = 0;
  std::string name;
  uint64_t cycles = 0;          // loop iterations (each starts with a poll)
  uint64_t io_events = 0;       // event callbacks run by this carrier's loop
  uint64_t fibers_run = 0;      // fiber resumptions
  uint64_t queue_depth_hwm = 0; // highest runnable-queue depth seen at drain start
  uint64_t steals = 0;          // successful steal operations by this carrier
  uint64_t stolen_fibers = 0;   // fibers taken by those steals
  uint64_t sleeps = 0;          // times it blocked in epoll_wait (or futex for workers)
  uint64_t wakeups = 0;         // wakeups written to it by other threads
  uint64_t off_home_runs = 0;   // resumptions of fibers whose home is another carrier
  uint64_t budget_cuts = 0;     // drains stopped by the budget with work left
  uint64_t fibers_spawned = 0;  // spawned by code running on this carrier
  uint64_t fibers_finished = 0; // finished on this carrier
};

// The live counters. Single writer (the carrier), so relaxed load+store, no read-modify-write.
struct LiveCounter {
  std::atomic<uint64_t> v{0};
  void add(uint64_t n = 1) { v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  void max(uint64_t n) { if (n > v.load(std::memory_order_relaxed)) v.store(n, std::memory_order_relaxed); }
  uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

struct LiveCarrierStats {
  LiveCounter cycles, io_events, fibers_run, queue_depth_hwm, steals, stolen_fibers, sleeps,
      off_home_runs, budget_cuts, fibers_spawned, fibers_finished;
  std::atomic<uint64_t> wakeups{0};  // written by wakers, many threads
};

}  // namespace platoon::rt
