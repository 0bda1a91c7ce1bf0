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

#include "bpf/snapshot/bpf_cost.hpp"
#include "bpf/snapshot/snapshot.hpp"

namespace platoon::snapshot {

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

}  // namespace platoon::snapshot
