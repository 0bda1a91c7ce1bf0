// Time blocked in epoll_wait against the workload's own clock. Under tp_btf the blocked time
// starts at the thread's voluntary switch-out inside the call (its syscall number, read from
// its saved registers) and only the exit tracepoints are attached; under raw_tp the enter
// tracepoints mark the start. Either way: calls that sleep T ms add about T ms, calls that
// return at once add (almost) nothing, and sleeping outside epoll (nanosleep) adds nothing.
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/bpf/fixture.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::testing {
namespace {

using platoon::testing::Worker;

constexpr int kBlockingCalls = 100;
constexpr int kTimeoutMs = 2;
constexpr int kReadyCalls = 2000;
constexpr int kSleeps = 100;

struct Truth {
  uint64_t blocking_ns = 0;    // wall time inside the calls that timed out, by the thread's clock
  uint64_t ready_ns = 0;       // wall time inside the calls that returned an event at once
};

// kBlockingCalls calls that sleep until their timeout, kReadyCalls that return one ready event
// without sleeping, and kSleeps nanosleeps outside epoll.
void workload(Truth* truth) {
  const int idle = epoll_create1(0), ready = epoll_create1(0);
  const int efd = eventfd(1, 0);  // always readable (level-triggered)
  epoll_event ev{};
  ev.events = EPOLLIN;
  epoll_ctl(ready, EPOLL_CTL_ADD, efd, &ev);
  epoll_event out[4];
  for (int i = 0; i < kBlockingCalls; ++i) {
    const uint64_t t0 = snapshot::boottime_ns();
    epoll_wait(idle, out, 4, kTimeoutMs);
    truth->blocking_ns += snapshot::boottime_ns() - t0;
  }
  for (int i = 0; i < kReadyCalls; ++i) {
    const uint64_t t0 = snapshot::boottime_ns();
    epoll_wait(ready, out, 4, 0);
    truth->ready_ns += snapshot::boottime_ns() - t0;
  }
  for (int i = 0; i < kSleeps; ++i) usleep(2000);
  close(efd);
  close(ready);
  close(idle);
}

bool loaded(const Collector& c, const std::string& part) {
  for (const auto& p : c.program_stats())
    if (p.name.find(part) != std::string::npos) return true;
  return false;
}

struct EpollRecord {
  uint64_t exit_ns, enter_ns;
  int64_t nevents;
};

class EpollBlockedTest : public BpfTest {
 protected:
  void check(bool raw_tp) {
    CollectorOptions o;
    o.force_raw_tp = raw_tp;
    o.record_events = true;
    auto c = open(o);
    ASSERT_TRUE(c);
    // The enter hook is there only where the switch hook cannot tell.
    EXPECT_EQ(loaded(*c, "_enter"), raw_tp);
    EXPECT_TRUE(loaded(*c, "_exit"));

    Truth truth;
    Worker w([&truth] { workload(&truth); });
    w.wait_parked();
    const snapshot::Snapshot snap = c->snapshot();
    std::vector<EpollRecord> recs;
    while (c->poll_events(0, [&](const void* p, size_t n) {
             const auto* h = static_cast<const platoon_event_header*>(p);
             if (n < sizeof(platoon_ev_epoll) || h->type != PLATOON_EV_EPOLL || h->tid != static_cast<uint32_t>(w.tid()))
               return;
             platoon_ev_epoll e;
             std::memcpy(&e, p, sizeof e);
             recs.push_back({e.h.ts_ns, e.enter_ns, e.nevents});
           }) > 0) {
    }
    const snapshot::ThreadSample* t = find(snap, w.tid());
    ASSERT_TRUE(t);
    const uint64_t floor_ns = uint64_t{kBlockingCalls} * kTimeoutMs * 1'000'000;
    std::printf("  %s: io_cycles %llu, io_blocked %.3f ms; thread's clock: %.3f ms in the %d sleeping calls "
                "(timeouts alone %.1f ms), %.3f ms in the %d ready ones; %zu epoll records\n",
                raw_tp ? "raw_tp" : "tp_btf", (unsigned long long)t->io_cycles, t->io_blocked_ns / 1e6,
                truth.blocking_ns / 1e6, kBlockingCalls, floor_ns / 1e6, truth.ready_ns / 1e6, kReadyCalls,
                recs.size());
    EXPECT_EQ(t->io_cycles, uint64_t{kBlockingCalls + kReadyCalls});
    EXPECT_EQ(t->io_events, uint64_t{kReadyCalls});
    // Inside the calls, and at least the timeouts' sleep; the nanosleeps (200 ms) are not in
    // it, and neither is more than the ready calls' own time.
    EXPECT_LE(t->io_blocked_ns, truth.blocking_ns + truth.ready_ns);
    EXPECT_GE(t->io_blocked_ns, floor_ns * 95 / 100);
    // Every call has its record; the sleeping ones span their sleep, the ready ones did not sleep.
    ASSERT_EQ(recs.size(), size_t{kBlockingCalls + kReadyCalls});
    int long_spans = 0;
    for (const EpollRecord& r : recs) {
      ASSERT_LE(r.enter_ns, r.exit_ns);
      const uint64_t span = r.exit_ns - r.enter_ns;
      if (r.nevents == 0) {
        EXPECT_GE(span, uint64_t{kTimeoutMs} * 1'000'000 * 9 / 10);
        ++long_spans;
      } else {
        EXPECT_EQ(r.nevents, 1);
        EXPECT_LT(span, uint64_t{kTimeoutMs} * 1'000'000 / 2);
      }
    }
    EXPECT_EQ(long_spans, kBlockingCalls);
  }
};

TEST_F(EpollBlockedTest, SwitchHookBooksTheSleepInsideTheCallOnly) { check(false); }
TEST_F(EpollBlockedTest, EnterHookUnderRawTpGivesTheSame) { check(true); }

}  // namespace
}  // namespace platoon::tests::testing
