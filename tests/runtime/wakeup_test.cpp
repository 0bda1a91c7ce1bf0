// Wakeups: no unpark and no spawn aimed at a sleeping carrier is ever lost.
//
// A carrier announces sleep (sleeping_ = 1), re-checks its inbox, then blocks in epoll_wait; a
// waker pushes to the inbox, then writes the carrier's eventfd if it saw the flag. A lost wakeup
// leaves a fiber in the inbox of a carrier that sleeps forever. These tests keep the carriers
// mostly idle, so that they go to sleep between bursts of work and the unparks race with it, and
// they wait for every acknowledgement with a deadline: a lost wakeup fails the test, it does not
// hang it.
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
#include <mutex>
#include <string>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "runtime/runtime.hpp"
#include "tests/runtime/support.hpp"
#include "runtime/runtime_impl.hpp"  // Carrier::is_sleeping(), to count unparks that hit a sleeper

namespace {
using namespace platoon::test;  // rt, Clock, chrono literals, waits, Watchdog: support.hpp

// ThreadSanitizer makes every fiber switch and every spawn (a TSan fiber each) much slower;
// AddressSanitizer barely matters here.
#if defined(__SANITIZE_THREAD__)
constexpr bool kTsan = true;
#else
constexpr bool kTsan = false;
#endif

bool carrier_sleeping(rt::Runtime& r, int i) {
  return r.impl().carriers[static_cast<size_t>(i)]->is_sleeping();
}

struct Driver;

// One parked fiber. `posted` is bumped by its driver right before each unpark; the fiber acks
// each bump once. The driver never bumps again before the ack, so every unpark is needed: none
// can be coalesced with an earlier one.
struct Target {
  std::atomic<rt::Fiber*> self{nullptr};
  std::atomic<uint64_t> posted{0};
  std::atomic<uint64_t> handled{0};
  std::atomic<uint64_t> out_of_order{0};
  int carrier = -1;
  Driver* driver = nullptr;
};

struct Driver {
  std::vector<Target*> targets;
  std::atomic<uint32_t> acks{0};
  std::atomic<uint32_t> expect{0};
  std::atomic<rt::Fiber*> fiber{nullptr};  // a fiber driver; null for an OS thread
  uint64_t unparks = 0;                     // by the driver only; read after it is done
  uint64_t unparks_at_sleeper = 0;          // the target's carrier was asleep just before
  bool is_fiber = false;

  void ack() {
    const uint32_t n = acks.fetch_add(1) + 1;
    if (n != expect.load()) return;
    if (is_fiber) {
      rt::unpark(fiber.load());
    } else {
      futex_wake_all(acks);
    }
  }
};

struct Shared {
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::atomic<uint32_t> targets_ready{0};
  std::atomic<uint32_t> drivers_done{0};
  std::atomic<uint32_t> exited{0};
  std::mutex mu;
  std::string failure;

  void fail(const std::string& why) {
    std::lock_guard lk(mu);
    if (!failed.exchange(true)) failure = why;
  }
};

void target_body(Shared& sh, Target& t) {
  t.self.store(rt::this_fiber::self());
  sh.targets_ready.fetch_add(1);
  uint64_t seen = 0;
  while (!sh.stop.load()) {
    const uint64_t p = t.posted.load();
    if (p == seen) {
      rt::this_fiber::park();
      continue;
    }
    if (p != seen + 1) t.out_of_order.fetch_add(1);
    seen = p;
    if (rt::this_fiber::carrier_index() != t.carrier) t.out_of_order.fetch_add(1);
    t.handled.store(p);
    t.driver->ack();
  }
  sh.exited.fetch_add(1);
}

// Unparks every target of the driver once, counting the ones whose carrier was asleep.
void post_batch(rt::Runtime& r, Driver& d, uint32_t batch_no) {
  d.expect.store(static_cast<uint32_t>(d.targets.size()) * (batch_no + 1));
  for (Target* t : d.targets) {
    t->posted.fetch_add(1);
    if (carrier_sleeping(r, t->carrier)) ++d.unparks_at_sleeper;
    rt::unpark(t->self.load());
    ++d.unparks;
  }
}

std::string describe_stuck(rt::Runtime& r, const Driver& d, const char* who) {
  std::string s = std::string(who) + ": acks " + std::to_string(d.acks.load()) + " of " +
                  std::to_string(d.expect.load()) + "; not handled:";
  for (const Target* t : d.targets)
    if (t->handled.load() != t->posted.load())
      s += " [carrier " + std::to_string(t->carrier) + " posted " + std::to_string(t->posted.load()) +
           " handled " + std::to_string(t->handled.load()) + "]";
  s += "; carriers sleeping:";
  for (int i = 0; i < r.carrier_count(); ++i) s += carrier_sleeping(r, i) ? " yes" : " no";
  return s;
}

}  // namespace

// >= 1,000,000 cross-thread unparks of parked fibers on two mostly idle carriers, from two OS
// threads outside the runtime and from a fiber on the other carrier; each must be acknowledged.
TEST(WakeupTest, MillionCrossThreadUnparksAllResume) {
  constexpr int kCarriers = 2;
  // Targets per driver per batch. Small batches make each unpark likely to find its carrier
  // asleep (or falling asleep: the racy case) but cost a carrier wakeup per batch. 2 gives
  // ~200k unparks/s here (1M in ~5 s). TSan slows every fiber switch down, so it batches more
  // (fewer sleeps per unpark) to keep the full 1,000,000 within the time limit.
  constexpr int kTargetsPerDriver = kTsan ? 16 : 2;
  constexpr int kOsDrivers = 2;
  constexpr int kFiberDrivers = 2;  // one on each carrier, driving targets on the other one
  constexpr int kDrivers = kOsDrivers + kFiberDrivers;
  constexpr uint64_t kTotal = 1'000'000;
  constexpr uint32_t kBatches =
      static_cast<uint32_t>((kTotal + kDrivers * kTargetsPerDriver - 1) / (kDrivers * kTargetsPerDriver));
  static_assert(uint64_t{kBatches} * kDrivers * kTargetsPerDriver >= kTotal);
  constexpr auto kStallTimeout = 5s;  // no acknowledgement for this long: a lost wakeup

  Shared sh;
  std::vector<std::unique_ptr<Target>> targets;
  std::vector<std::unique_ptr<Driver>> drivers;
  for (int d = 0; d < kDrivers; ++d) {
    drivers.push_back(std::make_unique<Driver>());
    drivers.back()->is_fiber = d >= kOsDrivers;
  }
  // OS drivers: half their targets on each carrier. Fiber driver k (on carrier k): targets on the
  // other carrier.
  for (int d = 0; d < kDrivers; ++d) {
    for (int i = 0; i < kTargetsPerDriver; ++i) {
      auto t = std::make_unique<Target>();
      t->carrier = d < kOsDrivers ? i % kCarriers : 1 - (d - kOsDrivers);
      t->driver = drivers[static_cast<size_t>(d)].get();
      drivers[static_cast<size_t>(d)]->targets.push_back(t.get());
      targets.push_back(std::move(t));
    }
  }

  rt::Options o;
  o.carriers = kCarriers;
  o.work_stealing = false;
  rt::Runtime runtime(o);
  for (auto& t : targets) runtime.spawn([&sh, tp = t.get()] { target_body(sh, *tp); }, rt::on_carrier(t->carrier));
  ASSERT_TRUE(futex_wait_at_least(sh.targets_ready, static_cast<uint32_t>(targets.size()), 10s));
  // Let both carriers go to sleep before the first unpark.
  for (int i = 0; i < 1000 && !(carrier_sleeping(runtime, 0) && carrier_sleeping(runtime, 1)); ++i)
    std::this_thread::sleep_for(1ms);
  const auto stats_before = runtime.stats();

  const uint64_t t0 = mono_ns();
  std::vector<std::thread> os_drivers;
  for (int d = 0; d < kOsDrivers; ++d)
    os_drivers.emplace_back([&, dp = drivers[static_cast<size_t>(d)].get()] {
      for (uint32_t b = 0; b < kBatches && !sh.failed.load(); ++b) {
        post_batch(runtime, *dp, b);
        if (!futex_wait_at_least(dp->acks, dp->expect.load(), kStallTimeout)) {
          sh.fail("lost wakeup (OS driver, batch " + std::to_string(b) + "): " +
                  describe_stuck(runtime, *dp, "OS driver"));
          break;
        }
      }
      sh.drivers_done.fetch_add(1);
      futex_wake_all(sh.drivers_done);
    });
  for (int k = 0; k < kFiberDrivers; ++k) {
    Driver* dp = drivers[static_cast<size_t>(kOsDrivers + k)].get();
    runtime.spawn([&, dp] {
      dp->fiber.store(rt::this_fiber::self());
      for (uint32_t b = 0; b < kBatches && !sh.failed.load(); ++b) {
        post_batch(runtime, *dp, b);
        // No timeout can interrupt a park: the main thread's stall detector covers this one.
        while (dp->acks.load() < dp->expect.load() && !sh.failed.load()) rt::this_fiber::park();
      }
      sh.drivers_done.fetch_add(1);
      futex_wake_all(sh.drivers_done);
      // Stay alive until stop: a late ack may still unpark this record.
      while (!sh.stop.load()) rt::this_fiber::park();
      sh.exited.fetch_add(1);
    }, rt::on_carrier(k));
  }

  // Stall detector: progress is the sum of all acks.
  auto total_acks = [&] {
    uint64_t n = 0;
    for (auto& d : drivers) n += d->acks.load();
    return n;
  };
  uint64_t last = 0;
  uint64_t last_progress = mono_ns();
  while (sh.drivers_done.load() < kDrivers && !sh.failed.load()) {
    futex_wait_at_least(sh.drivers_done, kDrivers, 50ms);
    const uint64_t now_acks = total_acks();
    if (now_acks != last) {
      last = now_acks;
      last_progress = mono_ns();
    } else if (mono_ns() - last_progress > static_cast<uint64_t>(std::chrono::nanoseconds(kStallTimeout).count())) {
      std::string why = "no acknowledgement for 5 s;";
      for (size_t d = kOsDrivers; d < drivers.size(); ++d) why += " " + describe_stuck(runtime, *drivers[d], "fiber driver");
      sh.fail(why);
    }
    if (mono_ns() - t0 > 60'000'000'000ull) sh.fail("took more than 60 s");
  }
  const double secs = static_cast<double>(mono_ns() - t0) / 1e9;
  for (auto& th : os_drivers) th.join();

  // Stop everything; a fiber left behind by a lost wakeup is unwound by shutdown().
  sh.stop.store(true);
  for (auto& t : targets) rt::unpark(t->self.load());
  for (size_t d = kOsDrivers; d < drivers.size(); ++d) rt::unpark(drivers[d]->fiber.load());
  const bool all_exited = futex_wait_at_least(sh.exited, static_cast<uint32_t>(targets.size() + kFiberDrivers), 5s);
  runtime.shutdown();
  const auto stats = runtime.stats();

  {
    std::lock_guard lk(sh.mu);
    ASSERT_FALSE(sh.failed.load()) << sh.failure;
  }
  EXPECT_TRUE(all_exited);
  uint64_t unparks = 0, at_sleeper = 0, posted = 0, handled = 0, bad = 0;
  for (auto& d : drivers) {
    unparks += d->unparks;
    at_sleeper += d->unparks_at_sleeper;
    EXPECT_EQ(d->acks.load(), d->unparks);
  }
  for (auto& t : targets) {
    posted += t->posted.load();
    handled += t->handled.load();
    bad += t->out_of_order.load();
    EXPECT_EQ(t->handled.load(), t->posted.load());
  }
  EXPECT_GE(unparks, kTotal);
  EXPECT_EQ(posted, unparks);
  EXPECT_EQ(handled, unparks);
  EXPECT_EQ(bad, 0u) << "a target saw a bump skipped or ran off its carrier";
  uint64_t sleeps = 0, wakeups = 0;
  for (size_t i = 0; i < stats.size(); ++i) {
    sleeps += stats[i].sleeps - stats_before[i].sleeps;
    wakeups += stats[i].wakeups - stats_before[i].wakeups;
  }
  // The carriers really slept between bursts and were really woken by the unparks (an eventfd
  // write each), many times over; and a good share of the unparks found the carrier asleep.
  // (Thresholds are ~1/3 of what a normal build measures: 2 targets per batch give ~300k
  // sleeps; the TSan build batches 16 and sleeps 10-20x less.)
  EXPECT_GE(sleeps, kTsan ? kTotal / 200 : kTotal / 10);
  EXPECT_GE(wakeups, kTsan ? kTotal / 200 : kTotal / 10);
  EXPECT_GE(at_sleeper, kTsan ? kTotal / 500 : kTotal / 20);
  std::printf("[wakeup] %llu cross-thread unparks acknowledged in %.2f s (%.0f/s); %llu found the "
              "target's carrier asleep; carriers slept %llu times, were woken %llu times\n",
              static_cast<unsigned long long>(unparks), secs, static_cast<double>(unparks) / secs,
              static_cast<unsigned long long>(at_sleeper), static_cast<unsigned long long>(sleeps),
              static_cast<unsigned long long>(wakeups));
}

// Spawning from a thread outside the runtime onto a sleeping carrier always runs the fiber:
// first one at a time, each aimed at a carrier seen asleep; then from three threads at once with
// automatic (round-robin) placement.
TEST(WakeupTest, SpawnFromOutsideOntoSleepingCarrierAlwaysRuns) {
  // Smaller under TSan: each spawn creates a TSan fiber, which is slow.
  constexpr int kSequential = kTsan ? 4000 : 20000;
  constexpr int kThreads = 3;
  constexpr int kPerThread = kTsan ? 5000 : 50000;

  std::atomic<uint32_t> ran{0};
  std::atomic<uint32_t> wrong_carrier{0};
  rt::Options o;
  o.carriers = 2;
  rt::Runtime runtime(o);

  // Phase 1: one at a time, each onto a carrier that is asleep (or about to be).
  uint64_t aimed_at_sleeper = 0;
  bool ok = true;
  const uint64_t t0 = mono_ns();
  for (int k = 0; k < kSequential && ok; ++k) {
    const int c = k % 2;
    const uint64_t wait_until = mono_ns() + 20'000'000;
    while (!carrier_sleeping(runtime, c) && mono_ns() < wait_until) std::this_thread::yield();
    if (carrier_sleeping(runtime, c)) ++aimed_at_sleeper;
    runtime.spawn([&ran, &wrong_carrier, c] {
      if (rt::this_fiber::carrier_index() != c) wrong_carrier.fetch_add(1);
      ran.fetch_add(1);
      futex_wake_all(ran);
    }, rt::on_carrier(c));
    ok = futex_wait_at_least(ran, static_cast<uint32_t>(k + 1), 5s);
  }
  const double secs1 = static_cast<double>(mono_ns() - t0) / 1e9;
  ASSERT_TRUE(ok) << "a fiber spawned onto a sleeping carrier never ran (" << ran.load() << " of "
                  << kSequential << " ran)";
  EXPECT_EQ(wrong_carrier.load(), 0u);
  EXPECT_GE(aimed_at_sleeper, static_cast<uint64_t>(kSequential) * 9 / 10);

  // Phase 2: three threads spawn in bursts with pauses, so the carriers keep falling asleep.
  const auto mid = runtime.stats();
  std::atomic<uint32_t> ran2{0};
  const uint64_t t1 = mono_ns();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        runtime.spawn([&ran2, total = uint32_t{kThreads * kPerThread}] {
          if (ran2.fetch_add(1) + 1 == total) futex_wake_all(ran2);
        });
        if (i % (16 + t) == 0) std::this_thread::sleep_for(20us);
      }
    });
  for (auto& th : threads) th.join();
  const bool all2 = futex_wait_at_least(ran2, kThreads * kPerThread, 10s);
  const double secs2 = static_cast<double>(mono_ns() - t1) / 1e9;
  runtime.shutdown();
  const auto end = runtime.stats();
  EXPECT_TRUE(all2) << ran2.load() << " of " << kThreads * kPerThread << " spawned fibers ran";
  uint64_t sleeps = 0, wakeups = 0, sleeps2 = 0, wakeups2 = 0;
  for (size_t i = 0; i < end.size(); ++i) {
    sleeps += mid[i].sleeps;
    wakeups += mid[i].wakeups;
    sleeps2 += end[i].sleeps - mid[i].sleeps;
    wakeups2 += end[i].wakeups - mid[i].wakeups;
  }
  EXPECT_GE(wakeups, static_cast<uint64_t>(kSequential) * 9 / 10);  // phase 1: one per spawn
  EXPECT_GE(sleeps2, kTsan ? 100u : 1000u);
  EXPECT_GE(wakeups2, kTsan ? 100u : 1000u);
  std::printf("[wakeup] sequential: %d spawns (%llu at a sleeping carrier) in %.2f s, %llu wakeups; "
              "concurrent: %d spawns in %.2f s, %llu sleeps, %llu wakeups\n",
              kSequential, static_cast<unsigned long long>(aimed_at_sleeper), secs1,
              static_cast<unsigned long long>(wakeups), kThreads * kPerThread, secs2,
              static_cast<unsigned long long>(sleeps2), static_cast<unsigned long long>(wakeups2));
  (void)sleeps;
}
