// The pairs (who preempted whom, who woke whom) between what the kernel map holds and what a
// snapshot reports. The kernel's pairs map is bounded, so pairs idle for a while leave it; the
// ledger keeps what they counted (the thread is alive, so its peers are still news) and adds it
// back to every snapshot, bounded in turn: beyond kRetiredPerMapEntry times the map's size a
// thread's further retirees are folded into one "[aged]" pair per kind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "bpf/platoon.h"
#include "bpf/snapshot/snapshot.hpp"

namespace platoon::collectors {

using KernelPairs = std::vector<std::pair<platoon_pair_key, platoon_pair_value>>;

class PairLedger {
 public:
  // map_fd: the kernel's pairs map; pairs_max its size; idle_s: how long a pair's counts stay
  // the same before it leaves the map (<= 0: never).
  PairLedger(int map_fd, size_t pairs_max, double idle_s);

  KernelPairs read() const;  // every entry of the kernel map
  // Kernel pairs plus what aged out for the same key (or was folded into "[aged]").
  void append(snapshot::Snapshot& snap, const KernelPairs& pairs) const;
  // Exited threads have been reported: their pairs go, in the kernel and here.
  void forget(const std::unordered_set<__u32>& exited, const KernelPairs& pairs);
  // Moves pairs idle for idle_s out of the kernel map into the ledger.
  void age(const KernelPairs& pairs, uint64_t now_ns);

  static constexpr size_t kRetiredPerMapEntry = 4;
  static constexpr __u32 kAgedOther = 0xffffffffu;

 private:
  using PairId = std::tuple<__u32, __u32, __u32>;  // tid, other, kind
  static PairId id(const platoon_pair_key& k) { return {k.tid, k.other, k.kind}; }
  void retire(const platoon_pair_key& k, const platoon_pair_value& v);

  // Counts as last read, and since when they have not changed.
  struct Track {
    __u64 count = 0, ns = 0;
    uint64_t since_ns = 0;
  };
  int fd_;
  size_t pairs_max_;
  double idle_s_;
  std::map<PairId, Track> track_;
  std::map<PairId, platoon_pair_value> retired_;  // aged out of the kernel map, thread alive
};

}  // namespace platoon::collectors
