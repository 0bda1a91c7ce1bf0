// The recorder behind `platoon top`'s `r` key: the snapshots top takes, written to a trace file
// while watching, with the same cost notes as `platoon record`'s.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bpf/snapshot/snapshot.hpp"
#include "tui/analysis/observer_cost.hpp"
#include "tui/trace/trace_writer.hpp"

namespace platoon::cli {

// `r`: aggregate snapshots to a trace file while watching; the header shows its name and state.
class Recorder {
 public:
  bool active() const { return writer_ != nullptr; }
  // Starts a file named after the time; writes `baseline` as the first snapshot. `cost`: the
  // cost counters now, from which the recording's cost notes count (as record's do).
  bool start(trace::TraceMeta meta, const snapshot::Snapshot& baseline, const analysis::CostSample& cost,
             std::string& error);
  // A snapshot, and every few seconds a cost note up to `cost` (read with the snapshot).
  void write(const snapshot::Snapshot& s, const analysis::CostSample& cost);
  // With `cost`, a last cost note first.
  void stop(const std::string& reason, const analysis::CostSample* cost = nullptr);
  std::string describe() const;  // "REC file (N snapshots)", "saved file (N)", "REC failed: .."
  ~Recorder() { stop("top quit"); }

 private:
  void cost_note(const analysis::CostSample& now);
  std::unique_ptr<trace::TraceWriter> writer_;
  std::string path_, last_;
  uint64_t snapshots_ = 0;
  analysis::CostSample cost0_;   // the cost counters when the recording began
  uint64_t cost_note_ns_ = 0;    // when the last cost note was written
};

}  // namespace platoon::cli
