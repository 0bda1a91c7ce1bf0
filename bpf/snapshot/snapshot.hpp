// The one model every consumer reads: a Snapshot holds, for each watched thread, its counters
// cumulative since the producer started watching it, taken at one instant. Two snapshots give a
// window (Window in window.hpp). Producers: the BPF collector (bpf/collectors/collector.hpp), the procfs
// sampler (procfs_sampler.hpp) and the trace reader (trace_reader.hpp), so top, report, export
// and doctor never care where the numbers came from.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bpf/platoon.h"

namespace platoon::model {

inline constexpr int kRunqSlots = PLATOON_RUNQ_SLOTS;    // log2 ns
inline constexpr int kBatchSlots = PLATOON_BATCH_SLOTS;  // 0..63, last = 64+
inline constexpr int kMaxCpus = PLATOON_MAX_CPUS;

enum class Source : uint8_t { bpf = 0, procfs = 1 };
const char* to_string(Source s);

// Which fields a producer fills; procfs lacks everything from run-queue histograms down.
enum Field : uint32_t {
  kFieldRunWait = 1u << 0,      // run_ns, wait_ns
  kFieldSwitches = 1u << 1,     // switches_voluntary / involuntary
  kFieldMigrations = 1u << 2,
  kFieldCpuDist = 1u << 3,      // cpu_switch_ins
  kFieldRunqHist = 1u << 4,     // runq_hist, runq_max_ns
  kFieldPairs = 1u << 5,        // preempted_by, woken_by
  kFieldIo = 1u << 6,           // epoll cycles and histogram
  kFieldDrain = 1u << 7,        // runtime USDT: drains, queue depth, steals
  kFieldWakeups = 1u << 8,
  kFieldsBpf = 0x1ff,
  kFieldsProcfs = kFieldRunWait | kFieldSwitches | kFieldMigrations,
};
// Names of the fields a mask lacks, for "source: procfs (lacks: ...)".
std::vector<std::string> missing_fields(uint32_t fields);

struct ThreadSample {
  uint32_t tid = 0;
  uint32_t pid = 0;
  std::string comm;
  bool exited = false;                  // gone; this is its last sample
  uint64_t first_seen_ns = 0;           // CLOCK_BOOTTIME, when the producer first saw it
  uint32_t last_cpu = 0;

  uint64_t run_ns = 0;
  uint64_t wait_ns = 0;
  uint64_t switches_voluntary = 0;
  uint64_t switches_involuntary = 0;
  uint64_t switch_ins = 0;
  uint64_t migrations = 0;
  uint64_t wakeups = 0;
  uint64_t runq_max_ns = 0;
  std::array<uint64_t, kRunqSlots> runq_hist{};
  std::vector<uint64_t> cpu_switch_ins;  // index = CPU; may be shorter than the CPU count
  uint64_t cpu_overflow = 0;            // switch-ins on CPUs without a slot (>= kMaxCpus)

  uint64_t io_cycles = 0;
  uint64_t io_events = 0;
  uint64_t io_blocked_ns = 0;
  std::array<uint64_t, kBatchSlots> io_events_hist{};

  uint64_t drains = 0;
  uint64_t drain_depth_sum = 0;
  std::array<uint64_t, kBatchSlots> drain_depth_hist{};
  uint64_t drain_fibers_run = 0;
  uint64_t drain_ns = 0;
  uint64_t steals = 0;
  uint64_t stolen_fibers = 0;
  uint64_t polls = 0;
  uint64_t poll_events = 0;
};

enum class PairKind : uint8_t { preempted_by = PLATOON_PAIR_PREEMPTED_BY, woken_by = PLATOON_PAIR_WOKEN_BY };

struct PairSample {                     // cumulative, like ThreadSample
  uint32_t tid = 0;
  PairKind kind = PairKind::preempted_by;
  uint32_t other_tid = 0;
  uint32_t other_pid = 0;
  std::string other_comm;
  uint64_t count = 0;
  uint64_t ns = 0;
};

struct Snapshot {
  uint64_t ts_ns = 0;                   // CLOCK_BOOTTIME when it was taken
  Source source = Source::bpf;
  uint32_t fields = kFieldsBpf;
  std::vector<ThreadSample> threads;    // sorted by tid
  std::vector<PairSample> pairs;
  // Losses, cumulative since the producer started: never hidden.
  std::vector<uint64_t> lost_events_per_cpu;  // ring buffer full (recording only)
  uint64_t untracked_threads = 0;       // stats map full
  uint64_t lost_pairs = 0;              // pair map full
  uint64_t lost_targets = 0;            // target map full
  uint64_t lost_events() const;         // sum of lost_events_per_cpu
};

}  // namespace platoon::model
