// Reads a platoon-runtime process's own drain/steal aggregates (runtime/stats_table.hpp) from
// its memory, once per snapshot, instead of booking a uprobe hit per drain:
//
//   auto r = RuntimeStatsReader::open(pid, &why);   // nullptr: no table (an older runtime)
//   ... raise the `stats` semaphore (attach a USDT program to platoon:stats) ...
//   r->fill(snapshot.threads);                        // drains, depth, fibers run, steals
//
// The table is found by its symbol (platoon_runtime_stats) in the executable or a shared
// object the process maps, plus that object's load bias from /proc/PID/maps. Counts start at
// open() (a baseline), as the BPF counters start at attach: open before raising the semaphore,
// so no drain falls between the baseline and the first counted one.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bpf/snapshot/snapshot.hpp"
#include "runtime/drain_counters.h"

namespace platoon::collectors {

// One carrier's counters: a member per entry of PLATOON_DRAIN_COUNTERS, named as there (and as
// in the slot and in ThreadSample, so copying between them goes by name).
struct RuntimeCounts {
#define PLATOON_COUNTS_COUNTER(name) uint64_t name = 0;
#define PLATOON_COUNTS_HIST(name, slots) std::array<uint64_t, slots> name{};
  PLATOON_DRAIN_COUNTERS(PLATOON_COUNTS_COUNTER, PLATOON_COUNTS_HIST)
#undef PLATOON_COUNTS_COUNTER
#undef PLATOON_COUNTS_HIST
};

// The table's address in the process, or nullopt with why (one line).
std::optional<uint64_t> find_runtime_stats(pid_t pid, std::string* why);

class RuntimeStatsReader {
 public:
  // nullptr with why when the process has no table, or one of another version.
  static std::unique_ptr<RuntimeStatsReader> open(pid_t pid, std::string* why);
  ~RuntimeStatsReader();
  RuntimeStatsReader(const RuntimeStatsReader&) = delete;
  RuntimeStatsReader& operator=(const RuntimeStatsReader&) = delete;

  // Per carrier thread (tid), its counts since open(). A slot that is being written at every
  // try, or a process that is gone, keeps its previous counts.
  const std::map<pid_t, RuntimeCounts>& read();
  // Overwrites the drain and steal fields of the threads that have a slot.
  void fill(std::vector<snapshot::ThreadSample>& threads);

  pid_t pid() const { return pid_; }
  uint64_t overflow() const { return overflow_; }  // carrier threads the table had no slot for
  const std::string& where() const { return where_; }  // the file the symbol was found in

 private:
  struct Slot {  // one consistent read of a slot
    pid_t tid = 0;
    RuntimeCounts counts;
  };
  RuntimeStatsReader(pid_t pid, uint64_t addr) : pid_(pid), addr_(addr) {}
  bool read_header(uint64_t* slots_addr, uint32_t* used, std::string* why);
  std::vector<std::optional<Slot>> read_slots(uint64_t slots_addr, uint32_t used) const;
  bool read_mem(uint64_t addr, void* out, size_t len) const;
  std::optional<Slot> read_slot_mem(uint64_t at) const;

  pid_t pid_;
  uint64_t addr_;
  // /proc/PID/mem, opened with the reader: the kernel checks ptrace access when the file is
  // opened and process_vm_readv on every call, so once an exporter has dropped root only this
  // descriptor still reads a root-owned target (-1: could not open; process_vm_readv alone).
  int mem_fd_ = -1;
  uint32_t max_slots_ = 0;
  uint64_t overflow_ = 0;
  std::string where_;
  std::map<std::pair<uint32_t, pid_t>, RuntimeCounts> baseline_;  // (slot, tid) at open
  std::vector<Slot> last_;                 // per slot, the last consistent read
  std::map<pid_t, RuntimeCounts> current_;
};

}  // namespace platoon::collectors
