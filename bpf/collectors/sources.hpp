// The live producers behind snapshot::SnapshotSource: the BPF collector when it can load, the
// procfs sampler otherwise (or when asked). The fallback rule lives here, once, so that every
// live consumer agrees on it and on what each source lacks.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpf/collectors/bpf_cost_sampler.hpp"
#include "bpf/collectors/collector.hpp"
#include "bpf/snapshot/source.hpp"

namespace platoon::collectors {

// What to watch and how: the collector's options, plus the choice of procfs (which reads only
// pids, comm and follow_forks of them).
struct SourceOptions : CollectorOptions {
  bool procfs = false;          // sample /proc instead of loading BPF
  // How the kernel counts the programs' run time, so that cost() can say what they cost
  // (bpf_cost_sampler.hpp); off reads the counters only if someone else turned them on.
  BpfStatsMode bpf_stats = BpfStatsMode::off;
};

// BPF, or procfs when asked or when BPF lacks privileges, BTF or kernel support; null on any
// other failure with a one-line error. `note` says why BPF was not used when it fell back.
std::unique_ptr<snapshot::SnapshotSource> open_source(const SourceOptions& opt, std::string& error, std::string& note);

// The procfs sampler alone; `reason` (why BPF was not used) joins its notes.
std::unique_ptr<snapshot::SnapshotSource> open_procfs_source(const SourceOptions& opt, std::string& error,
                                                          std::string reason = {});

}  // namespace platoon::collectors
