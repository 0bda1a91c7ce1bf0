#include "tui/analysis/doctor_peers.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace platoon::analysis::doctor {

namespace {

Where where_of(const Context& c, uint32_t tid, uint32_t pid) {
  return c.is_carrier(tid)           ? Where::carrier
         : tid == kOtherTid          ? Where::others
         : c.target_pids.count(pid)  ? Where::same_process
                                     : Where::outside;
}

}  // namespace

const char* to_string(Where w) {
  switch (w) {
    case Where::carrier: return "carrier";
    case Where::others: return "others";
    case Where::same_process: return "same process";
    case Where::outside: break;
  }
  return "outside the target";
}

Value PeerRow::value() const {
  return Object{{"tid", peer.tid},
                {"pid", peer.pid},
                {"comm", peer.comm},
                {"where", to_string(where)},
                {"count", peer.count},
                {"wait_ms", round_to(static_cast<double>(peer.ns) / 1e6, 2)},
                {"share_pct", round_to(share_pct, 1)}};
}

void add_peer(std::map<uint32_t, Peer>& sum, uint32_t tid, uint32_t pid, const std::string& comm, uint64_t count,
              uint64_t ns) {
  Peer& s = sum[tid];
  if (s.comm.empty()) s = Peer{tid, pid, comm, 0, 0};
  s.count += count;
  s.ns += ns;
}

std::vector<PeerRow> peer_rows(const std::map<uint32_t, Peer>& by_tid, const Context& c, size_t max) {
  std::vector<Peer> peers;
  uint64_t total_ns = 0;
  for (const auto& [tid, p] : by_tid) {
    peers.push_back(p);
    total_ns += p.ns;
  }
  std::sort(peers.begin(), peers.end(), [](const Peer& a, const Peer& b) { return a.ns != b.ns ? a.ns > b.ns : a.count > b.count; });
  if (peers.size() > max) peers.resize(max);
  std::vector<PeerRow> out;
  for (auto& p : peers) {
    const double share = total_ns ? 100.0 * static_cast<double>(p.ns) / static_cast<double>(total_ns) : 0;
    const Where where = where_of(c, p.tid, p.pid);
    out.push_back({std::move(p), where, share});
  }
  return out;
}

void Culprits::note(const std::vector<PeerRow>& peers) {
  for (const PeerRow& p : peers) {
    outsiders |= p.where == Where::outside;
    own |= p.where == Where::carrier || p.where == Where::same_process;
  }
  if (peers.empty() || !who.empty()) return;
  const PeerRow& top = peers.front();
  // The share as the evidence shows it (rounded), so title and evidence agree.
  who = fmt::format("; mostly behind {} ({}, {:.0f}% of the wait)", top.peer.comm, to_string(top.where),
                    round_to(top.share_pct, 1));
}

}  // namespace platoon::analysis::doctor
