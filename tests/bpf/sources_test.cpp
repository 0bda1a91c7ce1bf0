// One consumer over every snapshot::SnapshotSource: the BPF collector, the procfs sampler, and a
// replay of a recording the BPF source made. Each must show the known spinner (a forked child
// that only spins) as the one thread of its process, running for most of the window; the
// replay must hand back, field by field, the very snapshots and events the BPF source gave
// while it was recorded. Needs root.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bpf/collectors/sources.hpp"
#include "tests/bpf/fixture.hpp"
#include "tests/model/expect_snapshot.hpp"
#include "tui/analysis/window.hpp"
#include "tui/outputs/output_file.hpp"
#include "tui/trace/replay_source.hpp"
#include "tui/trace/trace_writer.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
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
class Recorder final : public snapshot::SnapshotSource {
 public:
  Recorder(snapshot::SnapshotSource& inner, trace::TraceWriter& writer) : inner_(inner), writer_(writer) {}
  snapshot::Snapshot snapshot() override {
    snapshot::Snapshot s = inner_.snapshot();
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
  snapshot::Source source() const override { return inner_.source(); }
  std::string attach_mode() const override { return inner_.attach_mode(); }
  std::vector<std::string> notes() const override { return inner_.notes(); }

  std::vector<snapshot::Snapshot> snapshots;         // as written, in order
  std::vector<std::vector<uint8_t>> events_written;  // each record's bytes, in order

 private:
  snapshot::SnapshotSource& inner_;
  trace::TraceWriter& writer_;
};

// The consumer: a window over two snapshots ~0.5 s apart, events drained between them.
struct Seen {
  std::vector<uint32_t> tids;   // threads of the spinner's process
  double cpu_pct = 0;           // the spinner's (tid = pid)
  double wait_pct = 0;
  std::vector<std::vector<uint8_t>> events;
  std::vector<snapshot::Snapshot> snapshots;
};
Seen consume(snapshot::SnapshotSource& src, pid_t pid) {
  Seen seen;
  seen.snapshots.push_back(src.snapshot());
  for (int i = 0; i < 5; ++i)
    src.events(100, [&](const void* rec, size_t size) {
      const auto* p = static_cast<const uint8_t*>(rec);
      seen.events.emplace_back(p, p + size);
    });
  seen.snapshots.push_back(src.snapshot());
  const analysis::Window w = analysis::make_window(seen.snapshots[0], seen.snapshots[1]);
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

using test::expect_same_snapshot;

using SourcesTest = testing::BpfTest;

TEST_F(SourcesTest, OneConsumerOverBpfProcfsAndReplay) {
  Spinner spin;
  SourceOptions opt;
  opt.pids = {spin.pid()};
  opt.record_events = true;
  std::string error, note;

  const std::string path = ::testing::TempDir() + "/sources_test.trace";
  auto file = outputs::OutputFile::create(path, outputs::OutputFile::Existing::replace, &error);
  ASSERT_TRUE(file) << error;
  auto bpf_src = open_source(opt, error, note);
  ASSERT_TRUE(bpf_src) << error;
  ASSERT_EQ(bpf_src->source(), snapshot::Source::bpf) << note;
  trace::TraceMeta meta;
  meta.source = bpf_src->source();
  meta.attach_mode = bpf_src->attach_mode();
  auto writer = trace::TraceWriter::create(std::move(*file), meta, {}, &error);
  ASSERT_TRUE(writer) << error;
  Recorder recorder(*bpf_src, *writer);
  const Seen live = consume(recorder, spin.pid());
  expect_spinner(live, spin, "bpf");
  ASSERT_TRUE(writer->finish("done")) << writer->error();

  opt.procfs = true;
  auto procfs_src = open_source(opt, error, note);
  ASSERT_TRUE(procfs_src) << error;
  EXPECT_EQ(procfs_src->source(), snapshot::Source::procfs);
  expect_spinner(consume(*procfs_src, spin.pid()), spin, "procfs");

  auto replay = trace::ReplaySource::open(path, error);
  ASSERT_TRUE(replay) << error;
  EXPECT_EQ(replay->source(), snapshot::Source::bpf);
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
}  // namespace platoon::tests
