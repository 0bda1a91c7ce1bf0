// Work stealing (carrier mode, Options::work_stealing): an idle carrier takes runnable fibers
// from a sibling stuck in a long non-yielding fiber; without stealing they wait for it. A stolen
// fiber runs on the thief only until it next yields or parks, then goes back to its home carrier
// (policy: runtime/carrier.cpp, the comment on Carrier::steal()).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <linux/futex.h>
#include <memory>
#include <string>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "runtime/runtime.hpp"
#include "tests/runtime/support.hpp"

namespace {
using namespace platoon::test;  // rt, Clock, chrono literals, waits, Watchdog: support.hpp

// What one short fiber saw.
struct ShortRun {
  std::atomic<int> carrier{-2};
  std::atomic<int> home{-2};
  std::atomic<uint64_t> done_ns{0};
};

constexpr uint64_t kSpinNs = 300'000'000;  // the long non-yielding fiber
constexpr int kShort = 50;

struct Outcome {
  uint64_t spinner_start = 0;  // the spinner fiber started (before it spawned the short ones)
  uint64_t spin_start = 0, spin_end = 0;
  std::vector<ShortRun> shorts = std::vector<ShortRun>(kShort);
  std::vector<rt::CarrierStats> stats;
  bool finished = false;
  int spinner_carrier = -1;
};

// Carrier 0 runs a fiber that spawns kShort short fibers onto its own carrier (here(): they land
// in its run queue, behind it) and then spins for 300 ms without yielding.
void run_spinner_scenario(bool stealing, Outcome& out) {
  Signal shorts_done, spinner_done;
  std::atomic<uint64_t> spinner_start{0}, spin_start{0}, spin_end{0};
  std::atomic<int> spinner_carrier{-1};
  rt::Runtime runtime(stealing_carriers(stealing));
  // Let carrier 1 fall asleep first: the thief has to be woken, not find the work by chance.
  std::this_thread::sleep_for(20ms);
  runtime.spawn([&] {
    spinner_start.store(mono_ns());
    spinner_carrier.store(rt::this_fiber::carrier_index());
    for (int i = 0; i < kShort; ++i)
      rt::this_fiber::runtime()->spawn([&, r = &out.shorts[static_cast<size_t>(i)]] {
        r->carrier.store(rt::this_fiber::carrier_index());
        r->home.store(rt::this_fiber::home_index());
        spin_for_ns(100'000);  // a little work, no yield
        r->done_ns.store(mono_ns());
        shorts_done.bump();
      }, rt::here());
    spin_start.store(mono_ns());
    spin_for_ns(kSpinNs);
    spin_end.store(mono_ns());
    spinner_done.bump();
  }, rt::on_carrier(0));
  out.finished = spinner_done.wait_at_least(1, 10s) && shorts_done.wait_at_least(kShort, 10s);
  runtime.shutdown();
  out.stats = runtime.stats();
  out.spinner_start = spinner_start.load();
  out.spin_start = spin_start.load();
  out.spin_end = spin_end.load();
  out.spinner_carrier = spinner_carrier.load();
}

}  // namespace

TEST(StealingTest, IdleCarrierStealsFromCarrierStuckInLongFiber) {
  Outcome out;
  run_spinner_scenario(true, out);
  ASSERT_TRUE(out.finished) << "fibers did not finish within 10 s";
  ASSERT_EQ(out.spinner_carrier, 0);
  uint64_t last_done = 0;
  int on_thief = 0;
  for (auto& r : out.shorts) {
    EXPECT_EQ(r.home.load(), 0);
    if (r.carrier.load() == 1) ++on_thief;
    last_done = std::max(last_done, r.done_ns.load());
  }
  // All of them ran on carrier 1 (their home is carrier 0, which was busy the whole time)...
  EXPECT_EQ(on_thief, kShort);
  // ...and well before the spinner finished: within a third of its 300 ms spin (50 x 0.1 ms of
  // work plus waking the thief; generous for a noisy 2-vCPU VM). Counted from the spin's start,
  // not the spinner's: under ThreadSanitizer creating a fiber takes milliseconds, so spawning the
  // 50 took 124 ms, and the thief may finish some before the spin begins.
  EXPECT_LT(last_done, out.spin_end);
  EXPECT_LT(last_done, out.spin_start + kSpinNs / 3)
      << "last short fiber finished " << (static_cast<double>(last_done) - static_cast<double>(out.spin_start)) / 1e6
      << " ms after the spin started";
  ASSERT_EQ(out.stats.size(), 2u);
  EXPECT_GT(out.stats[1].steals, 0u);
  EXPECT_EQ(out.stats[1].stolen_fibers, static_cast<uint64_t>(kShort));
  EXPECT_GE(out.stats[1].off_home_runs, static_cast<uint64_t>(kShort));
  EXPECT_EQ(out.stats[0].steals, 0u);
  std::printf("[stealing] with stealing: %d/%d short fibers ran on carrier 1, the last done %.1f ms into "
              "the %.0f ms spin; carrier 1: %llu steals, %llu fibers stolen\n",
              on_thief, kShort, (static_cast<double>(last_done) - static_cast<double>(out.spin_start)) / 1e6,
              static_cast<double>(kSpinNs) / 1e6, static_cast<unsigned long long>(out.stats[1].steals),
              static_cast<unsigned long long>(out.stats[1].stolen_fibers));
}

// The control: the same without stealing. The short fibers wait for the spinner and run on
// their home carrier 0 only, after it.
TEST(StealingTest, WithoutStealingShortFibersWaitForTheSpinner) {
  Outcome out;
  run_spinner_scenario(false, out);
  ASSERT_TRUE(out.finished) << "fibers did not finish within 10 s";
  ASSERT_EQ(out.spinner_carrier, 0);
  uint64_t first_done = UINT64_MAX;
  for (auto& r : out.shorts) {
    EXPECT_EQ(r.carrier.load(), 0);
    EXPECT_EQ(r.home.load(), 0);
    first_done = std::min(first_done, r.done_ns.load());
  }
  EXPECT_GE(first_done, out.spin_end);
  ASSERT_EQ(out.stats.size(), 2u);
  for (const auto& s : out.stats) {
    EXPECT_EQ(s.steals, 0u) << s.name;
    EXPECT_EQ(s.stolen_fibers, 0u) << s.name;
    EXPECT_EQ(s.off_home_runs, 0u) << s.name;
  }
}

// Stolen fibers go back home once they park: each short fiber, once stolen (running on carrier
// 1), parks; after the spinner is gone a thread outside the runtime unparks them one at a time
// and each must resume on carrier 0, its home. One at a time and from outside, so that carrier 0
// is never handed a backlog that would wake carrier 1 to steal it again.
TEST(StealingTest, StolenFiberGoesHomeAfterPark) {
  constexpr int kFibers = 8;
  struct Rec {
    std::atomic<rt::Fiber*> self{nullptr};
    std::atomic<int> first_carrier{-2};
    std::atomic<int> after_park_carrier{-2};
    std::atomic<int> after_park_home{-2};
    std::atomic<bool> go{false};
  };
  std::vector<Rec> recs(kFibers);
  Signal parked, resumed, spinner_done;
  rt::Runtime runtime(stealing_carriers(true));
  std::this_thread::sleep_for(20ms);
  runtime.spawn([&] {
    for (int i = 0; i < kFibers; ++i)
      rt::this_fiber::runtime()->spawn([&, r = &recs[static_cast<size_t>(i)]] {
        r->first_carrier.store(rt::this_fiber::carrier_index());
        r->self.store(rt::this_fiber::self());
        parked.bump();
        while (!r->go.load()) rt::this_fiber::park();
        r->after_park_carrier.store(rt::this_fiber::carrier_index());
        r->after_park_home.store(rt::this_fiber::home_index());
        resumed.bump();
      }, rt::here());
    // Spin until every one of them has run and parked (on the thief), at most 0.5 s.
    const uint64_t end = mono_ns() + 500'000'000;
    while (parked.v.load() < kFibers && mono_ns() < end) {
    }
    spin_for_ns(5'000'000);
    spinner_done.bump();
  }, rt::on_carrier(0));
  ASSERT_TRUE(spinner_done.wait_at_least(1, 10s));
  ASSERT_TRUE(parked.wait_at_least(kFibers, 10s));
  std::this_thread::sleep_for(20ms);  // both carriers idle and asleep

  int stolen = 0;
  bool all_resumed = true;
  for (int i = 0; i < kFibers; ++i) {
    Rec& r = recs[static_cast<size_t>(i)];
    if (r.first_carrier.load() == 1) ++stolen;
    r.go.store(true);
    rt::unpark(r.self.load());
    if (!resumed.wait_at_least(static_cast<uint32_t>(i + 1), 5s)) { all_resumed = false; break; }
    // Let carrier 0 leave this fiber before the next unpark: work queued behind a running
    // fiber may be stolen by policy, and this test is about where a parked fiber resumes.
    std::this_thread::sleep_for(5ms);
  }
  runtime.shutdown();
  const auto stats = runtime.stats();
  ASSERT_TRUE(all_resumed) << "an unparked fiber never resumed";
  // They were stolen: carrier 0 was stuck in the spinner while they ran and parked. (All of them
  // normally; one left behind is the known SingleQueuedFiber... bug, not this test's
  // business, so only require some.)
  EXPECT_GE(stolen, 1);
  for (auto& r : recs) {
    EXPECT_EQ(r.after_park_carrier.load(), 0) << "a stolen fiber resumed away from home after parking";
    EXPECT_EQ(r.after_park_home.load(), 0);
  }
  EXPECT_GT(stats[1].steals, 0u);
}

// Stolen fibers go back home once they yield. Each short fiber, when it finds itself stolen,
// first spawns a "blocker" onto carrier 1 (here()) that spins without yielding until well after
// the spinner on carrier 0 is gone, and then yields. The yield queues it at home (carrier 0); the
// thief is then stuck in the blocker and cannot take it again, so the fiber must next run on
// carrier 0, as soon as the spinner has finished.
TEST(StealingTest, StolenFiberGoesHomeAfterYield) {
  constexpr uint64_t kSpinner = 100'000'000;
  std::atomic<int> first_carrier{-2}, after_yield_carrier{-2}, after_yield_home{-2}, blocker_carrier{-2};
  std::atomic<uint64_t> spinner_end{0}, resumed_at{0};
  std::atomic<bool> spinner_finished{false};
  Signal done, blocker_done, spinner_done;
  rt::Runtime runtime(stealing_carriers(true));
  std::this_thread::sleep_for(20ms);
  runtime.spawn([&] {
    // Two fibers so carrier 0's run queue has a backlog (one queued fiber does not wake a thief);
    // the thief steals half: the first, the other one stays queued behind the spinner.
    for (int i = 0; i < 2; ++i)
      rt::this_fiber::runtime()->spawn([&, i] {
        const int c = rt::this_fiber::carrier_index();
        if (c != 1) { done.bump(); return; }  // not stolen: nothing to check
        first_carrier.store(c);
        rt::this_fiber::runtime()->spawn([&] {
          blocker_carrier.store(rt::this_fiber::carrier_index());
          const uint64_t end = mono_ns() + 5'000'000'000;
          while (!spinner_finished.load() && mono_ns() < end) {
          }
          spin_for_ns(50'000'000);
          blocker_done.bump();
        }, rt::here());
        rt::this_fiber::yield();
        resumed_at.store(mono_ns());
        after_yield_carrier.store(rt::this_fiber::carrier_index());
        after_yield_home.store(rt::this_fiber::home_index());
        done.bump();
        (void)i;
      }, rt::here());
    spin_for_ns(kSpinner);
    spinner_end.store(mono_ns());
    spinner_finished.store(true);
    spinner_done.bump();
  }, rt::on_carrier(0));
  const bool ok = spinner_done.wait_at_least(1, 10s) && done.wait_at_least(2, 10s) &&
                  blocker_done.wait_at_least(1, 10s);
  runtime.shutdown();
  const auto stats = runtime.stats();
  ASSERT_TRUE(ok) << "fibers did not finish within 10 s";
  ASSERT_EQ(first_carrier.load(), 1) << "no fiber was stolen";
  EXPECT_EQ(blocker_carrier.load(), 1);
  EXPECT_EQ(after_yield_carrier.load(), 0) << "a stolen fiber resumed away from home after yielding";
  EXPECT_EQ(after_yield_home.load(), 0);
  EXPECT_GE(resumed_at.load(), spinner_end.load());
  EXPECT_GT(stats[1].steals, 0u);
}

// ---- Known runtime bugs: these fail today, see the notes; run them with
// --gtest_also_run_disabled_tests --gtest_filter='Stealing*'. ----

// A single runnable fiber queued behind a long non-yielding fiber is never stolen: the push
// wakes a thief only when the victim's backlog is >= 2 (RuntimeImpl::wake_thief: "one queued
// fiber: its carrier will get to it"), which is false when that carrier is stuck, and an idle
// carrier sleeps in epoll_wait with no timeout, so nothing else ever makes it look. The fiber
// waits the whole 300 ms. The same happens to the last fiber of a burst when the thief drains
// the queue faster than it is filled (seen under TSan in IdleCarrierStealsFromCarrierStuck...).
TEST(StealingTest, SingleQueuedFiberIsStolenFromStuckCarrier) {
  std::atomic<int> carrier{-2};
  std::atomic<uint64_t> spinner_start{0}, done_at{0}, spin_end{0};
  Signal done, spinner_done;
  rt::Runtime runtime(stealing_carriers(true));
  std::this_thread::sleep_for(20ms);  // carrier 1 asleep
  runtime.spawn([&] {
    spinner_start.store(mono_ns());
    rt::this_fiber::runtime()->spawn([&] {
      carrier.store(rt::this_fiber::carrier_index());
      done_at.store(mono_ns());
      done.bump();
    }, rt::here());
    spin_for_ns(kSpinNs);
    spin_end.store(mono_ns());
    spinner_done.bump();
  }, rt::on_carrier(0));
  const bool ok = done.wait_at_least(1, 10s) && spinner_done.wait_at_least(1, 10s);
  runtime.shutdown();
  ASSERT_TRUE(ok);
  EXPECT_EQ(carrier.load(), 1) << "the queued fiber was not stolen; it ran after the spinner";
  EXPECT_LT(done_at.load(), spin_end.load());
  EXPECT_LT(done_at.load() - spinner_start.load(), kSpinNs / 3);
}

// Lost thief wakeup (a race): carrier 0 is stuck in a fiber that keeps pushing two short fibers
// and spinning until both have run. Carrier 1 steals and runs them, finds nothing more and goes
// to sleep. If the next two are pushed after the thief's last steal() looked at carrier 0 but
// before it incremented idle_carriers, wake_thief() sees no idle carrier and returns, and the
// thief then slept without looking at its siblings again: the two fibers stayed queued on the
// stuck carrier indefinitely. Carrier::idle() now re-checks the siblings' backlogs after a fence. Each round waits
// up to 500 ms: a lost wakeup never ends on its own (a few per 20,000 rounds before the fix),
// while a thief merely preempted by another process on a busy machine runs again within a few
// scheduler slices (tens of ms), so the bound tells the two apart without timing the runtime.
TEST(StealingTest, NoLostThiefWakeupWhenWorkArrivesAsThiefFallsAsleep) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  // Under ThreadSanitizer a round takes about 5 ms, nearly all of it creating the two fibers
  // (the thief still takes them within 0.2 ms at the median): 2,000 rounds take about 10 s.
  constexpr int kRounds = 2000;
#else
  constexpr int kRounds = 100000;  // ~3 s; failed ~3 runs in 4 before Carrier::idle() looked at siblings
#endif
  std::atomic<int> ran{0};
  std::atomic<int> stuck{0};
  std::atomic<int> rounds{0};
  Signal finished;
  rt::Runtime runtime(stealing_carriers(true));
  runtime.spawn([&] {
    uint32_t rng = 12345;
    for (int round = 0; round < kRounds; ++round) {
      const int base = ran.load();
      for (int k = 0; k < 2; ++k)
        rt::this_fiber::runtime()->spawn([&] { ran.fetch_add(1); }, rt::here());
      const uint64_t end = mono_ns() + 500'000'000;
      while (ran.load() < base + 2 && mono_ns() < end) {
      }
      if (ran.load() < base + 2) {
        stuck.fetch_add(1);
        while (ran.load() < base + 2) rt::this_fiber::yield();  // run them here and go on
      }
      rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5;
      spin_for_ns(rng % 16000);  // vary the phase against the thief's way to sleep
      rounds.fetch_add(1);
    }
    finished.bump();
  }, rt::on_carrier(0));
  const auto t0 = Clock::now();
  const bool ok = finished.wait_at_least(1, 30s);
  std::printf("[stealing] %d of %d rounds in %.1f s, %d stuck\n", rounds.load(), kRounds,
              std::chrono::duration<double>(Clock::now() - t0).count(), stuck.load());
  runtime.shutdown();
  ASSERT_TRUE(ok);
  EXPECT_EQ(stuck.load(), 0) << stuck.load() << " of " << kRounds
                             << " rounds left two runnable fibers on a stuck carrier while the thief slept";
}
