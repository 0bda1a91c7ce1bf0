// What the exporters (chrome, perfetto) share: the target threads a recording's snapshots name,
// with names every consumer accepts, and a name per process.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "bpf/snapshot/snapshot.hpp"

namespace platoon::outputs {

struct ExportThread {
  uint32_t pid = 0;
  std::string comm;   // valid UTF-8 (see utf8_safe)
  std::string label;  // comm, or "comm tid" when the process has two threads with that comm
};

// comm is whatever the program set (prctl), cut at 15 bytes by the kernel, maybe inside a
// character; JSON, protobuf and Prometheus strings must be valid UTF-8. Each byte that starts
// no well-formed character becomes '?'; the rest of the name is kept as it is.
std::string utf8_safe(const std::string& s);

// tid → latest identity (comm changes at exec) over every snapshot of the recording.
std::map<uint32_t, ExportThread> targets_of(std::span<const snapshot::Snapshot> snapshots);
// The same, one snapshot at a time (a streamed recording): add each, then label once.
void add_targets(std::map<uint32_t, ExportThread>& targets, const snapshot::Snapshot& s);
void label_targets(std::map<uint32_t, ExportThread>& targets);

// pid → the main thread's comm (tid == pid), else the comm of its lowest-numbered thread.
std::map<uint32_t, std::string> process_names(const std::map<uint32_t, ExportThread>& targets);

}  // namespace platoon::outputs
