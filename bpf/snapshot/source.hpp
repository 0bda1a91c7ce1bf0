// The one interface every producer of snapshots offers its consumers: the BPF collector and the
// procfs sampler (bpf/collectors/sources.hpp), and a recording played back
// (tui/trace/replay_source.hpp). A consumer written against it (a window over two snapshots,
// a loop of intervals) runs unchanged over a live target or a trace file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bpf/snapshot/snapshot.hpp"

namespace platoon::model {

// What the producer's own kernel programs have cost so far: the kernel's cumulative counters
// per program (bpf_prog_info), read at one instant. Two readings make a rate
// (tui/analysis/observer_cost.hpp).
struct ProgramCost {
  std::string name;
  uint64_t run_cnt = 0;
  uint64_t run_time_ns = 0;
  uint64_t misses = 0;            // runs the kernel skipped (the program already active on that CPU)
};
enum class BpfStats : uint8_t {
  none,      // the source runs no BPF programs (procfs, a replay): nothing to cost
  on,        // the kernel counts run time: the programs' figures are real
  unknown,   // it does not (stats off, --no-bpf-stats, no permission, old kernel): `why` says
};
inline const char* to_string(BpfStats s) {
  return s == BpfStats::on ? "on" : s == BpfStats::unknown ? "unknown" : "none";
}
// How a live source has the kernel count its programs' run time. Counting costs two clock
// reads per program run (~40 ns), so by default it is on for a short window of every period
// and the rates are taken over the counted time (bpf/collectors/bpf_cost_sampler.hpp).
enum class BpfStatsMode : uint8_t {
  off,       // --no-bpf-stats: counted only if someone else turned the stats on
  sampled,   // on for kStatsSampleOnNs of every kStatsSamplePeriodNs (the default)
  always,    // --bpf-stats-always: on for as long as the source lives
};
inline constexpr uint64_t kStatsSampleOnNs = 100'000'000;
inline constexpr uint64_t kStatsSamplePeriodNs = 1'000'000'000;
// The two above in words, for help texts and metric descriptions: change them together.
inline constexpr const char* kStatsSampleText = "100 ms of every second";
struct CostReading {
  BpfStats stats = BpfStats::none;
  std::string why;                // how the stats are on, or why they are not
  // Sampled: the runs and run time counted within the sampling windows so far (misses are
  // counted by the kernel always, so they are the whole count), and the windows' total length.
  // Otherwise the kernel's counters as they are, and counted_ns 0.
  std::vector<ProgramCost> programs;
  bool sampled = false;
  uint64_t counted_ns = 0;
};

class SnapshotSource {
 public:
  // One raw event record (bpf/platoon.h), valid only during the call.
  using EventSink = std::function<void(const void* record, size_t size)>;
  virtual ~SnapshotSource() = default;

  // The cumulative counters now (live), or the next recorded snapshot (replay).
  virtual Snapshot snapshot() = 0;
  // Once per interval: with --comm or following forks, pick up the processes the kernel's
  // exec/fork hooks added (or missed) so that their runtime probes get attached too; BPF also
  // ages idle preemptor/waker pairs out of its map here. (procfs rescans in snapshot().)
  virtual void refresh() {}
  // Waits up to timeout_ms for raw event records and hands each to sink; returns how many.
  // Sources without events just wait.
  virtual int events(int timeout_ms, const EventSink& sink) = 0;
  virtual Source source() const = 0;
  virtual std::string attach_mode() const = 0;   // "tp_btf", "raw_tp" or "procfs"
  // What the consumer should know about the data: what the source lacks, why BPF was not used.
  virtual std::vector<std::string> notes() const = 0;
  // "bpf cost: PROGRAM N ns/run over M runs" per program that ran, when the kernel counts (the
  // source holds the stats on, bpf/collectors/bpf_stats.hpp, or kernel.bpf_stats_enabled=1);
  // empty otherwise.
  virtual std::vector<std::string> cost_notes() const { return {}; }
  // The same counters as a structure, with whether they can be trusted; a source without BPF
  // programs says BpfStats::none.
  virtual CostReading cost() const { return {BpfStats::none, "no BPF programs", {}}; }
};

}  // namespace platoon::model
