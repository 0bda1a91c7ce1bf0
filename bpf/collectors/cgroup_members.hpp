// Which processes a cgroup holds, for `--cgroup PATH` (a container, a systemd unit): its
// directory found from what the user gave, and its members read from cgroup.procs, its own and
// its descendant groups' (a pod's containers are child groups). The kernel has no event for a
// task moved into a group from outside, so the members are read again at every refresh; what a
// member forks in between is followed in the kernel at fork (a child starts in its parent's
// group).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace platoon::collectors {

// PATH is a cgroup directory (/sys/fs/cgroup/cpu/batch, any hierarchy, v1 or v2), or a path as
// /proc/PID/cgroup shows it ("/batch", "/kubepods/pod1"), looked up in the hierarchy that holds
// the cpu controller, then in cgroup2. The directory, or "" with a one-line error.
std::string resolve_cgroup_dir(const std::string& path, std::string& error);

// The tgids in `dir`'s cgroup.procs and in those of its descendants (at most max_groups groups
// are read), sorted and unique; empty when the group is empty or gone.
std::vector<pid_t> cgroup_members(const std::string& dir, size_t max_groups = 4096);

// Every process in proc_root now (numeric entries), sorted; the procfs sampler's --all.
std::vector<pid_t> all_processes(const std::string& proc_root = "/proc");

}  // namespace platoon::collectors
