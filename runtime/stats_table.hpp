// The runtime's per-carrier drain/steal aggregates, kept in its own memory for a tracer to read
// (platoon's collector reads them with process_vm_readv once per snapshot) instead of a uprobe
// trap per drain.
//
// Layout (part of the contract with bpf/collectors/runtime_stats_reader.cpp, versioned):
//   platoon_runtime_stats   the exported header, C linkage, found by symbol; its `slots` holds
//                           the address of the slot array (a separate, zero-filled object so
//                           the binary does not carry 160 KB of zeros in .data)
//   slot                    one per carrier thread (carrier, event loop or pool worker), claimed
//                           when the thread starts, released when it ends
//
// Consistency: one writer per slot (its carrier). Every update runs inside a seqlock: `seq` is
// odd while the carrier writes. A reader that reads seq, the slot, then seq again and finds the
// same even value has a consistent cut of the slot taken between two drains (or steals). x86
// stores are seen in program order (TSO), so the writer needs only compiler barriers.
//
// Cost: updated only while the USDT semaphore `stats` is raised (a tracer is attached); the
// carrier tests it once per drain. Counters are never reset while a thread holds the slot: a
// reader takes a baseline when it attaches.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>

#include "runtime/drain_counters.h"

#define PLATOON_RUNTIME_STATS_MAX_SLOTS 256
#define PLATOON_RUNTIME_STATS_MAGIC 0x53544154534c5450ull  // "PLTSTATS" little-endian
#define PLATOON_RUNTIME_STATS_VERSION 1u

extern "C" {

struct alignas(64) platoon_runtime_stats_slot {
  uint32_t seq;          // seqlock: odd while the carrier writes the slot
  int32_t tid;           // gettid() of the carrier thread; kept after release
  uint32_t in_use;       // 1 while the thread runs
  uint32_t pad;
  // The counters of PLATOON_DRAIN_COUNTERS, then its histograms (stats_table.cpp pins the
  // offsets: a reader in another process knows them).
#define PLATOON_SLOT_COUNTER(name) uint64_t name;
#define PLATOON_SLOT_HIST(name, slots) uint64_t name[slots];
#define PLATOON_SLOT_SKIP(...)
  PLATOON_DRAIN_COUNTERS(PLATOON_SLOT_COUNTER, PLATOON_SLOT_SKIP)
  PLATOON_DRAIN_COUNTERS(PLATOON_SLOT_SKIP, PLATOON_SLOT_HIST)
#undef PLATOON_SLOT_COUNTER
#undef PLATOON_SLOT_HIST
#undef PLATOON_SLOT_SKIP
};

struct platoon_runtime_stats_header {
  uint64_t magic;        // PLATOON_RUNTIME_STATS_MAGIC
  uint32_t version;      // PLATOON_RUNTIME_STATS_VERSION
  uint32_t slot_bytes;   // sizeof(platoon_runtime_stats_slot)
  uint32_t max_slots;
  uint32_t depth_slots;
  uint32_t slots_used;   // high-water mark: slots [0, slots_used) were claimed at least once
  uint32_t pad;
  uint64_t overflow;     // carrier threads that found every slot taken (not counted anywhere)
  platoon_runtime_stats_slot* slots;  // the slot array, max_slots of them
};

extern platoon_runtime_stats_header platoon_runtime_stats;
}

namespace platoon::rt {

// A carrier thread's claim on one slot (RAII: released at destruction). Empty when the table
// was full; updating an empty claim does nothing.
class StatsSlot {
 public:
  StatsSlot() = default;
  static StatsSlot claim(pid_t tid);
  ~StatsSlot() { release(); }
  StatsSlot(StatsSlot&& o) noexcept : slot_(o.slot_) { o.slot_ = nullptr; }
  StatsSlot& operator=(StatsSlot&& o) noexcept;
  StatsSlot(const StatsSlot&) = delete;
  StatsSlot& operator=(const StatsSlot&) = delete;

  explicit operator bool() const { return slot_ != nullptr; }
  int index() const;  // -1 when empty

  // The carrier's own thread only (single writer).
#define PLATOON_SLOT_ADD(name, n) bump(slot_->name, n);
#define PLATOON_SLOT_ADD_SLOT(name, i) bump(slot_->name[std::min<uint64_t>(i, std::size(slot_->name) - 1)], 1);
  void drain(uint32_t depth, uint32_t fibers_run, uint64_t ns) {
    if (!slot_) return;
    begin();
    PLATOON_ON_DRAIN(PLATOON_SLOT_ADD, PLATOON_SLOT_ADD_SLOT, depth, fibers_run, ns)
    end();
  }
  void steal(uint32_t count) {
    if (!slot_) return;
    begin();
    PLATOON_ON_STEAL(PLATOON_SLOT_ADD, count)
    end();
  }
#undef PLATOON_SLOT_ADD
#undef PLATOON_SLOT_ADD_SLOT

  void release();

 private:
  explicit StatsSlot(platoon_runtime_stats_slot* s) : slot_(s) {}
  // Single writer: a relaxed load and store, no read-modify-write (as LiveCounter).
  static void bump(uint64_t& field, uint64_t n) {
    std::atomic_ref<uint64_t> a(field);
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void begin() {
    std::atomic_ref<uint32_t> seq(slot_->seq);
    seq.store(seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);  // odd seq before the data
  }
  void end() {
    std::atomic_ref<uint32_t> seq(slot_->seq);
    seq.store(seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  platoon_runtime_stats_slot* slot_ = nullptr;
};

}  // namespace platoon::rt
