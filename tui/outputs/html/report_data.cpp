#include "tui/outputs/html/report_data.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "tui/analysis/histogram.hpp"
#include "tui/analysis/requests.hpp"
#include "tui/outputs/doctor_output.hpp"

namespace platoon::outputs::html {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;
namespace doc = analysis::doctor;

void str(Writer& j, const std::string& s) { j.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); }
void num(Writer& j, double v) {
  if (std::isfinite(v)) j.Double(std::round(v * 1000) / 1000);
  else j.Null();
}
void raw(Writer& j, const std::string& json) {
  std::string s = json;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  j.RawValue(s.c_str(), s.size(), rapidjson::kObjectType);
}

// Carriers and pollers first (the threads doctor speaks of), then the busiest.
std::vector<const analysis::ThreadWindow*> charted_threads(const analysis::Window& w) {
  const doc::Roles roles = doc::find_roles(w);
  std::vector<const analysis::ThreadWindow*> out;
  std::set<const analysis::ThreadWindow*> taken;
  for (const auto* list : {&roles.carriers, &roles.pollers})
    for (const analysis::ThreadWindow* t : *list)
      if (taken.insert(t).second) out.push_back(t);
  std::vector<const analysis::ThreadWindow*> rest;
  for (const analysis::ThreadWindow& t : w.threads)
    if (!taken.count(&t)) rest.push_back(&t);
  std::stable_sort(rest.begin(), rest.end(), [](auto* x, auto* y) { return x->busy_ns() > y->busy_ns(); });
  out.insert(out.end(), rest.begin(), rest.end());
  if (out.size() > kMaxChartedThreads) out.resize(kMaxChartedThreads);
  return out;
}

void json_threads(Writer& j, const std::vector<const analysis::ThreadWindow*>& threads, const doc::Roles& roles) {
  const auto role = [&](const analysis::ThreadWindow* t) {
    if (std::find(roles.carriers.begin(), roles.carriers.end(), t) != roles.carriers.end()) return "carrier";
    if (std::find(roles.pollers.begin(), roles.pollers.end(), t) != roles.pollers.end()) return "poller";
    return "";
  };
  j.StartArray();
  for (const analysis::ThreadWindow* t : threads) {
    j.StartObject();
    j.Key("tid"), j.Uint(t->tid);
    j.Key("pid"), j.Uint(t->pid);
    j.Key("comm"), str(j, t->comm);
    j.Key("role"), j.String(role(t));
    j.Key("label"), str(j, t->comm + " " + std::to_string(t->tid));
    j.EndObject();
  }
  j.EndArray();
}

// The thread's figures at one point; nullptr: it was not alive then.
const ThreadPoint* thread_at(const Point& p, uint32_t tid) {
  auto it = p.threads.find(tid);
  return it == p.threads.end() ? nullptr : &it->second;
}

// Placement: per CPU the thread ran on, the share of each point's switch-ins onto it (null: the
// thread was not switched in at all). Only CPUs with switch-ins, the busiest kMaxPlacementCpus.
void json_placement(Writer& j, const std::vector<Point>& pts, uint32_t tid, size_t ncpus) {
  const auto at = [tid](const Point& p) { return thread_at(p, tid); };
  std::vector<std::pair<uint64_t, size_t>> by_cpu;  // (switch-ins, cpu)
  for (size_t c = 0; c < ncpus; ++c) {
    uint64_t n = 0;
    for (const Point& p : pts)
      if (const ThreadPoint* tp = at(p); tp && c < tp->switch_ins.size()) n += tp->switch_ins[c];
    if (n) by_cpu.emplace_back(n, c);
  }
  std::stable_sort(by_cpu.begin(), by_cpu.end(), [](auto& x, auto& y) { return x.first > y.first; });
  j.Key("cpus_run_on"), j.Uint64(by_cpu.size());
  if (by_cpu.size() > kMaxPlacementCpus) by_cpu.resize(kMaxPlacementCpus);
  std::sort(by_cpu.begin(), by_cpu.end(), [](auto& x, auto& y) { return x.second < y.second; });
  j.Key("placement_pct"), j.StartArray();
  for (const auto& [n, c] : by_cpu) {
    j.StartObject();
    j.Key("cpu"), j.Uint64(c);
    j.Key("pct"), j.StartArray();
    for (const Point& p : pts) {
      const ThreadPoint* tp = at(p);
      uint64_t total = 0;
      if (tp)
        for (uint64_t k : tp->switch_ins) total += k;
      if (!tp || total == 0) j.Null();
      else num(j, c < tp->switch_ins.size() ? 100.0 * static_cast<double>(tp->switch_ins[c]) / static_cast<double>(total) : 0.0);
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
}

// Each point's figures per charted thread, arrays aligned with "t".
void json_series(Writer& j, const IntervalSeries& s, const analysis::Window& w,
                 const std::vector<const analysis::ThreadWindow*>& threads) {
  const auto& pts = s.points();
  j.StartObject();
  j.Key("per_point"), j.Uint64(s.per_point());
  j.Key("intervals"), j.Uint64(s.intervals());
  j.Key("t"), j.StartArray();  // the point's end, s since the first snapshot
  for (const Point& p : pts) num(j, static_cast<double>(p.end_ns - w.start_ns) / 1e9);
  j.EndArray();
  j.Key("wall_s"), j.StartArray();
  for (const Point& p : pts) num(j, p.wall_s());
  j.EndArray();
  j.Key("lost_events"), j.StartArray();
  for (const Point& p : pts) j.Uint64(p.lost_events);
  j.EndArray();
  size_t ncpus = 0;
  for (const Point& p : pts)
    for (const auto& [tid, tp] : p.threads) ncpus = std::max(ncpus, tp.switch_ins.size());
  j.Key("threads"), j.StartArray();
  for (const analysis::ThreadWindow* t : threads) {
    const auto at = [t](const Point& p) { return thread_at(p, t->tid); };
    const auto pct = [](double ns, const Point& p) { return p.wall_s() > 0 ? ns / 1e9 / p.wall_s() * 100 : 0.0; };
    const auto column = [&](const char* key, auto value) {
      j.Key(key), j.StartArray();
      for (const Point& p : pts) {
        const ThreadPoint* tp = at(p);
        if (tp) num(j, value(*tp, p));
        else j.Null();  // not alive in that interval
      }
      j.EndArray();
    };
    j.StartObject();
    j.Key("tid"), j.Uint(t->tid);
    column("cpu_pct", [&](const ThreadPoint& tp, const Point& p) { return pct(static_cast<double>(tp.run_ns), p); });
    column("wait_pct", [&](const ThreadPoint& tp, const Point& p) { return pct(static_cast<double>(tp.wait_ns), p); });
    column("migrations", [&](const ThreadPoint& tp, const Point&) { return static_cast<double>(tp.migrations); });
    j.Key("wait_by_cause"), j.StartObject();
    for (size_t i = 0; i < kWaitCauseCount; ++i)
      column(analysis::kWaitCauses[i].key, [&](const ThreadPoint& tp, const Point& p) { return pct(tp.cause_ns[i], p); });
    j.EndObject();
    json_placement(j, pts, t->tid, ncpus);
    j.EndObject();
  }
  j.EndArray();
  j.Key("cpus"), j.Uint64(ncpus);
  j.EndObject();
}

// Run-queue latency histograms of the whole window: [[low µs, high µs, waits], ...] non-zero.
void json_runq(Writer& j, const std::vector<const analysis::ThreadWindow*>& threads) {
  j.StartArray();
  for (const analysis::ThreadWindow* t : threads) {
    j.StartObject();
    j.Key("tid"), j.Uint(t->tid);
    j.Key("slots"), j.StartArray();
    for (const auto& [slot, count] : analysis::nonzero_slots(t->delta.runq_hist)) {
      j.StartArray();
      num(j, analysis::log2_slot_low(static_cast<int>(slot)) / 1e3);
      num(j, analysis::log2_slot_high(static_cast<int>(slot)) / 1e3);
      j.Uint64(count);
      j.EndArray();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
}

void json_grid(Writer& j, const doc::BatchStats& s) {
  j.StartObject();
  j.Key("samples"), j.Uint64(s.samples);
  j.Key("cells"), j.StartArray();  // [wait bin, batch bin, batches]
  for (int w = 0; w < doc::BatchGrid::kWaitBins; ++w)
    for (int b = 0; b < doc::BatchGrid::kBatchBins; ++b)
      if (uint32_t n = s.grid.count[static_cast<size_t>(w)][static_cast<size_t>(b)]) {
        j.StartArray(), j.Int(w), j.Int(b), j.Uint(n), j.EndArray();
      }
  j.EndArray();
  j.EndObject();
}

// Per charted thread with batches: its epoll returns and drains against the wait before each.
void json_batches(Writer& j, const doc::BatchTracker& tracker, const std::vector<const analysis::ThreadWindow*>& threads) {
  j.StartObject();
  j.Key("wait_bin_low_us"), j.StartArray();
  for (int b = 0; b < doc::BatchGrid::kWaitBins; ++b) num(j, doc::BatchGrid::wait_bin_low_us(b));
  j.EndArray();
  j.Key("batch_bin_low"), j.StartArray();
  for (int b = 0; b < doc::BatchGrid::kBatchBins; ++b) num(j, doc::BatchGrid::batch_bin_low(b));
  j.EndArray();
  j.Key("long_wait_us"), num(j, static_cast<double>(doc::kLongWaitNs) / 1e3);
  j.Key("threads"), j.StartArray();
  for (const analysis::ThreadWindow* t : threads) {
    auto it = tracker.threads().find(t->tid);
    if (it == tracker.threads().end()) continue;
    const doc::ThreadBatches& tb = it->second;
    if (tb.epoll.samples == 0 && tb.drain.samples == 0) continue;
    j.StartObject();
    j.Key("tid"), j.Uint(t->tid);
    if (tb.epoll.samples) j.Key("epoll"), json_grid(j, tb.epoll);
    if (tb.drain.samples) j.Key("drain"), json_grid(j, tb.drain);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

void json_spectrum(Writer& j, const snapshot::LatencyHistogram& h) {
  j.StartArray();
  for (double p : spectrum_percentiles(h.count())) {
    j.StartArray();
    num(j, p);
    num(j, analysis::us(h.percentile_ns(p)));
    j.EndArray();
  }
  j.EndArray();
}

void json_request_rows(Writer& j, const std::vector<analysis::RequestRow>& rows, bool server) {
  j.StartArray();
  for (const analysis::RequestRow& r : rows) {
    if (r.sum.count == 0) continue;
    j.StartObject();
    j.Key("endpoint"), str(j, r.tid ? r.comm + " " + std::to_string(r.tid) : r.endpoint());
    j.Key("pid"), j.Uint(r.pid);
    j.Key("count"), j.Uint64(r.sum.count);
    j.Key("rate"), num(j, r.rate);
    j.Key("approximate"), j.Bool(r.approximate());
    j.Key("socket_wait_us"), json_spectrum(j, r.sum.wait);
    j.Key(server ? "service_us" : "backend_time_us"), json_spectrum(j, r.sum.service);
    j.Key(server ? "server_time_us" : "round_trip_us"), json_spectrum(j, r.sum.total);
    j.Key("socket_wait_by_state_pct"), j.StartObject();
    const auto parts = r.wait_by_part_pct();
    for (size_t i = 0; i < analysis::kWaitParts.size(); ++i) j.Key(analysis::kWaitParts[i]), num(j, parts[i]);
    j.EndObject();
    j.EndObject();
  }
  j.EndArray();
}

void json_requests(Writer& j, const analysis::Window& w) {
  const analysis::RequestsView v = analysis::requests_view(w);
  j.StartObject();
  j.Key("server"), json_request_rows(j, v.server, true);
  j.Key("client"), json_request_rows(j, v.client, false);
  j.Key("lost"), j.Uint64(v.lost);
  j.EndObject();
}

// Why a chart is empty for this recording; absent keys: the chart is drawn.
void json_absent(Writer& j, const Recording& r, bool has_batches) {
  const analysis::Window& w = r.window;
  const bool procfs = w.source == snapshot::Source::procfs;
  j.StartObject();
  if (!w.has(snapshot::kFieldCpuDist))
    j.Key("placement"), j.String(procfs ? "a procfs recording does not see which CPU a thread ran on (/proc has only the last one)"
                                       : "the recording has no per-CPU switch-ins");
  if (!w.has(snapshot::kFieldRunqHist))
    j.Key("runq"), j.String(procfs ? "a procfs recording has no run-queue latency histogram (/proc sums the wait)"
                                  : "the recording has no run-queue latency histogram");
  if (!w.has(snapshot::kFieldWaitSplit))
    j.Key("wait_causes"), j.String(procfs ? "a procfs recording cannot split the wait by cause: all of it shows as contended"
                                         : "the recording does not split the wait by cause: all of it shows as contended");
  if (!has_batches)
    j.Key("batches"), str(j, r.no_events_reason.empty() ? "the recording has no raw events" : r.no_events_reason);
  if (!w.has(snapshot::kFieldRequests))
    j.Key("requests"), j.String("recorded without --requests: no per-request latency");
  j.EndObject();
}

void json_recording(Writer& j, const Recording& r) {
  const auto threads = charted_threads(r.window);
  const doc::Roles roles = doc::find_roles(r.window);
  const bool has_batches = r.batches && r.batches->events() > 0;
  j.StartObject();
  j.Key("label"), str(j, r.header.file);
  j.Key("reader_notes"), j.StartArray();
  for (const std::string& n : r.reader_notes) str(j, n);
  j.EndArray();
  j.Key("report"), raw(j, report_json(r.header, r.window, {.pretty = false}));
  j.Key("doctor"), raw(j, outputs::doctor::json(r.diagnosis, false));
  j.Key("threads_total"), j.Uint64(r.window.threads.size());
  j.Key("charted"), json_threads(j, threads, roles);
  j.Key("series"), json_series(j, r.series, r.window, threads);
  j.Key("runq"), json_runq(j, threads);
  if (has_batches) j.Key("batches"), json_batches(j, *r.batches, threads);
  if (r.window.has(snapshot::kFieldRequests)) j.Key("requests"), json_requests(j, r.window);
  j.Key("absent"), json_absent(j, r, has_batches);
  j.EndObject();
}

}  // namespace

std::vector<double> spectrum_percentiles(uint64_t count) {
  std::vector<double> out{0.0};
  for (int k = 1; count > 0; ++k) {
    const double rest = std::exp2(-k / 4.0);  // share of samples above the percentile
    if (rest * static_cast<double>(count) < 1.0 || k > 80) break;
    out.push_back(100.0 * (1.0 - rest));
  }
  out.push_back(100.0);
  return out;
}

std::string page_data_json(const PageInfo& info, const Recording& a, const Recording* b) {
  rapidjson::StringBuffer sb;
  Writer j(sb);
  j.StartObject();
  j.Key("page"), j.StartObject();
  j.Key("title"), str(j, info.title);
  j.Key("command"), str(j, info.command);
  j.Key("version"), str(j, info.version);
  j.Key("max_charted_threads"), j.Uint64(kMaxChartedThreads);
  j.Key("max_placement_cpus"), j.Uint64(kMaxPlacementCpus);
  j.EndObject();
  j.Key("wait_causes"), j.StartArray();
  for (const analysis::WaitCause& c : analysis::kWaitCauses) {
    j.StartObject();
    j.Key("key"), j.String(c.key);
    j.Key("label"), j.String(c.label);
    j.Key("help"), j.String(c.help);
    j.EndObject();
  }
  j.EndArray();
  j.Key("recordings"), j.StartArray();
  json_recording(j, a);
  if (b) json_recording(j, *b);
  j.EndArray();
  if (b) {
    j.Key("compare"), j.StartObject();
    j.Key("doctor"), raw(j, outputs::doctor::compare_json(a.diagnosis, b->diagnosis, false));
    j.Key("report"), raw(j, compare_json({a.header, a.window}, {b->header, b->window}, {.pretty = false}));
    j.EndObject();
  }
  j.EndObject();
  return {sb.GetString(), sb.GetSize()};
}

}  // namespace platoon::outputs::html
