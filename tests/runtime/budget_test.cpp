// Budget: a carrier saturated with runnable fibers still polls its I/O at least once every
// budget plus one fiber's run, and I/O readiness and timers are served while it is saturated.
//
// Options::on_poll is called by the carrier right after each non-blocking poll, so consecutive
// observations bracket exactly one drain: their gap is what a socket waits, at worst, for the
// loop to see it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <linux/futex.h>
#include <memory>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "runtime/io.hpp"
#include "runtime/runtime.hpp"
#include "tests/runtime/support.hpp"

namespace {
using namespace platoon::test;  // rt, Clock, chrono literals, waits, Watchdog: support.hpp

struct Obs {
  uint64_t now_ns;
  uint32_t io_events;
  uint32_t fibers;
};

// Filled by carrier 0's on_poll (one writer, the carrier thread) while `recording`; read by the
// test only after Runtime::shutdown() has joined the carrier.
struct Recorder {
  std::atomic<bool> recording{false};
  std::vector<Obs> obs;
  size_t n = 0;
  explicit Recorder(size_t cap) : obs(cap) {}
  rt::PollObserver observer() {
    return [this](const rt::PollObservation& p) {
      if (p.carrier != 0 || !recording.load(std::memory_order_relaxed)) return;
      if (n < obs.size()) obs[n++] = Obs{p.now_ns, p.io_events, p.fibers_in_last_drain};
    };
  }
};

// kHogs fibers on carrier 0 that burn kFiberNs then yield, until stopped. They count their
// runs, so the test can measure how long one round of the run queue really takes (the fiber
// switches cost more under the sanitizers than the nominal kHogs x kFiberNs).
struct Hogs {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> runs{0};
  Signal running, done;
  void spawn(rt::Runtime& r, int n, uint64_t fiber_ns) {
    for (int i = 0; i < n; ++i)
      r.spawn([this, fiber_ns] {
        running.bump();
        while (!stop.load(std::memory_order_relaxed)) {
          spin_for_ns(fiber_ns);
          runs.fetch_add(1, std::memory_order_relaxed);
          rt::this_fiber::yield();
        }
        done.bump();
      }, rt::on_carrier(0));
  }
};

template <typename T>
T percentile(std::vector<T> v, double p) {
  if (v.empty()) return T{};
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

// 1,000 runnable fibers, each burning ~10 us of CPU then yielding, for several rounds, on one
// carrier with the default 50 us budget. Each drain must stop after the fiber that crosses the
// budget, so it runs at most budget/10us + 1 fibers, and the carrier polls again right after.
TEST(BudgetTest, SaturatedCarrierPollsEveryBudgetPlusOneFiber) {
  constexpr int kFibers = 1000;
  constexpr int kRounds = 30;                      // 1,000 x 30 x 10 us = 300 ms of fiber CPU
  constexpr uint64_t kFiberNs = 10'000;
  constexpr auto kBudget = 50us;
  const uint64_t budget_ns = static_cast<uint64_t>(std::chrono::nanoseconds(kBudget).count());
  const uint32_t max_fibers_per_drain = static_cast<uint32_t>(budget_ns / kFiberNs) + 1;  // 6

  Recorder rec(1 << 20);
  Signal finished;
  std::atomic<int> remaining{kFibers};

  rt::Options o;
  o.carriers = 1;
  o.budget = kBudget;
  o.on_poll = rec.observer();
  rt::Runtime runtime(o);

  const uint64_t t_start = mono_ns();
  // One fiber spawns them all with here(), so they are all in the run queue before any runs.
  runtime.spawn([&] {
    for (int i = 0; i < kFibers; ++i)
      rt::this_fiber::runtime()->spawn([&] {
        // Every run of the fiber, the last one included, burns kFiberNs: a run that only
        // finished the fiber would take ~nothing and a drain may legitimately run many of those.
        for (int r = 0; r < kRounds; ++r) {
          if (r) rt::this_fiber::yield();
          spin_for_ns(kFiberNs);
        }
        if (remaining.fetch_sub(1) == 1) rec.recording.store(false);
        finished.bump();
      }, rt::here());
    rec.recording.store(true);
  }, rt::on_carrier(0));

  const bool done = finished.wait_at_least(kFibers, 20s);
  const double secs = static_cast<double>(mono_ns() - t_start) / 1e9;
  rec.recording.store(false);
  runtime.shutdown();
  const auto stats = runtime.stats();
  ASSERT_TRUE(done) << "the fibers did not finish within 20 s";

  const std::vector<Obs> obs(rec.obs.begin(), rec.obs.begin() + static_cast<ptrdiff_t>(rec.n));
  // 300 ms of fiber CPU in ~60 us slices: thousands of polls. Far fewer would mean the carrier
  // ran long drains (no budget) or the observer was not called.
  ASSERT_GE(obs.size(), 2000u);
  std::vector<uint64_t> gaps;
  std::vector<uint32_t> per_drain;
  uint32_t max_drain = 0;
  size_t over = 0;
  for (size_t i = 0; i < obs.size(); ++i) {
    per_drain.push_back(obs[i].fibers);
    max_drain = std::max(max_drain, obs[i].fibers);
    if (obs[i].fibers > max_fibers_per_drain) ++over;
    if (i) gaps.push_back(obs[i].now_ns - obs[i - 1].now_ns);
  }
  // The hard bound: a drain stops as soon as the budget is spent, so it never runs more than
  // budget/fiber + 1 fibers (+1 slack for a fiber whose spin straddles the clock reads). This
  // holds however noisy the machine is: preemption only makes fibers look longer.
  EXPECT_LE(max_drain, max_fibers_per_drain + 1) << over << " drains ran more than " << max_fibers_per_drain;
  // The carrier really was saturated: drains were cut by the budget with work left, several
  // fibers per drain (not one per poll, which would also pass the bounds trivially). Under
  // ThreadSanitizer a fiber switch costs tens of us, so one 10 us fiber and its switches fill
  // the 50 us budget (p50 1 per drain, max 2): there only the budget cuts below show saturation.
  if (!kSanitized) {
    EXPECT_GE(percentile(per_drain, 0.5), 3u);
  }
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_GE(stats[0].budget_cuts, 1000u);
  EXPECT_GE(stats[0].queue_depth_high_water, static_cast<uint64_t>(kFibers) - 1);

  // The gap bound: budget + one fiber (60 us) plus the loop's own overhead (the poll syscall,
  // fiber switches, the observer). Asserted on the median and the 90th percentile, not the
  // maximum: this runs on a noisy 2-vCPU VM where the carrier thread can be preempted for
  // milliseconds at any moment (other processes, the hypervisor), which stretches a few gaps
  // arbitrarily without saying anything about the scheduler. A carrier that ignored the budget
  // would show gaps of a whole round (1,000 fibers x 10 us = 10 ms) at every percentile.
  const uint64_t bound_ns = budget_ns + kFiberNs;
  const uint64_t median_slack = kSanitized ? 60'000 : 25'000;
  const uint64_t p90_slack = kSanitized ? 140'000 : 60'000;
  const uint64_t p50 = percentile(gaps, 0.5), p90 = percentile(gaps, 0.9), p99 = percentile(gaps, 0.99);
  EXPECT_LE(p50, bound_ns + median_slack);
  EXPECT_LE(p90, bound_ns + p90_slack);
  std::printf("[budget] %zu polls in %.2f s; fibers/drain p50 %u max %u (limit %u); poll gap p50 %.1f us "
              "p90 %.1f us p99 %.1f us max %.1f us; budget cuts %llu\n",
              obs.size(), secs, percentile(per_drain, 0.5), max_drain, max_fibers_per_drain,
              static_cast<double>(p50) / 1e3, static_cast<double>(p90) / 1e3, static_cast<double>(p99) / 1e3,
              static_cast<double>(*std::max_element(gaps.begin(), gaps.end())) / 1e3,
              static_cast<unsigned long long>(stats[0].budget_cuts));
}

// While 200 fibers keep the carrier saturated (10 us of CPU each, then yield, ~2 ms a round), a
// fiber on the same carrier reads a socketpair that an outside thread writes to now and then.
// The carrier's poll must see each write within about one budget + one fiber, and the reader
// must get the byte within about one round of the run queue (it is queued behind the hogs).
TEST(BudgetTest, IoIsServedWhileCarrierIsSaturated) {
  constexpr int kHogs = 200;
  constexpr uint64_t kFiberNs = 10'000;
  constexpr int kPings = 60;
  constexpr auto kBudget = 50us;
  const uint64_t budget_ns = 50'000;

  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  Recorder rec(1 << 20);
  Hogs hogs;
  Signal reads;
  std::vector<uint64_t> t_read(kPings, 0);  // written by the reader fiber, read after `reads`
  std::atomic<int> read_errors{0};

  rt::Options o;
  o.carriers = 1;
  o.budget = kBudget;
  o.on_poll = rec.observer();
  rt::Runtime runtime(o);

  hogs.spawn(runtime, kHogs, kFiberNs);
  runtime.spawn([&] {
    rt::Socket s(sv[0]);
    for (int i = 0; i < kPings; ++i) {
      char c;
      const rt::IoResult r = s.read(&c, 1, 5s);
      t_read[static_cast<size_t>(i)] = mono_ns();
      if (!r.ok() || r.n != 1) read_errors.fetch_add(1);
      reads.bump();
    }
  }, rt::on_carrier(0));
  ASSERT_TRUE(hogs.running.wait_at_least(kHogs, 10s));
  rec.recording.store(true);
  const uint64_t t_begin = mono_ns(), runs_begin = hogs.runs.load();

  std::vector<uint64_t> t_write(kPings, 0);
  bool all_read = true;
  for (int i = 0; i < kPings && all_read; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(1000 + 137 * (i % 11)));
    t_write[static_cast<size_t>(i)] = mono_ns();
    const char c = 'x';
    ASSERT_EQ(write(sv[1], &c, 1), 1);
    all_read = reads.wait_at_least(static_cast<uint32_t>(i + 1), 5s);
  }
  rec.recording.store(false);
  const uint64_t t_end = mono_ns(), runs_end = hogs.runs.load();
  hogs.stop.store(true);
  const bool hogs_stopped = hogs.done.wait_at_least(kHogs, 10s);
  runtime.shutdown();
  close(sv[1]);
  const auto stats = runtime.stats();
  ASSERT_TRUE(all_read) << "a write to the socket was never read while the carrier was saturated";
  EXPECT_TRUE(hogs_stopped);
  EXPECT_EQ(read_errors.load(), 0);
  EXPECT_GE(stats[0].budget_cuts, 100u);  // it really was saturated

  // For each write, the first poll after it that ran I/O callbacks.
  const std::vector<Obs> obs(rec.obs.begin(), rec.obs.begin() + static_cast<ptrdiff_t>(rec.n));
  std::vector<uint64_t> poll_latency, read_latency;
  size_t j = 0;
  for (int i = 0; i < kPings; ++i) {
    const uint64_t tw = t_write[static_cast<size_t>(i)];
    while (j < obs.size() && (obs[j].now_ns < tw || obs[j].io_events == 0)) ++j;
    if (j < obs.size()) poll_latency.push_back(obs[j].now_ns - tw);
    read_latency.push_back(t_read[static_cast<size_t>(i)] - tw);
  }
  // The poll sees every write; allow a few to be missed by the matching above (the write's
  // edge landing in a blocking poll is impossible here: the carrier never idles).
  ASSERT_GE(poll_latency.size(), static_cast<size_t>(kPings) - 2);
  // One round of the run queue as measured (nominally kHogs x kFiberNs = 2 ms).
  ASSERT_GT(runs_end, runs_begin);
  const uint64_t round_ns = (t_end - t_begin) * kHogs / (runs_end - runs_begin);
  const uint64_t poll_p50 = percentile(poll_latency, 0.5), read_p50 = percentile(read_latency, 0.5);
  const uint64_t read_max = *std::max_element(read_latency.begin(), read_latency.end());
  // Same noise argument as above: median, not max, for the timing bounds.
  EXPECT_LE(poll_p50, budget_ns + kFiberNs + (kSanitized ? 100'000 : 50'000));
  // The reader is queued behind the hogs: about one round, never several.
  EXPECT_LE(read_p50, round_ns * 3 / 2 + budget_ns + 500'000);
  EXPECT_LT(read_max, 1'000'000'000u);  // never starved (a 5 s read timeout would also fail above)
  std::printf("[budget] socket under load: poll saw the write after p50 %.1f us (max %.1f us); reader "
              "got it after p50 %.2f ms (max %.2f ms); one round of the queue measured %.2f ms\n",
              static_cast<double>(poll_p50) / 1e3,
              static_cast<double>(*std::max_element(poll_latency.begin(), poll_latency.end())) / 1e3,
              static_cast<double>(read_p50) / 1e6, static_cast<double>(read_max) / 1e6,
              static_cast<double>(round_ns) / 1e6);
}

// A fiber sleeping 1 ms at a time on a saturated carrier wakes up about on time: the timer fires
// in a poll (within budget + one fiber of its deadline) and the fiber then waits one round of the
// run queue, not forever.
TEST(BudgetTest, TimersFireWhileCarrierIsSaturated) {
  constexpr int kHogs = 200;
  constexpr uint64_t kFiberNs = 10'000;
  constexpr int kSleeps = 100;
  Hogs hogs;
  Signal sleeper_done;
  std::vector<uint64_t> oversleep(kSleeps, 0);

  rt::Options o;
  o.carriers = 1;
  rt::Runtime runtime(o);
  hogs.spawn(runtime, kHogs, kFiberNs);
  ASSERT_TRUE(hogs.running.wait_at_least(kHogs, 10s));
  const uint64_t t_begin = mono_ns(), runs_begin = hogs.runs.load();
  runtime.spawn([&] {
    for (int i = 0; i < kSleeps; ++i) {
      const uint64_t t0 = mono_ns();
      rt::this_fiber::sleep_for(1ms);
      const uint64_t slept = mono_ns() - t0;
      oversleep[static_cast<size_t>(i)] = slept > 1'000'000 ? slept - 1'000'000 : 0;
      if (slept < 1'000'000) oversleep[static_cast<size_t>(i)] = UINT64_MAX;  // woke early
    }
    sleeper_done.bump();
  }, rt::on_carrier(0));
  const bool done = sleeper_done.wait_at_least(1, 15s);
  const uint64_t t_end = mono_ns(), runs_end = hogs.runs.load();
  hogs.stop.store(true);
  EXPECT_TRUE(hogs.done.wait_at_least(kHogs, 10s));
  runtime.shutdown();
  ASSERT_TRUE(done) << "sleep_for(1ms) x " << kSleeps << " did not complete on a saturated carrier";
  for (uint64_t v : oversleep) ASSERT_NE(v, UINT64_MAX) << "sleep_for returned before its deadline";
  ASSERT_GT(runs_end, runs_begin);
  const uint64_t round_ns = (t_end - t_begin) * kHogs / (runs_end - runs_begin);  // measured
  const uint64_t p50 = percentile(oversleep, 0.5);
  // The timer fires in the next poll; the woken sleeper then waits about one round of the run
  // queue behind the hogs. Median, for the noise reasons given above.
  EXPECT_LE(p50, round_ns * 3 / 2 + 500'000);
  std::printf("[budget] sleep_for(1ms) under load overslept p50 %.2f ms, max %.2f ms (one round measured %.2f ms)\n",
              static_cast<double>(p50) / 1e6,
              static_cast<double>(*std::max_element(oversleep.begin(), oversleep.end())) / 1e6,
              static_cast<double>(round_ns) / 1e6);
}
