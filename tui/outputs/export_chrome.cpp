#include "tui/outputs/export_chrome.hpp"

#include <rapidjson/ostreamwrapper.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tui/outputs/export_targets.hpp"
#include "tui/trace/events.hpp"
#include "tui/trace/trace_reader.hpp"
#include "tui/analysis/window.hpp"

namespace platoon::outputs {
namespace {

using Writer = rapidjson::Writer<rapidjson::OStreamWrapper>;

struct SchedEvent {  // what the slices are built from: a switch, or a thread's exit
  uint64_t ts_ns;
  uint32_t cpu;
  uint32_t prev;      // switch: the thread switched out; exit: the exiting thread
  uint32_t next;      // switch: the thread switched in; exit: 0
  bool exit;
};

struct Counter {      // one sample of an events-per-cycle or queue-depth track
  uint64_t ts_ns;
  uint32_t tid;
  double value;
};

using Targets = std::map<uint32_t, ExportThread>;

// Writes the trace events, counting what it writes.
class Emitter {
 public:
  Emitter(Writer& w, uint64_t origin_ns, ChromeStats& stats) : w_(w), origin_ns_(origin_ns), stats_(stats) {}

  void metadata(const char* name, uint32_t pid, uint32_t tid, const std::string& value) {
    w_.StartObject();
    key("ph"); w_.String("M");
    key("name"); w_.String(name);
    key("pid"); w_.Uint(pid);
    key("tid"); w_.Uint(tid);
    key("args"); w_.StartObject(); key("name"); str(value); w_.EndObject();
    w_.EndObject();
  }
  void slice(uint32_t pid, uint32_t tid, uint64_t start_ns, uint64_t end_ns, uint32_t cpu) {
    w_.StartObject();
    key("ph"); w_.String("X");
    key("name"); w_.String("Running");
    key("pid"); w_.Uint(pid);
    key("tid"); w_.Uint(tid);
    key("ts"); w_.Double(us(start_ns));
    key("dur"); w_.Double(static_cast<double>(end_ns - start_ns) / 1e3);
    key("args"); w_.StartObject(); key("cpu"); w_.Uint(cpu); w_.EndObject();
    w_.EndObject();
    ++stats_.slices;
  }
  void counter(const char* name, uint32_t pid, uint64_t ts_ns, const std::string& label, double v) {
    w_.StartObject();
    key("ph"); w_.String("C");
    key("name"); w_.String(name);
    key("pid"); w_.Uint(pid);
    key("ts"); w_.Double(us(ts_ns));
    key("args"); w_.StartObject(); str(label); w_.Double(v); w_.EndObject();
    w_.EndObject();
    ++stats_.counters;
  }
  ChromeStats& stats() { return stats_; }

 private:
  void key(const char* k) { w_.Key(k); }
  void str(const std::string& s) { w_.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }
  // A snapshot may precede the first event or the reverse; origin is the earlier, so no
  // timestamp is negative.
  double us(uint64_t ts_ns) const { return static_cast<double>(ts_ns - origin_ns_) / 1e3; }
  Writer& w_;
  uint64_t origin_ns_;
  ChromeStats& stats_;
};

// What the trace is built from, each list in time order.
struct Recorded {
  std::vector<SchedEvent> sched;
  std::vector<Counter> epoll, drains;
  uint64_t first_ns = UINT64_MAX, last_ns = 0;  // over the snapshots and every event
};

struct Collect : trace::EventVisitor {
  explicit Collect(Recorded& r) : rec(r) {}
  void on_switch(const platoon_event_header& h, const platoon_ev_switch& e) override {
    rec.sched.push_back({h.ts_ns, h.cpu, h.tid, e.next_tid, false});
  }
  void on_exit(const platoon_event_header& h, const platoon_ev_exit&) override {
    rec.sched.push_back({h.ts_ns, h.cpu, h.tid, 0, true});
  }
  void on_epoll(const platoon_event_header& h, const platoon_ev_epoll& e) override {
    // A failed call (-EINTR) returned no batch; io_cycles does not count it either.
    if (e.nevents >= 0) rec.epoll.push_back({h.ts_ns, h.tid, static_cast<double>(e.nevents)});
  }
  void on_drain(const platoon_event_header& h, const platoon_ev_runtime& e) override {
    rec.drains.push_back({h.ts_ns, h.tid, static_cast<double>(e.a)});
  }
  Recorded& rec;
};

// The whole recording is in memory, so it is sorted whole rather than through EventReader's
// horizon: slices are built by walking each thread's switches in order. The sort is stable:
// equal stamps keep the order the kernel emitted them on that CPU.
Recorded collect(std::span<const uint8_t> events, std::span<const snapshot::Snapshot> snapshots) {
  Recorded rec;
  for (const auto& s : snapshots) rec.first_ns = std::min(rec.first_ns, s.ts_ns), rec.last_ns = std::max(rec.last_ns, s.ts_ns);
  Collect collector(rec);
  trace::for_each_event(events, [&](const platoon_event_header& h, const void* record, size_t size) {
    rec.first_ns = std::min<uint64_t>(rec.first_ns, h.ts_ns);
    rec.last_ns = std::max<uint64_t>(rec.last_ns, h.ts_ns);
    visit_event(record, size, collector);
  });
  if (rec.first_ns == UINT64_MAX) rec.first_ns = rec.last_ns = 0;
  const auto by_time = [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; };
  std::stable_sort(rec.sched.begin(), rec.sched.end(), by_time);
  std::stable_sort(rec.epoll.begin(), rec.epoll.end(), by_time);
  std::stable_sort(rec.drains.begin(), rec.drains.end(), by_time);
  return rec;
}

// Running slices. A slice opens when a target is switched in and closes at its next switch-out
// on that CPU; one thread runs on one CPU at a time, so a thread's slices never overlap. A
// switch-out on another CPU, or a second switch-in, means the ring buffer lost the event
// between: that slice's bounds are unknown and it is dropped, not guessed.
//
// An exiting thread stops being a target at sched_process_exit (the collector books its run up
// to there and records no later switch of it), so its last slice closes at the exit.
class Slices {
 public:
  Slices(Emitter& emit, const Targets& targets, uint64_t first_ns)
      : emit_(emit), stats_(emit.stats()), targets_(targets), first_ns_(first_ns) {}

  void add(const SchedEvent& e) {
    auto t = targets_.find(e.prev);
    if (e.prev != 0 && t != targets_.end() && !exited_.count(e.prev)) switch_out(e, t->second.pid);
    if (!e.exit && e.next != 0 && targets_.count(e.next) && !exited_.count(e.next)) switch_in(e);
  }
  // Still running when the trace ends: closed at the trace's last timestamp (not dropped), so
  // the slices add up to the on-CPU time the aggregates count, which include the unfinished run.
  void close_all(uint64_t last_ns) {
    for (const auto& [tid, o] : open_) {
      if (last_ns > o.start_ns) emit_.slice(targets_.at(tid).pid, tid, o.start_ns, last_ns, o.cpu);
      ++stats_.closed_at_end;
    }
  }

 private:
  void switch_out(const SchedEvent& e, uint32_t pid) {
    if (e.exit) exited_.insert(e.prev);
    const bool first_event = seen_.insert(e.prev).second;
    auto o = open_.find(e.prev);
    if (o == open_.end() && first_event) {
      // Already running when the recording started (its first event is a switch-out or its
      // exit): the slice starts with the trace.
      if (e.ts_ns > first_ns_) emit_.slice(pid, e.prev, first_ns_, e.ts_ns, e.cpu);
      ++stats_.opened_at_start;
    } else if (o == open_.end()) {
      // A switch-out whose switch-in was never traced (the kernel occasionally skips one, see
      // bpf/platoon.bpf.c): its start is unknown, so the slice is dropped.
      ++stats_.dropped;
    } else {
      if (o->second.cpu == e.cpu) emit_.slice(pid, e.prev, o->second.start_ns, e.ts_ns, e.cpu);
      else ++stats_.dropped;
      open_.erase(o);
    }
  }
  void switch_in(const SchedEvent& e) {
    seen_.insert(e.next);
    if (open_.count(e.next)) ++stats_.dropped;
    open_[e.next] = Open{e.ts_ns, e.cpu};
  }

  struct Open { uint64_t start_ns; uint32_t cpu; };
  Emitter& emit_;
  ChromeStats& stats_;
  const Targets& targets_;
  uint64_t first_ns_;
  std::unordered_map<uint32_t, Open> open_;
  std::unordered_set<uint32_t> exited_;
  std::unordered_set<uint32_t> seen_;  // threads with an earlier switch event
};

void write_counters(Emitter& emit, const Targets& targets, const char* name, const std::vector<Counter>& samples) {
  for (const auto& c : samples) {
    auto t = targets.find(c.tid);
    if (t != targets.end()) emit.counter(name, t->second.pid, c.ts_ns, t->second.label, c.value);
  }
}

// %wait per interval, stamped at the interval's start: a counter holds its value until the next
// sample, which is exactly the interval it describes.
void write_wait_counters(Emitter& emit, const Targets& targets, std::span<const snapshot::Snapshot> snapshots) {
  for (size_t i = 1; i < snapshots.size(); ++i) {
    const analysis::Window win = analysis::make_window(snapshots[i - 1], snapshots[i]);
    if (!win.has(snapshot::kFieldRunWait)) break;
    for (const auto& tw : win.threads) {
      auto t = targets.find(tw.tid);
      if (t != targets.end()) emit.counter("%wait", tw.pid, win.start_ns, t->second.label, tw.wait_pct);
    }
  }
}

}  // namespace

bool write_chrome_trace(std::ostream& out, std::span<const uint8_t> events,
                        std::span<const snapshot::Snapshot> snapshots, ChromeStats* stats_out) {
  ChromeStats stats;
  const Targets targets = targets_of(snapshots);
  const Recorded rec = collect(events, snapshots);
  rapidjson::OStreamWrapper os(out);
  Writer w(os);
  Emitter emit(w, rec.first_ns, stats);
  w.StartObject();
  w.Key("traceEvents");
  w.StartArray();
  for (const auto& [pid, name] : process_names(targets)) emit.metadata("process_name", pid, pid, name);
  for (const auto& [tid, t] : targets) emit.metadata("thread_name", t.pid, tid, t.comm);
  Slices slices(emit, targets, rec.first_ns);
  for (const auto& e : rec.sched) slices.add(e);
  slices.close_all(rec.last_ns);
  write_counters(emit, targets, "events per cycle", rec.epoll);
  write_counters(emit, targets, "queue depth at drain", rec.drains);
  write_wait_counters(emit, targets, snapshots);
  w.EndArray();
  w.Key("displayTimeUnit");
  w.String("ns");
  w.EndObject();
  os.Flush();
  if (stats_out) *stats_out = stats;
  return static_cast<bool>(out);
}

}  // namespace platoon::outputs
