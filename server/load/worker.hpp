// A worker thread: its own libevent loop (precise timers, no time cache) driving its share of
// the connections, a 10 ms tick that samples Req/Sec and notices a stop request, and the
// warm-up reset and end of the run as timers.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/load/config.hpp"
#include "server/load/connection.hpp"
#include "server/load/stats.hpp"

struct event;

namespace platoon::load {

// The run's schedule, the same for every worker (CLOCK_MONOTONIC ns).
struct RunClock {
  int64_t t0 = 0;          // first intended send
  int64_t warmup_end = 0;  // == t0 without warm-up
  int64_t end = 0;         // warmup_end + duration
};

class Worker {
 public:
  // Worker `index` of cfg.threads drives connections index, index + threads, index + 2*threads ...
  // (round-robin, so that every thread's sends are spread over the whole period).
  Worker(const Config& cfg, int index);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // The event base and the connection objects; no I/O yet.
  bool setup(std::string& error);
  // Connects, runs the schedule until clock.end or until `stop` is seen, then closes everything.
  void run(const RunClock& clock, const std::atomic<bool>& stop);

  const ThreadStats& stats() const { return stats_; }

 private:
  static void on_tick(int, short, void* self);
  static void on_warmup_end(int, short, void* self);
  static void on_end(int, short, void* self);

  const Config& cfg_;
  int index_;
  ThreadStats stats_;
  LoopContext ctx_;
  std::vector<std::unique_ptr<Connection>> conns_;
  const std::atomic<bool>* stop_ = nullptr;
  int ticks_ = 0;
  int64_t window_start_ns_ = 0;
};

}  // namespace platoon::load
