// The Prometheus exposition on synthetic snapshots: label escaping, cumulative histogram buckets,
// the series bound, exited threads folded into per-process counters exactly once, tid reuse,
// dead processes dropped, churn that leaves the state bounded, and promtool's verdict.
#include "tui/outputs/prom_metrics.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <utility>

#include "tests/model/builders.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

using test::kSec;  // tests/model/builders.hpp
using test::snapshot_at;

ThreadSample sample(uint32_t tid, uint32_t pid, std::string comm, uint64_t run_ns = 0, uint64_t first_seen = 1) {
  ThreadSample t = test::thread_sample(tid, pid, std::move(comm), first_seen);
  t.run_ns = run_ns;
  return t;
}

std::string render(PromExposition& e) {
  PromScrapeInfo info;
  info.attach_mode = "tp_btf";
  return e.render(info);
}

// The value of one series, given as it is written ("name{labels}"); nullopt when absent.
std::optional<double> value(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return std::nullopt;
}

// Each bucket `le` (as written) of the histogram whose bucket series start with `prefix`
// ("name{labels,le=\"") holds the cumulative count given.
void expect_buckets(const std::string& text, const std::string& prefix,
                    std::initializer_list<std::pair<const char*, double>> counts) {
  for (const auto& [le, n] : counts) EXPECT_EQ(value(text, prefix + le + "\"}"), n) << prefix << le;
}

size_t lines_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) n += line.rfind(prefix, 0) == 0;
  return n;
}

std::string labels(uint32_t pid, const char* process, const char* thread, uint32_t tid) {
  return "pid=\"" + std::to_string(pid) + "\",process=\"" + process + "\",thread=\"" + thread + "\",tid=\"" +
         std::to_string(tid) + "\"";
}

TEST(PromEscape, LabelValuesAndHelp) {
  EXPECT_EQ(prom_escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(prom_escape_label("carrier-0"), "carrier-0");
  EXPECT_EQ(prom_escape_label("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(prom_escape_label("cut\xe2\x82"), "cut??");  // invalid UTF-8 would fail the scrape
  EXPECT_EQ(prom_escape_help("x\\y\nz \"q\""), "x\\\\y\\nz \"q\"");  // quotes stay in HELP
}

TEST(PromExposition, EscapesThreadAndProcessNames) {
  PromExposition e(10);
  e.observe(snapshot_at(kSec, {sample(7, 7, "we\"ird\\na\nme", 5 * kSec)}));
  const std::string text = render(e);
  EXPECT_EQ(value(text, "platoon_thread_run_seconds_total{pid=\"7\",process=\"we\\\"ird\\\\na\\nme\","
                        "thread=\"we\\\"ird\\\\na\\nme\",tid=\"7\"}"),
            5.0);
  // No raw newline inside a sample line: every line is a comment or "name{...} value".
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_NE(line.find(' '), std::string::npos) << line;
    EXPECT_EQ(line.rfind("platoon_", 0), 0u) << line;
  }
}

TEST(PromExposition, ProcessNameFromCallerThenLeader) {
  PromExposition e(10);
  e.observe(snapshot_at(kSec, {sample(10, 10, "leader"), sample(11, 10, "worker")}));
  EXPECT_TRUE(value(render(e), "platoon_thread_run_seconds_total{" + labels(10, "leader", "worker", 11) + "}"));
  e.observe(snapshot_at(2 * kSec, {sample(11, 10, "worker")}), {{10, "from-proc"}});
  EXPECT_TRUE(value(render(e), "platoon_thread_run_seconds_total{" + labels(10, "from-proc", "worker", 11) + "}"));
  // The leader gone and nothing from the caller: the name seen before stays.
  e.observe(snapshot_at(3 * kSec, {sample(11, 10, "worker")}));
  EXPECT_TRUE(value(render(e), "platoon_thread_run_seconds_total{" + labels(10, "from-proc", "worker", 11) + "}"));
}

TEST(PromExposition, RunqueueHistogramIsCumulativeInSeconds) {
  ThreadSample t = sample(5, 5, "c", kSec);
  t.runq_hist[3] = 4;    // [8, 16) ns: below the first edge (2^10 ns)
  t.runq_hist[10] = 2;   // [1024, 2048) ns: in le=2^12 ns
  t.runq_hist[20] = 1;   // ~1 ms: in le=2^22 ns
  t.runq_hist[39] = 1;   // beyond the last edge: only +Inf
  t.wait_ns = 3 * kSec / 2;
  PromExposition e(10);
  e.observe(snapshot_at(kSec, {t}));
  const std::string text = render(e);
  const std::string l = labels(5, "c", "c", 5);
  const std::string b = "platoon_thread_runqueue_latency_seconds_bucket{" + l + ",le=\"";
  expect_buckets(text, b, {{"1.024e-06", 4}, {"4.096e-06", 6}, {"0.001048576", 6}, {"0.004194304", 7},
                           {"1.073741824", 7}, {"+Inf", 8}});
  EXPECT_EQ(value(text, "platoon_thread_runqueue_latency_seconds_count{" + l + "}"), 8);
  EXPECT_EQ(value(text, "platoon_thread_runqueue_latency_seconds_sum{" + l + "}"), 1.5);
  // Buckets never decrease, in the order written.
  std::istringstream in(text);
  std::string line;
  double last = -1;
  while (std::getline(in, line)) {
    if (line.rfind(b, 0) != 0) continue;
    const double v = std::stod(line.substr(line.rfind(' ') + 1));
    EXPECT_GE(v, last) << line;
    last = v;
  }
}

TEST(PromExposition, BatchHistogramsCountIntegersExactly) {
  ThreadSample t = sample(5, 5, "carrier-0", kSec);
  t.io_events_hist[0] = 5;
  t.io_events_hist[1] = 3;
  t.io_events_hist[3] = 2;
  t.io_events_hist[64] = 7;   // 64 or more
  t.io_cycles = 17;
  t.io_events = 3 + 6 + 7 * 70;
  t.drain_depth_hist[2] = 4;
  t.drains = 4;
  t.drain_depth_sum = 8;
  t.drain_fibers_run = 9;
  t.steals = 1;
  PromExposition e(10);
  e.observe(snapshot_at(kSec, {t}));
  const std::string text = render(e);
  const std::string l = labels(5, "carrier-0", "carrier-0", 5);
  const std::string b = "platoon_thread_epoll_events_per_cycle_bucket{" + l + ",le=\"";
  expect_buckets(text, b, {{"0", 5}, {"1", 8}, {"2", 8}, {"4", 10}, {"63", 10}, {"+Inf", 17}});
  EXPECT_EQ(value(text, "platoon_thread_epoll_events_per_cycle_count{" + l + "}"), 17);
  EXPECT_EQ(value(text, "platoon_thread_epoll_events_per_cycle_sum{" + l + "}"), 499);
  const std::string d = "platoon_thread_drain_queue_depth_bucket{" + l + ",le=\"";
  expect_buckets(text, d, {{"1", 0}, {"2", 4}});
  EXPECT_EQ(value(text, "platoon_thread_drain_queue_depth_sum{" + l + "}"), 8);
  EXPECT_EQ(value(text, "platoon_thread_drained_fibers_total{" + l + "}"), 9);
  EXPECT_EQ(value(text, "platoon_thread_steals_total{" + l + "}"), 1);
}

TEST(PromExposition, ThreadsWithoutIoOrDrainsHaveNoSuchSeries) {
  PromExposition e(10);
  e.observe(snapshot_at(kSec, {sample(5, 5, "idle", kSec)}));
  const std::string text = render(e);
  EXPECT_EQ(text.find("platoon_thread_epoll_events_per_cycle"), std::string::npos);
  EXPECT_EQ(text.find("platoon_thread_drain_queue_depth"), std::string::npos);
}

TEST(PromExposition, ProcfsHasNoHistogramsAndSaysWhatItLacks) {
  PromExposition e(10);
  e.observe(snapshot_at(kSec, {sample(5, 5, "p", kSec)}, kFieldsProcfs));
  PromScrapeInfo info;
  info.attach_mode = "procfs";
  const std::string text = e.render(info);
  EXPECT_EQ(text.find("histogram"), std::string::npos);
  EXPECT_EQ(text.find("platoon_thread_wakeups_total"), std::string::npos);
  EXPECT_NE(text.find("platoon_exporter_source_info{source=\"procfs\",attach_mode=\"procfs\",lacks=\""),
            std::string::npos);
  EXPECT_TRUE(value(text, "platoon_thread_run_seconds_total{" + labels(5, "p", "p", 5) + "}"));
}

TEST(PromExposition, BoundKeepsTheBusiestAndCountsTheRest) {
  std::vector<ThreadSample> ts;
  for (uint32_t i = 0; i < 10; ++i) ts.push_back(sample(100 + i, 100, "t", (i + 1) * kSec));
  PromExposition e(3);
  e.observe(snapshot_at(kSec, ts));
  const std::string text = render(e);
  EXPECT_EQ(lines_starting(text, "platoon_thread_run_seconds_total{"), 3u);
  for (uint32_t tid : {107u, 108u, 109u})
    EXPECT_TRUE(value(text, "platoon_thread_run_seconds_total{" + labels(100, "t", "t", tid) + "}")) << tid;
  EXPECT_FALSE(value(text, "platoon_thread_run_seconds_total{" + labels(100, "t", "t", 106) + "}"));
  EXPECT_EQ(value(text, "platoon_exporter_threads_seen"), 10);
  EXPECT_EQ(value(text, "platoon_exporter_threads_exported"), 3);
  EXPECT_EQ(value(text, "platoon_exporter_threads_over_limit"), 7);
  EXPECT_EQ(value(text, "platoon_process_threads{pid=\"100\",process=\"t\"}"), 10);
  const double per_thread = *value(text, "platoon_exporter_thread_series") / 3;
  EXPECT_EQ(per_thread, 20);  // run, wait, 2 switches, migrations, wakeups, 14 run-queue series
  EXPECT_EQ(value(text, "platoon_exporter_series_over_limit"), 7 * per_thread);
  // Every per-thread sample line is counted by the self-metric.
  EXPECT_EQ(lines_starting(text, "platoon_thread_"), 3 * per_thread);
}

TEST(PromExposition, ExitedThreadIsFoldedOnceAndLeaves) {
  PromExposition e(10);
  ThreadSample a = sample(11, 10, "a", 2 * kSec), b = sample(12, 10, "b", 3 * kSec);
  b.switches_voluntary = 5;
  e.observe(snapshot_at(kSec, {sample(10, 10, "main"), a, b}));
  std::string text = render(e);
  EXPECT_EQ(value(text, "platoon_exited_threads_total{pid=\"10\",process=\"main\"}"), 0);
  EXPECT_EQ(value(text, "platoon_exited_threads_run_seconds_total{pid=\"10\",process=\"main\"}"), 0);

  // b exits: reported once with its final values, then gone from the output.
  b.exited = true;
  b.run_ns = 4 * kSec;
  b.switches_voluntary = 6;
  const Snapshot second = snapshot_at(2 * kSec, {sample(10, 10, "main"), a, b});
  e.observe(second);
  text = render(e);
  EXPECT_FALSE(value(text, "platoon_thread_run_seconds_total{" + labels(10, "main", "b", 12) + "}"));
  EXPECT_EQ(value(text, "platoon_exited_threads_total{pid=\"10\",process=\"main\"}"), 1);
  EXPECT_EQ(value(text, "platoon_exited_threads_run_seconds_total{pid=\"10\",process=\"main\"}"), 4);
  EXPECT_EQ(value(text, "platoon_exited_threads_switches_total{pid=\"10\",process=\"main\",kind=\"voluntary\"}"), 6);
  // The same exit report observed again (a snapshot taken twice) is not counted twice.
  e.observe(second);
  EXPECT_EQ(value(render(e), "platoon_exited_threads_run_seconds_total{pid=\"10\",process=\"main\"}"), 4);

  // a vanishes without an exit report: what was last known of it is folded.
  e.observe(snapshot_at(3 * kSec, {sample(10, 10, "main")}));
  text = render(e);
  EXPECT_EQ(value(text, "platoon_exited_threads_total{pid=\"10\",process=\"main\"}"), 2);
  EXPECT_EQ(value(text, "platoon_exited_threads_run_seconds_total{pid=\"10\",process=\"main\"}"), 6);
  EXPECT_EQ(e.threads_tracked(), 1u);
}

TEST(PromExposition, ReusedTidIsANewThread) {
  PromExposition e(10);
  e.observe(snapshot_at(kSec, {sample(10, 10, "main"), sample(11, 10, "old", 5 * kSec, 100)}));
  // tid 11 now belongs to a new thread (another first_seen) with smaller counters: the old one
  // is folded, so the process total (live + exited) does not go down.
  e.observe(snapshot_at(2 * kSec, {sample(10, 10, "main"), sample(11, 10, "new", kSec, 200)}));
  const std::string text = render(e);
  EXPECT_EQ(value(text, "platoon_thread_run_seconds_total{" + labels(10, "main", "new", 11) + "}"), 1);
  EXPECT_EQ(value(text, "platoon_exited_threads_run_seconds_total{pid=\"10\",process=\"main\"}"), 5);
}

TEST(PromExposition, DeadProcessShownOnceThenDropped) {
  PromExposition e(10);
  ThreadSample t = sample(20, 20, "short", kSec);
  e.observe(snapshot_at(kSec, {t}));
  t.exited = true;
  e.observe(snapshot_at(2 * kSec, {t}));
  std::string text = render(e);  // shows the final exited counters
  EXPECT_EQ(value(text, "platoon_exited_threads_run_seconds_total{pid=\"20\",process=\"short\"}"), 1);
  EXPECT_EQ(value(text, "platoon_exporter_processes"), 0);
  e.observe(snapshot_at(3 * kSec, {}));
  text = render(e);
  EXPECT_FALSE(value(text, "platoon_exited_threads_total{pid=\"20\",process=\"short\"}"));
  EXPECT_EQ(e.processes_tracked(), 0u);
}

TEST(PromExposition, DeadProcessUnscrapedIsDroppedAfterAWhile) {
  PromExposition e(10);
  ThreadSample t = sample(20, 20, "short", kSec);
  t.exited = true;
  e.observe(snapshot_at(kSec, {t}));
  e.observe(snapshot_at(2 * kSec, {}));
  EXPECT_EQ(e.processes_tracked(), 1u);  // not shown yet: kept for the next scrape
  e.observe(snapshot_at(400 * kSec, {}));
  EXPECT_EQ(e.processes_tracked(), 0u);
}

// Thousands of short-lived threads, and a stream of short-lived processes: the state and the
// exposition stay within the bound while the exited counters keep every thread's time.
TEST(PromExposition, ChurnStaysBounded) {
  PromExposition e(4);
  uint32_t next_tid = 1000;
  size_t most_series = 0;
  std::vector<ThreadSample> alive;
  for (int round = 0; round < 500; ++round) {
    std::vector<ThreadSample> threads{sample(1, 1, "server", (round + 1) * kSec)};
    for (ThreadSample& t : alive) t.exited = true;  // the last round's threads exit
    threads.insert(threads.end(), alive.begin(), alive.end());
    alive.clear();
    for (int i = 0; i < 20; ++i) alive.push_back(sample(next_tid++, 1, "worker", 1'000'000));
    threads.insert(threads.end(), alive.begin(), alive.end());
    // and one short-lived process per round
    const uint32_t pid = 500'000 + static_cast<uint32_t>(round);
    ThreadSample p = sample(pid, pid, "job", 1'000'000);
    p.exited = round % 2 == 1;
    threads.push_back(p);
    e.observe(snapshot_at(static_cast<uint64_t>(round + 1) * kSec, std::move(threads)));
    const std::string text = render(e);
    most_series = std::max(most_series, static_cast<size_t>(*value(text, "platoon_exporter_thread_series")));
    EXPECT_LE(lines_starting(text, "platoon_thread_run_seconds_total{"), 4u);
    EXPECT_LE(e.processes_tracked(), 3u);
    EXPECT_LE(e.threads_tracked(), 22u);
  }
  EXPECT_LE(most_series, 4u * 20u);
  const std::string text = render(e);
  EXPECT_EQ(value(text, "platoon_exited_threads_total{pid=\"1\",process=\"server\"}"), 499 * 20);
  EXPECT_DOUBLE_EQ(*value(text, "platoon_exited_threads_run_seconds_total{pid=\"1\",process=\"server\"}"),
                   499 * 20 * 0.001);
}

// promtool (Debian's prometheus package) must find nothing to say, lint included.
TEST(PromExposition, PromtoolChecksCleanly) {
  if (access("/usr/bin/promtool", X_OK) != 0) GTEST_SKIP() << "promtool not installed";
  ThreadSample t = sample(5, 5, "carrier-0", kSec);
  t.runq_hist[12] = 3;
  t.io_events_hist[2] = 4;
  t.io_cycles = 4;
  t.io_events = 8;
  t.drain_depth_hist[1] = 2;
  t.drains = 2;
  ThreadSample gone = sample(6, 5, "q\"uote", kSec);
  gone.exited = true;
  PromExposition e(10);
  e.observe(snapshot_at(kSec, {t, sample(7, 5, "back\\slash\nnl"), gone}));
  char path[] = "/tmp/prom_metrics_test.XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << render(e);
  const std::string out_path = std::string(path) + ".out";
  const std::string cmd = std::string("/usr/bin/promtool check metrics < ") + path + " > " + out_path + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream out(out_path);
  const std::string said((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  unlink(path);
  unlink(out_path.c_str());
  EXPECT_EQ(rc, 0) << said;
  EXPECT_EQ(said, "");
}

}  // namespace
}  // namespace platoon::tests
