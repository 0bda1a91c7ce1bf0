#include "tui/outputs/report.hpp"
#include "tui/outputs/report_machine.hpp"
#include "tui/outputs/report_requests.hpp"

#include <fmt/format.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>

#include "tui/metrics/catalog.hpp"

namespace platoon::outputs {

namespace {

using Out = std::back_insert_iterator<std::string>;
using Threads = std::vector<const analysis::ThreadWindow*>;

// ---- shared: the catalog's metrics (tui/metrics/catalog.hpp) in the single report and --vs ----

using Metrics = std::vector<const metrics::Metric*>;

// The compared metrics (--vs rows and ratios, process JSON) in their report order.
const Metrics& compared() {
  static const Metrics m = metrics::report_metrics();
  return m;
}
const Metrics& thread_columns() {
  static const Metrics m = [] {
    Metrics v;
    for (const metrics::Metric* x : compared())
      if (x->report.thread_table) v.push_back(x);
    return v;
  }();
  return m;
}
const Metrics& process_columns() {
  static const Metrics m = [] {
    Metrics v;
    for (const metrics::Metric* x : compared())
      if (x->process) v.push_back(x);
    return v;
  }();
  return m;
}

std::string fmt_opt(std::optional<double> v, int decimals = 1) {
  if (!v || !std::isfinite(*v)) return "-";
  return fmt::format("{:.{}f}", *v, decimals);
}

std::string hist_label(uint32_t slot) {
  return slot + 1 >= static_cast<uint32_t>(snapshot::kBatchSlots) ? fmt::format("{}+", slot) : std::to_string(slot);
}

// "0:4% 1:20% 2:28% 3+:48%": the first slots that hold most calls, the rest lumped together.
std::string compact_hist(const analysis::Slots& slots) {
  uint64_t total = 0;
  for (auto& s : slots) total += s.second;
  if (total == 0) return "-";
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (i + 1 == kShown && slots.size() > kShown) {
      uint64_t rest = 0;
      for (size_t j = i; j < slots.size(); ++j) rest += slots[j].second;
      out += fmt::format("{}+:{:.0f}%", slots[i].first, 100.0 * static_cast<double>(rest) / static_cast<double>(total));
      break;
    }
    out += fmt::format("{}:{:.0f}% ", hist_label(slots[i].first), 100.0 * static_cast<double>(slots[i].second) / static_cast<double>(total));
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Text shows every thread, by pid then tid, except that a process with more than `max` threads
// shows its `max` busiest (run + wait); the count left out is returned per pid.
Threads select_threads(const analysis::Window& w, size_t max, std::map<uint32_t, size_t>* left_out) {
  std::map<uint32_t, Threads> by_pid;
  for (const auto& t : w.threads) by_pid[t.pid].push_back(&t);
  Threads out;
  for (auto& [pid, ts] : by_pid) {
    if (ts.size() > max) {
      std::stable_sort(ts.begin(), ts.end(), [](auto* a, auto* b) { return a->busy_ns() > b->busy_ns(); });
      if (left_out) (*left_out)[pid] = ts.size() - max;
      ts.resize(max);
      std::sort(ts.begin(), ts.end(), [](auto* a, auto* b) { return a->tid < b->tid; });
    }
    out.insert(out.end(), ts.begin(), ts.end());
  }
  return out;
}

std::string thread_mark(const analysis::ThreadWindow& t) {
  return t.born && t.exited ? "new, exited" : t.born ? "new" : t.exited ? "exited" : "";
}

// ---- text: one function per table ----

void text_header(Out o, const ReportHeader& h, const analysis::Window& w) {
  if (!h.file.empty()) fmt::format_to(o, "platoon report  {}\n", h.file);
  auto lacks = snapshot::missing_fields(h.fields);
  fmt::format_to(o, "source: {}", to_string(h.source));
  if (!lacks.empty()) fmt::format_to(o, " (lacks: {})", fmt::join(lacks, ", "));
  fmt::format_to(o, "\n");
  if (!h.target.empty()) fmt::format_to(o, "target: {}\n", h.target);
  if (!h.attach_mode.empty()) fmt::format_to(o, "attach: {}\n", h.attach_mode);
  fmt::format_to(o, "duration: {:.2f} s\n", h.duration_s);
  fmt::format_to(o, "lost: {} events, {} untracked threads, {} pairs, {} targets\n", h.lost_events,
                 w.losses.untracked_threads, w.losses.lost_pairs, w.losses.lost_targets);
  fmt::format_to(o, "{}\n", observer_cost_line(h));
  for (const auto& n : h.notes) fmt::format_to(o, "note: {}\n", n);
}

// Right-aligned cells after the fixed columns, each at its metric's report width.
void cells(Out o, const Metrics& ms, auto cell) {
  for (const metrics::Metric* m : ms) fmt::format_to(o, " {:>{}}", cell(*m), m->report.width);
}

void text_threads(Out o, const analysis::Window& w, const Threads& ts, const std::map<uint32_t, size_t>& left_out) {
  fmt::format_to(o, "\nThreads (pidstat -u -w over the window)\n");
  fmt::format_to(o, "{:>8} {:>8}  {:<16}", "PID", "TID", "NAME");
  cells(o, thread_columns(), [](const metrics::Metric& m) { return m.report.title; });
  fmt::format_to(o, "\n");
  for (const analysis::ThreadWindow* t : ts) {
    fmt::format_to(o, "{:>8} {:>8}  {:<16}", t->pid, t->tid, t->comm);
    cells(o, thread_columns(), [&](const metrics::Metric& m) { return fmt_opt(value_of(m, w, *t), m.report.decimals); });
    fmt::format_to(o, "  {}\n", thread_mark(*t));
  }
  for (auto [pid, n] : left_out) {
    fmt::format_to(o, "  (pid {}: {} less busy threads left out; --format json lists all)\n", pid, n);
  }
}

void text_processes(Out o, const analysis::Window& w) {
  fmt::format_to(o, "\nProcesses (sums over their threads; one core = 100%)\n");
  fmt::format_to(o, "{:>8}  {:<16} {:>7}", "PID", "NAME", "threads");
  cells(o, process_columns(),
        [](const metrics::Metric& m) { return m.report.process_title ? m.report.process_title : m.report.title; });
  fmt::format_to(o, "\n");
  for (const auto& p : w.processes) {
    fmt::format_to(o, "{:>8}  {:<16} {:>7}", p.pid, p.comm, p.threads);
    cells(o, process_columns(),
          [&](const metrics::Metric& m) { return fmt_opt(process_value_of(m, w, p), m.report.decimals); });
    fmt::format_to(o, "\n");
  }
}

void text_cpu_distribution(Out o, const analysis::Window& w, const Threads& ts) {
  if (!w.has(snapshot::kFieldCpuDist)) return;
  std::set<uint32_t> cpus;
  bool other = false;  // switch-ins on CPUs beyond the kernel's per-thread slots (cpu_overflow)
  for (auto* t : ts) {
    for (auto& [cpu, pct] : t->cpu_distribution) cpus.insert(cpu);
    other = other || t->cpu_other_pct > 0;
  }
  if (cpus.empty() && !other) return;
  fmt::format_to(o, "\nCPU distribution (% of switch-ins per CPU)\n{:>8}  {:<16}", "TID", "NAME");
  for (uint32_t c : cpus) fmt::format_to(o, " {:>6}", fmt::format("CPU {}", c));
  if (other) fmt::format_to(o, " {:>6}", "other");
  fmt::format_to(o, "\n");
  for (auto* t : ts) {
    if (t->cpu_distribution.empty() && t->cpu_other_pct == 0) continue;
    fmt::format_to(o, "{:>8}  {:<16}", t->tid, t->comm);
    for (uint32_t c : cpus) {
      auto it = std::find_if(t->cpu_distribution.begin(), t->cpu_distribution.end(), [&](auto& d) { return d.first == c; });
      fmt::format_to(o, " {:>6}", it == t->cpu_distribution.end() ? std::string("-") : fmt::format("{:.0f}%", it->second));
    }
    if (other) fmt::format_to(o, " {:>6}", t->cpu_other_pct > 0 ? fmt::format("{:.0f}%", t->cpu_other_pct) : std::string("-"));
    fmt::format_to(o, "\n");
  }
}

void text_runq(Out o, const analysis::Window& w, const Threads& ts) {
  if (!w.has(snapshot::kFieldRunqHist)) return;
  fmt::format_to(o, "\nRun-queue latency (us, wakeup or preemption to switch-in)\n");
  fmt::format_to(o, "{:>8}  {:<16} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "TID", "NAME", "samples", "p50", "p90", "p99", "max");
  for (auto* t : ts) {
    if (!t->runq || t->runq->samples == 0) continue;
    const auto& r = *t->runq;
    fmt::format_to(o, "{:>8}  {:<16} {:>9} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}\n", t->tid, t->comm, r.samples, r.p50_us,
                   r.p90_us, r.p99_us, r.max_us);
  }
}

void text_io(Out o, const analysis::Window& w, const Threads& ts) {
  if (!w.has(snapshot::kFieldIo) || std::none_of(ts.begin(), ts.end(), [](auto* t) { return t->io.has_value(); })) return;
  fmt::format_to(o, "\nIO (epoll wait calls: events returned per call)\n");
  fmt::format_to(o, "{:>8}  {:<16} {:>10} {:>9} {:>12} {:>9}  {}\n", "TID", "NAME", "cycles", "cycles/s", "events/cycle",
                 "blocked%", "events per call: share of calls");
  for (auto* t : ts) {
    if (!t->io) continue;
    const auto& io = *t->io;
    fmt::format_to(o, "{:>8}  {:<16} {:>10} {:>9.0f} {:>12.2f} {:>9.1f}  {}\n", t->tid, t->comm, io.cycles,
                   io.cycles_per_s, io.events_per_cycle, io.blocked_pct, compact_hist(io.events_hist));
  }
}

void text_drain(Out o, const analysis::Window& w, const Threads& ts) {
  if (!w.has(snapshot::kFieldDrain) || std::none_of(ts.begin(), ts.end(), [](auto* t) { return t->drain.has_value(); })) return;
  fmt::format_to(o, "\nQueue depth at drain (runnable fibers when a carrier starts draining)\n");
  fmt::format_to(o, "{:>8}  {:<16} {:>10} {:>9} {:>12} {:>8}  {}\n", "TID", "NAME", "drains", "depth avg", "fibers/drain",
                 "steals", "depth: share of drains");
  for (auto* t : ts) {
    if (!t->drain) continue;
    const auto& d = *t->drain;
    fmt::format_to(o, "{:>8}  {:<16} {:>10} {:>9.2f} {:>12.2f} {:>8}  {}\n", t->tid, t->comm, d.batches, d.queue_depth_avg,
                   d.fibers_per_drain, d.steals, compact_hist(d.queue_depth_hist));
  }
}

void text_peers(Out o, const analysis::Window& w, const Threads& ts) {
  if (!w.has(snapshot::kFieldPairs)) return;
  auto table = [&](const char* title, bool preempt) {
    bool any = false;
    for (auto* t : ts) {
      const auto& peers = preempt ? t->preempted_by : t->woken_by;
      if (peers.empty()) continue;
      if (!any) {
        fmt::format_to(o, "\n{}\n{:>8}  {:<16}    {:>8}  {:<16} {:>9} {:>10}\n", title, "TID", "NAME", "BY TID", "BY NAME",
                       "count", preempt ? "wait ms" : "");
        any = true;
      }
      for (const auto& p : peers) {
        fmt::format_to(o, "{:>8}  {:<16} <- {:>8}  {:<16} {:>9} {:>10}\n", t->tid, t->comm, p.tid, p.comm, p.count,
                       preempt ? fmt::format("{:.2f}", static_cast<double>(p.ns) / 1e6) : std::string());
      }
    }
  };
  table("Top preemptors (who ran while the thread waited)", true);
  table("Top wakers", false);
}

// ---- JSON ----

using Writer = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void num(Writer& j, double v) {
  if (std::isfinite(v)) j.Double(v);
  else j.Null();
}
void num(Writer& j, std::optional<double> v) {
  if (v) num(j, *v);
  else j.Null();
}
void u64(Writer& j, uint64_t v) { j.Uint64(v); }
void str(Writer& j, const std::string& s) { j.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); }

void json_slots(Writer& j, const analysis::Slots& slots) {
  j.StartArray();
  for (auto& [slot, count] : slots) {
    j.StartArray();
    j.Uint(slot);
    u64(j, count);
    j.EndArray();
  }
  j.EndArray();
}

void json_peers(Writer& j, const std::vector<analysis::Peer>& peers, bool with_ns) {
  j.StartArray();
  for (const auto& p : peers) {
    j.StartObject();
    j.Key("tid"), j.Uint(p.tid);
    j.Key("pid"), j.Uint(p.pid);
    j.Key("comm"), str(j, p.comm);
    j.Key("count"), u64(j, p.count);
    if (with_ns) j.Key("ns"), u64(j, p.ns);
    j.EndObject();
  }
  j.EndArray();
}

// "observer_cost": {"known": false, "reason": ...} without a cost note; otherwise the totals
// and each program's figures (null where unknown: no BPF stats, or a program that never ran).
void json_cost(Writer& j, const ReportHeader& h) {
  j.StartObject();
  j.Key("text"), str(j, observer_cost_line(h));
  j.Key("known"), j.Bool(h.cost.has_value());
  if (!h.cost) {
    j.Key("reason"), j.String("the recording holds no observer cost note");
    j.EndObject();
    return;
  }
  const analysis::ObserverCost& c = *h.cost;
  const bool bpf = c.stats == snapshot::BpfStats::on;
  j.Key("bpf_stats"), j.String(to_string(c.stats));
  j.Key("bpf_stats_why"), str(j, c.why);
  j.Key("wall_s"), num(j, c.wall_s);
  j.Key("recorder_cpu_pct"), num(j, c.self_cpu_pct);
  j.Key("recorder_cpu_ns"), u64(j, c.self_cpu_ns);
  j.Key("bpf_cpu_pct"), num(j, bpf ? std::optional<double>(c.bpf_cpu_pct) : std::nullopt);
  j.Key("bpf_ns_per_s"), num(j, bpf ? std::optional<double>(c.bpf_ns_per_s) : std::nullopt);
  j.Key("bpf_runs"), bpf ? j.Uint64(c.bpf_runs) : j.Null();
  j.Key("bpf_run_ns"), bpf ? j.Uint64(c.bpf_run_ns) : j.Null();
  j.Key("programs"), j.StartArray();
  for (const analysis::ProgramRate& p : c.programs) {
    j.StartObject();
    j.Key("name"), str(j, p.name);
    j.Key("runs"), u64(j, p.runs);
    j.Key("run_ns"), u64(j, p.run_ns);
    j.Key("misses"), u64(j, p.misses);
    j.Key("ns_per_run"), num(j, p.ns_per_run);
    j.Key("runs_per_s"), num(j, p.runs_per_s);
    j.Key("ns_per_s"), num(j, p.ns_per_s);
    j.Key("cpu_pct"), num(j, p.cpu_pct);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

void json_thread(Writer& j, const analysis::Window& w, const analysis::ThreadWindow& t) {
  j.StartObject();
  j.Key("tid"), j.Uint(t.tid);
  j.Key("pid"), j.Uint(t.pid);
  j.Key("comm"), str(j, t.comm);
  j.Key("new"), j.Bool(t.born);
  j.Key("exited"), j.Bool(t.exited);
  for (const metrics::Metric* m : metrics::json_metrics()) {  // the plain quantities; the objects below are special
    const metrics::Value v = metrics::value_of(*m, w, t);
    if (!v) continue;  // the source lacks it: left out, never 0
    j.Key(m->key);
    if (m->json.integer) u64(j, static_cast<uint64_t>(*v));
    else num(j, *v);
  }
  if (w.has(snapshot::kFieldCpuDist)) {
    j.Key("cpu_distribution"), j.StartObject();
    for (auto& [cpu, pct] : t.cpu_distribution) j.Key(std::to_string(cpu).c_str()), num(j, pct);
    if (t.cpu_other_pct > 0) j.Key("other"), num(j, t.cpu_other_pct);  // CPUs beyond the per-thread slots
    j.EndObject();
  }
  if (t.runq) {
    j.Key("runq_latency_us"), j.StartObject();
    j.Key("samples"), u64(j, t.runq->samples);
    j.Key("p50"), num(j, t.runq->p50_us);
    j.Key("p90"), num(j, t.runq->p90_us);
    j.Key("p99"), num(j, t.runq->p99_us);
    j.Key("max"), num(j, t.runq->max_us);
    j.EndObject();
  }
  if (t.io) {
    j.Key("io"), j.StartObject();
    j.Key("cycles"), u64(j, t.io->cycles);
    j.Key("cycles_per_s"), num(j, t.io->cycles_per_s);
    j.Key("events"), u64(j, t.io->events);
    j.Key("events_per_cycle"), num(j, t.io->events_per_cycle);
    j.Key("blocked_pct"), num(j, t.io->blocked_pct);
    j.Key("events_hist"), json_slots(j, t.io->events_hist);
    j.EndObject();
  }
  if (t.drain) {
    j.Key("drain"), j.StartObject();
    j.Key("batches"), u64(j, t.drain->batches);
    j.Key("queue_depth_avg"), num(j, t.drain->queue_depth_avg);
    j.Key("queue_depth_hist"), json_slots(j, t.drain->queue_depth_hist);
    j.Key("fibers_per_drain"), num(j, t.drain->fibers_per_drain);
    j.Key("fibers_run"), u64(j, t.delta.drain_fibers_run);
    j.Key("steals"), u64(j, t.drain->steals);
    j.Key("stolen_fibers"), u64(j, t.drain->stolen_fibers);
    j.EndObject();
  }
  if (w.has(snapshot::kFieldPairs)) {
    j.Key("preempted_by"), json_peers(j, t.preempted_by, true);
    j.Key("woken_by"), json_peers(j, t.woken_by, false);
  }
  j.EndObject();
}

void json_process(Writer& j, const analysis::Window& w, const analysis::ProcessWindow& p) {
  j.StartObject();
  j.Key("pid"), j.Uint(p.pid);
  j.Key("comm"), str(j, p.comm);
  j.Key("threads"), j.Uint(p.threads);
  j.Key("run_ns"), u64(j, p.run_ns);
  j.Key("wait_ns"), u64(j, p.wait_ns);
  j.Key("switches_voluntary"), u64(j, p.switches_voluntary);
  j.Key("switches_involuntary"), u64(j, p.switches_involuntary);
  j.Key("migrations"), u64(j, p.migrations);
  for (const metrics::Metric* m : process_columns()) {
    auto v = process_value_of(*m, w, p);
    if (v) j.Key(m->key), num(j, v);
  }
  if (w.has(snapshot::kFieldIo)) j.Key("io_cycles"), u64(j, p.io_cycles), j.Key("io_events"), u64(j, p.io_events);
  if (w.has(snapshot::kFieldDrain)) j.Key("drains"), u64(j, p.drains);
  j.EndObject();
}

void json_report(Writer& j, const ReportHeader& h, const analysis::Window& w) {
  j.StartObject();
  j.Key("file"), str(j, h.file);
  j.Key("duration_s"), num(j, h.duration_s);
  j.Key("source"), j.String(to_string(h.source));
  j.Key("attach_mode"), str(j, h.attach_mode);
  j.Key("target"), str(j, h.target);
  j.Key("lost_events"), u64(j, h.lost_events);
  j.Key("losses"), j.StartObject();
  j.Key("untracked_threads"), u64(j, w.losses.untracked_threads);
  j.Key("lost_pairs"), u64(j, w.losses.lost_pairs);
  j.Key("lost_targets"), u64(j, w.losses.lost_targets);
  j.EndObject();
  j.Key("fields_missing"), j.StartArray();
  for (const auto& f : snapshot::missing_fields(h.fields)) str(j, f);
  j.EndArray();
  j.Key("notes"), j.StartArray();
  for (const auto& n : h.notes) str(j, n);
  j.EndArray();
  j.Key("observer_cost"), json_cost(j, h);
  j.Key("threads"), j.StartArray();
  for (const auto& t : w.threads) json_thread(j, w, t);
  j.EndArray();
  j.Key("processes"), j.StartArray();
  for (const auto& p : w.processes) json_process(j, w, p);
  j.EndArray();
  j.Key("cpus"), json_cpus(j, w);
  j.Key("cgroups"), json_cgroups(j, w);
  if (w.has(snapshot::kFieldRequests)) j.Key("requests"), json_requests(j, w, h.cost ? &*h.cost : nullptr);
  j.EndObject();
}

std::string finish(rapidjson::StringBuffer& sb) { return std::string(sb.GetString(), sb.GetSize()) + "\n"; }

void setup(Writer& j, const ReportOptions& opt) {
  j.SetMaxDecimalPlaces(3);
  if (!opt.pretty) j.SetFormatOptions(rapidjson::kFormatSingleLineArray), j.SetIndent(' ', 0);
}

// ---- --vs ----

std::vector<std::pair<const analysis::ProcessWindow*, const analysis::ProcessWindow*>> match_processes(const analysis::Window& a, const analysis::Window& b) {
  std::vector<std::pair<const analysis::ProcessWindow*, const analysis::ProcessWindow*>> out;
  std::vector<bool> used(b.processes.size());
  for (const auto& pa : a.processes) {  // by comm, then by order
    const analysis::ProcessWindow* match = nullptr;
    for (size_t i = 0; i < b.processes.size() && !match; ++i) {
      if (!used[i] && b.processes[i].comm == pa.comm) used[i] = true, match = &b.processes[i];
    }
    for (size_t i = 0; i < b.processes.size() && !match; ++i) {
      if (!used[i]) used[i] = true, match = &b.processes[i];
    }
    out.emplace_back(&pa, match);
  }
  for (size_t i = 0; i < b.processes.size(); ++i) {
    if (!used[i]) out.emplace_back(nullptr, &b.processes[i]);
  }
  return out;
}

template <typename T, typename Get>
std::pair<std::optional<double>, std::optional<double>> values(const analysis::Window& wa, const T* a, const analysis::Window& wb, const T* b,
                                                              Get get) {
  return {a ? get(wa, *a) : std::nullopt, b ? get(wb, *b) : std::nullopt};
}

void text_compare_block(Out o, const std::string& title, auto get_a, auto get_b) {
  fmt::format_to(o, "\n{}\n  {:<16} {:>12} {:>12} {:>8}\n", title, "metric", "A", "B", "B/A");
  for (const metrics::Metric* m : compared()) {
    auto a = get_a(*m), b = get_b(*m);
    if (!a && !b) continue;  // neither source has it: no row
    fmt::format_to(o, "  {:<16} {:>12} {:>12} {:>8}\n", m->report.title, fmt_opt(a, 2), fmt_opt(b, 2),
                   fmt_opt(ratio(a, b), 2));
  }
}

// Rows end in optional columns (a thread's "new"/"exited" mark, wait ms): no trailing blanks.
std::string strip_trailing_blanks(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\n') {
      while (!out.empty() && out.back() == ' ') out.pop_back();
    }
    out += c;
  }
  return out;
}

std::string side_name(const analysis::ThreadWindow* t) { return t ? fmt::format("{} ({})", t->comm, t->tid) : "-"; }

}  // namespace

// ---- public ----

std::string observer_cost_line(const ReportHeader& h) {
  if (!h.cost) return "observer cost: unknown (the recording holds no cost note: written by an older platoon?)";
  return fmt::format("observer cost: {} over {:.1f} s", cost_summary(*h.cost), h.cost->wall_s);
}

ReportHeader header_for(const analysis::Window& w, std::string file) {
  ReportHeader h;
  h.file = std::move(file);
  h.source = w.source;
  h.fields = w.fields;
  h.duration_s = w.wall_s;
  h.lost_events = w.losses.lost_events;
  return h;
}

std::optional<double> ratio(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *a == 0 || !std::isfinite(*a) || !std::isfinite(*b)) return std::nullopt;
  return *b / *a;
}

std::vector<ThreadMatch> match_threads(const analysis::Window& a, const analysis::Window& b) {
  std::vector<ThreadMatch> out;
  std::vector<bool> used_a(a.threads.size()), used_b(b.threads.size());
  for (size_t i = 0; i < a.threads.size(); ++i) {  // n-th of a comm in A with the n-th in B
    for (size_t k = 0; k < b.threads.size(); ++k) {
      if (!used_b[k] && b.threads[k].comm == a.threads[i].comm) {
        used_a[i] = used_b[k] = true;
        out.emplace_back(&a.threads[i], &b.threads[k]);
        break;
      }
    }
  }
  size_t k = 0;  // the rest, in tid order
  for (size_t i = 0; i < a.threads.size(); ++i) {
    if (used_a[i]) continue;
    while (k < b.threads.size() && used_b[k]) ++k;
    const analysis::ThreadWindow* tb = k < b.threads.size() ? &b.threads[k] : nullptr;
    if (tb) used_b[k] = true;
    out.emplace_back(&a.threads[i], tb);
  }
  for (; k < b.threads.size(); ++k) {
    if (!used_b[k]) out.emplace_back(nullptr, &b.threads[k]);
  }
  return out;
}

std::string report_text(const ReportHeader& h, const analysis::Window& w, const ReportOptions& opt) {
  std::string s;
  Out o(s);
  std::map<uint32_t, size_t> left_out;
  const Threads ts = select_threads(w, opt.max_threads_per_process, &left_out);
  text_header(o, h, w);
  text_threads(o, w, ts, left_out);
  if (w.processes.size() > 1 || (w.processes.size() == 1 && w.processes[0].threads > 1)) text_processes(o, w);
  text_cpu_distribution(o, w, ts);
  text_runq(o, w, ts);
  text_io(o, w, ts);
  text_drain(o, w, ts);
  text_peers(o, w, ts);
  s += text_wait_split(w, ts);
  s += text_cpus(w);
  s += text_cgroups(w);
  s += text_requests(w, h.cost ? &*h.cost : nullptr);
  return strip_trailing_blanks(s);
}

std::string report_json(const ReportHeader& h, const analysis::Window& w, const ReportOptions& opt) {
  rapidjson::StringBuffer sb;
  Writer j(sb);
  setup(j, opt);
  json_report(j, h, w);
  return finish(sb);
}

std::string compare_text(Side a, Side b, const ReportOptions& opt) {
  std::string s;
  Out o(s);
  for (auto [name, side] : {std::pair{"A", a}, std::pair{"B", b}}) {
    const auto lacks = snapshot::missing_fields(side.header.fields);
    fmt::format_to(o, "{}: {}  source: {}{}  duration {:.2f} s  lost events {}\n", name,
                   side.header.file.empty() ? "-" : side.header.file, to_string(side.header.source),
                   lacks.empty() ? "" : fmt::format(" (lacks: {})", fmt::join(lacks, ", ")), side.header.duration_s,
                   side.header.lost_events);
    fmt::format_to(o, "   {}\n", observer_cost_line(side.header));  // runs are fair to compare only at equal cost
  }
  auto matches = match_threads(a.window, b.window);
  if (matches.size() > opt.max_threads_per_process) {  // keep the busiest pairs, in A's order
    auto busy = [](const ThreadMatch& m) {
      return (m.first ? m.first->busy_ns() : 0) + (m.second ? m.second->busy_ns() : 0);
    };
    std::vector<ThreadMatch> sorted = matches;
    std::stable_sort(sorted.begin(), sorted.end(), [&](auto& x, auto& y) { return busy(x) > busy(y); });
    sorted.resize(opt.max_threads_per_process);
    const size_t left = matches.size() - sorted.size();
    std::erase_if(matches, [&](auto& m) { return std::find(sorted.begin(), sorted.end(), m) == sorted.end(); });
    fmt::format_to(o, "({} less busy thread pairs left out; --format json lists all)\n", left);
  }
  for (const ThreadMatch& match : matches) {
    const analysis::ThreadWindow* ta = match.first;  // not structured bindings: clang 14 cannot capture them
    const analysis::ThreadWindow* tb = match.second;
    const std::string title = ta && tb && ta->comm == tb->comm ? fmt::format("{} (A {} / B {})", ta->comm, ta->tid, tb->tid)
                                                              : fmt::format("A {} / B {}", side_name(ta), side_name(tb));
    text_compare_block(
        o, title, [&](const metrics::Metric& m) { return ta ? value_of(m, a.window, *ta) : std::nullopt; },
        [&](const metrics::Metric& m) { return tb ? value_of(m, b.window, *tb) : std::nullopt; });
  }
  for (const auto& match : match_processes(a.window, b.window)) {
    const analysis::ProcessWindow* pa = match.first;
    const analysis::ProcessWindow* pb = match.second;
    const std::string title = fmt::format("process totals: A {} ({}) / B {} ({})", pa ? pa->comm : "-", pa ? pa->pid : 0,
                                          pb ? pb->comm : "-", pb ? pb->pid : 0);
    text_compare_block(
        o, title, [&](const metrics::Metric& m) { return pa ? process_value_of(m, a.window, *pa) : std::nullopt; },
        [&](const metrics::Metric& m) { return pb ? process_value_of(m, b.window, *pb) : std::nullopt; });
  }
  return strip_trailing_blanks(s);
}

std::string compare_json(Side a, Side b, const ReportOptions& opt) {
  rapidjson::StringBuffer sb;
  Writer j(sb);
  setup(j, opt);
  j.StartObject();
  j.Key("a"), json_report(j, a.header, a.window);
  j.Key("b"), json_report(j, b.header, b.window);
  j.Key("ratios"), j.StartObject();
  j.Key("threads"), j.StartArray();
  for (const auto& [ta, tb] : match_threads(a.window, b.window)) {
    j.StartObject();
    j.Key("comm"), str(j, ta ? ta->comm : tb->comm);
    j.Key("a_tid"), ta ? j.Uint(ta->tid) : j.Null();
    j.Key("b_tid"), tb ? j.Uint(tb->tid) : j.Null();
    for (const metrics::Metric* m : compared()) {
      auto [va, vb] = values(a.window, ta, b.window, tb, [m](auto& w, auto& t) { return value_of(*m, w, t); });
      j.Key(m->key), num(j, ratio(va, vb));
    }
    j.EndObject();
  }
  j.EndArray();
  j.Key("processes"), j.StartArray();
  for (const auto& [pa, pb] : match_processes(a.window, b.window)) {
    j.StartObject();
    j.Key("comm"), str(j, pa ? pa->comm : pb->comm);
    j.Key("a_pid"), pa ? j.Uint(pa->pid) : j.Null();
    j.Key("b_pid"), pb ? j.Uint(pb->pid) : j.Null();
    for (const metrics::Metric* m : compared()) {
      auto [va, vb] = values(a.window, pa, b.window, pb, [m](auto& w, auto& p) { return process_value_of(*m, w, p); });
      j.Key(m->key), num(j, ratio(va, vb));
    }
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  j.EndObject();
  return finish(sb);
}

}  // namespace platoon::outputs
