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
#include "bpf/snapshot/cgroup_cpu.hpp"
#include "bpf/snapshot/cpu_times.hpp"
#include "bpf/snapshot/requests.hpp"
#include "bpf/snapshot/thread_fields.hpp"

namespace platoon::snapshot {

inline constexpr int kRunqSlots = PLATOON_RUNQ_SLOTS;    // log2 ns
inline constexpr int kBatchSlots = PLATOON_BATCH_SLOTS;  // 0..63, last = 64+
static_assert(PLATOON_DRAIN_DEPTH_SLOTS == PLATOON_BATCH_SLOTS,
              "drain_depth_hist is read as a linear histogram of kBatchSlots, as io_events_hist");
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
  kFieldWaitSplit = 1u << 9,    // wait_throttled_ns .. wait_idle_exit_ns
  kFieldWaitIrq = 1u << 10,     // wait_irq_ns is measured: the kernel accounts IRQ time
  kFieldsBpf = 0x7ff,
  kFieldsProcfs = kFieldRunWait | kFieldSwitches | kFieldMigrations,
  // Opt-in: filled only when asked for (--requests, or a view that shows them), so it is not
  // among what a BPF source "lacks" when nobody asked.
  kFieldRequests = 1u << 11,    // Snapshot::requests
  kFieldsKnown = kFieldsBpf | kFieldRequests,
};
// Names of the fields a mask lacks, for "source: procfs (lacks: ...)".
std::vector<std::string> missing_fields(uint32_t fields);

struct ThreadSample {
  // Identity and state: not counters; whoever copies, subtracts or stores a sample names them.
  uint32_t tid = 0;
  uint32_t pid = 0;
  std::string comm;
  bool exited = false;                  // gone; this is its last sample
  uint64_t first_seen_ns = 0;           // CLOCK_BOOTTIME, when the producer first saw it
  uint32_t last_cpu = 0;
  std::string cgroup;                   // its CPU cgroup's path (CgroupCpu::path); "" unknown

  // The cumulative quantities, one member per entry of the lists in thread_fields.hpp.
#define PLATOON_DECLARE_U64(name) uint64_t name = 0;
#define PLATOON_DECLARE_HIST(name, slots) std::array<uint64_t, slots> name{};
#define PLATOON_DECLARE_PER_CPU(name) std::vector<uint64_t> name;
  PLATOON_THREAD_FIELDS(PLATOON_DECLARE_U64, PLATOON_DECLARE_U64, PLATOON_DECLARE_HIST, PLATOON_DECLARE_PER_CPU)
#undef PLATOON_DECLARE_U64
#undef PLATOON_DECLARE_HIST
#undef PLATOON_DECLARE_PER_CPU
};

// Calls, in the list's order (the trace format's), one of the visitor's
//   counter(uint64_t ThreadSample::*, const char* name)
//   maximum(uint64_t ThreadSample::*, const char* name)
//   hist(std::array<uint64_t, N> ThreadSample::*, const char* name)
//   per_cpu(std::vector<uint64_t> ThreadSample::*, const char* name)
// for each entry of PLATOON_THREAD_FIELDS. constexpr, so that a visitor can also count and
// check the list at compile time (the trace codec does).
#define PLATOON_VISIT_COUNTER(name) v.counter(&ThreadSample::name, #name);
#define PLATOON_VISIT_MAX(name) v.maximum(&ThreadSample::name, #name);
#define PLATOON_VISIT_HIST(name, slots) v.hist(&ThreadSample::name, #name);
#define PLATOON_VISIT_PER_CPU(name) v.per_cpu(&ThreadSample::name, #name);
template <typename Visitor>
constexpr void for_each_thread_field(Visitor&& v) {
  PLATOON_THREAD_FIELDS(PLATOON_VISIT_COUNTER, PLATOON_VISIT_MAX, PLATOON_VISIT_HIST, PLATOON_VISIT_PER_CPU)
}
#undef PLATOON_VISIT_COUNTER
#undef PLATOON_VISIT_MAX
#undef PLATOON_VISIT_HIST
#undef PLATOON_VISIT_PER_CPU

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
  // The machine and the targets' groups at the same instant (empty: the producer did not read
  // them, or a recording older than these). cpus: /proc/stat's per-CPU times, in ticks of
  // tick_ns; cgroups: the CPU cgroups the threads name (ThreadSample::cgroup), sorted by path.
  std::vector<CpuTimes> cpus;
  uint64_t tick_ns = 0;
  std::vector<CgroupCpu> cgroups;
  // Requests on the targets' TCP connections (kFieldRequests), sorted by key; lost: records the
  // kernel could not write (ring full) and groups beyond the producer's bound.
  std::vector<RequestGroup> requests;
  uint64_t lost_requests = 0;
};

}  // namespace platoon::snapshot
