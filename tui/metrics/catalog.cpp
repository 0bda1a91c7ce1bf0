#include "tui/metrics/catalog.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <iterator>
#include <utility>

#include "tui/analysis/requests.hpp"

namespace platoon::metrics {

std::string format_fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string format_pct(double v) { return format_fixed(v, v >= 99.95 ? 0 : 1); }

std::string format_rate(double v) {
  if (v < 999.5) return format_fixed(v, 0);
  if (v < 999.5e3) return format_fixed(v / 1e3, 1) + "k";
  return format_fixed(v / 1e6, 1) + "M";
}

Batch batch_of(const analysis::ThreadWindow& t) {
  Batch b;
  if (t.delta.drains > 0) {
    b.from = BatchFrom::drain;
    b.p50 = analysis::linear_percentile(t.delta.drain_depth_hist, 50);
    b.p99 = analysis::linear_percentile(t.delta.drain_depth_hist, 99);
  } else if (t.delta.io_cycles > 0) {
    b.from = BatchFrom::epoll;
    b.p50 = analysis::linear_percentile(t.delta.io_events_hist, 50);
    b.p99 = analysis::linear_percentile(t.delta.io_events_hist, 99);
  }
  return b;
}

namespace {

using Get = Value (*)(const analysis::Window&, const analysis::ThreadWindow&);

std::string fixed0(double v) { return format_fixed(v, 0); }
std::string fixed1(double v) { return format_fixed(v, 1); }

double per_s(uint64_t n, const analysis::Window& w) { return w.wall_s > 0 ? static_cast<double>(n) / w.wall_s : 0.0; }

// "0:44 1:56": the two CPUs that took most of the thread's switch-ins.
std::string where_cell(const analysis::Window&, const analysis::ThreadWindow& t) {
  auto d = t.cpu_distribution;
  if (d.empty()) return "-";
  std::stable_sort(d.begin(), d.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::string s;
  for (size_t i = 0; i < d.size() && i < 2; ++i) {
    if (i) s += ' ';
    s += std::to_string(d[i].first) + ":" + format_fixed(d[i].second, 0);
  }
  return s;
}

std::string batch_p99_cell(const analysis::Window&, const analysis::ThreadWindow& t) {
  const Batch b = batch_of(t);
  if (b.from == BatchFrom::none) return "-";
  return format_fixed(b.p99, 0) + (b.from == BatchFrom::drain ? "q" : "e");
}

// A figure of the requests thread t read; none when it read none in the window.
template <typename F>
Value requests_read(const analysis::Window& w, const analysis::ThreadWindow& t, F figure) {
  const analysis::RequestRow r = analysis::thread_requests(w, t.tid);
  return r.sum.count ? Value(figure(r)) : std::nullopt;
}

Value batch_p50(const analysis::Window&, const analysis::ThreadWindow& t) {
  const Batch b = batch_of(t);
  return b.from == BatchFrom::none ? std::nullopt : Value(b.p50);
}

Value runq_p50(const analysis::Window&, const analysis::ThreadWindow& t) {
  return t.runq && t.runq->samples ? Value(t.runq->p50_us) : std::nullopt;
}
Value runq_p99(const analysis::Window&, const analysis::ThreadWindow& t) {
  return t.runq && t.runq->samples ? Value(t.runq->p99_us) : std::nullopt;
}
bool has_runq(const analysis::ThreadWindow& t) { return t.runq.has_value(); }
bool has_drain(const analysis::ThreadWindow& t) { return t.drain.has_value(); }

constexpr uint32_t kNoFields = 0;

// Positions: TUI (main table, left to right), report (--vs rows), JSON (thread keys), CSV (after
// interval_start_s,interval_end_s,pid,tid,comm), Prometheus (families, by PromRows group).
constexpr Metric kListed[] = {
    {.key = "tid", .title = "TID", .width = 7, .unit = Unit::id, .fields = kNoFields,
     .value = [](auto&, auto& t) -> Value { return t.tid; }, .help = "thread id", .desc = false,
     .tui = {.at = 1, .format = fixed0}},
    {.key = "comm", .title = "NAME", .width = 13, .unit = Unit::text, .fields = kNoFields,
     .value = [](auto&, auto&) -> Value { return 0; }, .help = "thread name (comm)", .desc = false,
     .tui = {.at = 2, .left = true, .cell = [](auto&, auto& t) { return t.comm; }}},

    // ---- time shares (pidstat -u) ----
    {.key = "cpu_pct", .title = "%CPU", .width = 5, .unit = Unit::percent, .fields = snapshot::kFieldRunWait,
     .value = [](auto&, auto& t) -> Value { return t.cpu_pct; },
     .process = [](auto&, auto& p) -> Value { return p.cpu_pct; }, .help = "on-CPU time / wall time",
     .tui = {.at = 3, .format = format_pct},
     .report = {.at = 1, .title = "%CPU", .thread_table = true, .width = 7},
     .json = {.at = 1}, .csv = {.at = 1, .decimals = 3}},
    {.key = "wait_pct", .title = "%WAIT", .width = 6, .unit = Unit::percent, .fields = snapshot::kFieldRunWait,
     .value = [](auto&, auto& t) -> Value { return t.wait_pct; },
     .process = [](auto&, auto& p) -> Value { return p.wait_pct; },
     .help = "runnable but not running / wall time (pidstat %wait)", .tui = {.at = 4, .format = format_pct},
     .report = {.at = 2, .title = "%wait", .thread_table = true, .width = 7},
     .json = {.at = 2}, .csv = {.at = 2, .decimals = 3}},
    {.key = "run_ns", .title = "run", .width = 0, .unit = Unit::ns, .fields = snapshot::kFieldRunWait,
     .value = [](auto&, auto& t) -> Value { return static_cast<double>(t.delta.run_ns); },
     .help = "on-CPU time over the window", .json = {.at = 3, .integer = true}, .csv = {.at = 3},
     .prom = {.at = 1, .name = "platoon_thread_run_seconds_total",
              .help = "On-CPU time of the thread since platoon started watching it.",
              .counter = [](const snapshot::ThreadSample& t) { return t.run_ns; }, .seconds = true, .exited_at = 1,
              .exited_name = "platoon_exited_threads_run_seconds_total",
              .exited_help = "On-CPU time of the process's exited threads."}},
    {.key = "wait_ns", .title = "wait", .width = 0, .unit = Unit::ns, .fields = snapshot::kFieldRunWait,
     .value = [](auto&, auto& t) -> Value { return static_cast<double>(t.delta.wait_ns); },
     .help = "runnable but not running over the window", .json = {.at = 4, .integer = true}, .csv = {.at = 4},
     .prom = {.at = 2, .name = "platoon_thread_wait_seconds_total",
              .help = "Time runnable but not running (run-queue wait) since watching started; rate() x 100 is "
                      "pidstat's %wait.",
              .counter = [](const snapshot::ThreadSample& t) { return t.wait_ns; }, .seconds = true, .exited_at = 2,
              .exited_name = "platoon_exited_threads_wait_seconds_total",
              .exited_help = "Run-queue wait of the process's exited threads."}},

    // ---- context switches and migrations (pidstat -w) ----
    {.key = "switches_voluntary", .title = "csw", .width = 0, .unit = Unit::count, .fields = snapshot::kFieldSwitches,
     .value = [](auto&, auto& t) -> Value { return static_cast<double>(t.delta.switches_voluntary); },
     .help = "voluntary context switches (blocked or slept)", .json = {.at = 5, .integer = true}, .csv = {.at = 5},
     .prom = {.at = 5, .name = "platoon_thread_switches_total",
              .help = "Context switches: kind=voluntary (blocked or slept), involuntary (preempted while runnable).",
              .label = "kind=\"voluntary\"", .counter = [](const snapshot::ThreadSample& t) { return t.switches_voluntary; },
              .exited_at = 8, .exited_name = "platoon_exited_threads_switches_total",
              .exited_help = "Context switches of the process's exited threads, by kind."}},
    {.key = "switches_involuntary", .title = "nvcs", .width = 0, .unit = Unit::count, .fields = snapshot::kFieldSwitches,
     .value = [](auto&, auto& t) -> Value { return static_cast<double>(t.delta.switches_involuntary); },
     .help = "involuntary context switches (preempted while runnable)", .json = {.at = 6, .integer = true},
     .csv = {.at = 6},
     .prom = {.at = 6, .name = "platoon_thread_switches_total", .label = "kind=\"involuntary\"",
              .counter = [](const snapshot::ThreadSample& t) { return t.switches_involuntary; }, .exited_at = 9,
              .exited_name = "platoon_exited_threads_switches_total"}},
    {.key = "cswch_per_s", .title = "csw/s", .width = 6, .unit = Unit::per_second, .fields = snapshot::kFieldSwitches,
     .value = [](auto&, auto& t) -> Value { return t.cswch_per_s; },
     .process = [](auto&, auto& p) -> Value { return p.cswch_per_s; },
     .help = "voluntary context switches per second", .tui = {.at = 5, .priority = 6, .format = format_rate},
     .report = {.at = 3, .title = "cswch/s", .thread_table = true, .width = 9}, .json = {.at = 7}},
    {.key = "nvcswch_per_s", .title = "nvcs/s", .width = 6, .unit = Unit::per_second, .fields = snapshot::kFieldSwitches,
     .value = [](auto&, auto& t) -> Value { return t.nvcswch_per_s; },
     .process = [](auto&, auto& p) -> Value { return p.nvcswch_per_s; },
     .help = "involuntary context switches (preemptions) per second",
     .tui = {.at = 6, .priority = 5, .format = format_rate},
     .report = {.at = 4, .title = "nvcswch/s", .thread_table = true, .width = 9}, .json = {.at = 8}},
    {.key = "migrations", .title = "mig", .width = 0, .unit = Unit::count, .fields = snapshot::kFieldMigrations,
     .value = [](auto&, auto& t) -> Value { return static_cast<double>(t.migrations); },
     .help = "moves to another CPU over the window", .json = {.at = 9, .integer = true}, .csv = {.at = 7},
     .prom = {.at = 3, .name = "platoon_thread_migrations_total", .help = "Moves of the thread to another CPU.",
              .counter = [](const snapshot::ThreadSample& t) { return t.migrations; }, .exited_at = 3,
              .exited_name = "platoon_exited_threads_migrations_total",
              .exited_help = "CPU migrations of the process's exited threads."}},
    {.key = "migrations_per_s", .title = "mig/s", .width = 5, .unit = Unit::per_second, .fields = snapshot::kFieldMigrations,
     .value = [](auto&, auto& t) -> Value { return t.migrations_per_s; },
     .process = [](auto&, auto& p) -> Value { return p.migrations_per_s; }, .help = "CPU migrations per second",
     .tui = {.at = 7, .priority = 7, .format = format_rate},
     .report = {.at = 5, .title = "migr/s", .thread_table = true, .width = 8}, .json = {.at = 10}},
    {.key = "cpus", .title = "CPUS", .width = 9, .unit = Unit::text, .fields = snapshot::kFieldCpuDist,
     .value = [](auto&, auto&) -> Value { return 0; }, .help = "where it ran: share of switch-ins per CPU (top 2)",
     .desc = false, .tui = {.at = 8, .priority = 3, .left = true, .sortable = false, .cell = where_cell}},

    // ---- run-queue latency (the histogram itself is a special case of each output) ----
    {.key = "runq_p50_us", .title = "rq50", .width = 0, .unit = Unit::us, .fields = snapshot::kFieldRunqHist,
     .value = runq_p50, .help = "run-queue latency p50 (wakeup or preemption to switch-in)",
     .csv = {.at = 13, .decimals = 1, .zero_if = has_runq}},
    {.key = "runq_p99_us", .title = "rq99", .width = 0, .unit = Unit::us, .fields = snapshot::kFieldRunqHist,
     .value = runq_p99, .help = "run-queue latency p99 (wakeup or preemption to switch-in)",
     .report = {.at = 6, .title = "runq p99 us"}, .csv = {.at = 14, .decimals = 1, .zero_if = has_runq}},

    // ---- epoll (the batch as the kernel sees it) ----
    {.key = "io_cycles_per_s", .title = "cyc/s", .width = 6, .unit = Unit::per_second, .fields = snapshot::kFieldIo,
     .value = [](auto&, auto& t) -> Value { return t.io ? t.io->cycles_per_s : 0; },
     .help = "epoll wait calls (IO cycles) per second", .tui = {.at = 9, .priority = 2, .format = format_rate}},
    {.key = "io_cycles", .title = "cyc", .width = 0, .unit = Unit::count, .fields = snapshot::kFieldIo,
     .value = [](auto&, auto& t) -> Value { return static_cast<double>(t.delta.io_cycles); },
     .help = "epoll wait calls over the window", .csv = {.at = 8},
     // Per thread, the count of the platoon_thread_epoll_events_per_cycle histogram.
     .prom = {.counter = [](const snapshot::ThreadSample& t) { return t.io_cycles; }, .exited_at = 5,
              .exited_name = "platoon_exited_threads_epoll_cycles_total",
              .exited_help = "Epoll wait calls of the process's exited threads."}},
    {.key = "io_events", .title = "ev", .width = 0, .unit = Unit::count, .fields = snapshot::kFieldIo,
     .value = [](auto&, auto& t) -> Value { return static_cast<double>(t.delta.io_events); },
     .help = "ready events returned by those calls", .csv = {.at = 9},
     // Per thread, the sum of the platoon_thread_epoll_events_per_cycle histogram.
     .prom = {.counter = [](const snapshot::ThreadSample& t) { return t.io_events; }, .exited_at = 6,
              .exited_name = "platoon_exited_threads_epoll_events_total",
              .exited_help = "Ready events returned to the process's exited threads."}},
    {.key = "events_per_cycle", .title = "ev/c", .width = 5, .unit = Unit::ratio, .fields = snapshot::kFieldIo,
     .value = [](auto&, auto& t) -> Value { return t.io ? Value(t.io->events_per_cycle) : std::nullopt; },
     .process = [](auto&, auto& p) -> Value { return p.io_cycles ? Value(p.events_per_cycle) : std::nullopt; },
     .help = "ready events per epoll wait call", .tui = {.at = 10, .priority = 2, .format = fixed1},
     .report = {.at = 7, .title = "events/cycle", .width = 12, .decimals = 2}, .csv = {.at = 10, .decimals = 3}},
    {.key = "io_blocked_ns", .title = "blk", .width = 0, .unit = Unit::ns, .fields = snapshot::kFieldIo,
     .value = [](auto&, auto& t) -> Value { return static_cast<double>(t.delta.io_blocked_ns); },
     .help = "time blocked in epoll wait calls",
     .prom = {.at = 7, .name = "platoon_thread_epoll_blocked_seconds_total",
              .help = "Time blocked in epoll_wait/epoll_pwait/epoll_pwait2.", .rows = PromRows::io,
              .counter = [](const snapshot::ThreadSample& t) { return t.io_blocked_ns; }, .seconds = true, .exited_at = 10,
              .exited_name = "platoon_exited_threads_epoll_blocked_seconds_total",
              .exited_help = "Time the process's exited threads blocked in epoll waits."}},

    // ---- the batch: drain queue depth or epoll events per cycle ----
    {.key = "batch_p50", .title = "b50", .width = 4, .unit = Unit::count, .fields = snapshot::kFieldIo | snapshot::kFieldDrain,
     .value = batch_p50, .help = "batch size p50 (q: drain queue depth, e: epoll events/cycle)",
     .tui = {.at = 11, .priority = 2, .format = fixed0}},
    {.key = "batch_p99", .title = "b99", .width = 5, .unit = Unit::count, .fields = snapshot::kFieldIo | snapshot::kFieldDrain,
     .value = [](auto&, auto& t) -> Value { return batch_of(t).p99; },
     .help = "batch size p99, with its source letter q or e", .tui = {.at = 12, .priority = 2, .cell = batch_p99_cell}},

    // ---- runtime drains (platoon-runtime targets, USDT) ----
    {.key = "drains", .title = "drains", .width = 0, .unit = Unit::count, .fields = snapshot::kFieldDrain,
     .value = [](auto&, auto& t) -> Value { return static_cast<double>(t.delta.drains); },
     .help = "drains of the carrier's run queue over the window", .csv = {.at = 11},
     // Per thread, the count of the platoon_thread_drain_queue_depth histogram.
     .prom = {.counter = [](const snapshot::ThreadSample& t) { return t.drains; }, .exited_at = 7,
              .exited_name = "platoon_exited_threads_drains_total",
              .exited_help = "Drains of the process's exited carriers."}},
    {.key = "queue_depth_avg", .title = "qd", .width = 0, .unit = Unit::ratio, .fields = snapshot::kFieldDrain,
     .value = [](auto&, auto& t) -> Value {
       return t.drain && t.drain->batches ? Value(t.drain->queue_depth_avg) : std::nullopt;
     },
     .process = [](auto&, auto& p) -> Value { return p.drains ? Value(p.queue_depth_avg) : std::nullopt; },
     .help = "runnable fibers queued when a carrier starts draining, on average",
     .report = {.at = 8, .title = "queue depth avg", .width = 11, .decimals = 2, .process_title = "queue depth"},
     .csv = {.at = 12, .decimals = 3, .zero_if = has_drain}},
    {.key = "fibers_run", .title = "fib", .width = 0, .unit = Unit::count, .fields = snapshot::kFieldDrain,
     .value = [](auto&, auto& t) -> Value { return static_cast<double>(t.delta.drain_fibers_run); },
     .help = "fibers run by the carrier's drains",
     .prom = {.at = 8, .name = "platoon_thread_drained_fibers_total", .help = "Fibers run by the carrier's drains.",
              .rows = PromRows::drain, .counter = [](const snapshot::ThreadSample& t) { return t.drain_fibers_run; },
              .exited_at = 11, .exited_name = "platoon_exited_threads_drained_fibers_total",
              .exited_help = "Fibers run by the drains of the process's exited carriers."}},
    {.key = "steals", .title = "steals", .width = 0, .unit = Unit::count, .fields = snapshot::kFieldDrain,
     .value = [](auto&, auto& t) -> Value { return static_cast<double>(t.delta.steals); },
     .help = "steals from sibling carriers' queues",
     .prom = {.at = 9, .name = "platoon_thread_steals_total",
              .help = "Steals from sibling carriers' queues by this carrier.", .rows = PromRows::drain,
              .counter = [](const snapshot::ThreadSample& t) { return t.steals; }, .exited_at = 12,
              .exited_name = "platoon_exited_threads_steals_total",
              .exited_help = "Steals from sibling carriers' queues by the process's exited carriers."}},

    {.key = "history", .title = "HIST", .width = 10, .unit = Unit::percent, .fields = snapshot::kFieldRunWait,
     .value = [](auto&, auto&) -> Value { return 0; }, .help = "sparkline of recent intervals (%wait or %CPU)",
     .desc = false, .tui = {.at = 13, .priority = 4, .left = true, .sortable = false}},

    // ---- added through the catalog alone (docs/metrics.md) ----
    {.key = "wakeups_per_s", .title = "wak/s", .width = 6, .unit = Unit::per_second, .fields = snapshot::kFieldWakeups,
     .value = [](auto& w, auto& t) -> Value { return per_s(t.delta.wakeups, w); },
     .help = "wakeups per second (sched_wakeup: made runnable after sleeping)",
     .tui = {.at = 14, .priority = 6, .shown = false, .format = format_rate}, .json = {.at = 11},
     .csv = {.at = 15, .decimals = 3},
     .prom = {.at = 4, .name = "platoon_thread_wakeups_total", .help = "Times the thread was woken.",
              .counter = [](const snapshot::ThreadSample& t) { return t.wakeups; }, .exited_at = 4,
              .exited_name = "platoon_exited_threads_wakeups_total",
              .exited_help = "Wakeups of the process's exited threads."}},

    // ---- requests the thread read (bpf/requests.bpf.h; only with --requests or these columns) ----
    {.key = "requests_per_s", .title = "req/s", .width = 6, .unit = Unit::per_second, .fields = snapshot::kFieldRequests,
     .value = [](auto& w, auto& t) -> Value { return requests_read(w, t, [](auto& r) { return r.rate; }); },
     .help = "requests this thread read per second (server requests and replies to its own)",
     .tui = {.at = 20, .priority = 5, .shown = false, .format = format_rate}},
    {.key = "socket_wait_p50_us", .title = "sw50", .width = 6, .unit = Unit::us, .fields = snapshot::kFieldRequests,
     .value = [](auto& w, auto& t) -> Value {
       return requests_read(w, t, [](auto& r) { return analysis::us(r.sum.wait.percentile_ns(50)); });
     },
     .help = "socket wait p50 in µs of the requests it read: bytes ready until it read them",
     .tui = {.at = 21, .priority = 5, .shown = false, .format = fixed0}},
    {.key = "socket_wait_p99_us", .title = "sw99", .width = 6, .unit = Unit::us, .fields = snapshot::kFieldRequests,
     .value = [](auto& w, auto& t) -> Value {
       return requests_read(w, t, [](auto& r) { return analysis::us(r.sum.wait.percentile_ns(99)); });
     },
     .help = "socket wait p99 in µs of the requests it read",
     .tui = {.at = 22, .priority = 5, .shown = false, .format = fixed0}},
    // The causes of wait follow, one metric each, made from their table below.
};

// ---- why it waited: one metric per cause of wait, the parts of %wait (analysis/wait_causes.hpp) ----
// The causes take consecutive positions in each output they claim, in the table's order.
constexpr int kWaitTuiAt = 15, kWaitJsonAt = 12, kWaitCsvAt = 16;

template <size_t I>
constexpr Metric wait_metric() {
  constexpr const analysis::WaitCause& c = analysis::kWaitCauses[I];
  constexpr int i = static_cast<int>(I);
  return {.key = c.key, .title = c.title, .width = 6, .unit = Unit::percent, .fields = c.field,
          .value = [](const analysis::Window&, const analysis::ThreadWindow& t) -> Value { return t.wait_split.*analysis::kWaitCauses[I].pct; },
          .process = [](const analysis::Window&, const analysis::ProcessWindow& p) -> Value { return p.wait_split.*analysis::kWaitCauses[I].pct; },
          .help = c.help, .tui = {.at = kWaitTuiAt + i, .priority = 6, .shown = false, .format = format_pct},
          .json = {.at = kWaitJsonAt + i}, .csv = {.at = kWaitCsvAt + i, .decimals = 3}};
}

template <size_t... I>
constexpr auto catalog_with_waits(std::index_sequence<I...>) {
  std::array<Metric, std::size(kListed) + sizeof...(I)> all{};
  std::copy(std::begin(kListed), std::end(kListed), all.begin());
  ((all[std::size(kListed) + I] = wait_metric<I>()), ...);
  return all;
}
constexpr auto kCatalog = catalog_with_waits(std::make_index_sequence<std::size(analysis::kWaitCauses)>());

// A thread's counters outlive it in its process's: every per-thread counter family has its
// exited threads' family, or the per-process totals would drop at each exit.
static_assert(std::all_of(kCatalog.begin(), kCatalog.end(), [](const Metric& m) {
  return (m.prom.at == 0 || m.prom.exited_at > 0) && (m.prom.exited_at == 0 || m.prom.counter != nullptr);
}));

template <class Pos>
std::vector<const Metric*> claiming(Pos pos) {
  std::vector<const Metric*> out;
  for (const Metric& m : kCatalog)
    if (pos(m) > 0) out.push_back(&m);
  std::stable_sort(out.begin(), out.end(), [&](const Metric* a, const Metric* b) { return pos(*a) < pos(*b); });
  return out;
}

bool known(uint32_t needs, const analysis::Window& w) { return needs == 0 || (w.fields & needs) != 0; }

}  // namespace

const char* to_string(Unit u) {
  switch (u) {
    case Unit::id: return "id";
    case Unit::text: return "text";
    case Unit::percent: return "%";
    case Unit::per_second: return "/s";
    case Unit::ratio: return "ratio";
    case Unit::count: return "count";
    case Unit::ns: return "ns";
    case Unit::us: return "us";
  }
  return "?";
}

std::span<const Metric> catalog() { return kCatalog; }

const Metric* find_metric(std::string_view key) {
  for (const Metric& m : kCatalog)
    if (key == m.key) return &m;
  return nullptr;
}

uint32_t outputs_of(const Metric& m) {
  return (m.tui.at ? kOutTui : 0u) | (m.report.at ? kOutReportText : 0u) | (m.json.at ? kOutReportJson : 0u) |
         (m.csv.at ? kOutCsv : 0u) | (m.prom.at || m.prom.exited_at ? kOutProm : 0u);
}

std::vector<const Metric*> tui_columns() { return claiming([](const Metric& m) { return m.tui.at; }); }
std::vector<const Metric*> report_metrics() { return claiming([](const Metric& m) { return m.report.at; }); }
std::vector<const Metric*> json_metrics() { return claiming([](const Metric& m) { return m.json.at; }); }
std::vector<const Metric*> csv_metrics() { return claiming([](const Metric& m) { return m.csv.at; }); }
std::vector<const Metric*> prom_metrics() { return claiming([](const Metric& m) { return m.prom.at; }); }
std::vector<const Metric*> prom_exited_metrics() {
  return claiming([](const Metric& m) { return m.prom.exited_at; });
}

Value value_of(const Metric& m, const analysis::Window& w, const analysis::ThreadWindow& t) {
  return known(m.fields, w) ? m.value(w, t) : std::nullopt;
}

Value process_value_of(const Metric& m, const analysis::Window& w, const analysis::ProcessWindow& p) {
  return m.process && known(m.fields, w) ? m.process(w, p) : std::nullopt;
}

uint32_t needed_fields(std::span<const Metric* const> shown) {
  uint32_t f = 0;
  for (const Metric* m : shown) f |= m->fields;
  return f;
}

uint32_t needed_fields(uint32_t outputs) {
  uint32_t f = 0;
  for (const Metric& m : kCatalog)
    if (outputs_of(m) & outputs) f |= m.fields;
  return f;
}

}  // namespace platoon::metrics
