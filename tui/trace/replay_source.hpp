// A recording played back as a model::SnapshotSource: snapshot() returns the recorded snapshots
// in order, and events() hands over the raw events recorded before the next snapshot, so a
// consumer sees a trace file as it saw the live target (bpf/snapshot/source.hpp). seek() moves
// the play position (top --replay steps back and forth).
//
// It holds the recording in memory within the reader's caps (kKeepSnapshotBytes and
// kKeepEventBytes, docs/trace-format.md "Reader caps"): past them the rest is read, counted in
// contents().cut_* and dropped, so only a prefix of a huge recording is played.
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
  struct Options {
    bool keep_events = true;   // false: drop the raw events (top shows none), counted in event_count
    // false: each snapshot but the last is handed over once (moved out), so that a consumer
    // that plays forward only holds no second copy of what it has seen; at() and seek() are
    // then for the snapshots not yet returned.
    bool rewind = true;
  };
  // Null with a one-line error when the file cannot be read.
  static std::unique_ptr<ReplaySource> open(const std::string& path, std::string& error, Options options);
  static std::unique_ptr<ReplaySource> open(const std::string& path, std::string& error) {
    return open(path, error, Options{});
  }

  // The next recorded snapshot; past the last one, the last one again (nothing more happened).
  Snapshot snapshot() override;
  // The events recorded between the snapshot returned last and the next one, in file order;
  // never waits (a replay has no clock of its own). Each interval's events are handed over once.
  int events(int timeout_ms, const EventSink& sink) override;
  Source source() const override { return contents_.meta.source; }
  std::string attach_mode() const override { return contents_.meta.attach_mode; }
  std::vector<std::string> notes() const override;

  // The file's metadata and what the reader found (truncated, cut_*, counts, notes); its
  // snapshots and events are the source's, not in here.
  const TraceContents& contents() const { return contents_; }
  size_t count() const { return steps_.size(); }              // snapshots held
  size_t position() const { return next_; }                   // the index snapshot() returns next
  size_t remaining() const { return steps_.size() - next_; }   // snapshots not yet returned
  const Snapshot& at(size_t index) const { return steps_[index].snapshot; }   // index < count()
  // The next snapshot() returns snapshot `index` (clamped to count()).
  void seek(size_t index) { next_ = index < steps_.size() ? index : steps_.size(); }

 private:
  struct Step {
    std::vector<uint8_t> events;   // records laid end to end, as in the file
    Snapshot snapshot;
  };
  TraceContents contents_;
  std::vector<Step> steps_;
  bool rewind_ = true;
  size_t next_ = 0;            // the step snapshot() returns next
  std::vector<uint8_t> tail_;  // events after the last snapshot
};

}  // namespace platoon::model
