// One consumer over every model::SnapshotSource: the BPF collector, the procfs sampler, and a
// replay of a recording the BPF source made. Each must show the known spinner (a forked child
// that only spins) as the one thread of its process, running for most of the window; the
// replay must hand back, field by field, the very snapshots and events the BPF source gave
// while it was recorded. Needs root.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bpf/collectors/sources.hpp"
#include "tests/bpf/fixture.hpp"
#include "tui/analysis/window.hpp"
#include "tui/outputs/output_file.hpp"
#include "tui/trace/replay_source.hpp"
#include "tui/trace/trace_writer.hpp"

namespace platoon::bpf {
namespace {

// A child that spins until killed.
struct Spinner : platoon::testing::ForkedWorkload {
  Spinner()
      : ForkedWorkload([] {
          for (;;) __asm__ __volatile__("");  // spin: the asm keeps the loop
        }) {}
  // The threads a source must show for it: the spinner and its runtime's (none but under TSan).
  std::vector<uint32_t> tids() const {
    std::vector<uint32_t> all = runtime_tids();
    all.push_back(static_cast<uint32_t>(pid()));
    std::sort(all.begin(), all.end());
    return all;
  }
};

// Writes what passes through it to a trace file: the "recording made by the BPF source".
// Keeps what it wrote, to hold the replay to it.
class Recorder final : public model::SnapshotSource {
 public:
  Recorder(model::SnapshotSource& inner, model::TraceWriter& writer) : inner_(inner), writer_(writer) {}
  model::Snapshot snapshot() override {
    model::Snapshot s = inner_.snapshot();
    EXPECT_TRUE(writer_.write_snapshot(s)) << writer_.error();
    snapshots.push_back(s);
    return s;
  }
  int events(int timeout_ms, const EventSink& sink) override {
    return inner_.events(timeout_ms, [&](const void* rec, size_t size) {
      writer_.write_events(rec, size, 1);
      const auto* p = static_cast<const uint8_t*>(rec);
      events_written.emplace_back(p, p + size);
      sink(rec, size);
    });
  }
  model::Source source() const override { return inner_.source(); }
  std::string attach_mode() const override { return inner_.attach_mode(); }
  std::vector<std::string> notes() const override { return inner_.notes(); }

  std::vector<model::Snapshot> snapshots;            // as written, in order
  std::vector<std::vector<uint8_t>> events_written;  // each record's bytes, in order

 private:
  model::SnapshotSource& inner_;
  model::TraceWriter& writer_;
};

// The consumer: a window over two snapshots ~0.5 s apart, events drained between them.
struct Seen {
  std::vector<uint32_t> tids;   // threads of the spinner's process
  double cpu_pct = 0;           // the spinner's (tid = pid)
  double wait_pct = 0;
  std::vector<std::vector<uint8_t>> events;
  std::vector<model::Snapshot> snapshots;
};
Seen consume(model::SnapshotSource& src, pid_t pid) {
  Seen seen;
  seen.snapshots.push_back(src.snapshot());
  for (int i = 0; i < 5; ++i)
    src.events(100, [&](const void* rec, size_t size) {
      const auto* p = static_cast<const uint8_t*>(rec);
      seen.events.emplace_back(p, p + size);
    });
  seen.snapshots.push_back(src.snapshot());
  const model::Window w = model::make_window(seen.snapshots[0], seen.snapshots[1]);
  for (const auto& t : w.threads) {
    if (t.pid != static_cast<uint32_t>(pid)) continue;
    seen.tids.push_back(t.tid);
    if (t.tid == static_cast<uint32_t>(pid)) {
      seen.cpu_pct = t.cpu_pct;
      seen.wait_pct = t.wait_pct;
    }
  }
  return seen;
}

void expect_spinner(const Seen& seen, const Spinner& spinner, const char* what) {
  ASSERT_EQ(seen.tids, spinner.tids()) << what;
  // A spinner runs whenever it is not preempted: at least a fair share on a loaded 2-CPU box.
  EXPECT_GT(seen.cpu_pct, 10.0) << what;
  EXPECT_LE(seen.cpu_pct, 105.0) << what;
}

// Every listed counter, maximum, histogram slot and per-CPU list equal (thread_fields.hpp).
struct ExpectEveryListedFieldEqual {
  const model::ThreadSample& got;
  const model::ThreadSample& want;
  void counter(uint64_t model::ThreadSample::*m, const char* name) { EXPECT_EQ(got.*m, want.*m) << name; }
  void maximum(uint64_t model::ThreadSample::*m, const char* name) { EXPECT_EQ(got.*m, want.*m) << name; }
  template <size_t N>
  void hist(std::array<uint64_t, N> model::ThreadSample::*m, const char* name) {
    EXPECT_EQ(got.*m, want.*m) << name;
  }
  void per_cpu(std::vector<uint64_t> model::ThreadSample::*m, const char* name) { EXPECT_EQ(got.*m, want.*m) << name; }
};

void expect_same_snapshot(const model::Snapshot& got, const model::Snapshot& want) {
  EXPECT_EQ(got.ts_ns, want.ts_ns);
  EXPECT_EQ(got.source, want.source);
  EXPECT_EQ(got.fields, want.fields);
  EXPECT_EQ(got.lost_events_per_cpu, want.lost_events_per_cpu);
  EXPECT_EQ(got.untracked_threads, want.untracked_threads);
  EXPECT_EQ(got.lost_pairs, want.lost_pairs);
  EXPECT_EQ(got.lost_targets, want.lost_targets);
  EXPECT_EQ(got.tick_ns, want.tick_ns);
  ASSERT_EQ(got.cpus.size(), want.cpus.size());
  for (size_t i = 0; i < want.cpus.size(); ++i) {
    const model::CpuTimes &g = got.cpus[i], &w = want.cpus[i];
    EXPECT_EQ(std::tie(g.cpu, g.user, g.nice, g.system, g.idle, g.iowait, g.irq, g.softirq, g.steal),
              std::tie(w.cpu, w.user, w.nice, w.system, w.idle, w.iowait, w.irq, w.softirq, w.steal)) << "cpu " << i;
  }
  ASSERT_EQ(got.cgroups.size(), want.cgroups.size());
  for (size_t i = 0; i < want.cgroups.size(); ++i) {
    const model::CgroupCpu &g = got.cgroups[i], &w = want.cgroups[i];
    EXPECT_EQ(std::tie(g.path, g.version, g.quota_us, g.period_us, g.nr_periods, g.nr_throttled, g.throttled_ns, g.usage_ns),
              std::tie(w.path, w.version, w.quota_us, w.period_us, w.nr_periods, w.nr_throttled, w.throttled_ns, w.usage_ns))
        << "cgroup " << w.path;
  }
  ASSERT_EQ(got.threads.size(), want.threads.size());
  for (size_t i = 0; i < want.threads.size(); ++i) {
    const model::ThreadSample &g = got.threads[i], &w = want.threads[i];
    SCOPED_TRACE("tid " + std::to_string(w.tid));
    EXPECT_EQ(std::tie(g.tid, g.pid, g.comm, g.exited, g.first_seen_ns, g.last_cpu, g.cgroup, g.cpu_overflow),
              std::tie(w.tid, w.pid, w.comm, w.exited, w.first_seen_ns, w.last_cpu, w.cgroup, w.cpu_overflow));
    model::for_each_thread_field(ExpectEveryListedFieldEqual{g, w});
  }
  ASSERT_EQ(got.pairs.size(), want.pairs.size());
  for (size_t i = 0; i < want.pairs.size(); ++i) {
    const model::PairSample &g = got.pairs[i], &w = want.pairs[i];
    EXPECT_EQ(std::tie(g.tid, g.kind, g.other_tid, g.other_pid, g.other_comm, g.count, g.ns),
              std::tie(w.tid, w.kind, w.other_tid, w.other_pid, w.other_comm, w.count, w.ns)) << "pair " << i;
  }
}

using SourcesTest = testing::BpfTest;

TEST_F(SourcesTest, OneConsumerOverBpfProcfsAndReplay) {
  Spinner spin;
  SourceOptions opt;
  opt.pids = {spin.pid()};
  opt.record_events = true;
  std::string error, note;

  const std::string path = ::testing::TempDir() + "/sources_test.trace";
  auto file = model::OutputFile::create(path, model::OutputFile::Existing::replace, &error);
  ASSERT_TRUE(file) << error;
  auto bpf_src = open_source(opt, error, note);
  ASSERT_TRUE(bpf_src) << error;
  ASSERT_EQ(bpf_src->source(), model::Source::bpf) << note;
  model::TraceMeta meta;
  meta.source = bpf_src->source();
  meta.attach_mode = bpf_src->attach_mode();
  auto writer = model::TraceWriter::create(std::move(*file), meta, {}, &error);
  ASSERT_TRUE(writer) << error;
  Recorder recorder(*bpf_src, *writer);
  const Seen live = consume(recorder, spin.pid());
  expect_spinner(live, spin, "bpf");
  ASSERT_TRUE(writer->finish("done")) << writer->error();

  opt.procfs = true;
  auto procfs_src = open_source(opt, error, note);
  ASSERT_TRUE(procfs_src) << error;
  EXPECT_EQ(procfs_src->source(), model::Source::procfs);
  expect_spinner(consume(*procfs_src, spin.pid()), spin, "procfs");

  auto replay = model::ReplaySource::open(path, error);
  ASSERT_TRUE(replay) << error;
  EXPECT_EQ(replay->source(), model::Source::bpf);
  EXPECT_EQ(replay->attach_mode(), bpf_src->attach_mode());
  const Seen replayed = consume(*replay, spin.pid());
  expect_spinner(replayed, spin, "replay");
  std::filesystem::remove(path);
  // What the replay claims: the consumer sees the recording as it saw the live source, so the
  // same snapshots (every field the format stores, which is all of them), the same events
  // between them, byte for byte, and no snapshot past the recorded ones.
  EXPECT_EQ(replay->count(), recorder.snapshots.size());
  ASSERT_EQ(replayed.snapshots.size(), recorder.snapshots.size());
  for (size_t i = 0; i < recorder.snapshots.size(); ++i) {
    SCOPED_TRACE("snapshot " + std::to_string(i));
    expect_same_snapshot(replayed.snapshots[i], recorder.snapshots[i]);
  }
  EXPECT_EQ(replayed.events, recorder.events_written);
  EXPECT_EQ(replayed.events, live.events);
  EXPECT_EQ(replayed.tids, live.tids);
  EXPECT_EQ(replayed.cpu_pct, live.cpu_pct);
  EXPECT_EQ(replayed.wait_pct, live.wait_pct);
}

}  // namespace
}  // namespace platoon::bpf
