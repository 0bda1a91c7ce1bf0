// A thread's CPU cgroup and what CFS bandwidth control does to it: the quota and period, and
// cpu.stat's periods, throttled periods and throttled time, as the producers read them
// (bpf/collectors/cgroup_cpu_reader.hpp: cgroup v1 or v2, wherever they are mounted).
#pragma once

#include <cstdint>
#include <string>

namespace platoon::snapshot {

struct CgroupCpu {              // cumulative counters, like ThreadSample
  std::string path;             // as /proc/<tid>/cgroup names it: "/" or "/kubepods/pod1/c1"
  uint8_t version = 0;          // 1 or 2; 0: the group could not be read
  int64_t quota_us = -1;        // -1: no limit
  uint64_t period_us = 0;
  uint64_t nr_periods = 0, nr_throttled = 0, throttled_ns = 0;
  uint64_t usage_ns = 0;        // v2 usage_usec, v1 cpuacct.usage where found; 0 unknown
};

}  // namespace platoon::snapshot
