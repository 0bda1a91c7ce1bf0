// ReplaySource: a recording played back as a source. The streaming mode (rewind = false, doctor
// FILE) must play every snapshot and hand over each interval's events exactly once, in order,
// however long the recording; the rewinding mode (top --replay) seeks.
#include <gtest/gtest.h>

#include <vector>

#include "tests/model/builders.hpp"
#include "tui/trace/events.hpp"
#include "tui/trace/replay_source.hpp"
#include "tui/trace/trace_writer.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

using namespace test;

constexpr uint32_t kSnapshots = 300;

// Snapshot k at k seconds, with k exit events before it (tid = k, so each interval's events
// say which interval they belong to), and 3 more after the last snapshot.
std::string write_recording() {
  const std::string path = ::testing::TempDir() + "/replay_source_test.trace";
  TraceMeta meta;
  meta.interval_ns = kSec;
  std::string error;
  auto w = TraceWriter::create(path, meta, &error);
  EXPECT_TRUE(w) << error;
  auto exits = [&](uint32_t tid, uint32_t n) {
    std::vector<platoon_ev_exit> ev(n);
    for (auto& e : ev) {
      e.h.ts_ns = tid * kSec;
      e.h.type = PLATOON_EV_EXIT;
      e.h.tid = tid;
    }
    EXPECT_TRUE(w->write_events(ev.data(), ev.size() * sizeof ev[0], n));
  };
  for (uint32_t k = 0; k < kSnapshots; ++k) {
    if (k) exits(k, k);
    EXPECT_TRUE(w->write_snapshot(snapshot_at(k * kSec, {thread_sample(1, 1, "t")})));
  }
  exits(kSnapshots, 3);
  EXPECT_TRUE(w->finish("duration"));
  return path;
}

TEST(ReplaySource, StreamingPlaysEverySnapshotAndEachIntervalsEventsOnce) {
  const std::string path = write_recording();
  std::string error;
  auto r = ReplaySource::open(path, error, {.rewind = false});
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->count(), 2u);   // two ahead, not the whole file
  std::vector<uint32_t> per_interval;
  auto take_events = [&] {
    uint32_t n = 0, wrong = 0;
    const uint32_t want = static_cast<uint32_t>(per_interval.size());
    r->events(0, [&](const void* rec, size_t size) {
      auto h = event_as<platoon_event_header>(rec, size);
      ++n;
      wrong += !h || h->tid != want;
    });
    EXPECT_EQ(wrong, 0u) << "interval " << want;
    per_interval.push_back(n);
  };
  for (uint32_t k = 0; k < kSnapshots; ++k) {
    take_events();
    EXPECT_EQ(r->remaining() <= 1, k == kSnapshots - 1) << k;
    EXPECT_EQ(r->snapshot().ts_ns, k * kSec);
  }
  take_events();
  EXPECT_EQ(r->snapshot().ts_ns, (kSnapshots - 1) * kSec);   // past the end: the last again
  take_events();                                              // handed over already
  ASSERT_EQ(per_interval.size(), kSnapshots + 2);
  for (uint32_t k = 0; k < kSnapshots; ++k) EXPECT_EQ(per_interval[k], k) << k;
  EXPECT_EQ(per_interval[kSnapshots], 3u);
  EXPECT_EQ(per_interval[kSnapshots + 1], 0u);
  EXPECT_TRUE(r->contents().complete);
  EXPECT_EQ(r->contents().snapshot_count, kSnapshots);
}

TEST(ReplaySource, RewindingSeeks) {
  const std::string path = write_recording();
  std::string error;
  auto r = ReplaySource::open(path, error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->count(), kSnapshots);
  r->seek(7);
  EXPECT_EQ(r->snapshot().ts_ns, 7 * kSec);
  r->seek(2);
  EXPECT_EQ(r->snapshot().ts_ns, 2 * kSec);
  EXPECT_EQ(r->position(), 3u);
}

}  // namespace
}  // namespace platoon::tests
