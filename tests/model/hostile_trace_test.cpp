// Small hostile recordings must cost time and memory linear in their size. Each test writes one
// adversarial shape with the real TraceWriter and checks the in-process part (reader +
// RecordingWindow); with PLATOON_HOSTILE_DIR set the files are kept there, and
// tests/model/hostile_recording_test.sh runs every consumer on them under time and memory limits.
// Every file carries a few raw events beside its hostile snapshots, so that the event exports
// (chrome, perfetto) read the snapshots too instead of refusing a file without events.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "tui/trace/trace_reader.hpp"
#include "tui/trace/trace_writer.hpp"
#include "tui/analysis/window.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

constexpr uint64_t kStart = 1'000'000'000;
constexpr uint64_t kInterval = 100'000'000;

class HostileTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* d = std::getenv("PLATOON_HOSTILE_DIR"); d && *d) {
      dir_ = d;
      std::filesystem::create_directories(dir_);
    } else {
      std::string tmpl = ::testing::TempDir() + "platoon-hostile-XXXXXX";
      ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
      dir_ = tmpl;
      temporary_ = true;
    }
  }
  void TearDown() override {
    if (temporary_) std::filesystem::remove_all(dir_);
  }
  std::unique_ptr<TraceWriter> writer(const std::string& name) {
    TraceMeta meta;
    meta.tool_version = "hostile_trace_test";
    meta.target = name;
    meta.attach_mode = "tp_btf";
    meta.ncpus = 4;
    meta.interval_ns = kInterval;
    meta.start_boottime_ns = kStart;
    meta.start_realtime_ns = kStart;
    std::string error;
    auto w = TraceWriter::create(path(name), meta, &error);
    EXPECT_NE(w, nullptr) << error;
    return w;
  }
  // Reads a file the way report and doctor do: every snapshot into one RecordingWindow,
  // the raw events ignored.
  std::optional<TraceContents> read_into(RecordingWindow& recording, const std::string& name, std::string* error) {
    ReadOptions ro;
    ro.on_event = [](const platoon_event_header&, const void*, size_t) {};
    ro.on_snapshot = [&recording](Snapshot&& s) { recording.add(std::move(s)); };
    return read_trace(path(name), error, ro);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
  bool temporary_ = false;
};

ThreadSample thread(uint32_t tid, uint64_t first_seen, uint64_t run_ns) {
  ThreadSample t;
  t.tid = tid;
  t.pid = 1 + tid / 64;
  t.comm = "t" + std::to_string(tid % 100);
  t.first_seen_ns = first_seen;
  t.run_ns = run_ns;
  t.wait_ns = run_ns / 2;
  t.switches_voluntary = run_ns / 1000;
  t.switch_ins = run_ns / 1000;
  return t;
}

// `n` switch events on CPU 0 from `ts`, two of the file's threads taking turns (so the exports
// pair each switch-in with a switch-out).
bool write_switches(TraceWriter& w, uint64_t ts, uint32_t tid, uint32_t n) {
  std::vector<platoon_ev_switch> ev(n);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t prev = tid + i % 2, next = tid + (i + 1) % 2;
    ev[i].h.ts_ns = ts + i * 1000;
    ev[i].h.type = PLATOON_EV_SWITCH;
    ev[i].h.tid = prev;
    ev[i].prev_pid = 1 + prev / 64;
    ev[i].next_tid = next;
    ev[i].next_pid = 1 + next / 64;
    ev[i].prev_state = 1;
    ev[i].prev_prio = ev[i].next_prio = 120;
    std::snprintf(ev[i].prev_comm, sizeof ev[i].prev_comm, "t%u", prev % 100);
    std::snprintf(ev[i].next_comm, sizeof ev[i].next_comm, "t%u", next % 100);
  }
  return w.write_events(ev.data(), ev.size() * sizeof ev[0], n);
}

// How many raw events a file holds, as the exports read them.
uint64_t count_events(const std::string& file) {
  uint64_t n = 0;
  ReadOptions ro;
  ro.on_event = [&n](const platoon_event_header&, const void*, size_t) { ++n; };
  ro.on_snapshot = [](Snapshot&&) {};
  std::string error;
  EXPECT_TRUE(read_trace(file, &error, ro)) << error;
  return n;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The bound on reading one hostile file. The quadratic loops these files once hit took hours;
// a normal build reads each in a few seconds, a sanitized one (ThreadSanitizer is 5-15 times
// slower) needs more room on a loaded machine.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr double kReadSeconds = 120.0;
#else
constexpr double kReadSeconds = 20.0;
#endif

// (a) One snapshot at the format's limits (131,072 threads and as many pairs), then an empty
// one: every thread vanishes at once, which was ~10^10 steps in RecordingWindow::add.
TEST_F(HostileTrace, HugeSnapshotThenEmpty) {
  {
    auto w = writer("a-huge-then-empty.platoon");
    ASSERT_NE(w, nullptr);
    Snapshot s;
    s.ts_ns = kStart;
    for (uint32_t i = 1; i <= kMaxThreadsPerSnapshot; ++i) s.threads.push_back(thread(i, kStart, 1000 + i));
    for (uint32_t i = 1; i <= kMaxPairsPerSnapshot; ++i)
      s.pairs.push_back({i, PairKind::preempted_by, i % kMaxThreadsPerSnapshot + 1, 1, "p", 3, 300});
    ASSERT_TRUE(w->write_snapshot(s)) << w->error();
    ASSERT_TRUE(write_switches(*w, kStart + kInterval / 2, 1, 16)) << w->error();
    Snapshot empty;
    empty.ts_ns = kStart + kInterval;
    ASSERT_TRUE(w->write_snapshot(empty)) << w->error();
    ASSERT_TRUE(w->finish(std::string(kStopDuration))) << w->error();
  }
  const auto t0 = std::chrono::steady_clock::now();
  RecordingWindow recording;
  std::string error;
  auto c = read_into(recording, "a-huge-then-empty.platoon", &error);
  ASSERT_TRUE(c) << error;
  const Window win = recording.window();
  EXPECT_LT(seconds_since(t0), kReadSeconds);
  EXPECT_EQ(recording.snapshots(), 2u);
  EXPECT_EQ(c->cut_threads, kMaxThreadsPerSnapshot - kKeepThreadsPerSnapshot);
  EXPECT_EQ(c->cut_pairs, kMaxPairsPerSnapshot - kKeepPairsPerSnapshot);
  EXPECT_NE(c->cap_note(), "");
  EXPECT_EQ(win.threads.size(), kKeepThreadsPerSnapshot);
  ASSERT_FALSE(win.threads.empty());
  EXPECT_TRUE(win.threads.front().exited);  // vanished in the second snapshot
  EXPECT_EQ(count_events(path("a-huge-then-empty.platoon")), 16u);
}

// (b) A long recording of short-lived threads: every snapshot brings fresh tids, each lives for
// two snapshots. RecordingWindow keeps a bounded number of them; a kept recording is bounded.
TEST_F(HostileTrace, ManyShortLivedThreads) {
  constexpr uint32_t kSnapshots = 8000, kPerSnapshot = 64;
  {
    auto w = writer("b-short-lived.platoon");
    ASSERT_NE(w, nullptr);
    for (uint32_t k = 0; k < kSnapshots; ++k) {
      Snapshot s;
      s.ts_ns = kStart + k * kInterval;
      const uint32_t first = 1000 + k * (kPerSnapshot / 2);  // half are new, half from k-1
      for (uint32_t i = 0; i < kPerSnapshot; ++i) {
        const uint32_t tid = first + i;
        const uint64_t born = kStart + (i < kPerSnapshot / 2 && k > 0 ? (k - 1) : k) * kInterval;
        s.threads.push_back(thread(tid, born, 1000 * (tid % 997 + 1)));
      }
      ASSERT_TRUE(w->write_snapshot(s)) << w->error();
      ASSERT_TRUE(write_switches(*w, s.ts_ns + kInterval / 2, first, 2)) << w->error();
    }
    ASSERT_TRUE(w->finish(std::string(kStopDuration))) << w->error();
  }
  const auto t0 = std::chrono::steady_clock::now();
  RecordingWindow recording;
  std::string error;
  auto c = read_into(recording, "b-short-lived.platoon", &error);
  ASSERT_TRUE(c) << error;
  const Window win = recording.window();
  EXPECT_LT(seconds_since(t0), kReadSeconds);
  EXPECT_EQ(c->cap_note(), "");  // nothing in the file itself is over a cap
  const uint64_t total = uint64_t(kSnapshots + 1) * (kPerSnapshot / 2);
  EXPECT_EQ(recording.dropped_threads() + win.threads.size(), total);
  EXPECT_GT(recording.dropped_threads(), 0u);
  EXPECT_NE(recording.cap_note(), "");

  // Held whole (top --replay, chrome export): only a prefix within the byte budget is kept.
  ReadOptions whole;
  whole.on_event = [](const platoon_event_header&, const void*, size_t) {};
  whole.max_snapshot_bytes = kKeepSnapshotBytes / 4;
  auto d = read_trace(path("b-short-lived.platoon"), &error, whole);
  ASSERT_TRUE(d) << error;
  EXPECT_GT(d->cut_snapshots, 0u);
  EXPECT_EQ(d->snapshots.size() + d->cut_snapshots, kSnapshots);
  EXPECT_NE(d->cap_note(), "");
  EXPECT_EQ(count_events(path("b-short-lived.platoon")), 2u * kSnapshots);
}

// (c) A ~16 KiB compressed SNAP whose threads carry per-CPU lists of the format's maximum
// length: ~130 MiB of counters in memory. The reader keeps a bounded number and says so.
TEST_F(HostileTrace, PerCpuListsInflate) {
  {
    auto w = writer("c-per-cpu-bomb.platoon");
    ASSERT_NE(w, nullptr);
    for (int k = 0; k < 2; ++k) {
      Snapshot s;
      s.ts_ns = kStart + k * kInterval;
      s.lost_events_per_cpu.assign(kMaxCpusInTrace, 0);
      // Each thread is ~16.4 KB of one-byte varints: the most that fits in one chunk.
      const uint32_t n = (kMaxChunkBytes - (1u << 16)) / (kMaxCpusInTrace + 64);
      for (uint32_t i = 1; i <= n; ++i) {
        s.threads.push_back(thread(i, kStart, 1000 * (k + 1)));
        s.threads.back().cpu_switch_ins.assign(kMaxCpusInTrace, 0);
      }
      ASSERT_TRUE(w->write_snapshot(s)) << w->error();
      ASSERT_TRUE(write_switches(*w, s.ts_ns + kInterval / 2, 1, 8)) << w->error();
    }
    ASSERT_TRUE(w->finish(std::string(kStopDuration))) << w->error();
  }
  EXPECT_LT(std::filesystem::file_size(path("c-per-cpu-bomb.platoon")), 256u << 10);
  std::string error;
  auto c = read_trace(path("c-per-cpu-bomb.platoon"), &error);
  ASSERT_TRUE(c) << error;
  ASSERT_FALSE(c->truncated) << c->truncated_reason;
  ASSERT_EQ(c->snapshots.size(), 2u);
  EXPECT_GT(c->cut_cpu_slots, 0u);
  EXPECT_NE(c->cap_note(), "");
  for (const auto& s : c->snapshots) {
    uint64_t slots = s.lost_events_per_cpu.size();
    for (const auto& t : s.threads) {
      EXPECT_LE(t.cpu_switch_ins.size(), kKeepCpusPerList);
      slots += t.cpu_switch_ins.size();
    }
    EXPECT_LE(slots, kKeepCpuSlotsPerSnapshot);
    EXPECT_GT(s.threads.size(), 900u);  // threads themselves are all kept
  }
  EXPECT_EQ(count_events(path("c-per-cpu-bomb.platoon")), 16u);
}

}  // namespace
}  // namespace platoon::tests
