// CPUs this process may run on, last-level-cache sharing from sysfs, and thread pinning.
#pragma once

#include <string>
#include <vector>

namespace platoon::rt {

std::vector<int> allowed_cpus();            // sched_getaffinity of the process, ascending
std::string llc_shared_cpus(int cpu);       // e.g. "0-1"; empty when sysfs does not say
bool pin_current_thread(int cpu);
std::vector<int> current_thread_affinity();

}  // namespace platoon::rt
