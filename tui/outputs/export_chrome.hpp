// platoon export --format chrome: the Trace Event JSON that ui.perfetto.dev, trace_processor and
// chrome://tracing load (notes-bpf-anchors.md §5):
//   - "Running" slices (ph X) per target thread, built from the raw sched_switch events;
//   - process_name / thread_name metadata (ph M);
//   - counters (ph C, one track per "<name> <thread>"): ready events per epoll wait call and
//     fiber queue depth at each drain (carrier threads), %wait per thread per snapshot interval.
// ts is in µs (double) from the first event or snapshot, whichever is earlier.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>

#include "bpf/snapshot/snapshot.hpp"

namespace platoon::outputs {

struct ChromeStats {
  size_t slices = 0;
  size_t counters = 0;
  size_t closed_at_end = 0;     // still running at the end of the trace: closed at its last timestamp
  size_t opened_at_start = 0;   // already running when the events start: opened at the trace start
  size_t dropped = 0;           // a switch-in or switch-out was lost (ring buffer full): no slice
};

// events: the records of TraceContents::events (end to end); snapshots in time order. The
// targets are the threads the snapshots hold: a switch event names non-target threads too, but
// only a target's switch-outs are all recorded, so only a target's slices can be closed.
// Returns false when the stream failed.
bool write_chrome_trace(std::ostream& out, std::span<const uint8_t> events,
                        std::span<const snapshot::Snapshot> snapshots, ChromeStats* stats = nullptr);

}  // namespace platoon::outputs
