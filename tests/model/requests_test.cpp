// Request latency in the model: the log-linear histogram against the values themselves, the
// grouping of records and windows, and the trace round trip of groups and request records.
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/model/temp_dir.hpp"
#include "tui/trace/events.hpp"
#include "tui/trace/trace_reader.hpp"
#include "tui/trace/trace_writer.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

using snapshot::LatencyHistogram;

// Every value lies in its bucket, and the bucket is at most 1/64 of the value wide, over the
// whole range a wait can take (1 ns to hours) and at each power-of-two edge.
TEST(LatencyHistogram, EveryValueIsInItsBucketWithinOneSixtyFourth) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> values;
  for (int shift = 0; shift < 63; ++shift) {
    const uint64_t p = uint64_t{1} << shift;
    for (uint64_t v : {p - 1, p, p + 1, p + p / 2}) values.push_back(v);
  }
  for (int i = 0; i < 20000; ++i) values.push_back(rng() >> (rng() % 63));
  for (uint64_t v : values) {
    const uint32_t b = LatencyHistogram::bucket_of(v);
    ASSERT_LE(LatencyHistogram::bucket_low(b), v) << v;
    ASSERT_GE(LatencyHistogram::bucket_high(b), v) << v;
    const double width = double(LatencyHistogram::bucket_high(b) - LatencyHistogram::bucket_low(b) + 1);
    ASSERT_LE(width, std::max(1.0, double(v) / 64.0)) << v;
    if (b > 0) {
      ASSERT_EQ(LatencyHistogram::bucket_high(b - 1) + 1, LatencyHistogram::bucket_low(b)) << v;
    }
  }
  EXPECT_LT(LatencyHistogram::bucket_of(~uint64_t{0}), 4096u);  // kMaxHistogramBuckets
}

// Percentiles against the sorted values: never below the exact rank's value, at most 1/64 above.
TEST(LatencyHistogram, PercentilesMatchTheSortedValues) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> wait(std::log(50'000.0), 1.5);  // ~50 µs, a long tail
  std::vector<uint64_t> v;
  LatencyHistogram h;
  for (int i = 0; i < 100000; ++i) {
    v.push_back(static_cast<uint64_t>(wait(rng)));
    h.add(v.back());
  }
  std::sort(v.begin(), v.end());
  EXPECT_EQ(h.count(), v.size());
  for (double p : {1.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
    const size_t rank = std::max<size_t>(1, size_t(std::ceil(p / 100.0 * double(v.size()))));
    const uint64_t exact = v[rank - 1];
    EXPECT_GE(h.percentile_ns(p), exact) << p;
    EXPECT_LE(double(h.percentile_ns(p)), double(exact) * (1 + 1.0 / 64) + 1) << p;
  }
}

TEST(LatencyHistogram, WindowSubtractsAnEarlierState) {
  LatencyHistogram a, b;
  for (uint64_t v : {10u, 1000u, 1000u, 50000u}) a.add(v);
  b = a;
  for (uint64_t v : {1000u, 900000u}) b.add(v);
  const LatencyHistogram d = b.minus(a);
  EXPECT_EQ(d.count(), 2u);
  EXPECT_EQ(d.percentile_ns(50), LatencyHistogram::bucket_high(LatencyHistogram::bucket_of(1000)));
  EXPECT_EQ(d.percentile_ns(100), LatencyHistogram::bucket_high(LatencyHistogram::bucket_of(900000)));
  EXPECT_EQ(LatencyHistogram().percentile_ns(99), 0u);
}

platoon_ev_request record(uint16_t side, uint32_t tid, uint64_t wait, uint64_t service, uint16_t flags = 0) {
  platoon_ev_request r{};
  r.h.type = PLATOON_EV_REQUEST;
  r.h.tid = tid;
  r.h.ts_ns = 1'000'000'000 + wait + service;
  r.pid = 77;
  r.side = side;
  r.flags = flags;
  r.family = 2;  // AF_INET
  r.local_port = 8080;
  r.remote_port = side == PLATOON_REQ_SERVER ? 40000 + tid : 9090;
  r.remote_addr[0] = 127;
  r.remote_addr[3] = 1;
  r.wait_ns = wait;
  r.service_ns = service;
  if (!(flags & PLATOON_REQ_UNATTRIBUTED)) {
    r.state_ns[PLATOON_REQ_RUNNABLE] = wait / 2;
    r.state_ns[PLATOON_REQ_BLOCKED] = wait - wait / 2;
  }
  return r;
}

// Server requests group by local port and reader, client ones by remote endpoint and reader;
// a partial request is counted but stays out of the histograms, an unattributed one keeps its
// wait apart from the states.
TEST(RequestGroups, RecordsGroupAndWindowsSubtract) {
  std::vector<snapshot::RequestGroup> groups;
  uint64_t lost = 0;
  for (auto r : {record(PLATOON_REQ_SERVER, 1, 1000, 5000), record(PLATOON_REQ_SERVER, 1, 3000, 5000),
                 record(PLATOON_REQ_SERVER, 1, 9, 9, PLATOON_REQ_PARTIAL | PLATOON_REQ_UNATTRIBUTED),
                 record(PLATOON_REQ_SERVER, 2, 2000, 1000, PLATOON_REQ_UNATTRIBUTED),
                 record(PLATOON_REQ_CLIENT, 1, 100, 700000)})
    snapshot::add_request(groups, r, 16, &lost);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(lost, 0u);
  const snapshot::RequestGroup& s1 = groups[0];
  EXPECT_EQ(s1.key.side, snapshot::RequestSide::server);
  EXPECT_EQ(s1.key.port, 8080);
  EXPECT_EQ(s1.count, 2u);
  EXPECT_EQ(s1.partial, 1u);
  EXPECT_EQ(s1.wait.count(), 2u);
  EXPECT_EQ(s1.state_ns[PLATOON_REQ_RUNNABLE] + s1.state_ns[PLATOON_REQ_BLOCKED], 4000u);
  EXPECT_EQ(groups[1].unattributed, 1u);
  EXPECT_EQ(groups[1].unattributed_ns, 2000u);
  EXPECT_EQ(groups[2].key.side, snapshot::RequestSide::client);
  EXPECT_EQ(groups[2].key.remote, "127.0.0.1");
  EXPECT_EQ(groups[2].key.port, 9090);

  auto earlier = groups;
  snapshot::add_request(groups, record(PLATOON_REQ_SERVER, 1, 500, 500), 16, &lost);
  snapshot::add_request(groups, record(PLATOON_REQ_SERVER, 3, 500, 500), 3, &lost);  // a fourth group: over the bound
  EXPECT_EQ(lost, 1u);
  const auto window = snapshot::requests_minus(groups, earlier);
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].count, 1u);
  EXPECT_EQ(window[0].partial, 0u);
  EXPECT_EQ(window[0].total.count(), 1u);
}

class RequestTraceTest : public test::TempDirTest {};

// Groups and records come back from a file as written; a file written without them reads as
// a producer that had none.
TEST_F(RequestTraceTest, GroupsAndRecordsRoundTrip) {
  Snapshot snap;
  snap.ts_ns = 2'000'000'000;
  snap.fields = kFieldsBpf | kFieldRequests;
  std::vector<platoon_ev_request> records;
  for (uint64_t i = 0; i < 300; ++i) records.push_back(record(PLATOON_REQ_SERVER, 1 + i % 2, 1000 + 37 * i, 90000 + i * i));
  records.push_back(record(PLATOON_REQ_CLIENT, 1, 40, 600000, PLATOON_REQ_OVERLAPPED));
  for (const auto& r : records) snapshot::add_request(snap.requests, r, 64, &snap.lost_requests);
  snap.lost_requests = 3;
  const std::string file = path("requests.plt");
  std::string error;
  auto w = TraceWriter::create(file, TraceMeta{}, {}, &error);
  ASSERT_TRUE(w) << error;
  ASSERT_TRUE(w->write_snapshot(snap)) << w->error();
  ASSERT_TRUE(w->write_events(records.data(), records.size() * sizeof records[0], records.size())) << w->error();
  ASSERT_TRUE(w->finish(std::string(kStopDuration))) << w->error();
  auto c = read_trace(file, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->meta.version, 3u);
  ASSERT_EQ(c->snapshots.size(), 1u);
  EXPECT_EQ(c->snapshots[0].fields, snap.fields);
  EXPECT_EQ(c->snapshots[0].lost_requests, 3u);
  ASSERT_EQ(c->snapshots[0].requests.size(), 3u);
  EXPECT_EQ(c->snapshots[0].requests, snap.requests);
  size_t seen = 0;
  EXPECT_TRUE(for_each_event(*c, [&](const platoon_event_header& h, const void* rec, size_t size) {
    ASSERT_EQ(h.type, PLATOON_EV_REQUEST);
    ASSERT_EQ(size, sizeof(platoon_ev_request));
    EXPECT_EQ(std::memcmp(rec, &records[seen], size), 0) << seen;
    ++seen;
  }));
  EXPECT_EQ(seen, records.size());
}

}  // namespace
}  // namespace platoon::tests
