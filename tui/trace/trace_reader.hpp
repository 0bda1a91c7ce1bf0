// Reads a platoon trace file (docs/trace-format.md): report, export, top --replay, doctor.
//
// The reader trusts nothing in the file: every length and count is checked against the bytes
// that remain before anything is allocated, every enum and event record is validated, and the
// first incomplete or corrupt chunk ends the read with `truncated` set (a crash leaves exactly
// that) instead of an error. Only a file that is not a trace, a newer major version or a broken
// header/META chunk is an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bpf/snapshot/snapshot.hpp"
#include "tui/trace/trace_format.hpp"

namespace platoon::trace {

struct TraceNote {
  uint64_t ts_ns = 0;  // CLOCK_BOOTTIME
  std::string text;
};

struct TraceContents {
  TraceMeta meta;
  std::vector<snapshot::Snapshot> snapshots;  // in file order (= time order)
  std::vector<TraceNote> notes;
  std::string stop_reason;          // from STOP; empty if the recording did not finish
  uint64_t end_boottime_ns = 0;     // from STOP
  bool complete = false;            // STOP chunk seen
  bool truncated = false;           // an incomplete or corrupt chunk ended the read
  uint64_t truncated_at = 0;        // byte offset of that chunk
  std::string truncated_reason;     // e.g. "incomplete chunk", "checksum mismatch"
  uint64_t snapshot_count = 0;     // snapshots read (also when delivered to ReadOptions::on_snapshot)
  uint64_t event_count = 0;         // records read (also when delivered to ReadOptions::on_event)
  uint64_t skipped_chunks = 0;      // unknown chunk types (a newer minor version), skipped
  // What the reader's caps (kKeep* in trace_format.hpp, ReadOptions::max_*) cut: decoded and
  // dropped, so the counts stay right but these items are missing. All zero for a real recording.
  uint64_t cut_threads = 0;         // threads beyond kKeepThreadsPerSnapshot in a snapshot
  uint64_t cut_pairs = 0;           // pairs beyond kKeepPairsPerSnapshot
  uint64_t cut_cpu_slots = 0;       // per-CPU entries beyond kKeepCpusPerList / kKeepCpuSlotsPerSnapshot
  uint64_t cut_snapshots = 0;       // snapshots not kept: ReadOptions::max_snapshot_bytes reached
  uint64_t cut_events = 0;          // event records not kept: ReadOptions::max_event_bytes reached
  // One line saying what was cut ("" when nothing was), for consumers to print like `truncated`.
  std::string cap_note() const;
  // All event records end to end, in the order the ring buffer delivered them (nearly, not
  // strictly, timestamp order). Each is validated: known type, exactly event_record_size(type)
  // bytes. Empty when ReadOptions::on_event took them. Iterate with for_each_event; decode with
  // tui/trace/events.hpp.
  std::vector<uint8_t> events;
};

// Called for each event record: its header (copied, so aligned), the record and its size.
using EventFn = std::function<void(const platoon_event_header&, const void* record, size_t size)>;

struct ReadOptions {
  // Deliver events here as they are read instead of keeping them in TraceContents::events
  // (a long recording's events need not fit in memory).
  EventFn on_event;
  // Likewise for snapshots: each decoded snapshot goes here (in file order) instead of into
  // TraceContents::snapshots, so a long recording of a big process need not fit in memory
  // (see RecordingWindow in window.hpp). snapshot_count still counts them.
  std::function<void(snapshot::Snapshot&&)> on_snapshot;
  // Checksums are always checked in normal use. The fuzzer turns this off so that mutated
  // payloads reach the decoders instead of stopping at the CRC.
  bool verify_crc = true;
  // Bounds on what is kept in TraceContents::snapshots / events (not on what is delivered to
  // on_snapshot / on_event): past them the rest is read, validated, counted in cut_* and dropped.
  // 0 = no bound; top --replay and chrome export pass kKeepSnapshotBytes / kKeepEventBytes.
  uint64_t max_snapshot_bytes = 0;  // estimated in-memory size (snapshot_bytes)
  uint64_t max_event_bytes = 0;
};

// Estimated memory a decoded snapshot occupies (what max_snapshot_bytes counts).
uint64_t snapshot_bytes(const snapshot::Snapshot& s);

std::optional<TraceContents> read_trace(const std::string& path, std::string* error,
                                        const ReadOptions& options = {});
std::optional<TraceContents> read_trace_bytes(std::span<const uint8_t> bytes, std::string* error,
                                              const ReadOptions& options = {});

// The reader, one chunk at a time, for consumers that play a recording forward without holding
// it (doctor FILE): open() reads the header and META; each next() reads one more chunk and
// delivers its snapshot or events through the options' callbacks, as read_trace does; false
// once the recording is over (STOP, the end of the file, or a damaged chunk: then
// contents().truncated). contents() is what read_trace would return so far.
class TraceCursor {
 public:
  // Null with "PATH: reason" as read_trace's.
  static std::unique_ptr<TraceCursor> open(const std::string& path, std::string* error, const ReadOptions& options);
  ~TraceCursor();
  TraceCursor(const TraceCursor&) = delete;
  TraceCursor& operator=(const TraceCursor&) = delete;

  bool next();
  const TraceContents& contents() const;
  TraceContents take_contents();

  struct State;
  explicit TraceCursor(std::unique_ptr<State> st);

 private:
  std::unique_ptr<State> st_;
};

// Walks records laid end to end. Returns false at the first invalid one (unknown type or fewer
// bytes left than its type's size), after calling fn for every valid record before it.
bool for_each_event(std::span<const uint8_t> records, const EventFn& fn);
inline bool for_each_event(const TraceContents& contents, const EventFn& fn) {
  return for_each_event(std::span<const uint8_t>(contents.events), fn);
}

}  // namespace platoon::trace
