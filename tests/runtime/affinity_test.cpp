// Affinity: with work stealing off, a fiber never runs anywhere but on its home carrier, however
// it gets suspended (yield, park, sleep_for, a fiber Mutex/CondVar inside a Channel) and whoever
// makes it runnable again (a fiber on the same carrier, a fiber on the other carrier, a timer).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "runtime/runtime.hpp"
#include "runtime/sync.hpp"
#include "tests/runtime/support.hpp"

namespace {
using namespace platoon::test;  // rt, Clock, chrono literals, waits, Watchdog: support.hpp

pid_t gettid_now() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// Everything the fibers report; outlives the runtime (declared before it in each test).
struct Checker {
  pid_t carrier_tid[2] = {0, 0};
  std::atomic<uint64_t> resumptions{0};  // returns from yield/park/sleep_for
  std::atomic<uint64_t> checks{0};       // every check, including after non-suspending sends
  std::atomic<uint64_t> violations{0};
  std::atomic<uint64_t> cross_carrier_unparks{0};
  std::atomic<int> finished{0};
  std::mutex mu;
  std::string first_violation;

  // Called by a fiber when it starts, right after every yield/park/sleep_for (`resumed`), and
  // after Channel operations (which may or may not have suspended it).
  void check(int home, const char* where, uint64_t* local_count, bool resumed = true) {
    if (resumed) ++*local_count;
    checks.fetch_add(1, std::memory_order_relaxed);
    const int idx = rt::this_fiber::carrier_index();
    const int hidx = rt::this_fiber::home_index();
    const pid_t tid = gettid_now();
    if (idx != home || hidx != home || tid != carrier_tid[home]) {
      if (violations.fetch_add(1) == 0) {
        std::lock_guard lk(mu);
        first_violation = std::string(where) + ": expected carrier " + std::to_string(home) +
                          " (tid " + std::to_string(carrier_tid[home]) + "), ran on carrier " +
                          std::to_string(idx) + " home " + std::to_string(hidx) + " tid " +
                          std::to_string(tid);
      }
    }
  }
  void done(uint64_t local_count) {
    resumptions.fetch_add(local_count);
    finished.fetch_add(1);
  }
};

// Ping-pong between a fiber on carrier 0 and one on carrier 1: every turn is a cross-thread
// unpark of a parked (or about to park) fiber.
struct Pair {
  std::atomic<rt::Fiber*> f[2] = {nullptr, nullptr};
  std::atomic<uint64_t> seq{0};  // side (seq % 2) has the turn
  std::atomic<int> done{0};      // sides past their last unpark()
};

}  // namespace

TEST(AffinityTest, NoFiberLeavesItsHomeWithoutStealing) {
  constexpr int kYieldersPerCarrier = 50;
  constexpr int kYieldsEach = 2000;          // 200,000 yields in all
  constexpr int kPairs = 64;
  constexpr int kTurnsPerSide = 2000;        // 256,000 cross-carrier unparks
  constexpr int kSleepersPerCarrier = 16;
  constexpr int kSleepsEach = 40;                     // 1,280 timer wakeups
  constexpr int kChannelMessages = 50000;    // 0 -> 1 -> 0 through two Channels

  Checker ck;
  auto pairs = std::make_unique<Pair[]>(kPairs);
  rt::Channel<int> ch01(16), ch10(16);

  rt::Runtime runtime(stealing_carriers(false));
  for (const auto& t : runtime.threads()) {
    if (t.name.rfind("carrier-0", 0) == 0) ck.carrier_tid[0] = t.tid;
    if (t.name.rfind("carrier-1", 0) == 0) ck.carrier_tid[1] = t.tid;
  }
  ASSERT_NE(ck.carrier_tid[0], 0);
  ASSERT_NE(ck.carrier_tid[1], 0);
  ASSERT_NE(ck.carrier_tid[0], ck.carrier_tid[1]);

  int fibers = 0;
  for (int c = 0; c < 2; ++c) {
    // Yielders.
    for (int i = 0; i < kYieldersPerCarrier; ++i, ++fibers)
      runtime.spawn([&ck, c] {
        uint64_t n = 0;
        ck.check(c, "yielder start", &n, false);
        for (int k = 0; k < kYieldsEach; ++k) {
          rt::this_fiber::yield();
          ck.check(c, "yielder after yield", &n);
        }
        ck.done(n);
      }, rt::on_carrier(c));
    // Sleepers (timer events in the home carrier's loop).
    for (int i = 0; i < kSleepersPerCarrier; ++i, ++fibers)
      runtime.spawn([&ck, c, i] {
        uint64_t n = 0;
        ck.check(c, "sleeper start", &n, false);
        for (int k = 0; k < kSleepsEach; ++k) {
          rt::this_fiber::sleep_for(std::chrono::microseconds(50 + 37 * ((i + k) % 7)));
          ck.check(c, "sleeper after sleep_for", &n);
        }
        ck.done(n);
      }, rt::on_carrier(c));
  }
  // Ping-pong pairs across the carriers.
  for (int p = 0; p < kPairs; ++p) {
    for (int side = 0; side < 2; ++side, ++fibers)
      runtime.spawn([&ck, pr = &pairs[p], side] {
        uint64_t n = 0;
        ck.check(side, "pair start", &n, false);
        pr->f[side].store(rt::this_fiber::self());
        while (pr->f[1 - side].load() == nullptr) {
          rt::this_fiber::yield();
          ck.check(side, "pair after yield", &n);
        }
        rt::Fiber* other = pr->f[1 - side].load();
        for (int t = 0; t < kTurnsPerSide; ++t) {
          while (pr->seq.load() % 2 != static_cast<uint64_t>(side)) {
            rt::this_fiber::park();
            ck.check(side, "pair after park", &n);
          }
          pr->seq.fetch_add(1);
          rt::unpark(other);
          ck.cross_carrier_unparks.fetch_add(1, std::memory_order_relaxed);
        }
        // The other side may still unpark us once more: stay alive until it has finished its turns
        // and made its last unpark() call, so no unpark ever targets a finished (recycled) record.
        while (pr->seq.load() < 2ull * kTurnsPerSide) {
          rt::this_fiber::park();
          ck.check(side, "pair after final park", &n);
        }
        pr->done.fetch_add(1);
        while (pr->done.load() < 2) {
          rt::this_fiber::yield();
          ck.check(side, "pair after final yield", &n);
        }
        ck.done(n);
      }, rt::on_carrier(side));
  }
  // Channels: Mutex/CondVar waits woken from the other carrier.
  std::atomic<int64_t> sum_at_1{0}, sum_at_0{0};
  fibers += 4;
  runtime.spawn([&] {
    uint64_t n = 0;
    ck.check(0, "producer start", &n, false);
    for (int i = 1; i <= kChannelMessages; ++i) {
      ch01.send(i);
      ck.check(0, "producer after send", &n, false);
    }
    ch01.close();
    ck.done(n);
  }, rt::on_carrier(0));
  runtime.spawn([&] {
    uint64_t n = 0;
    ck.check(1, "forwarder start", &n, false);
    while (auto v = ch01.recv()) {
      ck.check(1, "forwarder after recv", &n, false);
      sum_at_1.fetch_add(*v, std::memory_order_relaxed);
      ch10.send(*v);
      ck.check(1, "forwarder after send", &n, false);
    }
    ch10.close();
    ck.done(n);
  }, rt::on_carrier(1));
  runtime.spawn([&] {
    uint64_t n = 0;
    ck.check(0, "final consumer start", &n, false);
    while (auto v = ch10.recv()) {
      ck.check(0, "final consumer after recv", &n, false);
      sum_at_0.fetch_add(*v, std::memory_order_relaxed);
    }
    ck.done(n);
  }, rt::on_carrier(0));
  runtime.spawn([&] {  // a busy fiber that also spawns onto the other carrier from inside
    uint64_t n = 0;
    ck.check(1, "spawner start", &n, false);
    std::atomic<int> children{0};
    for (int i = 0; i < 200; ++i) {
      rt::this_fiber::runtime()->spawn([&ck, &children] {
        uint64_t m = 0;
        ck.check(0, "child start", &m, false);
        rt::this_fiber::yield();
        ck.check(0, "child after yield", &m);
        ck.resumptions.fetch_add(m);
        children.fetch_add(1);
      }, rt::on_carrier(0));
    }
    while (children.load() < 200) {
      rt::this_fiber::sleep_for(100us);
      ck.check(1, "spawner after sleep", &n);
    }
    ck.done(n);
  }, rt::on_carrier(1));

  const auto t0 = std::chrono::steady_clock::now();
  const bool all_done = wait_until([&] { return ck.finished.load() == fibers; }, 20s);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  runtime.shutdown();  // unwinds anything still parked if the wait timed out
  const auto stats = runtime.stats();  // final: every carrier has stopped

  EXPECT_TRUE(all_done) << "only " << ck.finished.load() << " of " << fibers << " fibers finished in 20 s";
  {
    std::lock_guard lk(ck.mu);
    EXPECT_EQ(ck.violations.load(), 0u) << "first violation: " << ck.first_violation;
  }
  EXPECT_GE(ck.resumptions.load(), 100000u);
  EXPECT_GE(ck.cross_carrier_unparks.load(), static_cast<uint64_t>(2 * kPairs * kTurnsPerSide));
  const int64_t expected_sum = static_cast<int64_t>(kChannelMessages) * (kChannelMessages + 1) / 2;
  EXPECT_EQ(sum_at_1.load(), expected_sum);
  EXPECT_EQ(sum_at_0.load(), expected_sum);
  ASSERT_EQ(stats.size(), 2u);
  uint64_t fibers_run = 0, wakeups = 0;
  for (const auto& s : stats) {
    EXPECT_EQ(s.off_home_runs, 0u) << s.name;
    EXPECT_EQ(s.steals, 0u) << s.name;
    EXPECT_EQ(s.stolen_fibers, 0u) << s.name;
    fibers_run += s.fibers_run;
    wakeups += s.wakeups;
  }
  // Every resumption the fibers counted was a run by some carrier (the carriers count more:
  // spurious resumptions inside Channel waits, the final run to completion).
  EXPECT_GE(fibers_run, ck.resumptions.load());
  std::printf("[affinity] %llu resumptions (%llu checks, %llu cross-carrier unparks) in %.2f s; "
              "carriers ran %llu fibers, woke %llu times\n",
              static_cast<unsigned long long>(ck.resumptions.load()),
              static_cast<unsigned long long>(ck.checks.load()),
              static_cast<unsigned long long>(ck.cross_carrier_unparks.load()), secs,
              static_cast<unsigned long long>(fibers_run), static_cast<unsigned long long>(wakeups));
}

// The same property for fibers unparked from threads outside the runtime and spawned from
// outside: the outside thread's unpark lands in the home carrier's inbox, never elsewhere.
TEST(AffinityTest, OutsideUnparksResumeAtHome) {
  constexpr int kFibers = 32;  // 16 per carrier
  constexpr int kRounds = 2000;
  Checker ck;
  struct Slot {
    std::atomic<rt::Fiber*> self{nullptr};
    std::atomic<uint64_t> posted{0};
    std::atomic<uint64_t> seen{0};
  };
  auto slots = std::make_unique<Slot[]>(kFibers);
  std::atomic<bool> stop{false};

  rt::Runtime runtime(stealing_carriers(false));
  for (const auto& t : runtime.threads()) {
    if (t.name.rfind("carrier-0", 0) == 0) ck.carrier_tid[0] = t.tid;
    if (t.name.rfind("carrier-1", 0) == 0) ck.carrier_tid[1] = t.tid;
  }
  for (int i = 0; i < kFibers; ++i) {
    const int home = i % 2;
    // Automatic placement from outside the runtime is round robin; the fiber learns its home.
    runtime.spawn([&ck, &stop, s = &slots[i], home] {
      uint64_t n = 0;
      ck.check(home, "outside-unparked start", &n, false);
      s->self.store(rt::this_fiber::self());
      while (!stop.load()) {
        const uint64_t p = s->posted.load();
        if (p != s->seen.load()) {
          s->seen.store(p);
          continue;
        }
        rt::this_fiber::park();
        ck.check(home, "outside-unparked after park", &n);
      }
      ck.done(n);
    }, rt::on_carrier(home));
  }
  ASSERT_TRUE(wait_until([&] {
    for (int i = 0; i < kFibers; ++i) if (!slots[i].self.load()) return false;
    return true;
  }, 5s));

  bool ok = true;
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  for (int r = 1; r <= kRounds && ok; ++r) {
    for (int i = 0; i < kFibers; ++i) {
      slots[i].posted.store(static_cast<uint64_t>(r));
      rt::unpark(slots[i].self.load());
    }
    for (int i = 0; i < kFibers && ok; ++i)
      while (slots[i].seen.load() != static_cast<uint64_t>(r)) {
        if (std::chrono::steady_clock::now() > deadline) { ok = false; break; }
        std::this_thread::yield();
      }
  }
  EXPECT_TRUE(ok) << "a fiber unparked from outside never resumed";
  stop.store(true);
  for (int i = 0; i < kFibers; ++i) rt::unpark(slots[i].self.load());
  EXPECT_TRUE(wait_until([&] { return ck.finished.load() == kFibers; }, 5s));
  runtime.shutdown();
  const auto stats = runtime.stats();

  {
    std::lock_guard lk(ck.mu);
    EXPECT_EQ(ck.violations.load(), 0u) << "first violation: " << ck.first_violation;
  }
  EXPECT_GE(ck.resumptions.load(), static_cast<uint64_t>(kFibers) * kRounds);
  for (const auto& s : stats) EXPECT_EQ(s.off_home_runs, 0u) << s.name;
}
