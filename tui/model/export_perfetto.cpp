#include "tui/model/export_perfetto.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "tui/model/export_targets.hpp"
#include "tui/model/proto_encoder.hpp"
#include "tui/model/trace_reader.hpp"
#include "tui/model/window.hpp"

namespace platoon::model {
namespace {

// Field numbers of perfetto_trace.proto (= Perfetto's published schema).
namespace f {
constexpr uint32_t kTracePacket = 1;
namespace packet {
constexpr uint32_t kFtraceEvents = 1, kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11,
                   kSequenceFlags = 13, kSystemInfo = 45, kTrackDescriptor = 60;
}
constexpr uint32_t kSystemInfoUtsname = 1, kSystemInfoNumCpus = 8;
constexpr uint32_t kUtsSysname = 1, kUtsRelease = 3;
constexpr uint32_t kBundleCpu = 1, kBundleEvent = 2, kBundleLostEvents = 3;
namespace ftrace {
constexpr uint32_t kTimestamp = 1, kPid = 2, kSchedSwitch = 4, kSchedWaking = 20, kSchedWakeupNew = 114,
                   kSchedMigrateTask = 491;
}
namespace sched_switch {
constexpr uint32_t kPrevComm = 1, kPrevPid = 2, kPrevPrio = 3, kPrevState = 4, kNextComm = 5, kNextPid = 6,
                   kNextPrio = 7;
}
namespace wake {  // sched_waking and sched_wakeup_new share the layout
constexpr uint32_t kComm = 1, kPid = 2, kPrio = 3, kSuccess = 4, kTargetCpu = 5;
}
namespace migrate {
constexpr uint32_t kComm = 1, kPid = 2, kPrio = 3, kOrigCpu = 4, kDestCpu = 5;
}
namespace track {
constexpr uint32_t kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kParentUuid = 5, kCounter = 8;
}
constexpr uint32_t kProcessPid = 1, kProcessName = 6;
constexpr uint32_t kThreadPid = 1, kThreadTid = 2, kThreadName = 5;
namespace track_event {
constexpr uint32_t kType = 9, kTrackUuid = 11, kDoubleCounterValue = 44;
constexpr uint64_t kTypeCounter = 4;
}
}  // namespace f

constexpr uint32_t kSequenceId = 1;            // every packet comes from this one writer
constexpr uint32_t kSeqIncrementalStateCleared = 1;
constexpr size_t kEventsPerBundle = 4096;      // keeps packets small for trace_processor's parser

// Track uuids: global to the trace, so each kind gets its own range.
enum class CounterKind : uint64_t { events_per_cycle = 1, queue_depth = 2, wait_pct = 3 };
uint64_t process_uuid(uint32_t pid) { return (1ull << 56) | pid; }
uint64_t thread_uuid(uint32_t tid) { return (2ull << 56) | tid; }
uint64_t counter_uuid(uint32_t tid, CounterKind k) { return (3ull << 56) | (static_cast<uint64_t>(k) << 32) | tid; }
const char* counter_name(CounterKind k) {
  switch (k) {
    case CounterKind::events_per_cycle: return "events per cycle";
    case CounterKind::queue_depth: return "queue depth at drain";
    case CounterKind::wait_pct: return "%wait";
  }
  return "";
}

struct SchedRef {      // one sched event of a CPU: where its record is in the events buffer
  uint64_t ts_ns;
  size_t offset;
  size_t size;
};

struct Sample {
  uint64_t ts_ns;
  uint32_t tid;
  CounterKind kind;
  double value;
};

std::string comm_of(const char (&comm)[PLATOON_COMM_LEN]) {
  return utf8_safe(std::string(comm, strnlen(comm, PLATOON_COMM_LEN)));
}

class PacketWriter {
 public:
  explicit PacketWriter(std::ostream& out) : out_(out) {}
  // Every packet carries the sequence id; the first one also says the sequence starts clean
  // (trace_processor drops track events of a sequence whose state it cannot vouch for).
  void write(ProtoMessage& packet) {
    packet.add_varint(f::packet::kSequenceId, kSequenceId);
    if (count_ == 0) packet.add_varint(f::packet::kSequenceFlags, kSeqIncrementalStateCleared);
    frame_.clear();
    frame_.add_message(f::kTracePacket, packet);
    out_.write(frame_.bytes().data(), static_cast<std::streamsize>(frame_.size()));
    ++count_;
  }
  uint64_t count() const { return count_; }

 private:
  std::ostream& out_;
  ProtoMessage frame_;
  uint64_t count_ = 0;
};

ProtoMessage ftrace_event(const platoon_event_header& h, const void* rec, size_t size, PerfettoStats::Cpu& counts) {
  ProtoMessage ev, body;
  ev.add_varint(f::ftrace::kTimestamp, h.ts_ns);
  if (h.type == PLATOON_EV_SWITCH) {
    const auto e = *event_as<platoon_ev_switch>(rec, size);
    ev.add_varint(f::ftrace::kPid, h.tid);
    body.add_bytes(f::sched_switch::kPrevComm, comm_of(e.prev_comm));
    body.add_int(f::sched_switch::kPrevPid, h.tid);
    body.add_int(f::sched_switch::kPrevPrio, e.prev_prio);
    // The idle task is always runnable and never "preempted": R, as the kernel reports it.
    body.add_int(f::sched_switch::kPrevState, h.tid == 0 ? 0 : report_prev_state(e.prev_state));
    body.add_bytes(f::sched_switch::kNextComm, comm_of(e.next_comm));
    body.add_int(f::sched_switch::kNextPid, e.next_tid);
    body.add_int(f::sched_switch::kNextPrio, e.next_prio);
    ev.add_message(f::ftrace::kSchedSwitch, body);
    ++counts.sched_switch;
  } else if (h.type == PLATOON_EV_WAKING || h.type == PLATOON_EV_WAKEUP_NEW) {
    const auto e = *event_as<platoon_ev_wake>(rec, size);
    ev.add_varint(f::ftrace::kPid, e.waker_tid);
    body.add_bytes(f::wake::kComm, comm_of(e.comm));
    body.add_int(f::wake::kPid, h.tid);
    body.add_int(f::wake::kPrio, e.prio);
    body.add_int(f::wake::kSuccess, 1);
    body.add_int(f::wake::kTargetCpu, e.target_cpu);
    const bool waking = h.type == PLATOON_EV_WAKING;
    ev.add_message(waking ? f::ftrace::kSchedWaking : f::ftrace::kSchedWakeupNew, body);
    ++(waking ? counts.sched_waking : counts.sched_wakeup_new);
  } else {  // PLATOON_EV_MIGRATE; the task current on the CPU is not recorded, so no pid
    const auto e = *event_as<platoon_ev_migrate>(rec, size);
    body.add_bytes(f::migrate::kComm, comm_of(e.comm));
    body.add_int(f::migrate::kPid, h.tid);
    body.add_int(f::migrate::kPrio, e.prio);
    body.add_int(f::migrate::kOrigCpu, e.orig_cpu);
    body.add_int(f::migrate::kDestCpu, e.dest_cpu);
    ev.add_message(f::ftrace::kSchedMigrateTask, body);
    ++counts.sched_migrate_task;
  }
  return ev;
}

bool exported_sched_type(uint16_t type) {
  return type == PLATOON_EV_SWITCH || type == PLATOON_EV_WAKING || type == PLATOON_EV_WAKEUP_NEW ||
         type == PLATOON_EV_MIGRATE;
}

}  // namespace

int64_t report_prev_state(uint32_t raw) {
  // include/linux/sched.h: TASK_REPORT = the low 7 state bits; TASK_IDLE = TASK_UNINTERRUPTIBLE
  // | TASK_NOLOAD, reported as TASK_REPORT_IDLE; a preempted task as TASK_REPORT_MAX ("R+").
  constexpr uint32_t kTaskReport = 0x7f, kTaskIdle = 0x402, kTaskDead = 0x80, kTaskRtlockWait = 0x1000;
  constexpr int64_t kReportIdle = 0x80, kReportMax = 0x100, kExitDead = 0x10, kUninterruptible = 0x2;
  if (raw == 0) return kReportMax;
  if ((raw & kTaskIdle) == kTaskIdle) return kReportIdle;
  const uint32_t s = raw & kTaskReport;
  if (s != 0) return int64_t{1} << (std::bit_width(s) - 1);  // the kernel reports the highest bit
  if (raw & kTaskRtlockWait) return kUninterruptible;
  if (raw & kTaskDead) return kExitDead;
  return 0;
}

bool write_perfetto_trace(std::ostream& out, const TraceMeta& meta, std::span<const uint8_t> events,
                          std::span<const Snapshot> snapshots, PerfettoStats* stats_out) {
  PerfettoStats stats;
  const auto targets = targets_of(snapshots);
  std::map<uint32_t, std::vector<SchedRef>> per_cpu;
  std::vector<Sample> samples;
  const uint8_t* base = events.data();
  for_each_event(events, [&](const platoon_event_header& h, const void* rec, size_t size) {
    if (exported_sched_type(h.type)) {
      per_cpu[h.cpu].push_back({h.ts_ns, static_cast<size_t>(static_cast<const uint8_t*>(rec) - base), size});
    } else if (h.type == PLATOON_EV_EPOLL) {
      // A failed call (-EINTR) returned no batch; io_cycles does not count it either.
      auto e = event_as<platoon_ev_epoll>(rec, size);
      if (e && e->nevents >= 0 && targets.count(h.tid))
        samples.push_back({h.ts_ns, h.tid, CounterKind::events_per_cycle, static_cast<double>(e->nevents)});
    } else if (h.type == PLATOON_EV_DRAIN) {
      auto e = event_as<platoon_ev_runtime>(rec, size);
      if (e && targets.count(h.tid))
        samples.push_back({h.ts_ns, h.tid, CounterKind::queue_depth, static_cast<double>(e->a)});
    }
  });
  // %wait per interval, stamped at the interval's start: a counter holds its value until the
  // next sample, which is exactly the interval it describes.
  for (size_t i = 1; i < snapshots.size(); ++i) {
    const Window win = make_window(snapshots[i - 1], snapshots[i]);
    if (!win.has(kFieldRunWait)) break;
    for (const auto& tw : win.threads)
      if (targets.count(tw.tid)) samples.push_back({win.start_ns, tw.tid, CounterKind::wait_pct, tw.wait_pct});
  }

  PacketWriter writer(out);
  {
    // The kernel release tells Perfetto which prev_state encoding the sched_switch events use.
    ProtoMessage uts, info, packet;
    uts.add_bytes(f::kUtsSysname, "Linux");
    uts.add_bytes(f::kUtsRelease, meta.kernel);
    info.add_message(f::kSystemInfoUtsname, uts);
    if (meta.ncpus) info.add_varint(f::kSystemInfoNumCpus, meta.ncpus);
    packet.add_message(f::packet::kSystemInfo, info);
    writer.write(packet);
  }

  // Descriptors: processes, their threads, and each thread's counter tracks.
  auto descriptor = [&](const ProtoMessage& track) {
    ProtoMessage packet;
    packet.add_message(f::packet::kTrackDescriptor, track);
    writer.write(packet);
  };
  for (const auto& [pid, name] : process_names(targets)) {
    ProtoMessage proc, track;
    proc.add_int(f::kProcessPid, pid);
    proc.add_bytes(f::kProcessName, name);
    track.add_varint(f::track::kUuid, process_uuid(pid));
    track.add_message(f::track::kProcess, proc);
    descriptor(track);
  }
  for (const auto& [tid, t] : targets) {
    ProtoMessage thread, track;
    thread.add_int(f::kThreadPid, t.pid);
    thread.add_int(f::kThreadTid, tid);
    thread.add_bytes(f::kThreadName, t.comm);
    track.add_varint(f::track::kUuid, thread_uuid(tid));
    track.add_varint(f::track::kParentUuid, process_uuid(t.pid));
    track.add_message(f::track::kThread, thread);
    descriptor(track);
    ++stats.threads;
  }
  std::set<std::pair<uint32_t, CounterKind>> counter_tracks;
  for (const auto& s : samples) counter_tracks.insert({s.tid, s.kind});
  for (const auto& [tid, kind] : counter_tracks) {
    ProtoMessage track, counter;
    track.add_varint(f::track::kUuid, counter_uuid(tid, kind));
    track.add_varint(f::track::kParentUuid, thread_uuid(tid));
    track.add_bytes(f::track::kName, targets.at(tid).label + " " + counter_name(kind));
    track.add_message(f::track::kCounter, counter);
    descriptor(track);
    ++stats.counter_tracks;
  }

  // Scheduler events, per CPU in time order (the ring buffer delivers per-CPU batches nearly,
  // not strictly, in order; stable so equal stamps keep the kernel's order).
  const std::vector<uint64_t> no_losses;
  const auto& lost = snapshots.empty() ? no_losses : snapshots.back().lost_events_per_cpu;
  for (auto& [cpu, refs] : per_cpu) {
    std::stable_sort(refs.begin(), refs.end(), [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; });
    auto& counts = stats.cpus[cpu];
    const bool cpu_lost = cpu < lost.size() && lost[cpu] > 0;
    stats.lost_cpus += cpu_lost ? 1 : 0;
    for (size_t i = 0; i < refs.size(); i += kEventsPerBundle) {
      ProtoMessage bundle, packet;
      bundle.add_varint(f::kBundleCpu, cpu);
      if (cpu_lost && i == 0) bundle.add_bool(f::kBundleLostEvents, true);
      for (size_t j = i; j < std::min(refs.size(), i + kEventsPerBundle); ++j) {
        platoon_event_header h;
        std::memcpy(&h, base + refs[j].offset, sizeof h);
        bundle.add_message(f::kBundleEvent, ftrace_event(h, base + refs[j].offset, refs[j].size, counts));
      }
      packet.add_message(f::packet::kFtraceEvents, bundle);
      writer.write(packet);
    }
  }

  std::stable_sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; });
  for (const auto& s : samples) {
    ProtoMessage ev, packet;
    ev.add_varint(f::track_event::kType, f::track_event::kTypeCounter);
    ev.add_varint(f::track_event::kTrackUuid, counter_uuid(s.tid, s.kind));
    ev.add_double(f::track_event::kDoubleCounterValue, s.value);
    packet.add_varint(f::packet::kTimestamp, s.ts_ns);
    packet.add_message(f::packet::kTrackEvent, ev);
    writer.write(packet);
    ++stats.counter_samples;
  }
  stats.packets = writer.count();
  out.flush();
  if (stats_out) *stats_out = stats;
  return static_cast<bool>(out);
}

}  // namespace platoon::model
