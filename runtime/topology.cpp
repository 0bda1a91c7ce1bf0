#include "runtime/topology.hpp"

#include <fstream>
#include <sched.h>
#include <unistd.h>
#include <string>

namespace platoon::rt {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  // getpid(): the main thread's set, which taskset gave the process; the calling thread may
  // have been pinned narrower.
  if (sched_getaffinity(getpid(), sizeof set, &set) != 0) return cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  return cpus;
}

std::vector<int> current_thread_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;  // 0: the calling thread
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  return cpus;
}

// The highest cache level listed for the CPU is its last-level cache.
std::string llc_shared_cpus(int cpu) {
  std::string best;
  int best_level = -1;
  for (int idx = 0; idx < 8; ++idx) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache/index" + std::to_string(idx);
    std::ifstream level_file(dir + "/level");
    int level = -1;
    if (!(level_file >> level)) continue;
    std::ifstream shared(dir + "/shared_cpu_list");
    std::string list;
    if (level > best_level && (shared >> list)) {
      best_level = level;
      best = list;
    }
  }
  return best;
}

bool pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace platoon::rt
