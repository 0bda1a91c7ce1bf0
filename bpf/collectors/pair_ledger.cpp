#include "bpf/collectors/pair_ledger.hpp"

#include <bpf/bpf.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "bpf/collectors/map_batch.hpp"

namespace platoon::collectors {

PairLedger::PairLedger(int map_fd, size_t pairs_max, double idle_s)
    : fd_(map_fd), pairs_max_(std::max<size_t>(pairs_max, 1)), idle_s_(idle_s) {}

KernelPairs PairLedger::read() const {
  KernelPairs out;
  read_map(fd_, &out);
  return out;
}

void PairLedger::retire(const platoon_pair_key& k, const platoon_pair_value& v) {
  auto it = retired_.find(id(k));
  if (it == retired_.end() && retired_.size() >= kRetiredPerMapEntry * pairs_max_) {
    platoon_pair_value aged{};
    std::memcpy(aged.other_comm, "[aged]", sizeof "[aged]");
    it = retired_.emplace(PairId{k.tid, kAgedOther, k.kind}, aged).first;
  } else if (it == retired_.end()) {
    platoon_pair_value base = v;
    base.count = base.ns = 0;
    it = retired_.emplace(id(k), base).first;
  }
  it->second.count += v.count;
  it->second.ns += v.ns;
}

// lookup_and_delete (5.14+ for hashes) takes the value and the entry at once, so an add that
// lands in between is not lost; without it a plain delete after the read loses at most such an
// add.
void PairLedger::age(const KernelPairs& pairs, uint64_t now) {
  if (idle_s_ <= 0) return;
  const auto idle_ns = static_cast<uint64_t>(idle_s_ * 1e9);
  std::map<PairId, Track> seen;
  for (const auto& [k, v] : pairs) {
    Track t{v.count, v.ns, now};
    auto it = track_.find(id(k));
    if (it != track_.end() && it->second.count == v.count && it->second.ns == v.ns) t.since_ns = it->second.since_ns;
    if (now - t.since_ns < idle_ns) {
      seen.emplace(id(k), t);
      continue;
    }
    platoon_pair_value last;
    if (bpf_map_lookup_and_delete_elem(fd_, &k, &last) == 0) {
      retire(k, last);
    } else if (bpf_map_delete_elem(fd_, &k) == 0) {
      retire(k, v);
    }
  }
  track_ = std::move(seen);
}

void PairLedger::append(snapshot::Snapshot& snap, const KernelPairs& pairs) const {
  snap.pairs.reserve(snap.pairs.size() + pairs.size() + retired_.size());
  auto emit = [&](__u32 tid, __u32 other, __u32 kind, const platoon_pair_value& v, const platoon_pair_value* more) {
    snapshot::PairSample p;
    p.tid = tid;
    p.kind = static_cast<snapshot::PairKind>(kind);
    p.other_tid = other;
    p.other_pid = v.other_pid;
    p.other_comm.assign(v.other_comm, strnlen(v.other_comm, sizeof v.other_comm));
    p.count = v.count + (more ? more->count : 0);
    p.ns = v.ns + (more ? more->ns : 0);
    snap.pairs.push_back(std::move(p));
  };
  std::set<PairId> in_kernel;
  for (const auto& [k, v] : pairs) {
    auto r = retired_.find(id(k));
    emit(k.tid, k.other, k.kind, v, r == retired_.end() ? nullptr : &r->second);
    in_kernel.insert(id(k));
  }
  for (const auto& [pid, v] : retired_)
    if (!in_kernel.count(pid)) emit(std::get<0>(pid), std::get<1>(pid), std::get<2>(pid), v, nullptr);
}

void PairLedger::forget(const std::unordered_set<__u32>& exited, const KernelPairs& pairs) {
  if (exited.empty()) return;
  for (const auto& [k, v] : pairs)
    if (exited.count(k.tid)) bpf_map_delete_elem(fd_, &k);
  for (auto it = retired_.begin(); it != retired_.end();)
    it = exited.count(std::get<0>(it->first)) ? retired_.erase(it) : std::next(it);
}

}  // namespace platoon::collectors
