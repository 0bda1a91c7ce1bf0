// Thread entries in both of their homes (bpf/collectors/thread_entries.hpp): task-local storage,
// and the stats hash a kernel without it gets (simulated with PLATOON_INJECT_LOAD_FAIL=
// task_storage). In both, an exited thread is reported once with its final counts against
// /proc, the bound on entries is given back when exits are reported or a process is dropped,
// and nothing is counted as untracked while there is room.
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/bpf/fixture.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::testing {
namespace {

using platoon::testing::read_voluntary;
using platoon::testing::this_tid;

class ThreadEntriesTest : public BpfTest, public ::testing::WithParamInterface<bool> {
 protected:
  // GetParam(): entries in task storage; false: in the hash.
  std::unique_ptr<Collector> open_in_place(CollectorOptions o) {
    if (!GetParam()) setenv("PLATOON_INJECT_LOAD_FAIL", "task_storage", 1);
    auto c = open(std::move(o));
    if (c) {
      EXPECT_STREQ(c->thread_store(), GetParam() ? "task storage" : "hash");
    }
    return c;
  }
};

// A thread that blocks 30 times and exits before any snapshot: the snapshot after its exit
// shows it once, exited, with the voluntary switches /proc counted up to its last moment.
TEST_P(ThreadEntriesTest, AnExitedThreadIsReportedOnceWithItsFinalCounts) {
  auto c = open_in_place({});
  ASSERT_TRUE(c);
  pid_t tid = 0;
  long long truth = -1;
  std::thread t([&] {
    tid = this_tid();
    for (int i = 0; i < 30; ++i) usleep(300);
    truth = read_voluntary(tid);
  });
  t.join();
  const snapshot::Snapshot s = c->snapshot();
  const snapshot::ThreadSample* x = find(s, tid);
  ASSERT_TRUE(x) << "the exited thread is in the first snapshot after its exit";
  EXPECT_TRUE(x->exited);
  std::printf("  tid %d: voluntary %llu by BPF, %lld by /proc before its exit\n", tid,
              (unsigned long long)x->switches_voluntary, truth);
  // Not 30: a sleep whose timer fires before schedule() (a stalled vCPU) does not switch.
  ASSERT_GE(truth, 20);
  // The /proc read is the thread's last act but for its exit path (a futex wake at most).
  EXPECT_GE(static_cast<long long>(x->switches_voluntary), truth);
  EXPECT_LE(static_cast<long long>(x->switches_voluntary), truth + 3);
  const snapshot::Snapshot next = c->snapshot();
  EXPECT_FALSE(find(next, tid)) << "reported once, then forgotten";
}

// Room for 16 entries and 6 rounds of 10 threads: as each round's exits are reported their
// room comes back, so all 60 threads are tracked and none is counted as untracked.
TEST_P(ThreadEntriesTest, RoomComesBackAsExitsAreReported) {
  auto c = open_in_place(CollectorOptions{.threads_max = 16});
  ASSERT_TRUE(c);
  const auto [spawned, never, s] = snapshot_thread_rounds(*c, 6, 10, 10, 300);
  EXPECT_EQ(spawned.size(), 60u);
  EXPECT_EQ(never, 0u);
  EXPECT_EQ(s.untracked_threads, 0u);
}

// A child process with three threads that sleep in a loop until killed.
struct Sleepers : platoon::testing::ForkedWorkload {
  Sleepers()
      : ForkedWorkload([] {
          auto loop = [] {
            for (;;) usleep(1000);
          };
          std::thread a(loop), b(loop);
          loop();
        }) {}
  // Its live threads: the three, and its runtime's (none but under TSan).
  size_t threads() const { return 3 + runtime_tids().size(); }
};

size_t threads_of(const snapshot::Snapshot& s, pid_t pid) {
  size_t n = 0;
  for (const auto& t : s.threads) n += t.pid == static_cast<uint32_t>(pid) && !t.exited;
  return n;
}

// Room for one entry more than a process has threads: a dropped process's live threads give
// theirs back, so the next process's are all tracked, and the dropped one's no longer show.
TEST_P(ThreadEntriesTest, ADroppedProcessGivesItsRoomBack) {
  const Sleepers a, b;
  ASSERT_GT(a.pid(), 0);
  ASSERT_GT(b.pid(), 0);
  ASSERT_EQ(a.threads(), b.threads());
  usleep(50 * 1000);  // their threads exist
  CollectorOptions o;
  o.pids = {a.pid()};
  o.threads_max = static_cast<uint32_t>(a.threads() + 1);
  auto c = open_in_place(o);
  ASSERT_TRUE(c);
  usleep(20 * 1000);
  EXPECT_EQ(threads_of(c->snapshot(), a.pid()), a.threads());
  EXPECT_TRUE(c->drop_pid(a.pid()));
  EXPECT_EQ(threads_of(c->snapshot(), a.pid()), 0u);
  EXPECT_TRUE(c->add_pid(b.pid()));
  usleep(20 * 1000);
  const snapshot::Snapshot s = c->snapshot();
  EXPECT_EQ(threads_of(s, b.pid()), b.threads());
  EXPECT_EQ(threads_of(s, a.pid()), 0u);
  EXPECT_EQ(s.untracked_threads, 0u);
}

INSTANTIATE_TEST_SUITE_P(BothPlaces, ThreadEntriesTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "TaskStorage" : "Hash"; });

}  // namespace
}  // namespace platoon::tests::testing
