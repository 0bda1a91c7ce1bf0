// A Window is what every consumer (top, report, export, doctor) computes from two snapshots:
// per-thread deltas and the rates, shares and percentiles derived from them, per-process totals
// and the losses over the same interval. One function builds it so that every view agrees.
//
// Thread identity is (tid, first_seen_ns): a tid the kernel reuses for a new thread is a new
// thread, with a zero baseline, not a continuation of the old one.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tui/analysis/histogram.hpp"
#include "tui/analysis/wait_causes.hpp"
#include "bpf/snapshot/snapshot.hpp"

namespace platoon::analysis {

struct Peer {                  // a preemptor or a waker of one thread over the window
  uint32_t tid = 0;
  uint32_t pid = 0;
  std::string comm;
  uint64_t count = 0;
  uint64_t ns = 0;             // preempted_by: wait that followed; woken_by: 0
};
inline constexpr size_t kTopPeers = 5;

struct IoWindow {              // epoll wait calls of one thread
  uint64_t cycles = 0;
  double cycles_per_s = 0;
  uint64_t events = 0;
  double events_per_cycle = 0;
  Slots events_hist;           // (events returned, calls), non-zero slots; last slot = 64+
  double blocked_pct = 0;      // share of the window spent inside the wait calls
};

struct DrainWindow {           // runtime drains (platoon-runtime targets only)
  uint64_t batches = 0;
  double queue_depth_avg = 0;
  Slots queue_depth_hist;
  double fibers_per_drain = 0;
  uint64_t steals = 0;
  uint64_t stolen_fibers = 0;
};

struct ThreadWindow {
  uint32_t tid = 0;
  uint32_t pid = 0;
  std::string comm;
  uint64_t first_seen_ns = 0;
  bool born = false;           // not in the baseline snapshot: counted from zero
  bool exited = false;         // gone by the end of the window: its last sample counts
  snapshot::ThreadSample delta;  // counters over the window (identity fields copied from the end)

  double cpu_pct = 0;          // run_ns / wall × 100
  double wait_pct = 0;         // wait_ns / wall × 100 (pidstat's %wait)
  WaitSplit wait_split;        // wait_pct by cause (wait_causes.hpp)
  std::string cgroup;          // its CPU cgroup (CgroupWindow::path), "" unknown
  double cswch_per_s = 0;
  double nvcswch_per_s = 0;
  uint64_t migrations = 0;
  double migrations_per_s = 0;
  std::vector<std::pair<uint32_t, double>> cpu_distribution;  // (cpu, % of switch-ins), non-zero
  double cpu_other_pct = 0;    // % of switch-ins on CPUs beyond the kernel's per-thread slots (cpu_overflow)
  std::optional<LatencySummary> runq;     // when the source has run-queue histograms
  std::optional<IoWindow> io;             // when the source has it and the thread made calls
  std::optional<DrainWindow> drain;       // when the source has it and the thread drained
  std::vector<Peer> preempted_by;         // top kTopPeers by ns, then count
  std::vector<Peer> woken_by;

  uint64_t busy_ns() const { return delta.run_ns + delta.wait_ns; }
};

struct ProcessWindow {         // sums over the threads of one pid
  uint32_t pid = 0;
  std::string comm;            // the main thread's (tid == pid) comm when it is in the window
  uint32_t threads = 0;
  uint64_t run_ns = 0;
  uint64_t wait_ns = 0;
  double cpu_pct = 0;          // may exceed 100: one core = 100
  double wait_pct = 0;
  WaitSplit wait_split;
  uint64_t switches_voluntary = 0;
  uint64_t switches_involuntary = 0;
  double cswch_per_s = 0;
  double nvcswch_per_s = 0;
  uint64_t migrations = 0;
  double migrations_per_s = 0;
  uint64_t io_cycles = 0;
  uint64_t io_events = 0;
  double events_per_cycle = 0;
  uint64_t drains = 0;
  double queue_depth_avg = 0;
};

// One CPU over the window, from /proc/stat's counters: shares of the CPU's own time (all of its
// columns), as mpstat shows them.
struct CpuWindow {
  uint32_t cpu = 0;
  uint64_t steal_ns = 0, irq_ns = 0, softirq_ns = 0, idle_ns = 0;  // idle includes iowait
  double steal_pct = 0, irq_pct = 0, softirq_pct = 0, idle_pct = 0;
  double busy_pct = 0;         // user + nice + system
};

// One CPU cgroup that holds target threads, over the window (cpu.stat's counters).
struct CgroupWindow {
  std::string path;
  uint8_t version = 0;         // 1 or 2; 0: the group could not be read
  int64_t quota_us = -1;       // at the end of the window; -1 no limit
  uint64_t period_us = 0;
  double quota_cpus = 0;       // quota / period: how many CPUs the group may use; 0 no limit
  uint64_t periods = 0;        // enforcement periods that elapsed with the group runnable
  uint64_t throttled_periods = 0;
  uint64_t throttled_ns = 0;   // summed over the group's CPUs, as cpu.stat has it
  double throttled_periods_pct = 0;  // throttled_periods / periods × 100
  double usage_cpus = 0;       // CPU time used per wall second; 0 unknown
  uint32_t threads = 0;        // target threads in it at the end of the window
  uint64_t wait_throttled_ns = 0;    // their wait while the group was throttled
};

struct Losses {                // over the window, never hidden
  uint64_t lost_events = 0;
  uint64_t untracked_threads = 0;
  uint64_t lost_pairs = 0;
  uint64_t lost_targets = 0;
  uint64_t lost_requests = 0;
};

struct Window {
  uint64_t start_ns = 0;       // CLOCK_BOOTTIME of the baseline snapshot
  uint64_t end_ns = 0;
  double wall_s = 0;
  snapshot::Source source = snapshot::Source::bpf;
  uint32_t fields = 0;         // only the fields set here are meaningful
  std::vector<ThreadWindow> threads;       // sorted by tid, then first_seen_ns
  std::vector<ProcessWindow> processes;    // sorted by pid
  std::vector<CpuWindow> cpus;             // by CPU; empty when the source did not read them
  std::vector<CgroupWindow> cgroups;       // by path; the groups the threads are in
  std::vector<snapshot::RequestGroup> requests;  // by key, over the window (kFieldRequests)
  Losses losses;

  bool has(snapshot::Field f) const { return (fields & f) == f; }
};

Window make_window(const snapshot::Snapshot& from, const snapshot::Snapshot& to);
// A whole recording, first to last snapshot. Threads that vanished in between (exited, or
// dropped by the producer) count with the last snapshot that held them. Empty span: empty window.
Window make_window(std::span<const snapshot::Snapshot> recording);

// The same window as make_window(recording), built one snapshot at a time while keeping only
// the first snapshot, the latest one and the last sample (and pairs) of each thread that has
// vanished since: memory grows with threads, not with the recording's length. add() costs
// O(n log n) in the threads and pairs of the two snapshots involved.
//
// A recording of many short-lived threads would still grow without bound, so at most
// kKeepVanishedThreads vanished threads are kept: past it the least busy (cumulative run + wait)
// one is dropped and counted in dropped_threads().
inline constexpr size_t kKeepVanishedThreads = 1u << 15;

class RecordingWindow {
 public:
  void add(snapshot::Snapshot s);
  size_t snapshots() const { return count_; }
  uint64_t dropped_threads() const { return dropped_; }
  // One line when threads were dropped ("" otherwise), printed next to the reader's cap_note.
  std::string cap_note() const;
  Window window() const;

 private:
  struct Vanished {
    snapshot::ThreadSample sample;
    std::vector<snapshot::PairSample> pairs;
    uint64_t seq = 0;  // order of vanishing: the latest sample of a key wins, as in make_window
  };
  size_t count_ = 0;
  uint64_t seq_ = 0;
  uint64_t dropped_ = 0;
  snapshot::Snapshot first_;
  snapshot::Snapshot last_;
  std::vector<Vanished> vanished_;  // a min-heap by busy time once it is full
};

}  // namespace platoon::analysis
