// The BPF collector: loads bpf/platoon.bpf.c, attaches it to the target processes and turns
// its maps into snapshot::Snapshot (and, when recording, hands out the ring-buffer records).
//
//   auto c = Collector::open({.pids = {pid}}, &kind, &message);   // nullptr + one-line message
//   snapshot::Snapshot a = c->snapshot(); ... snapshot::Snapshot b = c->snapshot();
//
// Counting starts when the programs attach. Threads that exist then are seeded by a task
// walk (tp_btf mode): a thread on a CPU counts run from the attach instant, a queued one
// counts wait from it. Threads created later are seen from their first wakeup (wakeup_new).
// In raw_tp mode there is no walk: existing threads appear at their first event and their
// first interval (the run or wait in progress at attach) is not counted.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bpf/snapshot/snapshot.hpp"

namespace platoon::collectors {

struct CollectorOptions {
  std::vector<pid_t> pids;              // target processes (tgids)
  std::string comm;                     // and/or: processes whose name is this (now and later)
  // Whole-machine mode: every process but platoon itself, in the kernel's own filter (the
  // target set stays empty; `stats` and `pairs` bound what is kept, with losses counted).
  bool all = false;
  // A cgroup directory (cgroup_members.hpp): its processes and its descendant groups' are the
  // targets, re-read at every refresh(); processes that left are dropped, forks followed.
  std::string cgroup_dir;
  bool record_events = false;           // fill the ring buffer (poll_events)
  size_t ringbuf_bytes = 16u << 20;     // rounded up to a power of two pages
  bool attach_usdt = true;              // runtime probes of platoon-runtime targets
  // Raw drain and steal events of targets whose runtime keeps its own aggregates (the stats
  // table, read from memory per snapshot): a uprobe trap per drain, so only when asked for
  // (with record_events). Targets without the table always book per probe hit.
  bool drain_events = false;
  // Requests on the targets' TCP connections (bpf/requests.bpf.h; tp_btf only): each completed
  // request is summed into the snapshots' requests and, with record_events, handed to
  // poll_events' sink as a PLATOON_EV_REQUEST record.
  bool requests = false;
  // What the consumers need (snapshot::Field bits, e.g. from the metric catalog's needed_fields):
  // the epoll programs load only for kFieldIo, the runtime probes only for kFieldDrain.
  uint32_t fields = snapshot::kFieldsBpf;
  bool verbose = false;                 // libbpf's debug output to stderr
  bool force_raw_tp = false;            // skip tp_btf (tests, old kernels)
  // Processes forked by a target become targets, in the kernel at sched_process_fork (perf's
  // inherit), and so do the targets' existing descendants at open.
  bool follow_forks = false;
  // Map bounds (entries). A target thread that finds `stats` full is counted once in
  // untracked_threads; a pair that finds `pairs` full, in lost_pairs.
  uint32_t threads_max = PLATOON_MAX_THREADS;
  uint32_t pairs_max = PLATOON_MAX_PAIRS;
  // A pair whose counts did not change for this long leaves the kernel map (refresh() and
  // snapshot() check); its counts stay in user space and keep being reported, so snapshots
  // stay cumulative while the map holds only the pairs that are active. 0: never.
  double pair_idle_s = 10.0;
  // Per-CPU switch-in slots per thread, at most PLATOON_MAX_CPUS; switch-ins on CPUs beyond
  // land in ThreadSample::cpu_overflow. Lowered only by tests (to see overflow on a 2-CPU machine).
  uint32_t cpu_slots = PLATOON_MAX_CPUS;
};

// unsupported: the kernel cannot load even the smallest program set (the message carries
// libbpf's reason); callers fall back to procfs as for permission and no_btf.
enum class OpenError { none, permission, no_btf, no_such_process, unsupported, other };

class Collector {
 public:
  // nullptr on failure, with the kind and a one-line message (no trailing newline).
  static std::unique_ptr<Collector> open(const CollectorOptions& opts, OpenError* kind,
                                         std::string* message);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Reads every map. In-flight intervals (a thread on a CPU now, or queued now) are included
  // up to the snapshot instant. Exited threads are returned once (exited = true), then their
  // entries and pairs are deleted.
  snapshot::Snapshot snapshot();

  // Ring-buffer records (bpf/platoon.h layouts, raw bytes) to `sink`; returns the number of
  // records consumed, or a negative errno. 0 records and no waiting without record_events.
  // timeout_ms == 0 consumes what is there without a system call (so a collector that
  // watches its own process does not generate an epoll record per poll).
  int poll_events(int timeout_ms, const std::function<void(const void*, size_t)>& sink);

  // Watch another process (a child started by `record -- CMD`, a new --comm match). Also
  // attaches the runtime probes to it and seeds its existing threads. False if it is gone.
  bool add_pid(pid_t tgid);

  // Stop watching a process (it left the --cgroup): its threads leave the kernel map and the
  // snapshots. False if it was not a target.
  bool drop_pid(pid_t tgid);

  // Processes whose comm matches options.comm, found in /proc now (the exec/fork hooks catch
  // later ones in the kernel); they are added. Returns how many were new.
  size_t rescan_comm();

  // Once per interval: rescan_comm(), the --cgroup's members joined and left, adopt the processes the kernel added by itself (forks
  // followed, comm matches at exec) so that their runtime probes get attached, and age idle
  // pairs out of the kernel map.
  void refresh();

  const char* attach_mode() const;      // "tp_btf" or "raw_tp"
  // Where the thread entries live: "task storage" (tp_btf, 5.11+) or "hash"
  // (bpf/collectors/thread_entries.hpp).
  const char* thread_store() const;
  // What the load dropped (features the kernel lacks) and what attached, one line each.
  std::vector<std::string> notes() const;
  uint32_t fields() const;              // snapshot::Field bits the snapshots fill
  size_t pairs_in_kernel() const;       // entries in the kernel pair map now (tests)

  struct ProgramStats {
    std::string name;
    uint64_t run_cnt = 0;
    uint64_t run_time_ns = 0;
    uint64_t recursion_misses = 0;      // runs the kernel skipped (program already active on that CPU)
  };
  // Per loaded program, from bpf_prog_info; zero unless kernel.bpf_stats_enabled=1.
  std::vector<ProgramStats> program_stats() const;

  struct Impl;

 private:
  explicit Collector(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::collectors
