// A recording played back as a snapshot::SnapshotSource: snapshot() returns the recorded snapshots
// in order, and events() hands over the raw events recorded before the next snapshot, so a
// consumer sees a trace file as it saw the live target (bpf/snapshot/source.hpp). seek() moves
// the play position (top --replay steps back and forth).
//
// A replay that can rewind holds the recording in memory within the reader's caps
// (kKeepSnapshotBytes and kKeepEventBytes, docs/trace-format.md "Reader caps"): past them the
// rest is read, counted in contents().cut_* and dropped, so only a prefix of a huge recording is
// played. One that plays forward only (Options::rewind = false, doctor FILE) streams: it reads
// the file chunk by chunk (TraceCursor), two snapshots ahead of what it has handed over, and so
// plays every snapshot of any length of recording in bounded memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpf/snapshot/source.hpp"
#include "tui/trace/trace_reader.hpp"

namespace platoon::trace {

class ReplaySource final : public snapshot::SnapshotSource {
 public:
  struct Options {
    bool keep_events = true;   // false: drop the raw events (top shows none), counted in event_count
    // false: play forward only, streaming; each snapshot but the last is handed over once
    // (moved out). count() is then the snapshots read so far, remaining() those read ahead (at
    // least two until the end), and at() / seek() are not for use.
    bool rewind = true;
  };
  // Null with a one-line error when the file cannot be read.
  static std::unique_ptr<ReplaySource> open(const std::string& path, std::string& error, Options options);
  static std::unique_ptr<ReplaySource> open(const std::string& path, std::string& error) {
    return open(path, error, Options{});
  }

  // The next recorded snapshot; past the last one, the last one again (nothing more happened).
  snapshot::Snapshot snapshot() override;
  // The events recorded between the snapshot returned last and the next one, in file order;
  // never waits (a replay has no clock of its own). Each interval's events are handed over once.
  int events(int timeout_ms, const EventSink& sink) override;
  snapshot::Source source() const override { return contents_.meta.source; }
  std::string attach_mode() const override { return contents_.meta.attach_mode; }
  std::vector<std::string> notes() const override;

  // The file's metadata and what the reader found (truncated, cut_*, counts, notes); its
  // snapshots and events are the source's, not in here.
  // (Streaming: complete once the last snapshot has been handed over.)
  const TraceContents& contents() const { return cursor_ ? cursor_->contents() : contents_; }
  size_t count() const { return steps_.size(); }              // snapshots held
  size_t position() const { return next_; }                   // the index snapshot() returns next
  size_t remaining() const { return steps_.size() - next_; }   // snapshots not yet returned
  const snapshot::Snapshot& at(size_t index) const { return steps_[index].snapshot; }  // index < count()
  // The next snapshot() returns snapshot `index` (clamped to count()).
  void seek(size_t index) { next_ = index < steps_.size() ? index : steps_.size(); }

 private:
  static std::unique_ptr<ReplaySource> open_streaming(const std::string& path, std::string& error,
                                                      bool keep_events);
  void read_ahead();           // streaming: two steps ahead of next_, or to the end
  struct Step {
    std::vector<uint8_t> events;   // records laid end to end, as in the file
    snapshot::Snapshot snapshot;
  };
  TraceContents contents_;
  std::vector<Step> steps_;
  bool rewind_ = true;
  size_t next_ = 0;            // the step snapshot() returns next
  std::vector<uint8_t> tail_;  // events after the last snapshot
  std::unique_ptr<TraceCursor> cursor_;   // streaming only
  std::vector<uint8_t> pending_;          // streaming: events read since the last snapshot
  bool keep_events_ = true;
};

}  // namespace platoon::trace
