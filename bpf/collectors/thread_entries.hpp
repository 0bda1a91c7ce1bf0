// The kernel's per-thread entries (struct platoon_thread_stats, bpf/thread_stats.bpf.h): where
// they live, how a snapshot reads them, and how reported or dropped ones are forgotten.
//
// Two places, chosen once per load:
//  - task-local storage (tp_btf on 5.11+): each entry hangs off its task, found by the hooks
//    with a cache test rather than a hash of the tid (two per switch; the saving is in
//    docs/kernel.md). Read through the dump_threads task iterator; exited threads' final
//    copies wait in exited_stats until reported. The bound is a .bss count (tracked_threads).
//  - the `stats` hash (raw_tp, older kernels): read with batched lookups, bounded by its size.
#pragma once

#include <linux/types.h>

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "bpf/platoon.h"

struct platoon_bpf;

namespace platoon::collectors {

class ThreadEntries {
 public:
  // Before load (from apply_plan, load_plan.hpp): sizes and types the maps of both places for
  // the chosen one (the other is kept to one entry: the programs still name it, in code the
  // verifier drops).
  static void shape_maps(platoon_bpf* skel, bool task_storage, uint32_t threads_max);

  ThreadEntries(platoon_bpf* skel, bool task_storage) : skel_(skel), task_storage_(task_storage) {}

  bool in_task_storage() const { return task_storage_; }
  // Every entry: the live ones, then the exited ones not yet forgotten, one per tid (a thread
  // that exited while it was being read appears once, as exited). `error`: why the task walk
  // failed (then only the exited ones are returned).
  std::vector<platoon_thread_stats> read(std::string* error) const;
  // Reported exits: their entries go, and their room is given back.
  void forget_exited(const std::unordered_set<__u32>& tids);
  // A process that is no longer a target: its threads' entries go (stored live ones are
  // deleted by the next task walk, which skips them from now on).
  void forget_pid(__u32 pid);

 private:
  void forget(int fd, const std::vector<__u32>& tids);
  platoon_bpf* skel_;
  bool task_storage_;
};

}  // namespace platoon::collectors
