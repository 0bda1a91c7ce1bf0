// The typed event reader: each record type reaches its callback with its fields, an unknown or
// short record is counted and never visited, and the reorder buffer hands records over in
// (stamp, arrival) order within its horizon, counting the ones that came later than that.
#include "tui/trace/events.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

template <class T>
T record(uint16_t type, uint64_t ts, uint32_t tid) {
  T r{};
  r.h.type = type;
  r.h.ts_ns = ts;
  r.h.tid = tid;
  r.h.cpu = 1;
  return r;
}

// Writes one line per callback: what it was called with.
struct Log : EventVisitor {
  std::vector<std::string> lines;
  void add(const platoon_event_header& h, const std::string& what) {
    lines.push_back(std::to_string(h.ts_ns) + " " + std::to_string(h.tid) + " " + what);
  }
  void on_switch(const platoon_event_header& h, const platoon_ev_switch& e) override {
    add(h, "switch next=" + std::to_string(e.next_tid) + " " + e.next_comm);
  }
  void on_wake(const platoon_event_header& h, const platoon_ev_wake& e, WakeKind kind) override {
    const char* names[] = {"waking", "wakeup", "wakeup_new"};
    add(h, std::string(names[static_cast<int>(kind)]) + " waker=" + std::to_string(e.waker_tid));
  }
  void on_migrate(const platoon_event_header& h, const platoon_ev_migrate& e) override {
    add(h, "migrate " + std::to_string(e.orig_cpu) + ">" + std::to_string(e.dest_cpu));
  }
  void on_exit(const platoon_event_header& h, const platoon_ev_exit& e) override {
    add(h, "exit pid=" + std::to_string(e.pid));
  }
  void on_epoll(const platoon_event_header& h, const platoon_ev_epoll& e) override {
    add(h, "epoll " + std::to_string(e.nevents));
  }
  void on_drain(const platoon_event_header& h, const platoon_ev_runtime& e) override {
    add(h, "drain " + std::to_string(e.a));
  }
  void on_steal(const platoon_event_header& h, const platoon_ev_runtime& e) override {
    add(h, "steal " + std::to_string(e.b));
  }
  void on_request(const platoon_event_header& h, const platoon_ev_request& e) override {
    add(h, "request conn=" + std::to_string(e.conn));
  }
};

TEST(VisitEvent, EachTypeReachesItsCallback) {
  Log log;
  auto sw = record<platoon_ev_switch>(PLATOON_EV_SWITCH, 10, 5);
  sw.next_tid = 6;
  std::strcpy(sw.next_comm, "worker");
  EXPECT_TRUE(visit_event(&sw, sizeof sw, log));
  for (uint16_t type : {PLATOON_EV_WAKING, PLATOON_EV_WAKEUP, PLATOON_EV_WAKEUP_NEW}) {
    auto wk = record<platoon_ev_wake>(type, 20 + type, 6);
    wk.waker_tid = 5;
    EXPECT_TRUE(visit_event(&wk, sizeof wk, log));
  }
  auto mg = record<platoon_ev_migrate>(PLATOON_EV_MIGRATE, 30, 6);
  mg.orig_cpu = 0;
  mg.dest_cpu = 1;
  EXPECT_TRUE(visit_event(&mg, sizeof mg, log));
  auto ex = record<platoon_ev_exit>(PLATOON_EV_EXIT, 40, 6);
  ex.pid = 4;
  EXPECT_TRUE(visit_event(&ex, sizeof ex, log));
  auto ep = record<platoon_ev_epoll>(PLATOON_EV_EPOLL, 50, 5);
  ep.nevents = -4;
  EXPECT_TRUE(visit_event(&ep, sizeof ep, log));
  auto rt = record<platoon_ev_runtime>(PLATOON_EV_DRAIN, 60, 5);
  rt.a = 7;
  EXPECT_TRUE(visit_event(&rt, sizeof rt, log));
  rt = record<platoon_ev_runtime>(PLATOON_EV_STEAL, 70, 5);
  rt.b = 3;
  EXPECT_TRUE(visit_event(&rt, sizeof rt, log));
  auto rq = record<platoon_ev_request>(PLATOON_EV_REQUEST, 80, 6);
  rq.conn = 9;
  EXPECT_TRUE(visit_event(&rq, sizeof rq, log));
  EXPECT_EQ(log.lines, (std::vector<std::string>{"10 5 switch next=6 worker", "22 6 waking waker=5",
                                                 "23 6 wakeup waker=5", "24 6 wakeup_new waker=5",
                                                 "30 6 migrate 0>1", "40 6 exit pid=4", "50 5 epoll -4",
                                                 "60 5 drain 7", "70 5 steal 3", "80 6 request conn=9"}));
}

TEST(VisitEvent, UnknownOrShortRecordsAreNotVisited) {
  Log log;
  auto sw = record<platoon_ev_switch>(PLATOON_EV_SWITCH, 10, 5);
  EXPECT_FALSE(visit_event(&sw, sizeof sw - 1, log));           // one byte short of its struct
  EXPECT_FALSE(visit_event(&sw, sizeof(platoon_event_header) - 1, log));  // not even a header
  sw.h.type = 99;
  EXPECT_FALSE(visit_event(&sw, sizeof sw, log));
  EXPECT_TRUE(log.lines.empty());
}

// Feeds records stamped `stamps` (in that arrival order) through a reader with the given horizon.
std::vector<std::string> through_reader(const std::vector<uint64_t>& stamps, uint64_t horizon,
                                        EventReaderStats* stats = nullptr) {
  Log log;
  EventReader reader(horizon);
  uint32_t arrival = 0;
  for (uint64_t ts : stamps) {
    auto ex = record<platoon_ev_exit>(PLATOON_EV_EXIT, ts, 100);
    ex.pid = arrival++;  // tells equal stamps apart
    reader.add(ex.h, &ex, sizeof ex, log);
  }
  reader.finish(log);
  if (stats) *stats = reader.stats();
  return log.lines;
}

TEST(EventReader, OutOfOrderWithinTheHorizonComesOutSorted) {
  EventReaderStats stats;
  const auto lines = through_reader({30, 10, 20, 50, 40, 40, 60}, 100, &stats);
  EXPECT_EQ(lines, (std::vector<std::string>{"10 100 exit pid=1", "20 100 exit pid=2", "30 100 exit pid=0",
                                             "40 100 exit pid=4", "40 100 exit pid=5",  // arrival order kept
                                             "50 100 exit pid=3", "60 100 exit pid=6"}));
  EXPECT_EQ(stats.records, 7u);
  EXPECT_EQ(stats.late, 0u);
  EXPECT_EQ(stats.max_pending, 7u);  // nothing is a horizon old before the end
}

TEST(EventReader, HoldsOnlyTheHorizonAndCountsLateRecords) {
  // 1000 records 1 apart, neighbours swapped; then one 500 behind the newest, past the horizon.
  std::vector<uint64_t> stamps;
  for (uint64_t i = 0; i < 1000; i += 2) stamps.insert(stamps.end(), {1000 + i + 1, 1000 + i});
  stamps.push_back(1500);
  EventReaderStats stats;
  const auto lines = through_reader(stamps, 100, &stats);
  ASSERT_EQ(lines.size(), 1001u);
  EXPECT_LE(stats.max_pending, 103u);
  EXPECT_EQ(stats.late, 1u);
  size_t out_of_order = 0;
  for (size_t i = 1; i < lines.size(); ++i) out_of_order += std::stoull(lines[i]) < std::stoull(lines[i - 1]);
  EXPECT_EQ(out_of_order, 1u) << "only the late record";
}

TEST(EventReader, ShortAndUnknownRecordsAreCountedNotHeld) {
  Log log;
  EventReader reader;
  auto sw = record<platoon_ev_switch>(PLATOON_EV_SWITCH, 10, 5);
  reader.add(sw.h, &sw, 24, log);  // a switch needs 72 bytes
  auto odd = record<platoon_ev_exit>(77, 20, 5);
  reader.add(odd.h, &odd, sizeof odd, log);
  auto ex = record<platoon_ev_exit>(PLATOON_EV_EXIT, 30, 5);
  reader.add(ex.h, &ex, sizeof ex, log);
  reader.finish(log);
  EXPECT_EQ(reader.stats().records, 3u);
  EXPECT_EQ(reader.stats().skipped, 2u);
  EXPECT_EQ(reader.stats().max_pending, 1u);
  EXPECT_EQ(log.lines, std::vector<std::string>{"30 5 exit pid=0"});
}

}  // namespace
}  // namespace platoon::tests
