// Records staged per CPU (bpf/stage.bpf.h): a CPU that goes quiet right after its last records
// still delivers them at the reader's next poll (flush_stages, run on each CPU by user space),
// so nothing waits for that CPU's next event; and every record comes out whole, one per event,
// from ring records that hold a batch of them.
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include "tests/bpf/fixture.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::testing {
namespace {

using platoon::testing::Worker;

constexpr int kCalls = 30;  // far fewer records than a stage holds: none is flushed for being full

TEST_F(BpfTest, AQuietCpusStagedRecordsArriveAtTheNextPoll) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs 2 CPUs";
  CollectorOptions o;
  o.record_events = true;
  auto c = open(o);
  ASSERT_TRUE(c);
  for (const auto& n : c->notes()) EXPECT_EQ(n.find("on its own"), std::string::npos) << "staging is off: " << n;

  Worker w([] {
    platoon::testing::pin_to_cpu(1);
    const int ep = epoll_create1(0), efd = eventfd(1, 0);
    epoll_event ev{};
    ev.events = EPOLLIN;
    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
    epoll_event out[4];
    for (int i = 0; i < kCalls; ++i) epoll_wait(ep, out, 4, 0);
    close(efd);
    close(ep);
  });
  w.wait_parked();  // from here on the worker makes no event: its CPU's stage is not flushed by one

  int epoll_records = 0;
  bool well_formed = true;
  std::map<uint16_t, uint64_t> last_ts_on_cpu;
  bool per_cpu_ordered = true;
  auto sink = [&](const void* p, size_t n) {
    const std::optional<platoon_event_header> h = header_of(p, n);
    well_formed &= h.has_value();
    if (!h) return;
    well_formed &= n == platoon_event_size(h->type);
    if (h->type == PLATOON_EV_SWITCH) {  // switch records never nest: one CPU's come in order
      per_cpu_ordered &= h->ts_ns >= last_ts_on_cpu[h->cpu];
      last_ts_on_cpu[h->cpu] = h->ts_ns;
    }
    if (h->type == PLATOON_EV_EPOLL && h->tid == static_cast<uint32_t>(w.tid())) {
      platoon_ev_epoll e;
      std::memcpy(&e, p, sizeof e);
      EXPECT_EQ(e.nevents, 1);
      EXPECT_EQ(e.h.cpu, 1);
      ++epoll_records;
    }
  };
  // Two polls that do not wait: the records cannot come from a later event on CPU 1.
  c->poll_events(0, sink);
  c->poll_events(0, sink);
  EXPECT_EQ(epoll_records, kCalls);
  EXPECT_TRUE(well_formed);
  EXPECT_TRUE(per_cpu_ordered);
  const snapshot::Snapshot snap = c->snapshot();  // find() points into it: it must outlive t
  const snapshot::ThreadSample* t = find(snap, w.tid());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->io_cycles, uint64_t{kCalls});
  EXPECT_EQ(lost(c->snapshot()), 0u);
}

}  // namespace
}  // namespace platoon::tests::testing
