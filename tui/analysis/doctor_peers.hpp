// The tasks a finding's threads waited behind or were preempted by, as its evidence lists them:
// summed by tid, heaviest wait first, each with where it lives (a carrier, the target's own
// process, or a stranger) and its share of the wait. carrier_waiting and
// requests_waiting_in_sockets both say "behind whom" this way.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tui/analysis/doctor_checks.hpp"

namespace platoon::analysis::doctor {

// Where a task a thread waited behind lives: its own kind, or a stranger to the target.
enum class Where : uint8_t { carrier, others, same_process, outside };
const char* to_string(Where w);

struct PeerRow {
  Peer peer;
  Where where = Where::outside;
  double share_pct = 0;   // of the wait behind all such tasks

  Value value() const;
};

// Adds one peer's count and wait to the sum by tid.
void add_peer(std::map<uint32_t, Peer>& sum, uint32_t tid, uint32_t pid, const std::string& comm, uint64_t count,
              uint64_t ns);
// Peers summed by tid, heaviest wait first, the first `max` of them with their share of the wait.
std::vector<PeerRow> peer_rows(const std::map<uint32_t, Peer>& by_tid, const Context& c, size_t max);

// Whom the flagged threads waited behind: the title's "; mostly behind ...", and whether the
// remedy is about strangers on their CPUs or about the target's own threads.
struct Culprits {
  std::string who;
  bool outsiders = false;
  bool own = false;

  void note(const std::vector<PeerRow>& peers);
};

}  // namespace platoon::analysis::doctor
