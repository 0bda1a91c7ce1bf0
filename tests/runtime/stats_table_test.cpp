// The runtime stats table (runtime/stats_table.hpp): slots are claimed and released whole,
// never-used ones first, a full table counts the carriers it turned away, and carriers book
// their drains into their slot only while the `stats` semaphore is raised, with the same
// fibers_run as their own counters.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/probes.hpp"
#include "runtime/runtime.hpp"
#include "runtime/stats_table.hpp"
#include "tests/runtime/support.hpp"

namespace {
using namespace platoon::test;

const platoon_runtime_stats_slot& slot_of_tid(pid_t tid) {
  const platoon_runtime_stats_slot* found = nullptr;
  for (uint32_t i = 0; i < platoon_runtime_stats.slots_used; ++i)
    if (platoon_runtime_stats.slots[i].tid == tid) found = &platoon_runtime_stats.slots[i];
  EXPECT_TRUE(found) << "no slot for tid " << tid;
  static const platoon_runtime_stats_slot none{};
  return found ? *found : none;
}

// A field as another thread sees it (the carrier writes it with atomic stores).
template <class T>
T ld(const T& v) {
  return __atomic_load_n(&v, __ATOMIC_ACQUIRE);
}

// Raises the semaphore as an attached tracer would, for one scope.
struct Raised {
  Raised() { PLATOON_SEMAPHORE(stats) = 1; }
  ~Raised() { PLATOON_SEMAPHORE(stats) = 0; }
};

TEST(StatsTable, HeaderDescribesTheLayout) {
  EXPECT_EQ(platoon_runtime_stats.magic, PLATOON_RUNTIME_STATS_MAGIC);
  EXPECT_EQ(platoon_runtime_stats.version, PLATOON_RUNTIME_STATS_VERSION);
  EXPECT_EQ(platoon_runtime_stats.slot_bytes, sizeof(platoon_runtime_stats_slot));
  EXPECT_EQ(platoon_runtime_stats.max_slots, uint32_t{PLATOON_RUNTIME_STATS_MAX_SLOTS});
  EXPECT_EQ(platoon_runtime_stats.depth_slots, uint32_t{PLATOON_DRAIN_DEPTH_SLOTS});
  EXPECT_NE(platoon_runtime_stats.slots, nullptr);
}

TEST(StatsTable, ClaimBookReleaseAndReuse) {
  // Earlier tests' carriers may have used every slot once already (then reuse starts at once).
  const bool fresh_left = platoon_runtime_stats.slots_used + 1 < PLATOON_RUNTIME_STATS_MAX_SLOTS;
  rt::StatsSlot a = rt::StatsSlot::claim(111);
  ASSERT_TRUE(a);
  const platoon_runtime_stats_slot& s = platoon_runtime_stats.slots[a.index()];
  const uint32_t seq0 = s.seq;
  EXPECT_EQ(s.tid, 111);
  EXPECT_EQ(s.in_use, 1u);
  EXPECT_EQ(s.drains, 0u);
  a.drain(3, 3, 500);
  a.drain(70, 5, 100);  // depth 64 or more: the last histogram slot
  a.steal(4);
  EXPECT_EQ(s.drains, 2u);
  EXPECT_EQ(s.drain_depth_sum, 73u);
  EXPECT_EQ(s.drain_depth_hist[3], 1u);
  EXPECT_EQ(s.drain_depth_hist[PLATOON_DRAIN_DEPTH_SLOTS - 1], 1u);
  EXPECT_EQ(s.drain_fibers_run, 8u);
  EXPECT_EQ(s.drain_ns, 600u);
  EXPECT_EQ(s.steals, 1u);
  EXPECT_EQ(s.stolen_fibers, 4u);
  EXPECT_EQ(s.seq % 2, 0u) << "the seqlock is even between updates";
  EXPECT_EQ(s.seq, seq0 + 2u * 3u) << "three updates, two increments each";
  const int index = a.index();
  a.release();
  EXPECT_FALSE(a);
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_EQ(s.tid, 111) << "a released slot keeps its last counts for a late reader";
  EXPECT_EQ(s.drains, 2u);

  // Fill the table: the released slot is reused only once every slot was used once, and then
  // from zero; one claim more is turned away and counted.
  const uint64_t overflow0 = platoon_runtime_stats.overflow;
  std::vector<rt::StatsSlot> all;
  for (int i = 0; i < 2 * PLATOON_RUNTIME_STATS_MAX_SLOTS; ++i) {
    rt::StatsSlot c = rt::StatsSlot::claim(1000 + i);
    if (!c) break;
    all.push_back(std::move(c));
  }
  EXPECT_EQ(platoon_runtime_stats.slots_used, uint32_t{PLATOON_RUNTIME_STATS_MAX_SLOTS});
  EXPECT_EQ(platoon_runtime_stats.overflow, overflow0 + 1);
  ASSERT_FALSE(all.empty());
  size_t reused = all.size();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].index() == index) reused = i;
  ASSERT_LT(reused, all.size()) << "the released slot was claimed again";
  if (fresh_left) {
    EXPECT_EQ(reused, all.size() - 1) << "never-used slots go first";
  }
  EXPECT_EQ(s.tid, 1000 + static_cast<int>(reused));
  EXPECT_EQ(s.drains, 0u);
  EXPECT_EQ(s.drain_depth_hist[3], 0u);
  EXPECT_FALSE(rt::StatsSlot::claim(5)) << "full";
  EXPECT_EQ(platoon_runtime_stats.overflow, overflow0 + 2);
  all.clear();
  for (uint32_t i = 0; i < PLATOON_RUNTIME_STATS_MAX_SLOTS; ++i) EXPECT_EQ(platoon_runtime_stats.slots[i].in_use, 0u) << i;
}

// N fibers yielding K times on one carrier: with the semaphore down the carrier's slot does
// not move; raised, its fibers_run equals the carrier's own counter, drains at most that.
TEST(StatsTable, CarriersBookOnlyWhileTheSemaphoreIsRaised) {
#if defined(__SANITIZE_THREAD__)
  // A tracer raises the semaphore from outside TSan's view; raised from this thread, the
  // carrier's plain volatile read of it is a race by TSan's rules.
  GTEST_SKIP() << "under a sanitizer (TSan): the semaphore is a tracer's to raise";
#endif
  constexpr int kFibers = 20, kYields = 50;
  rt::Runtime runtime(carrier_mode(1));
  const pid_t tid = runtime.threads().at(0).tid;
  auto work = [&] {
    std::vector<rt::JoinHandle> hs;
    for (int i = 0; i < kFibers; ++i)
      hs.push_back(runtime.spawn_joinable([] { for (int k = 0; k < kYields; ++k) rt::this_fiber::yield(); }, rt::on_carrier(0)));
    ASSERT_TRUE(join_all_within(hs, 10s));
  };
  const platoon_runtime_stats_slot& s = slot_of_tid(tid);
  EXPECT_EQ(ld(s.in_use), 1u);
  const uint32_t seq0 = ld(s.seq);
  work();
  EXPECT_EQ(ld(s.drains), 0u) << "semaphore down: nothing booked";
  EXPECT_EQ(ld(s.seq), seq0) << "nothing wrote the slot";
  const uint64_t run0 = runtime.stats().at(0).fibers_run;
  {
    Raised raised;
    work();
    // The drain that ran the last fiber books just after it finished: wait for the counts.
    ASSERT_TRUE(wait_until([&] { return ld(s.drain_fibers_run) ==
                                        runtime.stats().at(0).fibers_run - run0; }, 5s));
  }
  const uint64_t ran = runtime.stats().at(0).fibers_run - run0;
  EXPECT_EQ(ran, uint64_t{kFibers} * (kYields + 1));
  EXPECT_EQ(ld(s.drain_fibers_run), ran);
  const uint64_t drains = ld(s.drains);
  EXPECT_GE(drains, 1u);
  EXPECT_LE(drains, ran);
  uint64_t hist = 0;
  for (const uint64_t& h : s.drain_depth_hist) hist += ld(h);
  EXPECT_EQ(hist, drains);
  EXPECT_EQ(ld(s.drain_depth_hist[0]), 0u) << "a drain is booked only when fibers were queued";
  EXPECT_GE(ld(s.drain_depth_sum), drains);
  runtime.shutdown();
  EXPECT_EQ(ld(s.in_use), 0u) << "released when the carrier thread ends";
}

}  // namespace
