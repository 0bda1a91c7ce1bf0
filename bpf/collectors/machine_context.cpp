#include "bpf/collectors/machine_context.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

#include "bpf/collectors/cgroup_cpu_reader.hpp"
#include "bpf/collectors/proc_stat.hpp"

namespace platoon::collectors {

struct MachineContext::Impl {
  CgroupCpuReader reader;
  struct Known {
    std::string path;     // "" when the thread's group could not be found
    uint64_t looked_at = 0;
  };
  std::unordered_map<uint32_t, Known> by_tid;

  const std::string& group_of(const snapshot::ThreadSample& t, uint64_t now) {
    Known& k = by_tid[t.tid];
    if (k.looked_at == 0 || now - k.looked_at >= kRefreshNs) {
      // An exited thread keeps what it had: its /proc entry is gone.
      if (!t.exited || k.looked_at == 0) k.path = reader.path_of(t.pid, t.tid).value_or("");
      k.looked_at = now ? now : 1;
    }
    return k.path;
  }

  // Forget the threads a snapshot no longer holds, so the cache stays the size of the targets.
  void forget_absent(const snapshot::Snapshot& snap) {
    if (by_tid.size() <= 2 * snap.threads.size() + 64) return;
    std::unordered_map<uint32_t, Known> kept;
    for (const auto& t : snap.threads)
      if (auto it = by_tid.find(t.tid); it != by_tid.end()) kept.emplace(t.tid, std::move(it->second));
    by_tid.swap(kept);
  }
};

MachineContext::MachineContext() : impl_(std::make_unique<Impl>()) {}
MachineContext::~MachineContext() = default;

void MachineContext::fill(snapshot::Snapshot& snap) {
  snap.cpus = read_proc_stat();
  snap.tick_ns = static_cast<uint64_t>(seconds_per_tick() * 1e9 + 0.5);
  std::map<std::string, snapshot::CgroupCpu> groups;
  for (auto& t : snap.threads) {
    t.cgroup = impl_->group_of(t, snap.ts_ns);
    if (t.cgroup.empty() || groups.count(t.cgroup)) continue;
    snapshot::CgroupCpu g;
    g.path = t.cgroup;
    if (auto read = impl_->reader.read(t.cgroup)) g = std::move(*read);
    groups.emplace(t.cgroup, std::move(g));  // unreadable: version 0, counts 0
  }
  snap.cgroups.clear();
  for (auto& [path, g] : groups) snap.cgroups.push_back(std::move(g));
  impl_->forget_absent(snap);
}

}  // namespace platoon::collectors
