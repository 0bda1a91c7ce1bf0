// Prometheus text exposition (format 0.0.4) of cumulative snapshots, for `platoon exporter`.
// Snapshot counters run from when watching started, which is what Prometheus counters are, so
// every per-thread number is exported as is and rate() makes the windows (rate of
// platoon_thread_wait_seconds_total = %wait / 100). The per-thread counter families are the
// metric catalog's (tui/metrics/catalog.hpp); the histograms are this file's own.
//
// Series stay bounded under thread churn:
//   - at most max_threads live threads are exported, the busiest (run + wait since watching
//     started) first; the others are counted (platoon_exporter_threads_over_limit) not shown;
//   - a thread that exits leaves the output at once, and its counters are folded into the
//     per-process platoon_exited_threads_* counters, so per-process totals stay monotonic;
//   - a process with no live threads left is dropped after one render has shown its final
//     exited-thread counters (or after five minutes unscraped).
// Pure model: no sockets, no BPF; the exporter feeds it snapshots and serves the text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/snapshot/bpf_cost.hpp"
#include "bpf/snapshot/snapshot.hpp"

namespace platoon::outputs {

// What the exporter knows beyond the snapshot, for its self-metrics.
struct PromScrapeInfo {
  std::string attach_mode;          // "tp_btf", "raw_tp" or "procfs"
  double snapshot_seconds = 0;      // time spent reading the source for this snapshot
  uint64_t snapshots = 0;           // snapshots taken so far (scrapes and housekeeping)
  // What the exporter itself costs: its BPF programs' cumulative counters (exported only when
  // the kernel counts, platoon_bpf_stats_enabled 1) and its own CPU time.
  snapshot::CostReading bpf_cost;
  double self_cpu_seconds = 0;
};

// Escapes a label value: backslash, double quote and newline (the exposition format's rules).
std::string prom_escape_label(std::string_view value);
// Escapes HELP text: backslash and newline.
std::string prom_escape_help(std::string_view text);

class PromExposition {
 public:
  explicit PromExposition(size_t max_threads) : max_threads_(max_threads == 0 ? 1 : max_threads) {}

  // Takes the newest snapshot: folds threads that exited (or vanished) since the last one into
  // their process's exited counters. process_names: pid → process name (/proc/PID/comm) where
  // the caller knows it; otherwise the leader thread's comm, otherwise the name seen before.
  void observe(snapshot::Snapshot snap, const std::map<uint32_t, std::string>& process_names = {});

  // The exposition of the last observed snapshot. Not const: it marks dead processes as shown,
  // so the next observe() may drop them.
  std::string render(const PromScrapeInfo& info);

  // For tests and the exporter's own bookkeeping.
  size_t processes_tracked() const { return processes_.size(); }
  size_t threads_tracked() const { return live_.size(); }

 private:
  struct Key {
    uint32_t tid = 0;
    uint64_t first_seen_ns = 0;     // tells a reused tid from the thread that had it before
    auto operator<=>(const Key&) const = default;
  };
  // The counters that outlive a thread (summed into its process when it exits): the thread
  // count, and one counter per exited threads' family of the catalog (prom_exited_metrics(),
  // in its order).
  struct Totals {
    uint64_t threads = 0;
    std::vector<uint64_t> counters;
    Totals();
    static Totals of(const snapshot::ThreadSample& t);
    Totals& operator+=(const Totals& o);
    void raise_to(const Totals& o);  // each counter to the larger of the two
  };
  struct LiveThread {
    uint32_t pid = 0;
    Totals last;                    // its counters in the last snapshot that had it
  };
  struct Process {
    std::string name;
    Totals exited;
    size_t live_threads = 0;        // in the last observed snapshot
    bool dead = false;              // no live threads in the last observed snapshot
    uint64_t dead_since_ns = 0;
    bool shown_dead = false;        // a render has shown it dead: the next observe drops it
  };

  void fold(uint32_t pid, const Totals& last);
  // Live thread counts and exited-thread counters per process; marks dead processes as shown.
  void render_processes(std::string& text, uint32_t fields);

  size_t max_threads_;
  snapshot::Snapshot snap_;                 // the last observed snapshot
  std::map<Key, LiveThread> live_;          // every live thread's last values, for folding
  std::set<Key> exited_folded_;             // exited reports folded by the last observe
  std::map<uint32_t, Process> processes_;
};

}  // namespace platoon::outputs
