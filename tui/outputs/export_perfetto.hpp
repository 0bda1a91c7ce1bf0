// platoon export --format perfetto: a protobuf trace (Trace of TracePackets, the schema subset
// in perfetto_trace.proto) that ui.perfetto.dev and trace_processor open natively:
//   - per-CPU ftrace event bundles of sched_switch, sched_waking, sched_wakeup_new and
//     sched_migrate_task with BOOTTIME timestamps (what the recorder stamps), from which
//     Perfetto builds its CPU tracks and each thread's Running / Runnable / Sleeping states;
//   - process and thread track descriptors with their names;
//   - counter tracks under each thread: ready events per epoll wait call and fiber queue depth
//     at each drain (event-loop and platoon-runtime threads), %wait per snapshot interval;
//   - the requests, where the recording has them: a track per connection, a slice per request
//     with its phases, a flow to the reading thread (perfetto_requests.hpp).
// sched_wakeup is not exported: Perfetto derives Runnable from sched_waking (its maintainers
// chose waking over wakeup), and the recording holds a waking for every wakeup.
//
// Streamed in two passes over a recording, so memory does not grow with its length: the first
// (scan_*) learns the threads, their %wait per interval, which counter tracks exist and the
// losses; the second (write_*) takes the events as the file delivers them. The ring buffer
// hands them over nearly, not strictly, in time order, so they wait in the reorder buffer
// (EventReader, kReorderHorizonNs: tui/trace/events.hpp) before going into their CPU's bundle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <span>

#include "bpf/snapshot/snapshot.hpp"
#include "tui/outputs/perfetto_requests.hpp"  // PerfettoRequestStats
#include "tui/trace/events.hpp"        // kReorderHorizonNs
#include "tui/trace/trace_format.hpp"  // TraceMeta

namespace platoon::outputs {

struct PerfettoStats {
  // Per CPU: events written, by kind.
  struct Cpu {
    uint64_t sched_switch = 0, sched_waking = 0, sched_wakeup_new = 0, sched_migrate_task = 0;
  };
  std::map<uint32_t, Cpu> cpus;
  uint64_t packets = 0;
  uint64_t threads = 0;          // thread track descriptors
  uint64_t counter_tracks = 0;
  uint64_t counter_samples = 0;
  uint64_t lost_cpus = 0;        // CPUs whose bundles are flagged lost_events
  uint64_t late_events = 0;      // arrived more than the horizon out of order: written late
  uint64_t max_pending = 0;      // most records held in the reorder buffer at once
  PerfettoRequestStats requests;
};

class PerfettoExport {
 public:
  explicit PerfettoExport(std::ostream& out);
  ~PerfettoExport();
  PerfettoExport(const PerfettoExport&) = delete;
  PerfettoExport& operator=(const PerfettoExport&) = delete;

  // Pass 1, in file order: every snapshot and every event record.
  void scan_snapshot(const snapshot::Snapshot& s);
  void scan_event(const platoon_event_header& h, const void* record, size_t size);
  // Pass 2: the header packets (system info, descriptors), then every event record again.
  void begin(const trace::TraceMeta& meta);
  void write_event(const platoon_event_header& h, const void* record, size_t size);
  // Flushes what is held; false when the stream failed.
  bool finish(PerfettoStats* stats = nullptr);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Both passes over an in-memory recording: events are the records of TraceContents::events (end
// to end), snapshots in time order. Returns false when the stream failed.
bool write_perfetto_trace(std::ostream& out, const trace::TraceMeta& meta, std::span<const uint8_t> events,
                          std::span<const snapshot::Snapshot> snapshots, PerfettoStats* stats = nullptr);

// The kernel's sched_switch tracepoint reports prev_state as one TASK_REPORT bit (what Perfetto
// decodes into R, R+, S, D, I, X...); the recorder stores the raw task state, 0 when preempted.
int64_t report_prev_state(uint32_t raw_state);

}  // namespace platoon::outputs
