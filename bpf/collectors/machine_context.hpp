// What a snapshot says besides its threads' counters: the machine's per-CPU times (/proc/stat:
// steal, interrupts) and each thread's CPU cgroup with its quota and throttling (cpu.stat).
// Both producers (the BPF collector and the procfs sampler) call fill() as they take a
// snapshot, so every consumer sees the same context whatever the source.
#pragma once

#include <cstdint>
#include <memory>

#include "bpf/snapshot/snapshot.hpp"

namespace platoon::collectors {

class MachineContext {
 public:
  MachineContext();
  ~MachineContext();
  MachineContext(const MachineContext&) = delete;
  MachineContext& operator=(const MachineContext&) = delete;

  // Sets snap.cpus, snap.tick_ns, each thread's cgroup and snap.cgroups (the groups named,
  // sorted by path). A thread's group is looked up when it is first seen and again every
  // kRefreshNs (tasks move between groups rarely, and a machine-wide view has thousands of
  // threads); a group's counters are read at every call.
  void fill(snapshot::Snapshot& snap);
  static constexpr uint64_t kRefreshNs = 10'000'000'000;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace platoon::collectors
