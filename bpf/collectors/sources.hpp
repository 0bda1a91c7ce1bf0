// The live producers behind model::SnapshotSource: the BPF collector when it can load, the
// procfs sampler otherwise (or when asked). The fallback rule lives here, once, so that every
// live consumer agrees on it and on what each source lacks.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpf/snapshot/source.hpp"

namespace platoon::bpf {

struct SourceOptions {
  std::vector<pid_t> pids;      // target processes (for -- CMD, the launched child)
  std::string comm;             // and/or: processes with this name, now and later
  bool follow_forks = false;    // processes the targets fork become targets
  bool procfs = false;          // sample /proc instead of loading BPF
  bool record_events = false;   // raw events (BPF only)
  size_t ringbuf_bytes = 16u << 20;
  bool raw_tp = false;          // force the raw_tp attach (tests and old kernels)
  bool verbose = false;         // libbpf's own messages
  bool usdt = true;             // the runtime's USDT probes, when the target has them
  uint32_t threads_max = 0;     // 0: the collector's defaults (collector.hpp)
  uint32_t pairs_max = 0;
  double pair_idle_s = 0;
};

// BPF, or procfs when asked or when BPF lacks privileges, BTF or kernel support; null on any
// other failure with a one-line error. `note` says why BPF was not used when it fell back.
std::unique_ptr<model::SnapshotSource> open_source(const SourceOptions& opt, std::string& error, std::string& note);

// The procfs sampler alone; `reason` (why BPF was not used) joins its notes.
std::unique_ptr<model::SnapshotSource> open_procfs_source(const SourceOptions& opt, std::string& error,
                                                          std::string reason = {});

}  // namespace platoon::bpf
