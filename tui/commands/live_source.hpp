// A live producer of snapshots for a target: the BPF collector when it can load, the procfs
// sampler otherwise (or when asked). record, top, doctor --pid and the exporter all read
// through this, so they agree on the fallback and on what each source lacks.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tui/commands/commands.hpp"
#include "bpf/snapshot/snapshot.hpp"

namespace platoon::cli {

class LiveSource {
 public:
  using EventSink = std::function<void(const void* record, size_t size)>;
  virtual ~LiveSource() = default;

  // pids: the resolved target processes (for -- CMD, the launched child). On failure returns
  // null and a one-line error; `note` says why BPF was not used when it fell back to procfs.
  static std::unique_ptr<LiveSource> open(const LiveOptions& opt, const std::vector<pid_t>& pids,
                                          bool record_events, std::string& error, std::string& note);

  virtual model::Snapshot snapshot() = 0;
  // Once per interval: with --comm or following forks, pick up the processes the kernel's
  // exec/fork hooks added (or missed) so that their runtime probes get attached too; BPF also
  // ages idle preemptor/waker pairs out of its map here. (procfs rescans in snapshot().)
  virtual void refresh() {}
  // Waits up to timeout_ms for raw event records (BPF) and hands each to sink; procfs just waits.
  virtual int poll_events(int timeout_ms, const EventSink& sink) = 0;
  virtual model::Source source() const = 0;
  virtual std::string attach_mode() const = 0;   // "tp_btf", "raw_tp" or "procfs"
  virtual std::vector<std::string> notes() const = 0;
  // "bpf cost: PROGRAM N ns/run over M runs" per program that ran, when the kernel counts
  // (sysctl kernel.bpf_stats_enabled=1); empty otherwise.
  virtual std::vector<std::string> cost_notes() const { return {}; }
};

}  // namespace platoon::cli
