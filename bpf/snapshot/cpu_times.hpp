// Per-CPU time counters from the kernel (/proc/stat's cpuN lines): where a CPU's time went that
// no thread of a target is charged for, stolen by the hypervisor or spent in interrupts. Issue
// 15's steal and interrupt diagnoses start from these; the exporter serves them as counters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace platoon::model {

struct CpuTimes {
  uint32_t cpu = 0;
  // Cumulative since boot, in USER_HZ ticks as the kernel reports them (exact: no rounding).
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
};

// The cpuN lines of a /proc/stat text (the aggregate "cpu" line is skipped); lines that do not
// parse are skipped too, so a malformed file yields fewer CPUs, never wrong numbers.
std::vector<CpuTimes> parse_proc_stat(std::string_view text);
// /proc/stat now; empty when unreadable.
std::vector<CpuTimes> read_proc_stat();
// Seconds per tick (1 / sysconf(_SC_CLK_TCK)).
double seconds_per_tick();

}  // namespace platoon::model
