// /proc/stat's per-CPU lines as snapshot::CpuTimes (bpf/snapshot/cpu_times.hpp), and the tick
// they count in: what both producers put in a snapshot's cpus and tick_ns.
#pragma once

#include <string_view>
#include <vector>

#include "bpf/snapshot/cpu_times.hpp"

namespace platoon::collectors {

// The cpuN lines of a /proc/stat text (the aggregate "cpu" line is skipped); lines that do not
// parse are skipped too, so a malformed file yields fewer CPUs, never wrong numbers.
std::vector<snapshot::CpuTimes> parse_proc_stat(std::string_view text);
// /proc/stat now; empty when unreadable.
std::vector<snapshot::CpuTimes> read_proc_stat();
// Seconds per tick (1 / sysconf(_SC_CLK_TCK)).
double seconds_per_tick();

}  // namespace platoon::collectors
