// A thread's CPU cgroup and what CFS bandwidth control does to it: the quota and period, and
// cpu.stat's periods, throttled periods and throttled time. cgroup v2 (cpu.max, cpu.stat in
// usec) and v1's cpu controller (cpu.cfs_quota_us, cpu.cfs_period_us, cpu.stat in ns), wherever
// /proc/self/mountinfo says they are mounted; the hierarchy that holds the cpu controller wins.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace platoon::model {

struct CgroupCpu {              // cumulative counters, like ThreadSample
  std::string path;             // as /proc/<tid>/cgroup names it: "/" or "/kubepods/pod1/c1"
  uint8_t version = 0;          // 1 or 2; 0: the group could not be read
  int64_t quota_us = -1;        // -1: no limit
  uint64_t period_us = 0;
  uint64_t nr_periods = 0, nr_throttled = 0, throttled_ns = 0;
  uint64_t usage_ns = 0;        // v2 usage_usec, v1 cpuacct.usage where found; 0 unknown
};

// ---- parsers of the kernel's texts (pure, for tests and fuzzing) ----

struct CgroupRef {
  std::string path;
  uint8_t version = 0;          // 0: none found
};
// /proc/<pid>/cgroup: the v1 line whose controllers include "cpu", else the v2 "0::" line.
CgroupRef parse_proc_cgroup(std::string_view text);

struct CgroupMounts {
  std::string v1_cpu;           // mount point of the v1 hierarchy with the cpu controller
  std::string v1_cpu_root;      // the mount's root within the hierarchy (field 4; "/" normally)
  std::string v2;               // mount point of cgroup2
  std::string v2_root;
};
CgroupMounts parse_mountinfo(std::string_view text);

// cpu.stat's throttling counters into g (v1 throttled_time is ns, v2 throttled_usec is µs).
void parse_cpu_stat(std::string_view text, uint8_t version, CgroupCpu& g);
// cpu.max "QUOTA PERIOD" or "max PERIOD" (v2).
bool parse_cpu_max(std::string_view text, CgroupCpu& g);

// ---- the reader ----

class CgroupCpuReader {
 public:
  // Discovers the mounts now (from proc_root/self/mountinfo).
  explicit CgroupCpuReader(std::string proc_root = "/proc");

  // The CPU cgroup path of a thread, nullopt when none is found or the process is gone.
  std::optional<std::string> path_of(pid_t pid, pid_t tid) const;
  // The group's quota and counters; nullopt when its directory cannot be read (another cgroup
  // namespace, a group removed since).
  std::optional<CgroupCpu> read(const std::string& path) const;
  // Which hierarchy the reader uses: 1, 2, or 0 when the machine has no cpu controller.
  uint8_t version() const;
  // The group's directory ("" when unknown), e.g. for tests and doctor's evidence.
  std::string directory(const std::string& path) const;

 private:
  std::string proc_root_;
  CgroupMounts mounts_;
  bool v2_has_cpu_ = false;     // the v2 root lists "cpu" in cgroup.controllers
};

}  // namespace platoon::model
