// Per-CPU time counters from the kernel (/proc/stat's cpuN lines, read by the producers:
// bpf/collectors/proc_stat.hpp): where a CPU's time went that no thread of a target is charged
// for, stolen by the hypervisor or spent in interrupts.
#pragma once

#include <cstdint>

namespace platoon::snapshot {

struct CpuTimes {
  uint32_t cpu = 0;
  // Cumulative since boot, in USER_HZ ticks as the kernel reports them (exact: no rounding).
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
};

}  // namespace platoon::snapshot
