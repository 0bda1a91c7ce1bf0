// Windows on synthetic snapshots with known answers: rates and shares, percentiles from the log2
// histogram, tid reuse, threads born or exited inside the window, recordings, pairs, totals.
#include "tui/analysis/window.hpp"

#include <gtest/gtest.h>

#include "tests/model/builders.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

using test::kSec;  // tests/model/builders.hpp
using test::snapshot_at;
using test::thread_sample;

const ThreadWindow* find(const Window& w, uint32_t tid) {
  for (const auto& t : w.threads) {
    if (t.tid == tid) return &t;
  }
  return nullptr;
}

TEST(Histogram, Log2PercentilesInterpolateInsideTheBucket) {
  std::array<uint64_t, kRunqSlots> h{};
  h[10] = 100;  // [1024, 2048) ns
  EXPECT_DOUBLE_EQ(log2_percentile(h, 50), 1536);
  EXPECT_DOUBLE_EQ(log2_percentile(h, 99), 1024 + 0.99 * 1024);
  EXPECT_DOUBLE_EQ(log2_upper_bound(h), 2048);
  h[20] = 100;  // [2^20, 2^21)
  EXPECT_DOUBLE_EQ(log2_percentile(h, 50), 2048);  // the end of the first bucket
  EXPECT_DOUBLE_EQ(log2_percentile(h, 90), 1048576 * 1.8);
  auto s = summarize_log2_ns(h, 1'500'000);  // the max clamps the percentiles
  EXPECT_EQ(s.samples, 200u);
  EXPECT_DOUBLE_EQ(s.p50_us, 2.048);
  EXPECT_DOUBLE_EQ(s.p90_us, 1500);
  EXPECT_DOUBLE_EQ(s.max_us, 1500);
  std::array<uint64_t, kRunqSlots> empty{};
  EXPECT_EQ(summarize_log2_ns(empty, 0).p99_us, 0);
}

TEST(Histogram, LinearSlots) {
  std::array<uint64_t, kBatchSlots> h{};
  h[1] = 10;
  h[4] = 30;
  h[64] = 10;
  EXPECT_EQ(nonzero_slots(h), (Slots{{1, 10}, {4, 30}, {64, 10}}));
  EXPECT_DOUBLE_EQ(linear_percentile(h, 50), 4);
  EXPECT_DOUBLE_EQ(linear_percentile(h, 100), 64);
  EXPECT_DOUBLE_EQ(linear_mean(h), (10 + 120 + 640) / 50.0);
}

TEST(Window, RatesAndShares) {
  ThreadSample a = thread_sample(10, 10, "carrier-0");
  ThreadSample b = a;
  a.run_ns = kSec / 2, b.run_ns = 3 * kSec / 2;           // +1 s over 2 s: 50%
  a.wait_ns = kSec / 5, b.wait_ns = 3 * kSec / 5;         // +0.4 s: 20%
  a.switches_voluntary = 10, b.switches_voluntary = 210;  // 100/s
  a.switches_involuntary = 0, b.switches_involuntary = 50;
  a.migrations = 7, b.migrations = 17;
  a.cpu_switch_ins = {5, 5}, b.cpu_switch_ins = {35, 15, 20};  // +30, +10, +20
  Window w = make_window(snapshot_at(1 * kSec, {a}), snapshot_at(3 * kSec, {b}));
  ASSERT_EQ(w.threads.size(), 1u);
  const ThreadWindow& t = w.threads[0];
  EXPECT_DOUBLE_EQ(w.wall_s, 2);
  EXPECT_FALSE(t.born);
  EXPECT_FALSE(t.exited);
  EXPECT_DOUBLE_EQ(t.cpu_pct, 50);
  EXPECT_DOUBLE_EQ(t.wait_pct, 20);
  EXPECT_DOUBLE_EQ(t.cswch_per_s, 100);
  EXPECT_DOUBLE_EQ(t.nvcswch_per_s, 25);
  EXPECT_EQ(t.migrations, 10u);
  EXPECT_DOUBLE_EQ(t.migrations_per_s, 5);
  ASSERT_EQ(t.cpu_distribution.size(), 3u);
  EXPECT_DOUBLE_EQ(t.cpu_distribution[0].second, 50);
  EXPECT_DOUBLE_EQ(t.cpu_distribution[1].second, 100.0 / 6);
  EXPECT_DOUBLE_EQ(t.cpu_distribution[2].second, 100.0 / 3);
  ASSERT_TRUE(t.runq);
  EXPECT_EQ(t.runq->samples, 0u);
  EXPECT_FALSE(t.io);  // no calls in the window
  EXPECT_FALSE(t.drain);
}

TEST(Window, ReusedTidIsANewThread) {
  ThreadSample old = thread_sample(5, 5, "old", 100);
  old.run_ns = 10 * kSec;
  old.switches_voluntary = 1000;
  ThreadSample fresh = thread_sample(5, 5, "fresh", 200);
  fresh.run_ns = kSec / 10;
  fresh.switches_voluntary = 3;
  Window w = make_window(snapshot_at(0, {old}), snapshot_at(kSec, {fresh}));
  ASSERT_EQ(w.threads.size(), 1u);
  EXPECT_TRUE(w.threads[0].born);
  EXPECT_EQ(w.threads[0].comm, "fresh");
  EXPECT_EQ(w.threads[0].delta.run_ns, kSec / 10);  // not clamped to 0 against the old thread
  EXPECT_EQ(w.threads[0].delta.switches_voluntary, 3u);
}

TEST(Window, BornAndExitedInsideUsesTheWindowsWallTime) {
  ThreadSample t = thread_sample(7, 1, "short", 5 * kSec);
  t.run_ns = kSec / 4;
  t.exited = true;
  ThreadSample gone = thread_sample(8, 1, "gone");
  gone.exited = true;
  Window w = make_window(snapshot_at(4 * kSec, {gone}), snapshot_at(6 * kSec, {t, gone}));
  ASSERT_EQ(w.threads.size(), 1u);  // "gone" had exited before the window
  const ThreadWindow& tw = w.threads[0];
  EXPECT_TRUE(tw.born);
  EXPECT_TRUE(tw.exited);
  EXPECT_DOUBLE_EQ(tw.cpu_pct, 12.5);  // 0.25 s over the window's 2 s, not over its 1 s of life
}

TEST(Window, RecordingKeepsThreadsThatVanishedInBetween) {
  ThreadSample a0 = thread_sample(1, 1, "main"), a1 = a0, a2 = a0;
  a1.run_ns = kSec, a2.run_ns = 2 * kSec;
  ThreadSample w1 = thread_sample(2, 1, "worker", 2 * kSec);  // born after the first, gone before the last
  w1.run_ns = kSec / 2;
  std::vector<Snapshot> rec = {snapshot_at(0, {a0}), snapshot_at(kSec * 3, {a1, w1}), snapshot_at(kSec * 4, {a2})};
  Window w = make_window(std::span<const Snapshot>(rec));
  EXPECT_DOUBLE_EQ(w.wall_s, 4);
  ASSERT_EQ(w.threads.size(), 2u);
  EXPECT_EQ(w.threads[0].delta.run_ns, 2 * kSec);
  const ThreadWindow* worker = find(w, 2);
  ASSERT_TRUE(worker);
  EXPECT_TRUE(worker->born);
  EXPECT_TRUE(worker->exited);
  EXPECT_EQ(worker->delta.run_ns, kSec / 2);
  EXPECT_TRUE(make_window(std::span<const Snapshot>()).threads.empty());
}

TEST(Window, StreamedRecordingEqualsTheWholeRecording) {
  // Threads that come and go at different points, a vanished thread with pairs, an exited one.
  std::vector<Snapshot> rec;
  for (uint64_t i = 0; i < 8; ++i) {
    std::vector<ThreadSample> ts;
    ThreadSample main = thread_sample(1, 1, "main");
    main.run_ns = i * kSec / 2;
    main.wait_ns = i * 1000;
    ts.push_back(main);
    if (i >= 2 && i <= 4) {  // born at 2, vanishes after 4 without an exit sample
      ThreadSample w = thread_sample(2, 1, "worker", 2 * kSec);
      w.run_ns = (i - 1) * 7000;
      w.switches_voluntary = i;
      ts.push_back(w);
    }
    if (i >= 1 && i <= 6) {  // exits at 6 (reported once with exited)
      ThreadSample e = thread_sample(3, 1, "short", kSec);
      e.run_ns = i * 11;
      e.exited = i == 6;
      ts.push_back(e);
    }
    Snapshot s = snapshot_at(i * kSec, ts);
    if (i >= 2 && i <= 4) s.pairs.push_back({2, PairKind::woken_by, 1, 1, "main", i * 3, 0});
    rec.push_back(std::move(s));
  }
  const Window whole = make_window(std::span<const Snapshot>(rec));
  RecordingWindow streamed;
  for (const auto& s : rec) streamed.add(s);
  const Window w = streamed.window();
  EXPECT_EQ(streamed.snapshots(), rec.size());
  EXPECT_DOUBLE_EQ(w.wall_s, whole.wall_s);
  ASSERT_EQ(w.threads.size(), whole.threads.size());
  for (size_t i = 0; i < w.threads.size(); ++i) {
    const ThreadWindow &a = w.threads[i], &b = whole.threads[i];
    EXPECT_EQ(a.tid, b.tid);
    EXPECT_EQ(a.exited, b.exited) << a.tid;
    EXPECT_EQ(a.born, b.born) << a.tid;
    EXPECT_EQ(a.delta.run_ns, b.delta.run_ns) << a.tid;
    EXPECT_EQ(a.delta.switches_voluntary, b.delta.switches_voluntary) << a.tid;
    EXPECT_EQ(a.woken_by.size(), b.woken_by.size()) << a.tid;
    if (!a.woken_by.empty()) {
      EXPECT_EQ(a.woken_by[0].count, b.woken_by[0].count);
    }
  }
  const ThreadWindow* worker = find(w, 2);
  ASSERT_TRUE(worker);
  EXPECT_TRUE(worker->exited);
  EXPECT_EQ(worker->delta.run_ns, 3u * 7000u);
  ASSERT_EQ(worker->woken_by.size(), 1u);
  EXPECT_EQ(worker->woken_by[0].count, 12u);
}

TEST(Window, RunqMaxBelongsToTheWindowOnlyWhenItGrew) {
  ThreadSample a = thread_sample(1, 1, "t"), b = a;
  a.runq_max_ns = b.runq_max_ns = 5000;
  b.runq_hist[10] = 4;  // four samples in [1024, 2048) inside the window
  Window w = make_window(snapshot_at(0, {a}), snapshot_at(kSec, {b}));
  ASSERT_TRUE(w.threads[0].runq);
  EXPECT_DOUBLE_EQ(w.threads[0].runq->max_us, 2.048);  // bounded by the slot, not the old 5 µs
  b.runq_max_ns = 1900;
  a.runq_max_ns = 1000;
  w = make_window(snapshot_at(0, {a}), snapshot_at(kSec, {b}));
  EXPECT_DOUBLE_EQ(w.threads[0].runq->max_us, 1.9);
  EXPECT_DOUBLE_EQ(w.threads[0].runq->p99_us, 1.9);  // clamped to the max
}

TEST(Window, IoAndDrain) {
  ThreadSample a = thread_sample(1, 1, "carrier-0"), b = a;
  b.io_cycles = 100, b.io_events = 400, b.io_blocked_ns = kSec / 2;
  b.io_events_hist[2] = 50, b.io_events_hist[6] = 50;
  b.drains = 40, b.drain_depth_sum = 320, b.drain_fibers_run = 400, b.steals = 3;
  b.drain_depth_hist[8] = 40;
  Window w = make_window(snapshot_at(0, {a}), snapshot_at(kSec, {b}));
  const ThreadWindow& t = w.threads[0];
  ASSERT_TRUE(t.io);
  EXPECT_DOUBLE_EQ(t.io->events_per_cycle, 4);
  EXPECT_DOUBLE_EQ(t.io->cycles_per_s, 100);
  EXPECT_DOUBLE_EQ(t.io->blocked_pct, 50);
  EXPECT_EQ(t.io->events_hist, (Slots{{2, 50}, {6, 50}}));
  ASSERT_TRUE(t.drain);
  EXPECT_DOUBLE_EQ(t.drain->queue_depth_avg, 8);
  EXPECT_DOUBLE_EQ(t.drain->fibers_per_drain, 10);
  EXPECT_EQ(t.drain->steals, 3u);
  EXPECT_EQ(w.processes[0].io_cycles, 100u);
  EXPECT_DOUBLE_EQ(w.processes[0].queue_depth_avg, 8);
}

TEST(Window, FieldMaskHidesWhatTheSourceLacks) {
  ThreadSample a = thread_sample(1, 1, "t"), b = a;
  b.io_cycles = 10;
  b.cpu_switch_ins = {1};
  Window w = make_window(snapshot_at(0, {a}, kFieldsProcfs), snapshot_at(kSec, {b}, kFieldsProcfs));
  EXPECT_EQ(w.source, Source::procfs);
  EXPECT_TRUE(w.has(kFieldRunWait));
  EXPECT_FALSE(w.has(kFieldRunqHist));
  EXPECT_FALSE(w.threads[0].runq);
  EXPECT_FALSE(w.threads[0].io);
  EXPECT_TRUE(w.threads[0].cpu_distribution.empty());
}

TEST(Window, TopPeersFromPairDeltas) {
  Snapshot from = snapshot_at(0, {thread_sample(1, 1, "carrier-0")});
  Snapshot to = snapshot_at(kSec, {thread_sample(1, 1, "carrier-0")});
  for (uint32_t other = 100; other < 107; ++other) {
    PairSample p{1, PairKind::preempted_by, other, 50, "other-" + std::to_string(other), 10, 1000};
    from.pairs.push_back(p);
    p.count += other - 100;       // +0 .. +6
    p.ns += (other - 100) * 500;  // ns grows with the tid
    to.pairs.push_back(p);
  }
  to.pairs.push_back({1, PairKind::woken_by, 200, 200, "poller", 42, 0});
  to.lost_pairs = 3;
  from.lost_pairs = 1;
  Window w = make_window(from, to);
  const ThreadWindow& t = w.threads[0];
  ASSERT_EQ(t.preempted_by.size(), kTopPeers);
  EXPECT_EQ(t.preempted_by[0].tid, 106u);
  EXPECT_EQ(t.preempted_by[0].count, 6u);
  EXPECT_EQ(t.preempted_by[0].ns, 3000u);
  EXPECT_EQ(t.preempted_by[4].tid, 102u);
  ASSERT_EQ(t.woken_by.size(), 1u);
  EXPECT_EQ(t.woken_by[0].comm, "poller");
  EXPECT_EQ(t.woken_by[0].count, 42u);
  EXPECT_EQ(w.losses.lost_pairs, 2u);

  // A reused tid does not subtract the old thread's pairs.
  to.threads[0].first_seen_ns = 99;
  Window reused = make_window(from, to);
  EXPECT_EQ(reused.threads[0].preempted_by[0].count, 16u);
}

TEST(Window, ProcessTotalsAndLosses) {
  ThreadSample m = thread_sample(10, 10, "server"), c = thread_sample(11, 10, "carrier-0"), o = thread_sample(20, 20, "other");
  Snapshot from = snapshot_at(0, {m, c, o});
  m.run_ns = kSec / 10, c.run_ns = kSec / 2, o.run_ns = kSec;
  c.switches_involuntary = 40;
  Snapshot to = snapshot_at(kSec, {m, c, o});
  from.lost_events_per_cpu = {1, 2};
  to.lost_events_per_cpu = {5, 2, 7};
  to.untracked_threads = 4;
  Window w = make_window(from, to);
  ASSERT_EQ(w.processes.size(), 2u);
  EXPECT_EQ(w.processes[0].pid, 10u);
  EXPECT_EQ(w.processes[0].comm, "server");
  EXPECT_EQ(w.processes[0].threads, 2u);
  EXPECT_DOUBLE_EQ(w.processes[0].cpu_pct, 60);
  EXPECT_DOUBLE_EQ(w.processes[0].nvcswch_per_s, 40);
  EXPECT_DOUBLE_EQ(w.processes[1].cpu_pct, 100);
  EXPECT_EQ(w.losses.lost_events, 11u);
  EXPECT_EQ(w.losses.untracked_threads, 4u);
  EXPECT_EQ(to.lost_events(), 14u);
}

TEST(Window, ZeroWallAndShrinkingCountersStaySane) {
  ThreadSample a = thread_sample(1, 1, "t"), b = a;
  a.run_ns = 5 * kSec;  // a producer reset: the end is smaller
  Window w = make_window(snapshot_at(kSec, {a}), snapshot_at(kSec, {b}));
  EXPECT_EQ(w.threads[0].delta.run_ns, 0u);
  EXPECT_EQ(w.threads[0].cpu_pct, 0);
}

TEST(Snapshot, MissingFieldNames) {
  EXPECT_TRUE(missing_fields(kFieldsBpf).empty());
  auto m = missing_fields(kFieldsProcfs);
  EXPECT_EQ(m.size(), 8u);
  EXPECT_EQ(m.back(), "irq_wait");
  // A kernel without IRQ time accounting: everything but the irq part of wait.
  EXPECT_EQ(missing_fields(kFieldsBpf & ~kFieldWaitIrq), std::vector<std::string>{"irq_wait"});
  EXPECT_EQ(m[0], "cpu_distribution");
  EXPECT_STREQ(to_string(Source::procfs), "procfs");
}

}  // namespace
}  // namespace platoon::tests
