// Losses that are counted, produced for real: a small pair map under churn with
// aging (defect 7), a small thread map under thread churn, a ring buffer too small for a switch
// storm, and switch-ins on CPUs beyond the per-CPU slots.
#include <sys/eventfd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "bpf/platoon.h"
#include "tests/bpf/fixture.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::testing {
namespace {

using namespace platoon::testing;

class LossesTest : public BpfTest {};

uint64_t woken_by_sum(const snapshot::Snapshot& s, pid_t tid) {
  uint64_t n = 0;
  for (const auto& p : s.pairs)
    if (p.tid == static_cast<uint32_t>(tid) && p.kind == snapshot::PairKind::woken_by) n += p.count;
  return n;
}

// One long-lived thread T, woken through an eventfd by a stream of short-lived threads (one
// wake each, so one new WOKEN_BY pair each). 128 pair slots, ~300 distinct wakers over 8 s:
// without aging the map is full after ~3 s and every later pair is lost. The same as
// tests/bpf/losses_test.sh's churn through `record` (400 wakers, 200 slots, 2 s), scaled down.
TEST_F(LossesTest, IdlePairsAgeOutAndKeepTheirCounts) {
  CollectorOptions o;
  o.pairs_max = 128;
  o.pair_idle_s = 0.5;
  auto c = open(o);
  ASSERT_TRUE(c);
  const int efd = eventfd(0, 0);
  std::atomic<bool> stop{false};
  std::atomic<pid_t> t_tid{0};
  std::thread t([&] {
    t_tid = this_tid();
    uint64_t v;
    while (!stop) {
      if (read(efd, &v, sizeof v) != sizeof v) break;
    }
  });
  while (!t_tid) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  size_t wakers = 0, max_in_kernel = 0;
  uint64_t last_sum = 0;
  bool monotonic = true;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  auto next_tick = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < end) {
    std::thread([&] {
      const uint64_t one = 1;
      if (write(efd, &one, sizeof one) != sizeof one) std::abort();
    }).join();
    ++wakers;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    if (std::chrono::steady_clock::now() >= next_tick) {  // what record/top/exporter do per interval
      c->refresh();
      const snapshot::Snapshot s = c->snapshot();
      const uint64_t sum = woken_by_sum(s, t_tid);
      monotonic &= sum >= last_sum;
      last_sum = sum;
      max_in_kernel = std::max(max_in_kernel, c->pairs_in_kernel());
      next_tick += std::chrono::milliseconds(250);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // T is blocked in read again
  const snapshot::Snapshot s = c->snapshot();
  const long long vol = read_voluntary(t_tid);
  const uint64_t sum = woken_by_sum(s, t_tid);
  std::printf("  %zu wakers; T: woken_by sum %llu, voluntary switches %lld (proc); lost pairs %llu; "
              "kernel map peak %zu of 128, %zu pairs reported\n",
              wakers, (unsigned long long)sum, vol, (unsigned long long)s.lost_pairs, max_in_kernel, s.pairs.size());
  EXPECT_EQ(s.lost_pairs, 0u);
  EXPECT_LT(max_in_kernel, 128u);
  EXPECT_GT(wakers, 200u);
  EXPECT_TRUE(monotonic) << "aged pairs keep counting in the snapshots";
  // Every sleep of T but the one in progress was ended by one waker's write: one WOKEN_BY each.
  EXPECT_EQ(static_cast<long long>(sum), vol - 1);
  stop = true;
  const uint64_t one = 1;
  if (write(efd, &one, sizeof one) != sizeof one) std::abort();
  t.join();
  close(efd);
}

// A thread map of 8 entries and 5 rounds of 10 short-lived threads: each thread that never got
// an entry is counted once, however many events it had.
TEST_F(LossesTest, FullThreadMapCountsThreadsNotEvents) {
  auto c = open(CollectorOptions{.threads_max = 8});
  ASSERT_TRUE(c);
  // ~40 events each
  const auto [spawned, never, s] = snapshot_thread_rounds(*c, 5, 10, 20, 500);
  std::printf("  %zu threads spawned, %zu never tracked, untracked_threads %llu\n", spawned.size(), never,
              (unsigned long long)s.untracked_threads);
  EXPECT_GT(never, 10u) << "the map was full most of the time";
  // Threads of this process that existed before are untracked too, if they found the map full.
  EXPECT_GE(s.untracked_threads, never);
  EXPECT_LE(s.untracked_threads, never + 3);
}

// Two threads ping-pong 0.5 s through eventfds on two CPUs with a 16 KiB ring buffer that
// nobody drains meanwhile: most records are lost and counted per CPU; the records that made it
// are well-formed and in time order per thread, and the aggregates (not fed by the ring) still
// equal /proc.
TEST_F(LossesTest, RingBufferOverflowIsCountedAndAggregatesStayExact) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs 2 CPUs";
  CollectorOptions o;
  o.record_events = true;
  o.ringbuf_bytes = 16 << 10;
  auto c = open(o);
  ASSERT_TRUE(c);
  const int a2b = eventfd(0, 0), b2a = eventfd(0, 0);
  const uint64_t until = platoon::tests::boottime_ns() + 500'000'000ull;
  auto body = [&](int cpu, int in, int out, bool first) {
    return [=] {
      pin_to_cpu(cpu);
      uint64_t v = 1;
      if (first && write(out, &v, sizeof v) != sizeof v) std::abort();
      while (platoon::tests::boottime_ns() < until) {
        if (read(in, &v, sizeof v) != sizeof v) std::abort();
        v = 1;
        if (write(out, &v, sizeof v) != sizeof v) std::abort();
      }
      v = 1;
      if (write(out, &v, sizeof v) != sizeof v) std::abort();  // let the other one out
    };
  };
  Worker a(body(0, b2a, a2b, true)), b(body(1, a2b, b2a, false));
  a.wait_parked();
  b.wait_parked();
  const snapshot::Snapshot s = c->snapshot();
  // Each CPU hands its records over in batches (bpf/stage.bpf.h), so the ring delivers one
  // CPU's switch records in stamp order, not one thread's across CPUs (readers re-sort).
  std::map<uint32_t, uint64_t> records, last_ts_on_cpu;
  bool ordered = true, well_formed = true;
  uint64_t total = 0;
  auto sink = [&](const void* data, size_t size) {
    const std::optional<platoon_event_header> h = header_of(data, size);
    well_formed &= h.has_value();
    if (!h) return;
    ++total;
    if (h->type < PLATOON_EV_SWITCH || h->type > PLATOON_EV_STEAL) well_formed = false;
    if (h->type != PLATOON_EV_SWITCH) return;
    platoon_ev_switch e;
    std::memcpy(&e, data, sizeof e);
    ordered &= e.h.ts_ns >= last_ts_on_cpu[e.h.cpu];
    last_ts_on_cpu[e.h.cpu] = e.h.ts_ns;
    for (uint32_t tid : {e.h.tid, e.next_tid})
      if (tid == static_cast<uint32_t>(a.tid()) || tid == static_cast<uint32_t>(b.tid())) ++records[tid];
  };
  while (c->poll_events(0, sink) > 0) {
  }
  for (const Worker* w : {&a, &b}) {
    const snapshot::ThreadSample* t = find(s, w->tid());
    ASSERT_TRUE(t);
    const uint64_t outs = t->switches_voluntary + t->switches_involuntary;
    std::printf("  tid %d: %llu switch records survived of %llu switch-outs + %llu switch-ins; "
                "voluntary %llu / proc %lld\n", w->tid(), (unsigned long long)records[w->tid()],
                (unsigned long long)outs, (unsigned long long)t->switch_ins,
                (unsigned long long)t->switches_voluntary, read_voluntary(w->tid()));
    EXPECT_EQ(t->switches_voluntary, static_cast<uint64_t>(read_voluntary(w->tid())));
    EXPECT_EQ(t->switches_involuntary, static_cast<uint64_t>(read_nonvoluntary(w->tid())));
    EXPECT_GT(outs, 1000u) << "a storm";
    EXPECT_LT(records[w->tid()], outs + t->switch_ins);
  }
  std::printf("  %llu records consumed, %llu lost (per CPU:", (unsigned long long)total, (unsigned long long)lost(s));
  for (uint64_t n : s.lost_events_per_cpu) std::printf(" %llu", (unsigned long long)n);
  std::printf(")\n");
  EXPECT_GT(lost(s), 10 * total) << "16 KiB holds a few hundred records of a ~1 s storm";
  EXPECT_GT(s.lost_events_per_cpu.at(0), 0u);
  EXPECT_GT(s.lost_events_per_cpu.at(1), 0u);
  EXPECT_TRUE(ordered);
  EXPECT_TRUE(well_formed);
  close(a2b);
  close(b2a);
}

// One per-CPU slot: every switch-in on CPU 1 lands in cpu_overflow, as switch-ins on CPUs >= 64
// do on a large machine.
TEST_F(LossesTest, SwitchInsBeyondTheCpuSlotsAreCountedAsOverflow) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs 2 CPUs";
  CollectorOptions o;
  o.cpu_slots = 1;
  auto c = open(o);
  ASSERT_TRUE(c);
  // /proc's own counts say where each switch-in can have happened: every switch-in before the
  // pin (at most the switch-outs by then, plus the first run) may be on CPU 0; every sleep
  // after it wakes on CPU 1, beyond the one slot. A sleep whose timer fires before schedule()
  // does not switch at all, so the count of sleeps is not a bound; the voluntary count is.
  bool pinned = false;
  long long switches_at_pin = -1, vol_at_pin = -1, vol_end = -1;
  Worker w([&] {
    const pid_t me = this_tid();
    pinned = pin_to_cpu(1);
    vol_at_pin = read_voluntary(me);
    switches_at_pin = vol_at_pin + read_nonvoluntary(me);
    for (int i = 0; i < 100; ++i) usleep(500);
    vol_end = read_voluntary(me);
  });
  w.wait_parked();
  ASSERT_TRUE(pinned);
  const snapshot::Snapshot s = c->snapshot();
  const snapshot::ThreadSample* t = find(s, w.tid());
  ASSERT_TRUE(t);
  std::printf("  switch-ins %llu: cpu0 %llu, overflow %llu (slots kept: %zu); proc: %lld switches at the pin, "
              "%lld sleeps after it\n",
              (unsigned long long)t->switch_ins,
              (unsigned long long)(t->cpu_switch_ins.empty() ? 0 : t->cpu_switch_ins[0]),
              (unsigned long long)t->cpu_overflow, t->cpu_switch_ins.size(), switches_at_pin, vol_end - vol_at_pin);
  ASSERT_EQ(t->cpu_switch_ins.size(), 1u);
  EXPECT_EQ(t->cpu_switch_ins[0] + t->cpu_overflow, t->switch_ins);
  EXPECT_GE(vol_end - vol_at_pin, 50);  // the workload did sleep on CPU 1
  EXPECT_GE(t->cpu_overflow, static_cast<uint64_t>(vol_end - vol_at_pin));
  EXPECT_LE(t->cpu_switch_ins[0], static_cast<uint64_t>(switches_at_pin + 1));
}

}  // namespace
}  // namespace platoon::tests::testing
