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
#include "tui/trace/trace_reader.hpp"
#include "tui/analysis/window.hpp"

namespace platoon::model {
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

class Emitter {
 public:
  Emitter(Writer& w, uint64_t origin_ns) : w_(w), origin_ns_(origin_ns) {}

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
  }
  void counter(const char* name, uint32_t pid, uint64_t ts_ns, const std::string& label, double v) {
    w_.StartObject();
    key("ph"); w_.String("C");
    key("name"); w_.String(name);
    key("pid"); w_.Uint(pid);
    key("ts"); w_.Double(us(ts_ns));
    key("args"); w_.StartObject(); str(label); w_.Double(v); w_.EndObject();
    w_.EndObject();
  }

 private:
  void key(const char* k) { w_.Key(k); }
  void str(const std::string& s) { w_.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }
  // A snapshot may precede the first event or the reverse; origin is the earlier, so no
  // timestamp is negative.
  double us(uint64_t ts_ns) const { return static_cast<double>(ts_ns - origin_ns_) / 1e3; }
  Writer& w_;
  uint64_t origin_ns_;
};

}  // namespace

bool write_chrome_trace(std::ostream& out, std::span<const uint8_t> events,
                        std::span<const Snapshot> snapshots, ChromeStats* stats_out) {
  ChromeStats stats;
  const auto targets = targets_of(snapshots);
  std::vector<SchedEvent> sched;
  std::vector<Counter> epoll, drains;
  uint64_t first_ns = UINT64_MAX, last_ns = 0;
  for (const auto& s : snapshots) first_ns = std::min(first_ns, s.ts_ns), last_ns = std::max(last_ns, s.ts_ns);
  for_each_event(events, [&](const platoon_event_header& h, const void* rec, size_t size) {
    first_ns = std::min<uint64_t>(first_ns, h.ts_ns);
    last_ns = std::max<uint64_t>(last_ns, h.ts_ns);
    if (h.type == PLATOON_EV_SWITCH) {
      if (auto e = event_as<platoon_ev_switch>(rec, size)) sched.push_back({h.ts_ns, h.cpu, h.tid, e->next_tid, false});
    } else if (h.type == PLATOON_EV_EXIT) {
      sched.push_back({h.ts_ns, h.cpu, h.tid, 0, true});
    } else if (h.type == PLATOON_EV_EPOLL) {
      // A failed call (-EINTR) returned no batch; io_cycles does not count it either.
      auto e = event_as<platoon_ev_epoll>(rec, size);
      if (e && e->nevents >= 0) epoll.push_back({h.ts_ns, h.tid, static_cast<double>(e->nevents)});
    } else if (h.type == PLATOON_EV_DRAIN) {
      if (auto e = event_as<platoon_ev_runtime>(rec, size))
        drains.push_back({h.ts_ns, h.tid, static_cast<double>(e->a)});
    }
  });
  if (first_ns == UINT64_MAX) first_ns = last_ns = 0;
  // The ring buffer delivers per-CPU batches: nearly, not strictly, in time order. Slices are
  // built by walking each thread's switches in order, so sort (stable: equal stamps keep the
  // order the kernel emitted them on that CPU).
  std::stable_sort(sched.begin(), sched.end(),
                   [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; });

  rapidjson::OStreamWrapper os(out);
  Writer w(os);
  Emitter emit(w, first_ns);
  w.StartObject();
  w.Key("traceEvents");
  w.StartArray();

  for (const auto& [pid, name] : process_names(targets)) emit.metadata("process_name", pid, pid, name);
  for (const auto& [tid, t] : targets) emit.metadata("thread_name", t.pid, tid, t.comm);

  // Running slices. A slice opens when a target is switched in and closes at its next
  // switch-out on that CPU; one thread runs on one CPU at a time, so a thread's slices never
  // overlap. A switch-out on another CPU, or a second switch-in, means the ring buffer lost the
  // event between: that slice's bounds are unknown and it is dropped, not guessed.
  //
  // An exiting thread stops being a target at sched_process_exit (the collector books its run
  // up to there and records no later switch of it), so its last slice closes at the exit.
  struct Open { uint64_t start_ns; uint32_t cpu; };
  std::unordered_map<uint32_t, Open> open;
  std::unordered_set<uint32_t> exited;
  std::unordered_set<uint32_t> seen;  // threads with an earlier switch event
  for (const auto& e : sched) {
    auto t = targets.find(e.prev);
    if (e.prev != 0 && t != targets.end() && !exited.count(e.prev)) {
      if (e.exit) exited.insert(e.prev);
      const bool first_event = seen.insert(e.prev).second;
      auto o = open.find(e.prev);
      if (o == open.end() && first_event) {
        // Already running when the recording started (its first event is a switch-out or its
        // exit): the slice starts with the trace.
        if (e.ts_ns > first_ns) {
          emit.slice(t->second.pid, e.prev, first_ns, e.ts_ns, e.cpu);
          ++stats.slices;
        }
        ++stats.opened_at_start;
      } else if (o == open.end()) {
        // A switch-out whose switch-in was never traced (the kernel occasionally skips one,
        // see bpf/platoon.bpf.c): its start is unknown, so the slice is dropped.
        ++stats.dropped;
      } else {
        if (o->second.cpu == e.cpu) {
          emit.slice(t->second.pid, e.prev, o->second.start_ns, e.ts_ns, e.cpu);
          ++stats.slices;
        } else {
          ++stats.dropped;
        }
        open.erase(o);
      }
    }
    if (!e.exit && e.next != 0 && targets.count(e.next) && !exited.count(e.next)) {
      seen.insert(e.next);
      if (open.count(e.next)) ++stats.dropped;
      open[e.next] = Open{e.ts_ns, e.cpu};
    }
  }
  // Still running when the trace ends: closed at the trace's last timestamp (not dropped), so
  // the slices add up to the on-CPU time the aggregates count, which include the unfinished run.
  for (const auto& [tid, o] : open) {
    if (last_ns > o.start_ns) {
      emit.slice(targets.at(tid).pid, tid, o.start_ns, last_ns, o.cpu);
      ++stats.slices;
    }
    ++stats.closed_at_end;
  }

  auto counters = [&](const char* name, std::vector<Counter>& samples) {
    std::stable_sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; });
    for (const auto& c : samples) {
      auto t = targets.find(c.tid);
      if (t == targets.end()) continue;
      emit.counter(name, t->second.pid, c.ts_ns, t->second.label, c.value);
      ++stats.counters;
    }
  };
  counters("events per cycle", epoll);
  counters("queue depth at drain", drains);

  // %wait per interval, stamped at the interval's start: a counter holds its value until the
  // next sample, which is exactly the interval it describes.
  for (size_t i = 1; i < snapshots.size(); ++i) {
    const Window win = make_window(snapshots[i - 1], snapshots[i]);
    if (!win.has(kFieldRunWait)) break;
    for (const auto& tw : win.threads) {
      auto t = targets.find(tw.tid);
      if (t == targets.end()) continue;
      emit.counter("%wait", tw.pid, win.start_ns, t->second.label, tw.wait_pct);
      ++stats.counters;
    }
  }

  w.EndArray();
  w.Key("displayTimeUnit");
  w.String("ns");
  w.EndObject();
  os.Flush();
  if (stats_out) *stats_out = stats;
  return static_cast<bool>(out);
}

}  // namespace platoon::model
