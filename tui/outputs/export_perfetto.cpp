#include "tui/outputs/export_perfetto.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tui/outputs/export_targets.hpp"
#include "tui/outputs/perfetto_packets.hpp"
#include "tui/outputs/perfetto_requests.hpp"
#include "tui/trace/events.hpp"
#include "tui/trace/trace_reader.hpp"
#include "tui/analysis/window.hpp"

namespace platoon::outputs {
namespace {

namespace f = perfetto_fields;

constexpr size_t kEventsPerBundle = 4096;      // keeps packets small for trace_processor's parser

enum class CounterKind : uint64_t { events_per_cycle = 1, queue_depth = 2, wait_pct = 3, throttled_wait_pct = 4 };
uint64_t counter_uuid(uint32_t tid, CounterKind k) {
  return track_uuid(TrackRange::counter, (static_cast<uint64_t>(k) << 32) | tid);
}
uint64_t cgroup_uuid(size_t index) { return track_uuid(TrackRange::cgroup, index); }  // a cgroup's throttled-share track
const char* counter_name(CounterKind k) {
  switch (k) {
    case CounterKind::events_per_cycle: return "events per cycle";
    case CounterKind::queue_depth: return "queue depth at drain";
    case CounterKind::wait_pct: return "%wait";
    case CounterKind::throttled_wait_pct: return "%wait throttled (CPU quota)";
  }
  return "";
}

struct WaitSample {     // %wait of one thread over one snapshot interval, stamped at its start
  uint64_t ts_ns;
  uint32_t tid;
  double value;
  CounterKind kind = CounterKind::wait_pct;
};

struct CgroupSample {   // one cgroup's throttled share of periods over one interval, at its start
  uint64_t ts_ns;
  size_t group;         // index into State::cgroups
  double value;
};

std::string comm_of(const char (&comm)[PLATOON_COMM_LEN]) {
  return utf8_safe(std::string(comm, strnlen(comm, PLATOON_COMM_LEN)));
}

// One ftrace event: its stamp, the pid of the task current on the CPU (the common pid, where
// the record has it), then the event's own fields as the message `kind`.
ProtoMessage ftrace_event(uint64_t ts_ns, std::optional<uint32_t> current_pid, uint32_t kind,
                          const ProtoMessage& fields) {
  ProtoMessage ev;
  ev.add_varint(f::ftrace::kTimestamp, ts_ns);
  if (current_pid) ev.add_varint(f::ftrace::kPid, *current_pid);
  ev.add_message(kind, fields);
  return ev;
}

ProtoMessage switch_event(const platoon_event_header& h, const platoon_ev_switch& e) {
  ProtoMessage body;
  body.add_bytes(f::sched_switch::kPrevComm, comm_of(e.prev_comm));
  body.add_int(f::sched_switch::kPrevPid, h.tid);
  body.add_int(f::sched_switch::kPrevPrio, e.prev_prio);
  // The idle task is always runnable and never "preempted": R, as the kernel reports it.
  body.add_int(f::sched_switch::kPrevState, h.tid == 0 ? 0 : report_prev_state(e.prev_state));
  body.add_bytes(f::sched_switch::kNextComm, comm_of(e.next_comm));
  body.add_int(f::sched_switch::kNextPid, e.next_tid);
  body.add_int(f::sched_switch::kNextPrio, e.next_prio);
  return ftrace_event(h.ts_ns, h.tid, f::ftrace::kSchedSwitch, body);
}

ProtoMessage wake_event(const platoon_event_header& h, const platoon_ev_wake& e, bool waking) {
  ProtoMessage body;
  body.add_bytes(f::wake::kComm, comm_of(e.comm));
  body.add_int(f::wake::kPid, h.tid);
  body.add_int(f::wake::kPrio, e.prio);
  body.add_int(f::wake::kSuccess, 1);
  body.add_int(f::wake::kTargetCpu, e.target_cpu);
  return ftrace_event(h.ts_ns, e.waker_tid, waking ? f::ftrace::kSchedWaking : f::ftrace::kSchedWakeupNew, body);
}

// The task current on the CPU is not recorded, so no pid.
ProtoMessage migrate_event(const platoon_event_header& h, const platoon_ev_migrate& e) {
  ProtoMessage body;
  body.add_bytes(f::migrate::kComm, comm_of(e.comm));
  body.add_int(f::migrate::kPid, h.tid);
  body.add_int(f::migrate::kPrio, e.prio);
  body.add_int(f::migrate::kOrigCpu, e.orig_cpu);
  body.add_int(f::migrate::kDestCpu, e.dest_cpu);
  return ftrace_event(h.ts_ns, std::nullopt, f::ftrace::kSchedMigrateTask, body);
}

// Pass 1's view of the events: which threads get which counter tracks.
struct TrackScan : trace::EventVisitor {
  explicit TrackScan(std::set<std::pair<uint32_t, CounterKind>>& t) : tracks(t) {}
  // A failed call (-EINTR) returned no batch; io_cycles does not count it either.
  void on_epoll(const platoon_event_header& h, const platoon_ev_epoll& e) override {
    if (e.nevents >= 0) tracks.insert({h.tid, CounterKind::events_per_cycle});
  }
  void on_drain(const platoon_event_header& h, const platoon_ev_runtime&) override {
    tracks.insert({h.tid, CounterKind::queue_depth});
  }
  std::set<std::pair<uint32_t, CounterKind>>& tracks;
};

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

// Pass 2's view of the events, in time order out of the reorder buffer: sched records into their
// CPU's bundle, epoll and drain records as counter samples.
struct PerfettoExport::State : trace::EventVisitor {
  explicit State(std::ostream& o) : out(o), writer(o) {}

  std::ostream& out;
  PacketWriter writer;
  PerfettoStats stats;

  // Pass 1.
  std::map<uint32_t, ExportThread> targets;
  std::optional<snapshot::Snapshot> prev;
  std::vector<WaitSample> waits;                     // in time order (snapshots are)
  std::vector<std::string> cgroups;                  // paths of the groups with a track, by index
  std::vector<CgroupSample> cgroup_samples;          // in time order
  size_t next_cgroup = 0;
  std::set<std::pair<uint32_t, CounterKind>> tracks;
  std::vector<uint64_t> lost_per_cpu;                // from the last snapshot

  // Pass 2.
  trace::EventReader reader;
  uint64_t released_ns = 0;                          // the newest stamp written so far
  size_t next_wait = 0;
  struct Bundle {
    ProtoMessage msg;
    size_t events = 0;
    bool lost_flagged = false;
  };
  std::map<uint32_t, Bundle> bundles;
  std::optional<PerfettoRequests> requests;          // made in begin(), once the tracks are known

  bool has_track(uint32_t tid, CounterKind k) const { return tracks.count({tid, k}) > 0; }
  void counter(uint64_t ts, uint32_t tid, CounterKind kind, double value);
  void flush_bundle(uint32_t cpu, Bundle& b);
  void advance(uint64_t ts_ns);
  void sched(const platoon_event_header& h, const ProtoMessage& event, uint64_t& count);
  void waits_until(uint64_t ts_ns);

  void on_switch(const platoon_event_header& h, const platoon_ev_switch& e) override {
    sched(h, switch_event(h, e), stats.cpus[h.cpu].sched_switch);
  }
  // sched_wakeup is left out: Perfetto derives Runnable from sched_waking.
  void on_wake(const platoon_event_header& h, const platoon_ev_wake& e, trace::WakeKind kind) override {
    if (kind == trace::WakeKind::wakeup) return;
    const bool waking = kind == trace::WakeKind::waking;
    auto& cpu = stats.cpus[h.cpu];
    sched(h, wake_event(h, e, waking), waking ? cpu.sched_waking : cpu.sched_wakeup_new);
  }
  void on_migrate(const platoon_event_header& h, const platoon_ev_migrate& e) override {
    sched(h, migrate_event(h, e), stats.cpus[h.cpu].sched_migrate_task);
  }
  void on_epoll(const platoon_event_header& h, const platoon_ev_epoll& e) override {
    // A failed call (-EINTR) returned no batch; io_cycles does not count it either.
    if (e.nevents < 0 || !has_track(h.tid, CounterKind::events_per_cycle)) return;
    advance(h.ts_ns);
    counter(h.ts_ns, h.tid, CounterKind::events_per_cycle, static_cast<double>(e.nevents));
  }
  void on_drain(const platoon_event_header& h, const platoon_ev_runtime& e) override {
    if (!has_track(h.tid, CounterKind::queue_depth)) return;
    advance(h.ts_ns);
    counter(h.ts_ns, h.tid, CounterKind::queue_depth, static_cast<double>(e.a));
  }
  // Stamped at their ends, their slices begin earlier: written as they come, Perfetto sorts.
  void on_request(const platoon_event_header& h, const platoon_ev_request& r) override {
    if (requests) requests->add(h, r);
  }
};

void PerfettoExport::State::counter(uint64_t ts, uint32_t tid, CounterKind kind, double value) {
  ProtoMessage ev;
  ev.add_varint(f::track_event::kType, f::track_event::kTypeCounter);
  ev.add_varint(f::track_event::kTrackUuid, counter_uuid(tid, kind));
  ev.add_double(f::track_event::kDoubleCounterValue, value);
  writer.write_event(ts, ev);
  ++stats.counter_samples;
}

void PerfettoExport::State::flush_bundle(uint32_t cpu, Bundle& b) {
  if (b.events == 0) return;
  ProtoMessage bundle, packet;
  bundle.add_varint(f::kBundleCpu, cpu);
  // Losses are known per CPU for the whole recording, not where they happened: the CPU's first
  // bundle carries the flag, so Perfetto's import stats show the data as incomplete.
  if (!b.lost_flagged && cpu < lost_per_cpu.size() && lost_per_cpu[cpu] > 0) {
    bundle.add_bool(f::kBundleLostEvents, true);
    ++stats.lost_cpus;
  }
  b.lost_flagged = true;
  bundle.append_fields(b.msg);            // the events (repeated field 2), gathered as they came
  packet.add_message(f::packet::kFtraceEvents, bundle);
  writer.write(packet);
  b.msg.clear();
  b.events = 0;
}

// Everything stamped up to ts_ns that is not an event (the %wait samples) goes out first.
void PerfettoExport::State::advance(uint64_t ts_ns) {
  waits_until(ts_ns);
  released_ns = std::max(released_ns, ts_ns);
}

void PerfettoExport::State::sched(const platoon_event_header& h, const ProtoMessage& event, uint64_t& count) {
  if (h.ts_ns < released_ns) ++stats.late_events;
  advance(h.ts_ns);
  ++count;
  auto& b = bundles[h.cpu];
  b.msg.add_message(f::kBundleEvent, event);
  if (++b.events == kEventsPerBundle) flush_bundle(h.cpu, b);
}

void PerfettoExport::State::waits_until(uint64_t ts_ns) {
  for (; next_wait < waits.size() && waits[next_wait].ts_ns <= ts_ns; ++next_wait)
    counter(waits[next_wait].ts_ns, waits[next_wait].tid, waits[next_wait].kind, waits[next_wait].value);
  for (; next_cgroup < cgroup_samples.size() && cgroup_samples[next_cgroup].ts_ns <= ts_ns; ++next_cgroup) {
    const CgroupSample& c = cgroup_samples[next_cgroup];
    ProtoMessage ev;
    ev.add_varint(f::track_event::kType, f::track_event::kTypeCounter);
    ev.add_varint(f::track_event::kTrackUuid, cgroup_uuid(c.group));
    ev.add_double(f::track_event::kDoubleCounterValue, c.value);
    writer.write_event(c.ts_ns, ev);
    ++stats.counter_samples;
  }
}

PerfettoExport::PerfettoExport(std::ostream& out) : s_(std::make_unique<State>(out)) {}
PerfettoExport::~PerfettoExport() = default;

void PerfettoExport::scan_snapshot(const snapshot::Snapshot& snap) {
  add_targets(s_->targets, snap);
  s_->lost_per_cpu = snap.lost_events_per_cpu;
  // %wait per interval, stamped at the interval's start: a counter holds its value until the
  // next sample, which is exactly the interval it describes.
  if (s_->prev) {
    const analysis::Window win = analysis::make_window(*s_->prev, snap);
    if (win.has(snapshot::kFieldRunWait))
      for (const auto& tw : win.threads) {
        s_->waits.push_back({win.start_ns, tw.tid, tw.wait_pct});
        s_->tracks.insert({tw.tid, CounterKind::wait_pct});
      }
    // Throttled wait: a track for the threads that ever had any; samples kept for all until
    // begin() knows which those are.
    if (win.has(snapshot::kFieldWaitSplit))
      for (const auto& tw : win.threads) {
        s_->waits.push_back({win.start_ns, tw.tid, tw.wait_split.throttled_pct, CounterKind::throttled_wait_pct});
        if (tw.wait_split.throttled_pct > 0) s_->tracks.insert({tw.tid, CounterKind::throttled_wait_pct});
      }
    for (const auto& g : win.cgroups) {
      if (g.version == 0) continue;
      auto it = std::find(s_->cgroups.begin(), s_->cgroups.end(), g.path);
      const size_t index = static_cast<size_t>(it - s_->cgroups.begin());
      if (it == s_->cgroups.end()) s_->cgroups.push_back(g.path);
      s_->cgroup_samples.push_back({win.start_ns, index, g.throttled_periods_pct});
    }
  }
  s_->prev = snap;
}

void PerfettoExport::scan_event(const platoon_event_header&, const void* record, size_t size) {
  TrackScan scan(s_->tracks);
  visit_event(record, size, scan);
}

void PerfettoExport::begin(const trace::TraceMeta& meta) {
  State& st = *s_;
  st.prev.reset();
  label_targets(st.targets);
  // Only threads the snapshots name get tracks: a counter of a thread no snapshot held has no
  // name to show, and the recorder only samples targets anyway.
  for (auto it = st.tracks.begin(); it != st.tracks.end();)
    it = st.targets.count(it->first) ? std::next(it) : st.tracks.erase(it);
  std::erase_if(st.waits, [&](const WaitSample& w) { return !st.targets.count(w.tid) || !st.has_track(w.tid, w.kind); });
  {
    // The kernel release tells Perfetto which prev_state encoding the sched_switch events use.
    ProtoMessage uts, info, packet;
    uts.add_bytes(f::kUtsSysname, "Linux");
    uts.add_bytes(f::kUtsRelease, meta.kernel);
    info.add_message(f::kSystemInfoUtsname, uts);
    if (meta.ncpus) info.add_varint(f::kSystemInfoNumCpus, meta.ncpus);
    packet.add_message(f::packet::kSystemInfo, info);
    st.writer.write(packet);
  }
  // Descriptors: processes, their threads, and each thread's counter tracks.
  std::set<uint32_t> processes;
  for (const auto& [pid, name] : process_names(st.targets)) {
    processes.insert(pid);
    ProtoMessage proc, track;
    proc.add_int(f::kProcessPid, pid);
    proc.add_bytes(f::kProcessName, name);
    track.add_varint(f::track::kUuid, process_uuid(pid));
    track.add_message(f::track::kProcess, proc);
    st.writer.write_descriptor(track);
  }
  for (const auto& [tid, t] : st.targets) {
    ProtoMessage thread, track;
    thread.add_int(f::kThreadPid, t.pid);
    thread.add_int(f::kThreadTid, tid);
    thread.add_bytes(f::kThreadName, t.comm);
    track.add_varint(f::track::kUuid, thread_uuid(tid));
    track.add_varint(f::track::kParentUuid, process_uuid(t.pid));
    track.add_message(f::track::kThread, thread);
    st.writer.write_descriptor(track);
    ++st.stats.threads;
  }
  for (const auto& [tid, kind] : st.tracks) {
    ProtoMessage track, counter;
    track.add_varint(f::track::kUuid, counter_uuid(tid, kind));
    track.add_varint(f::track::kParentUuid, thread_uuid(tid));
    track.add_bytes(f::track::kName, st.targets.at(tid).label + " " + counter_name(kind));
    track.add_message(f::track::kCounter, counter);
    st.writer.write_descriptor(track);
    ++st.stats.counter_tracks;
  }
  for (size_t i = 0; i < st.cgroups.size(); ++i) {
    ProtoMessage track, counter;
    track.add_varint(f::track::kUuid, cgroup_uuid(i));
    track.add_bytes(f::track::kName, "cgroup " + utf8_safe(st.cgroups[i]) + " throttled % of periods");
    track.add_message(f::track::kCounter, counter);
    st.writer.write_descriptor(track);
    ++st.stats.counter_tracks;
  }
  st.requests.emplace(st.writer, st.targets, std::move(processes));
}

void PerfettoExport::write_event(const platoon_event_header& h, const void* record, size_t size) {
  s_->reader.add(h, record, size, *s_);
}

bool PerfettoExport::finish(PerfettoStats* stats) {
  State& st = *s_;
  st.reader.finish(st);
  st.waits_until(UINT64_MAX);
  st.stats.max_pending = st.reader.stats().max_pending;
  for (auto& [cpu, b] : st.bundles) st.flush_bundle(cpu, b);
  if (st.requests) st.stats.requests = st.requests->stats();
  st.stats.packets = st.writer.count();
  st.out.flush();
  if (stats) *stats = st.stats;
  return static_cast<bool>(st.out);
}

bool write_perfetto_trace(std::ostream& out, const trace::TraceMeta& meta, std::span<const uint8_t> events,
                          std::span<const snapshot::Snapshot> snapshots, PerfettoStats* stats) {
  PerfettoExport exp(out);
  for (const auto& snap : snapshots) exp.scan_snapshot(snap);
  trace::for_each_event(events, [&](const platoon_event_header& h, const void* rec, size_t size) { exp.scan_event(h, rec, size); });
  exp.begin(meta);
  trace::for_each_event(events, [&](const platoon_event_header& h, const void* rec, size_t size) { exp.write_event(h, rec, size); });
  return exp.finish(stats);
}

}  // namespace platoon::outputs
