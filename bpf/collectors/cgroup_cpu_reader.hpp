// Reads a thread's CPU cgroup and its CFS bandwidth counters (snapshot::CgroupCpu,
// bpf/snapshot/cgroup_cpu.hpp): cgroup v2 (cpu.max, cpu.stat in usec) and v1's cpu controller
// (cpu.cfs_quota_us, cpu.cfs_period_us, cpu.stat in ns), wherever /proc/self/mountinfo says they
// are mounted; the hierarchy that holds the cpu controller wins.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bpf/snapshot/cgroup_cpu.hpp"

namespace platoon::collectors {

// ---- parsers of the kernel's texts (pure: tests feed them texts) ----

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
void parse_cpu_stat(std::string_view text, uint8_t version, snapshot::CgroupCpu& g);
// cpu.max "QUOTA PERIOD" or "max PERIOD" (v2).
bool parse_cpu_max(std::string_view text, snapshot::CgroupCpu& g);

// ---- the reader ----

class CgroupCpuReader {
 public:
  // Discovers the mounts now (from proc_root/self/mountinfo).
  explicit CgroupCpuReader(std::string proc_root = "/proc");

  // The CPU cgroup path of a thread, nullopt when none is found or the process is gone.
  std::optional<std::string> path_of(pid_t pid, pid_t tid) const;
  // The group's quota and counters; nullopt when its directory cannot be read (another cgroup
  // namespace, a group removed since).
  std::optional<snapshot::CgroupCpu> read(const std::string& path) const;
  // Which hierarchy the reader uses: 1, 2, or 0 when the machine has no cpu controller.
  uint8_t version() const;
  // The group's directory ("" when unknown): where --cgroup PATH is looked up first, and tests.
  std::string directory(const std::string& path) const;

 private:
  std::string proc_root_;
  CgroupMounts mounts_;
  bool v2_has_cpu_ = false;     // the v2 root lists "cpu" in cgroup.controllers
};

}  // namespace platoon::collectors
