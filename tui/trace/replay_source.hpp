// A recording played back as a model::SnapshotSource: snapshot() returns the recorded snapshots
// in order, and events() hands over the raw events recorded before the next snapshot, so a
// consumer sees a trace file as it saw the live target (bpf/snapshot/source.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpf/snapshot/source.hpp"
#include "tui/trace/trace_reader.hpp"

namespace platoon::model {

class ReplaySource final : public SnapshotSource {
 public:
  // Null with a one-line error when the file cannot be read. Holds the whole recording.
  static std::unique_ptr<ReplaySource> open(const std::string& path, std::string& error);

  // The next recorded snapshot; past the last one, the last one again (nothing more happened).
  Snapshot snapshot() override;
  // The events recorded between the snapshot returned last and the next one, in file order;
  // never waits (a replay has no clock of its own).
  int events(int timeout_ms, const EventSink& sink) override;
  Source source() const override { return contents_.meta.source; }
  std::string attach_mode() const override { return contents_.meta.attach_mode; }
  std::vector<std::string> notes() const override;

  const TraceContents& contents() const { return contents_; }
  size_t remaining() const { return steps_.size() - next_; }   // snapshots not yet returned

 private:
  struct Step {
    std::vector<uint8_t> events;   // records laid end to end, as in the file
    Snapshot snapshot;
  };
  TraceContents contents_;
  std::vector<Step> steps_;
  size_t next_ = 0;            // the step snapshot() returns next
  std::vector<uint8_t> tail_;  // events after the last snapshot
};

}  // namespace platoon::model
