#include "tui/outputs/prom_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <iterator>
#include <span>
#include <vector>

#include "tui/outputs/export_targets.hpp"  // utf8_safe
#include "tui/analysis/histogram.hpp"

namespace platoon::model {

std::string prom_escape_label(std::string_view raw) {
  // Label values must be UTF-8 or Prometheus rejects the whole scrape; a comm is whatever the
  // program set, cut at 15 bytes by the kernel, possibly inside a character.
  const std::string value = utf8_safe(std::string(raw));
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string prom_escape_help(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

namespace {

constexpr double kNsPerSecond = 1e9;
// A process dead this long is dropped even if no scrape has shown it dead (nobody is scraping).
constexpr uint64_t kDeadProcessKeepNs = 300ull * 1'000'000'000ull;

// Run-queue latency buckets: every other power of two from 2^10 ns (~1 µs) to 2^30 ns (~1.07 s).
// The snapshot's log2 slots (slot i = [2^i, 2^(i+1)) ns) add up exactly into these edges,
// whereas decimal edges would have to split a slot. Every other one keeps a thread at 14 series.
constexpr std::array<int, 11> kRunqEdgesLog2 = {10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
// Events per epoll cycle and queue depth at drain are small integers (slot k = exactly k, the
// last slot 64 or more): cumulative counts at these values are exact.
constexpr std::array<int, 8> kBatchEdges = {0, 1, 2, 4, 8, 16, 32, 63};

constexpr size_t kRunqSeries = kRunqEdgesLog2.size() + 3;  // edges, +Inf, _sum, _count
constexpr size_t kBatchSeries = kBatchEdges.size() + 3;

double seconds(uint64_t ns) { return static_cast<double>(ns) / kNsPerSecond; }

bool has_io(const Snapshot& s, const ThreadSample& t) { return (s.fields & kFieldIo) && t.io_cycles > 0; }
bool has_drain(const Snapshot& s, const ThreadSample& t) {
  return (s.fields & kFieldDrain) && (t.drains > 0 || t.steals > 0);
}

// How many series one thread contributes; the same predicates as the rendering below, so the
// count of series left out by the bound is exact.
size_t thread_series(const Snapshot& s, const ThreadSample& t) {
  size_t n = 0;
  if (s.fields & kFieldRunWait) n += 2;
  if (s.fields & kFieldSwitches) n += 2;
  if (s.fields & kFieldMigrations) n += 1;
  if (s.fields & kFieldWakeups) n += 1;
  if (s.fields & kFieldRunqHist) n += kRunqSeries;
  if (has_io(s, t)) n += 1 + kBatchSeries;
  if (has_drain(s, t)) n += 2 + kBatchSeries;
  return n;
}

// Appends exposition text; counts the samples it writes.
class Out {
 public:
  explicit Out(std::string& text) : text_(text) {}
  void family(std::string_view name, std::string_view type, std::string_view help) {
    fmt::format_to(std::back_inserter(text_), "# HELP {} {}\n# TYPE {} {}\n", name, prom_escape_help(help), name, type);
  }
  void sample(std::string_view name, std::string_view labels, uint64_t v) {
    fmt::format_to(std::back_inserter(text_), "{}{{{}}} {}\n", name, labels, v);
    ++samples_;
  }
  void sample(std::string_view name, std::string_view labels, double v) {
    fmt::format_to(std::back_inserter(text_), "{}{{{}}} {}\n", name, labels, v);
    ++samples_;
  }
  void bare(std::string_view name, double v) {
    fmt::format_to(std::back_inserter(text_), "{} {}\n", name, v);
    ++samples_;
  }
  // A histogram's buckets, _sum and _count. `cumulative(i)` is the count at or below edge i.
  void histogram(std::string_view name, std::string_view labels, std::span<const std::string> le,
                 const std::function<uint64_t(size_t)>& cumulative, uint64_t total, double sum) {
    for (size_t i = 0; i < le.size(); ++i)
      fmt::format_to(std::back_inserter(text_), "{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, le[i], cumulative(i));
    fmt::format_to(std::back_inserter(text_), "{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, total);
    fmt::format_to(std::back_inserter(text_), "{}_sum{{{}}} {}\n", name, labels, sum);
    fmt::format_to(std::back_inserter(text_), "{}_count{{{}}} {}\n", name, labels, total);
    samples_ += le.size() + 3;
  }
  size_t samples() const { return samples_; }

 private:
  std::string& text_;
  size_t samples_ = 0;
};

const std::vector<std::string>& runq_le() {
  static const std::vector<std::string> le = [] {
    std::vector<std::string> v;
    for (int e : kRunqEdgesLog2) v.push_back(fmt::format("{}", seconds(uint64_t{1} << e)));
    return v;
  }();
  return le;
}

const std::vector<std::string>& batch_le() {
  static const std::vector<std::string> le = [] {
    std::vector<std::string> v;
    for (int e : kBatchEdges) v.push_back(std::to_string(e));
    return v;
  }();
  return le;
}

// Slots [0, upto) of a histogram summed; cumulative counts for the bucket edges.
uint64_t slots_below(std::span<const uint64_t> hist, size_t upto) {
  uint64_t n = 0;
  for (size_t i = 0; i < upto && i < hist.size(); ++i) n += hist[i];
  return n;
}

struct Row {
  const ThreadSample* t;
  std::string labels;   // pid, process, thread, tid
};

struct CounterFamily {
  const char* name;
  const char* help;
  uint32_t field;
  uint64_t (*value)(const ThreadSample&);
  bool is_seconds;      // value is ns, exported in seconds
};

// The per-thread counters, in the order they are written.
constexpr CounterFamily kThreadCounters[] = {
    {"platoon_thread_run_seconds_total", "On-CPU time of the thread since platoon started watching it.",
     kFieldRunWait, [](const ThreadSample& t) { return t.run_ns; }, true},
    {"platoon_thread_wait_seconds_total",
     "Time runnable but not running (run-queue wait) since watching started; rate() x 100 is pidstat's %wait.",
     kFieldRunWait, [](const ThreadSample& t) { return t.wait_ns; }, true},
    {"platoon_thread_migrations_total", "Moves of the thread to another CPU.", kFieldMigrations,
     [](const ThreadSample& t) { return t.migrations; }, false},
    {"platoon_thread_wakeups_total", "Times the thread was woken.", kFieldWakeups,
     [](const ThreadSample& t) { return t.wakeups; }, false},
};

}  // namespace

PromExposition::Totals PromExposition::Totals::of(const ThreadSample& t) {
  Totals x;
  x.threads = 1;
  x.run_ns = t.run_ns;
  x.wait_ns = t.wait_ns;
  x.switches_voluntary = t.switches_voluntary;
  x.switches_involuntary = t.switches_involuntary;
  x.migrations = t.migrations;
  x.wakeups = t.wakeups;
  x.io_cycles = t.io_cycles;
  x.io_events = t.io_events;
  x.drains = t.drains;
  return x;
}

PromExposition::Totals& PromExposition::Totals::operator+=(const Totals& o) {
  threads += o.threads;
  run_ns += o.run_ns;
  wait_ns += o.wait_ns;
  switches_voluntary += o.switches_voluntary;
  switches_involuntary += o.switches_involuntary;
  migrations += o.migrations;
  wakeups += o.wakeups;
  io_cycles += o.io_cycles;
  io_events += o.io_events;
  drains += o.drains;
  return *this;
}

void PromExposition::fold(uint32_t pid, const Totals& last) { processes_[pid].exited += last; }

void PromExposition::observe(Snapshot snap, const std::map<uint32_t, std::string>& process_names) {
  std::map<Key, LiveThread> now_live;
  std::set<Key> exited_now;
  for (auto& [pid, p] : processes_) p.live_threads = 0;
  for (const ThreadSample& t : snap.threads) {
    Process& p = processes_[t.pid];
    if (t.tid == t.pid && !t.comm.empty() && !t.exited) p.name = t.comm;  // the leader's comm is the process's
    const Key k{t.tid, t.first_seen_ns};
    if (t.exited) {
      exited_now.insert(k);
      if (exited_folded_.count(k)) continue;  // the same exit report observed twice: folded already
      Totals final_values = Totals::of(t);
      if (auto it = live_.find(k); it != live_.end()) {
        // A live value may include a slice in progress the final one books differently; keep
        // the larger of each so the process total never goes down.
        const Totals& was = it->second.last;
        final_values.run_ns = std::max(final_values.run_ns, was.run_ns);
        final_values.wait_ns = std::max(final_values.wait_ns, was.wait_ns);
        final_values.switches_voluntary = std::max(final_values.switches_voluntary, was.switches_voluntary);
        final_values.switches_involuntary = std::max(final_values.switches_involuntary, was.switches_involuntary);
        final_values.migrations = std::max(final_values.migrations, was.migrations);
        final_values.wakeups = std::max(final_values.wakeups, was.wakeups);
        final_values.io_cycles = std::max(final_values.io_cycles, was.io_cycles);
        final_values.io_events = std::max(final_values.io_events, was.io_events);
        final_values.drains = std::max(final_values.drains, was.drains);
        live_.erase(it);
      }
      fold(t.pid, final_values);
      continue;
    }
    ++p.live_threads;
    now_live[k] = LiveThread{t.pid, Totals::of(t)};
  }
  // Threads gone without an exit report (procfs between two samples, a tid reused): fold what
  // was last known of them.
  for (const auto& [k, lt] : live_)
    if (!now_live.count(k) && !exited_now.count(k)) fold(lt.pid, lt.last);

  for (auto it = processes_.begin(); it != processes_.end();) {
    Process& p = it->second;
    if (auto n = process_names.find(it->first); n != process_names.end() && !n->second.empty()) p.name = n->second;
    if (p.live_threads > 0) {
      p.dead = false;
      p.shown_dead = false;
    } else if (!p.dead) {
      p.dead = true;
      p.dead_since_ns = snap.ts_ns;
    } else if (p.shown_dead || snap.ts_ns - p.dead_since_ns > kDeadProcessKeepNs) {
      it = processes_.erase(it);
      continue;
    }
    ++it;
  }
  live_ = std::move(now_live);
  exited_folded_ = std::move(exited_now);
  snap_ = std::move(snap);
}

std::string PromExposition::render(const PromScrapeInfo& info) {
  const Snapshot& s = snap_;
  std::string text;
  text.reserve(4096 + std::min(s.threads.size(), max_threads_) * 2048);
  Out out(text);

  // The bound: the busiest live threads (run + wait since watching started, the tid breaking
  // ties so the choice is stable), then written in (pid, tid) order.
  std::vector<const ThreadSample*> live;
  live.reserve(s.threads.size());
  for (const ThreadSample& t : s.threads)
    if (!t.exited) live.push_back(&t);
  auto busier = [](const ThreadSample* a, const ThreadSample* b) {
    const uint64_t x = a->run_ns + a->wait_ns, y = b->run_ns + b->wait_ns;
    return x != y ? x > y : a->tid < b->tid;
  };
  const size_t seen = live.size();
  const size_t keep = std::min(seen, max_threads_);
  std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(keep), live.end(), busier);
  size_t series_over_limit = 0;
  for (size_t i = keep; i < live.size(); ++i) series_over_limit += thread_series(s, *live[i]);
  live.resize(keep);
  std::sort(live.begin(), live.end(), [](const ThreadSample* a, const ThreadSample* b) {
    return a->pid != b->pid ? a->pid < b->pid : a->tid < b->tid;
  });

  auto process_name = [&](uint32_t pid) -> std::string_view {
    auto it = processes_.find(pid);
    return it == processes_.end() ? std::string_view() : std::string_view(it->second.name);
  };
  std::vector<Row> rows;
  rows.reserve(live.size());
  for (const ThreadSample* t : live)
    rows.push_back({t, fmt::format("pid=\"{}\",process=\"{}\",thread=\"{}\",tid=\"{}\"", t->pid,
                                   prom_escape_label(process_name(t->pid)), prom_escape_label(t->comm), t->tid)});

  // ---- per thread ----
  const size_t before_threads = out.samples();
  for (const CounterFamily& f : kThreadCounters) {
    if (!(s.fields & f.field) || rows.empty()) continue;
    out.family(f.name, "counter", f.help);
    for (const Row& r : rows) {
      const uint64_t v = f.value(*r.t);
      if (f.is_seconds) out.sample(f.name, r.labels, seconds(v));
      else out.sample(f.name, r.labels, v);
    }
  }
  if ((s.fields & kFieldSwitches) && !rows.empty()) {
    const char* name = "platoon_thread_switches_total";
    out.family(name, "counter",
               "Context switches: kind=voluntary (blocked or slept), involuntary (preempted while runnable).");
    for (const Row& r : rows) {
      out.sample(name, r.labels + ",kind=\"voluntary\"", r.t->switches_voluntary);
      out.sample(name, r.labels + ",kind=\"involuntary\"", r.t->switches_involuntary);
    }
  }
  if ((s.fields & kFieldRunqHist) && !rows.empty()) {
    const char* name = "platoon_thread_runqueue_latency_seconds";
    out.family(name, "histogram",
               "Run-queue latency (wakeup or preemption to switch-in), buckets at powers of two ns; "
               "_sum is the thread's total wait, which also counts a wait still in progress.");
    for (const Row& r : rows) {
      const auto& h = r.t->runq_hist;
      out.histogram(name, r.labels, runq_le(),
                    [&](size_t i) { return slots_below(h, static_cast<size_t>(kRunqEdgesLog2[i])); },
                    hist_total(h), seconds(r.t->wait_ns));
    }
  }
  auto io_rows = [&] {
    std::vector<const Row*> v;
    for (const Row& r : rows)
      if (has_io(s, *r.t)) v.push_back(&r);
    return v;
  }();
  if (!io_rows.empty()) {
    const char* blocked = "platoon_thread_epoll_blocked_seconds_total";
    out.family(blocked, "counter", "Time blocked in epoll_wait/epoll_pwait/epoll_pwait2.");
    for (const Row* r : io_rows) out.sample(blocked, r->labels, seconds(r->t->io_blocked_ns));
    const char* name = "platoon_thread_epoll_events_per_cycle";
    out.family(name, "histogram",
               "Ready events returned per epoll wait call (the batch as the kernel sees it); "
               "_count is the IO cycles, _sum the events.");
    for (const Row* r : io_rows) {
      const auto& h = r->t->io_events_hist;
      out.histogram(name, r->labels, batch_le(),
                    [&](size_t i) { return slots_below(h, static_cast<size_t>(kBatchEdges[i]) + 1); },
                    hist_total(h), static_cast<double>(r->t->io_events));
    }
  }
  auto drain_rows = [&] {
    std::vector<const Row*> v;
    for (const Row& r : rows)
      if (has_drain(s, *r.t)) v.push_back(&r);
    return v;
  }();
  if (!drain_rows.empty()) {
    const char* name = "platoon_thread_drain_queue_depth";
    out.family(name, "histogram",
               "Runnable fibers queued when a carrier starts draining (platoon runtime USDT); "
               "_count is the drains.");
    for (const Row* r : drain_rows) {
      const auto& h = r->t->drain_depth_hist;
      out.histogram(name, r->labels, batch_le(),
                    [&](size_t i) { return slots_below(h, static_cast<size_t>(kBatchEdges[i]) + 1); },
                    hist_total(h), static_cast<double>(r->t->drain_depth_sum));
    }
    const char* fibers = "platoon_thread_drained_fibers_total";
    out.family(fibers, "counter", "Fibers run by the carrier's drains.");
    for (const Row* r : drain_rows) out.sample(fibers, r->labels, r->t->drain_fibers_run);
    const char* steals = "platoon_thread_steals_total";
    out.family(steals, "counter", "Steals from sibling carriers' queues by this carrier.");
    for (const Row* r : drain_rows) out.sample(steals, r->labels, r->t->steals);
  }
  const size_t thread_samples = out.samples() - before_threads;

  // ---- per process: live thread count and the counters of threads that exited ----
  std::vector<std::pair<const Process*, std::string>> procs;
  for (auto& [pid, p] : processes_) {
    if (p.dead) p.shown_dead = true;
    procs.emplace_back(&p, fmt::format("pid=\"{}\",process=\"{}\"", pid, prom_escape_label(p.name)));
  }
  if (!procs.empty()) {
    out.family("platoon_process_threads", "gauge", "Live threads of the process in the last snapshot (exported or not).");
    for (const auto& [p, labels] : procs) out.sample("platoon_process_threads", labels, uint64_t{p->live_threads});
    struct ExitedFamily {
      const char* name;
      const char* help;
      uint32_t field;
      uint64_t Totals::*member;
      bool is_seconds;
    };
    static constexpr ExitedFamily kExited[] = {
        {"platoon_exited_threads_total", "Threads of the process that exited while watched (their series are gone).",
         0, &Totals::threads, false},
        {"platoon_exited_threads_run_seconds_total", "On-CPU time of the process's exited threads.", kFieldRunWait,
         &Totals::run_ns, true},
        {"platoon_exited_threads_wait_seconds_total", "Run-queue wait of the process's exited threads.",
         kFieldRunWait, &Totals::wait_ns, true},
        {"platoon_exited_threads_migrations_total", "CPU migrations of the process's exited threads.",
         kFieldMigrations, &Totals::migrations, false},
        {"platoon_exited_threads_wakeups_total", "Wakeups of the process's exited threads.", kFieldWakeups,
         &Totals::wakeups, false},
        {"platoon_exited_threads_epoll_cycles_total", "Epoll wait calls of the process's exited threads.", kFieldIo,
         &Totals::io_cycles, false},
        {"platoon_exited_threads_epoll_events_total", "Ready events returned to the process's exited threads.",
         kFieldIo, &Totals::io_events, false},
        {"platoon_exited_threads_drains_total", "Drains of the process's exited carriers.", kFieldDrain,
         &Totals::drains, false},
    };
    for (const ExitedFamily& f : kExited) {
      if (f.field && !(s.fields & f.field)) continue;
      out.family(f.name, "counter", f.help);
      for (const auto& [p, labels] : procs) {
        const uint64_t v = p->exited.*f.member;
        if (f.is_seconds) out.sample(f.name, labels, seconds(v));
        else out.sample(f.name, labels, v);
      }
    }
    if (s.fields & kFieldSwitches) {
      const char* name = "platoon_exited_threads_switches_total";
      out.family(name, "counter", "Context switches of the process's exited threads, by kind.");
      for (const auto& [p, labels] : procs) {
        out.sample(name, labels + ",kind=\"voluntary\"", p->exited.switches_voluntary);
        out.sample(name, labels + ",kind=\"involuntary\"", p->exited.switches_involuntary);
      }
    }
  }

  // ---- the collector's losses (always shown, never hidden) and the exporter itself ----
  size_t processes_live = 0;
  for (const auto& [pid, p] : processes_) processes_live += p.live_threads > 0;
  struct Scalar {
    const char* name;
    const char* type;
    const char* help;
    double value;
  };
  const Scalar scalars[] = {
      {"platoon_collector_lost_events_total", "counter",
       "Raw events dropped because the ring buffer was full (the exporter records none).",
       static_cast<double>(s.lost_events())},
      {"platoon_collector_untracked_threads_total", "counter",
       "Threads not tracked because the in-kernel thread map was full.", static_cast<double>(s.untracked_threads)},
      {"platoon_collector_lost_pairs_total", "counter",
       "Preemptor/waker pairs not tracked because the pair map was full.", static_cast<double>(s.lost_pairs)},
      {"platoon_collector_lost_targets_total", "counter", "Processes not watched because the target map was full.",
       static_cast<double>(s.lost_targets)},
      {"platoon_exporter_snapshot_duration_seconds", "gauge", "Time taken to read the source for this snapshot.",
       info.snapshot_seconds},
      {"platoon_exporter_snapshots_total", "counter",
       "Snapshots taken (scrapes, less those served from a snapshot under 100 ms old, plus housekeeping).",
       static_cast<double>(info.snapshots)},
      {"platoon_exporter_processes", "gauge", "Watched processes with live threads.",
       static_cast<double>(processes_live)},
      {"platoon_exporter_max_threads", "gauge", "The series bound: at most this many threads are exported.",
       static_cast<double>(max_threads_)},
      {"platoon_exporter_threads_seen", "gauge", "Live threads in the snapshot.", static_cast<double>(seen)},
      {"platoon_exporter_threads_exported", "gauge", "Threads with per-thread series in this exposition.",
       static_cast<double>(keep)},
      {"platoon_exporter_threads_over_limit", "gauge",
       "Live threads left out by the bound (--max-threads), the least busy ones.", static_cast<double>(seen - keep)},
      {"platoon_exporter_thread_series", "gauge", "Per-thread series in this exposition.",
       static_cast<double>(thread_samples)},
      {"platoon_exporter_series_over_limit", "gauge", "Per-thread series left out by the bound.",
       static_cast<double>(series_over_limit)},
  };
  for (const Scalar& x : scalars) {
    out.family(x.name, x.type, x.help);
    out.bare(x.name, x.value);
  }
  std::string lacks;
  for (const auto& f : missing_fields(s.fields)) lacks += (lacks.empty() ? "" : " ") + f;
  out.family("platoon_exporter_source_info", "gauge",
             "Where the numbers come from: source bpf or procfs, how it attached, what it lacks.");
  out.sample("platoon_exporter_source_info",
             fmt::format("source=\"{}\",attach_mode=\"{}\",lacks=\"{}\"", to_string(s.source),
                         prom_escape_label(info.attach_mode), prom_escape_label(lacks)),
             uint64_t{1});
  return text;
}

}  // namespace platoon::model
