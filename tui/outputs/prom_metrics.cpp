#include "tui/outputs/prom_metrics.hpp"
#include "tui/outputs/prom_out.hpp"
#include "tui/outputs/prom_requests.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <iterator>
#include <span>
#include <vector>

#include "tui/analysis/histogram.hpp"
#include "tui/metrics/catalog.hpp"
#include "tui/outputs/export_targets.hpp"  // utf8_safe

namespace platoon::outputs {

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

bool has_io(const snapshot::Snapshot& s, const snapshot::ThreadSample& t) { return (s.fields & snapshot::kFieldIo) && t.io_cycles > 0; }
bool has_drain(const snapshot::Snapshot& s, const snapshot::ThreadSample& t) {
  return (s.fields & snapshot::kFieldDrain) && (t.drains > 0 || t.steals > 0);
}

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
  const snapshot::ThreadSample* t;
  std::string labels;   // pid, process, thread, tid
};

// The catalog's families (tui/metrics/catalog.hpp), in order: an entry without help is one more
// labelled sample of the family before it (switches by kind).
using Family = std::vector<const metrics::Metric*>;
std::vector<Family> grouped(const std::vector<const metrics::Metric*>& metrics, bool (*opens)(const metrics::Metric&)) {
  std::vector<Family> out;
  for (const metrics::Metric* m : metrics) {
    if (opens(*m) || out.empty()) out.emplace_back();
    out.back().push_back(m);
  }
  return out;
}
// Per thread, by row group.
const std::vector<Family>& families_of(metrics::PromRows group) {
  static const std::array<std::vector<Family>, 3> all = [] {
    std::array<std::vector<Family>, 3> by_group;
    for (metrics::PromRows g : {metrics::PromRows::all, metrics::PromRows::io, metrics::PromRows::drain}) {
      std::vector<const metrics::Metric*> in_group;
      for (const metrics::Metric* m : metrics::prom_metrics())
        if (m->prom.rows == g) in_group.push_back(m);
      by_group[static_cast<size_t>(g)] = grouped(in_group, [](const metrics::Metric& m) { return m.prom.help != nullptr; });
    }
    return by_group;
  }();
  return all[static_cast<size_t>(group)];
}
// Per process, of its exited threads: one counter each in Totals::counters, and their families.
const std::vector<const metrics::Metric*>& exited_counters() {
  static const std::vector<const metrics::Metric*> all = metrics::prom_exited_metrics();
  return all;
}
const std::vector<Family>& exited_families() {
  static const std::vector<Family> all =
      grouped(exited_counters(), [](const metrics::Metric& m) { return m.prom.exited_help != nullptr; });
  return all;
}

bool shown(uint32_t fields, const Family& f) { return (fields & f.front()->fields) != 0; }

size_t counter_series(const snapshot::Snapshot& s, metrics::PromRows group) {
  size_t n = 0;
  for (const Family& f : families_of(group))
    if (shown(s.fields, f)) n += f.size();
  return n;
}

// How many series one thread contributes; the same predicates as the rendering below, so the
// count of series left out by the bound is exact.
size_t thread_series(const snapshot::Snapshot& s, const snapshot::ThreadSample& t) {
  size_t n = counter_series(s, metrics::PromRows::all);
  if (s.fields & snapshot::kFieldRunqHist) n += kRunqSeries;
  if (has_io(s, t)) n += counter_series(s, metrics::PromRows::io) + kBatchSeries;
  if (has_drain(s, t)) n += counter_series(s, metrics::PromRows::drain) + kBatchSeries;
  return n;
}

// One sample of a catalog counter: its label added, ns exported as seconds.
void counter_sample(Out& out, std::string_view name, const std::string& labels, const metrics::PromFamily& f, uint64_t v) {
  const std::string with_label = f.label ? labels + "," + f.label : labels;
  if (f.seconds) out.sample(name, with_label, seconds(v));
  else out.sample(name, with_label, v);
}

void counters(Out& out, const snapshot::Snapshot& s, std::span<const Row* const> rows, metrics::PromRows group) {
  if (rows.empty()) return;
  for (const Family& f : families_of(group)) {
    if (!shown(s.fields, f)) continue;
    const metrics::PromFamily& head = f.front()->prom;
    out.family(head.name, "counter", head.help);
    for (const Row* r : rows)
      for (const metrics::Metric* m : f) counter_sample(out, head.name, r->labels, m->prom, m->prom.counter(*r->t));
  }
}

void runq_histogram(Out& out, std::span<const Row* const> rows) {
  const char* name = "platoon_thread_runqueue_latency_seconds";
  out.family(name, "histogram",
             "Run-queue latency (wakeup or preemption to switch-in), buckets at powers of two ns; "
             "_sum is the thread's total wait, which also counts a wait still in progress.");
  for (const Row* r : rows) {
    const auto& h = r->t->runq_hist;
    out.histogram(name, r->labels, runq_le(),
                  [&](size_t i) { return slots_below(h, static_cast<size_t>(kRunqEdgesLog2[i])); }, analysis::hist_total(h),
                  seconds(r->t->wait_ns));
  }
}

// A histogram over 0..63+ slots (events per epoll cycle, queue depth at drain).
void batch_histogram(Out& out, std::span<const Row* const> rows, const char* name, const char* help,
                     const std::array<uint64_t, snapshot::kBatchSlots> snapshot::ThreadSample::*hist, uint64_t snapshot::ThreadSample::*sum) {
  out.family(name, "histogram", help);
  for (const Row* r : rows) {
    const auto& h = r->t->*hist;
    out.histogram(name, r->labels, batch_le(),
                  [&](size_t i) { return slots_below(h, static_cast<size_t>(kBatchEdges[i]) + 1); }, analysis::hist_total(h),
                  static_cast<double>(r->t->*sum));
  }
}

std::vector<const Row*> rows_where(const std::vector<Row>& rows, auto keep) {
  std::vector<const Row*> v;
  for (const Row& r : rows)
    if (keep(*r.t)) v.push_back(&r);
  return v;
}

// Per thread: the catalog's counters, with the histograms (special cases) between their groups.
void thread_families(Out& out, const snapshot::Snapshot& s, const std::vector<Row>& rows) {
  const auto all = rows_where(rows, [](const snapshot::ThreadSample&) { return true; });
  counters(out, s, all, metrics::PromRows::all);
  if ((s.fields & snapshot::kFieldRunqHist) && !all.empty()) runq_histogram(out, all);
  const auto io = rows_where(rows, [&](const snapshot::ThreadSample& t) { return has_io(s, t); });
  if (!io.empty()) {
    counters(out, s, io, metrics::PromRows::io);
    batch_histogram(out, io, "platoon_thread_epoll_events_per_cycle",
                    "Ready events returned per epoll wait call (the batch as the kernel sees it); "
                    "_count is the IO cycles, _sum the events.",
                    &snapshot::ThreadSample::io_events_hist, &snapshot::ThreadSample::io_events);
  }
  const auto drain = rows_where(rows, [&](const snapshot::ThreadSample& t) { return has_drain(s, t); });
  if (!drain.empty()) {
    batch_histogram(out, drain, "platoon_thread_drain_queue_depth",
                    "Runnable fibers queued when a carrier starts draining (platoon runtime USDT); "
                    "_count is the drains.",
                    &snapshot::ThreadSample::drain_depth_hist, &snapshot::ThreadSample::drain_depth_sum);
    counters(out, s, drain, metrics::PromRows::drain);
  }
}

// The bound: the busiest live threads (run + wait since watching started, the tid breaking
// ties so the choice is stable), then in (pid, tid) order.
struct Bound {
  std::vector<const snapshot::ThreadSample*> kept;
  size_t seen = 0;
  size_t series_over_limit = 0;
};
Bound busiest(const snapshot::Snapshot& s, size_t max_threads) {
  Bound b;
  for (const snapshot::ThreadSample& t : s.threads)
    if (!t.exited) b.kept.push_back(&t);
  auto busier = [](const snapshot::ThreadSample* x, const snapshot::ThreadSample* y) {
    const uint64_t a = x->run_ns + x->wait_ns, c = y->run_ns + y->wait_ns;
    return a != c ? a > c : x->tid < y->tid;
  };
  b.seen = b.kept.size();
  const size_t keep = std::min(b.seen, max_threads);
  std::partial_sort(b.kept.begin(), b.kept.begin() + static_cast<std::ptrdiff_t>(keep), b.kept.end(), busier);
  for (size_t i = keep; i < b.kept.size(); ++i) b.series_over_limit += thread_series(s, *b.kept[i]);
  b.kept.resize(keep);
  std::sort(b.kept.begin(), b.kept.end(), [](const snapshot::ThreadSample* x, const snapshot::ThreadSample* y) {
    return x->pid != y->pid ? x->pid < y->pid : x->tid < y->tid;
  });
  return b;
}

// What the exporter itself costs (docs/exporter.md "What platoon costs"): the kernel's counters
// of its BPF programs, only while the kernel counts them (otherwise they stand at 0 and would
// read as free), and its own CPU time. rate() of the first is the share of a CPU the probes
// take, summed over every CPU they ran on. Sampled stats (kStatsSampleText) count only the
// windows' runs: the counters are scaled by the period over the window, which keeps them
// monotonic and right over any rate() range of a few seconds or more.
void observer_metrics(Out& out, const PromScrapeInfo& info) {
  const snapshot::CostReading& cost = info.bpf_cost;
  const bool counting = cost.stats == snapshot::BpfStats::on;
  const double scale = cost.sampled ? static_cast<double>(snapshot::kStatsSamplePeriodNs) / snapshot::kStatsSampleOnNs : 1.0;
  const auto scaled = [scale](uint64_t n) { return static_cast<uint64_t>(std::llround(static_cast<double>(n) * scale)); };
  out.family("platoon_bpf_stats_enabled", "gauge",
             "1 when the kernel counts BPF run time (platoon samples it unless --no-bpf-stats), so that "
             "platoon_bpf_run_seconds_total and platoon_bpf_runs_total are exported.");
  out.bare("platoon_bpf_stats_enabled", counting ? 1.0 : 0.0);
  // Only the programs that have run: a program the target never triggers (epoll_pwait2 of a
  // libevent server) would be three series of zeros.
  std::vector<const snapshot::ProgramCost*> ran;
  for (const snapshot::ProgramCost& p : cost.programs)
    if (p.run_cnt || p.misses) ran.push_back(&p);
  if (counting && cost.sampled) {
    out.family("platoon_bpf_stats_sampled_seconds_total", "counter",
               std::string("Time the kernel counted BPF run time: the stats are on ") + snapshot::kStatsSampleText +
                   ", and the run counters below are those windows' counts scaled to the whole time.");
    out.bare("platoon_bpf_stats_sampled_seconds_total", static_cast<double>(cost.counted_ns) / 1e9);
  }
  if (counting && !ran.empty()) {
    out.family("platoon_bpf_run_seconds_total", "counter",
               "Time the exporter's BPF programs ran in the kernel, per program (bpf_prog_info run_time_ns).");
    for (const snapshot::ProgramCost* p : ran)
      out.sample("platoon_bpf_run_seconds_total", fmt::format("program=\"{}\"", prom_escape_label(p->name)),
                 seconds(scaled(p->run_time_ns)));
    out.family("platoon_bpf_runs_total", "counter", "Runs of the exporter's BPF programs, per program.");
    for (const snapshot::ProgramCost* p : ran)
      out.sample("platoon_bpf_runs_total", fmt::format("program=\"{}\"", prom_escape_label(p->name)),
                 scaled(p->run_cnt));
    out.family("platoon_bpf_recursion_misses_total", "counter",
               "Runs the kernel skipped because the program was already running on that CPU.");
    for (const snapshot::ProgramCost* p : ran)
      out.sample("platoon_bpf_recursion_misses_total", fmt::format("program=\"{}\"", prom_escape_label(p->name)),
                 p->misses);
  }
  out.family("platoon_self_cpu_seconds_total", "counter", "User and system CPU time of the exporter process.");
  out.bare("platoon_self_cpu_seconds_total", info.self_cpu_seconds);
}

// The exporter's own gauges and the collector's losses (always shown, never hidden).
struct SelfCounts {
  size_t seen = 0, exported = 0, thread_samples = 0, series_over_limit = 0, processes_live = 0, max_threads = 0;
};
void self_metrics(Out& out, const snapshot::Snapshot& s, const PromScrapeInfo& info, const SelfCounts& n) {
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
       static_cast<double>(n.processes_live)},
      {"platoon_exporter_max_threads", "gauge", "The series bound: at most this many threads are exported.",
       static_cast<double>(n.max_threads)},
      {"platoon_exporter_threads_seen", "gauge", "Live threads in the snapshot.", static_cast<double>(n.seen)},
      {"platoon_exporter_threads_exported", "gauge", "Threads with per-thread series in this exposition.",
       static_cast<double>(n.exported)},
      {"platoon_exporter_threads_over_limit", "gauge",
       "Live threads left out by the bound (--max-threads), the least busy ones.", static_cast<double>(n.seen - n.exported)},
      {"platoon_exporter_thread_series", "gauge", "Per-thread series in this exposition.",
       static_cast<double>(n.thread_samples)},
      {"platoon_exporter_series_over_limit", "gauge", "Per-thread series left out by the bound.",
       static_cast<double>(n.series_over_limit)},
  };
  for (const Scalar& x : scalars) {
    out.family(x.name, x.type, x.help);
    out.bare(x.name, x.value);
  }
  observer_metrics(out, info);
  std::string lacks;
  for (const auto& f : snapshot::missing_fields(s.fields)) lacks += (lacks.empty() ? "" : " ") + f;
  out.family("platoon_exporter_source_info", "gauge",
             "Where the numbers come from: source bpf or procfs, how it attached, what it lacks.");
  out.sample("platoon_exporter_source_info",
             fmt::format("source=\"{}\",attach_mode=\"{}\",lacks=\"{}\"", to_string(s.source),
                         prom_escape_label(info.attach_mode), prom_escape_label(lacks)),
             uint64_t{1});
}

// Per-CPU counters since boot, in seconds (the rules in scripts/prometheus/ rate() them): the
// snapshot's own reading of /proc/stat, taken with its threads, in ticks of tick_ns.
void cpu_families(Out& out, const snapshot::Snapshot& s) {
  if (s.cpus.empty() || s.tick_ns == 0) return;
  struct CpuFamily {
    const char* name;
    const char* help;
    uint64_t snapshot::CpuTimes::*ticks;
  };
  const CpuFamily families[] = {
      {"platoon_cpu_steal_seconds_total", "Time this (virtual) CPU wanted to run but the hypervisor ran something else (/proc/stat steal).", &snapshot::CpuTimes::steal},
      {"platoon_cpu_irq_seconds_total", "Time this CPU spent in hardware interrupt handlers (/proc/stat irq).", &snapshot::CpuTimes::irq},
      {"platoon_cpu_softirq_seconds_total", "Time this CPU spent in softirqs: network receive, timers, RCU (/proc/stat softirq).", &snapshot::CpuTimes::softirq},
  };
  const double tick = static_cast<double>(s.tick_ns) / 1e9;
  for (const CpuFamily& f : families) {
    out.family(f.name, "counter", f.help);
    for (const snapshot::CpuTimes& c : s.cpus)
      out.sample(f.name, fmt::format("cpu=\"{}\"", c.cpu), static_cast<double>(c.*f.ticks) * tick);
  }
}

// The CPU cgroups the targets are in (cpu.stat, cpu.max): raw counts, as the kernel keeps them,
// so that rate(throttled_periods) / rate(periods) is the throttled share of periods.
void cgroup_families(Out& out, const snapshot::Snapshot& s) {
  bool any = false;
  for (const snapshot::CgroupCpu& g : s.cgroups) any |= g.version != 0;
  if (!any) return;
  struct CgroupFamily {
    const char* name;
    const char* type;
    const char* help;
    double (*value)(const snapshot::CgroupCpu&);
  };
  const CgroupFamily families[] = {
      {"platoon_cgroup_periods_total", "counter", "CFS bandwidth enforcement periods that elapsed with the group runnable (cpu.stat nr_periods).",
       [](const snapshot::CgroupCpu& g) { return static_cast<double>(g.nr_periods); }},
      {"platoon_cgroup_throttled_periods_total", "counter", "Periods in which the group used up its quota and was throttled (cpu.stat nr_throttled).",
       [](const snapshot::CgroupCpu& g) { return static_cast<double>(g.nr_throttled); }},
      {"platoon_cgroup_throttled_seconds_total", "counter", "Time the group's runnable tasks were parked by throttling, summed over CPUs (cpu.stat throttled_time / throttled_usec).",
       [](const snapshot::CgroupCpu& g) { return static_cast<double>(g.throttled_ns) / 1e9; }},
      {"platoon_cgroup_quota_cpus", "gauge", "The group's CPU quota in CPUs (quota / period); 0: no limit.",
       [](const snapshot::CgroupCpu& g) { return g.quota_us > 0 && g.period_us > 0 ? static_cast<double>(g.quota_us) / static_cast<double>(g.period_us) : 0.0; }},
  };
  for (const CgroupFamily& f : families) {
    out.family(f.name, f.type, f.help);
    for (const snapshot::CgroupCpu& g : s.cgroups)
      if (g.version != 0) out.sample(f.name, fmt::format("cgroup=\"{}\"", prom_escape_label(g.path)), f.value(g));
  }
}

}  // namespace

PromExposition::Totals::Totals() : counters(exited_counters().size()) {}

PromExposition::Totals PromExposition::Totals::of(const snapshot::ThreadSample& t) {
  Totals x;
  x.threads = 1;
  for (size_t i = 0; i < x.counters.size(); ++i) x.counters[i] = exited_counters()[i]->prom.counter(t);
  return x;
}

PromExposition::Totals& PromExposition::Totals::operator+=(const Totals& o) {
  threads += o.threads;
  for (size_t i = 0; i < counters.size(); ++i) counters[i] += o.counters[i];
  return *this;
}

void PromExposition::Totals::raise_to(const Totals& o) {
  for (size_t i = 0; i < counters.size(); ++i) counters[i] = std::max(counters[i], o.counters[i]);
}

void PromExposition::fold(uint32_t pid, const Totals& last) { processes_[pid].exited += last; }

void PromExposition::observe(snapshot::Snapshot snap, const std::map<uint32_t, std::string>& process_names) {
  std::map<Key, LiveThread> now_live;
  std::set<Key> exited_now;
  for (auto& [pid, p] : processes_) p.live_threads = 0;
  for (const snapshot::ThreadSample& t : snap.threads) {
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
        final_values.raise_to(it->second.last);
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

void PromExposition::render_processes(std::string& text, uint32_t fields) {
  Out out(text);
  std::vector<std::pair<const Process*, std::string>> procs;
  for (auto& [pid, p] : processes_) {
    if (p.dead) p.shown_dead = true;
    procs.emplace_back(&p, fmt::format("pid=\"{}\",process=\"{}\"", pid, prom_escape_label(p.name)));
  }
  if (!procs.empty()) {
    out.family("platoon_process_threads", "gauge", "Live threads of the process in the last snapshot (exported or not).");
    for (const auto& [p, labels] : procs) out.sample("platoon_process_threads", labels, uint64_t{p->live_threads});
    const char* name = "platoon_exited_threads_total";
    out.family(name, "counter", "Threads of the process that exited while watched (their series are gone).");
    for (const auto& [p, labels] : procs) out.sample(name, labels, p->exited.threads);
    size_t first = 0;  // the family's first counter in Totals::counters
    for (const Family& f : exited_families()) {
      if (shown(fields, f)) {
        const metrics::PromFamily& head = f.front()->prom;
        out.family(head.exited_name, "counter", head.exited_help);
        for (const auto& [p, labels] : procs)
          for (size_t i = 0; i < f.size(); ++i)
            counter_sample(out, head.exited_name, labels, f[i]->prom, p->exited.counters[first + i]);
      }
      first += f.size();
    }
  }
}

std::string PromExposition::render(const PromScrapeInfo& info) {
  const snapshot::Snapshot& s = snap_;
  std::string text;
  text.reserve(4096 + std::min(s.threads.size(), max_threads_) * 2048);
  const Bound bound = busiest(s, max_threads_);
  std::vector<Row> rows;
  rows.reserve(bound.kept.size());
  for (const snapshot::ThreadSample* t : bound.kept) {
    auto it = processes_.find(t->pid);
    const std::string_view process = it == processes_.end() ? std::string_view() : std::string_view(it->second.name);
    rows.push_back({t, fmt::format("pid=\"{}\",process=\"{}\",thread=\"{}\",tid=\"{}\"", t->pid,
                                   prom_escape_label(process), prom_escape_label(t->comm), t->tid)});
  }
  Out threads(text);
  thread_families(threads, s, rows);
  render_processes(text, s.fields);

  SelfCounts n{bound.seen, bound.kept.size(), threads.samples(), bound.series_over_limit, 0, max_threads_};
  for (const auto& [pid, p] : processes_) n.processes_live += p.live_threads > 0;
  Out out(text);
  self_metrics(out, s, info, n);
  cpu_families(out, s);
  cgroup_families(out, s);
  std::map<uint32_t, std::string> names;
  for (const auto& [pid, p] : processes_) names[pid] = p.name;
  request_families(out, s, names);
  return text;
}

}  // namespace platoon::outputs
