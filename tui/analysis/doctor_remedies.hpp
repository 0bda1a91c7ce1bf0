// Remedies in the target's own knobs. The doctor recognises what it
// looks at (bpf/collectors/runtime_detect.cpp: platoon-runtime by its USDT probes, a JVM by libjvm,
// a Go binary by its build info) and each finding words its remedy through this table, so that a
// JVM is told about jdk.virtualThreadScheduler.parallelism, not about platoon-server --pin.
#pragma once

#include <cstdint>
#include <string>

#include "bpf/snapshot/runtime_kind.hpp"

namespace platoon::analysis::doctor {

struct Remedies {
  snapshot::RuntimeKind kind = snapshot::RuntimeKind::other;

  // How to run N carriers / OS threads for the event loops ("N-1" and the like also do).
  std::string size_carriers(uint32_t n) const { return size_carriers(std::to_string(n)); }
  std::string size_carriers(const std::string& n) const;
  // How to let an idle carrier take a stalled one's queue.
  std::string share_queues() const;
  // How to keep each carrier on one CPU.
  std::string pin_carriers() const;
  // How to give the poller (the thread that wakes the carriers) priority or its own CPU.
  std::string poller_priority() const;
  // How to make a loop poll its sockets sooner between batches of work.
  std::string shorter_turns() const;
  // How to have a sleeping loop notice ready sockets sooner.
  std::string wake_sooner() const;
};

}  // namespace platoon::analysis::doctor
