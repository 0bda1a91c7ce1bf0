// Per-carrier counters: written by their carrier (wakeups: by its wakers), read by anyone (e.g.
// the server's /metrics). Each is described once, in PLATOON_CARRIER_COUNTERS; the live struct,
// the snapshot, Carrier::snapshot's copy and the /metrics families are generated from it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace platoon::rt {

// X(member, writer, family, help), in /metrics order:
//   member  the field of LiveCarrierStats and CarrierStats
//   writer  LiveCounter (the carrier only) or SharedCounter (any thread)
//   family  how /metrics exports it, which also names the family: counter (only grows:
//           platoon_carrier_<member>_total), gauge (a high-water mark: platoon_carrier_<member>)
//           or none (not exported by itself)
//   help    what it counts: the /metrics HELP line
// Sleeps are epoll_wait blocks on carriers and event loops, futex waits on pool workers.
// fibers_spawned/finished feed Runtime::live_fibers (platoon_fibers_live).
#define PLATOON_CARRIER_COUNTERS(X)                                                                   \
  X(cycles, LiveCounter, counter, "Carrier loop iterations (each starts with a poll).")              \
  X(io_events, LiveCounter, counter, "Event callbacks run by the carrier's loop.")                   \
  X(fibers_run, LiveCounter, counter, "Fiber resumptions.")                                          \
  X(queue_depth_high_water, LiveCounter, gauge, "Highest runnable queue depth seen at drain start.") \
  X(steals, LiveCounter, counter, "Successful steals by this carrier.")                              \
  X(stolen_fibers, LiveCounter, counter, "Fibers taken by this carrier's steals.")                   \
  X(sleeps, LiveCounter, counter, "Times the carrier blocked waiting for work.")                     \
  X(wakeups, SharedCounter, counter, "Wakeups written to the carrier by other threads.")             \
  X(budget_cuts, LiveCounter, counter, "Drains stopped by the time budget with fibers left.")        \
  X(off_home_runs, LiveCounter, counter, "Resumptions of fibers whose home is another carrier.")     \
  X(fibers_spawned, LiveCounter, none, "Fibers spawned by code running on this carrier.")            \
  X(fibers_finished, LiveCounter, none, "Fibers finished on this carrier.")

// Single writer, so relaxed load+store, no read-modify-write.
struct LiveCounter {
  std::atomic<uint64_t> v{0};
  void add(uint64_t n = 1) { v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  void max(uint64_t n) { if (n > v.load(std::memory_order_relaxed)) v.store(n, std::memory_order_relaxed); }
  uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

// Many writers: an atomic add.
struct SharedCounter {
  std::atomic<uint64_t> v{0};
  void add(uint64_t n = 1) { v.fetch_add(n, std::memory_order_relaxed); }
  uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

// The live counters.
struct LiveCarrierStats {
#define PLATOON_LIVE_MEMBER(member, writer, family, help) writer member;
  PLATOON_CARRIER_COUNTERS(PLATOON_LIVE_MEMBER)
#undef PLATOON_LIVE_MEMBER
};

// A snapshot, plain values.
struct CarrierStats {
  int index = 0;
  std::string name;
#define PLATOON_SNAPSHOT_MEMBER(member, writer, family, help) uint64_t member = 0;
  PLATOON_CARRIER_COUNTERS(PLATOON_SNAPSHOT_MEMBER)
#undef PLATOON_SNAPSHOT_MEMBER
};

// The list as data, for readers that iterate (the server's /metrics).
struct CarrierCounterInfo {
  const char* kind;    // the family column: "counter", "gauge" or "none"
  const char* metric;  // "" when not exported by itself
  const char* help;
  uint64_t CarrierStats::*value;
};

#define PLATOON_CARRIER_METRIC_counter(member) "platoon_carrier_" #member "_total"
#define PLATOON_CARRIER_METRIC_gauge(member) "platoon_carrier_" #member
#define PLATOON_CARRIER_METRIC_none(member) ""
inline constexpr CarrierCounterInfo kCarrierCounters[] = {
#define PLATOON_COUNTER_INFO(member, writer, family, help) \
  {#family, PLATOON_CARRIER_METRIC_##family(member), help, &CarrierStats::member},
    PLATOON_CARRIER_COUNTERS(PLATOON_COUNTER_INFO)
#undef PLATOON_COUNTER_INFO
};
#undef PLATOON_CARRIER_METRIC_counter
#undef PLATOON_CARRIER_METRIC_gauge
#undef PLATOON_CARRIER_METRIC_none

}  // namespace platoon::rt
