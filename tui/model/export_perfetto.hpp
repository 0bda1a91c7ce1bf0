// platoon export --format perfetto: a protobuf trace (Trace of TracePackets, the schema subset
// in perfetto_trace.proto) that ui.perfetto.dev and trace_processor open natively:
//   - per-CPU ftrace event bundles of sched_switch, sched_waking, sched_wakeup_new and
//     sched_migrate_task with BOOTTIME timestamps (what the recorder stamps), from which
//     Perfetto builds its CPU tracks and each thread's Running / Runnable / Sleeping states;
//   - process and thread track descriptors with their names;
//   - counter tracks under each thread: ready events per epoll wait call and fiber queue depth
//     at each drain (event-loop and platoon-runtime threads), %wait per snapshot interval.
// sched_wakeup is not exported: Perfetto derives Runnable from sched_waking (its maintainers
// chose waking over wakeup), and the recording holds a waking for every wakeup.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <span>

#include "tui/model/snapshot.hpp"
#include "tui/model/trace_writer.hpp"  // TraceMeta

namespace platoon::model {

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
};

// events: the records of TraceContents::events (end to end); snapshots in time order.
// Returns false when the stream failed.
bool write_perfetto_trace(std::ostream& out, const TraceMeta& meta, std::span<const uint8_t> events,
                          std::span<const Snapshot> snapshots, PerfettoStats* stats = nullptr);

// The kernel's sched_switch tracepoint reports prev_state as one TASK_REPORT bit (what Perfetto
// decodes into R, R+, S, D, I, X...); the recorder stores the raw task state, 0 when preempted.
int64_t report_prev_state(uint32_t raw_state);

}  // namespace platoon::model
