// One consumer over every model::SnapshotSource: the BPF collector, the procfs sampler, and a
// replay of a recording the BPF source made. Each must show the known spinner (a forked child
// that only spins) as the one thread of its process, running for most of the window. Needs root.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bpf/collectors/sources.hpp"
#include "tests/bpf/fixture.hpp"
#include "tui/analysis/window.hpp"
#include "tui/outputs/output_file.hpp"
#include "tui/trace/replay_source.hpp"
#include "tui/trace/trace_writer.hpp"

namespace platoon::bpf {
namespace {

// A child that spins until killed; killed and reaped on destruction.
class Spinner {
 public:
  Spinner() : pid_(fork()) {
    if (pid_ == 0) {
      for (;;) __asm__ __volatile__("");  // spin: the asm keeps the loop
    }
  }
  ~Spinner() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

// Writes what passes through it to a trace file: the "recording made by the BPF source".
class Recorder final : public model::SnapshotSource {
 public:
  Recorder(model::SnapshotSource& inner, model::TraceWriter& writer) : inner_(inner), writer_(writer) {}
  model::Snapshot snapshot() override {
    model::Snapshot s = inner_.snapshot();
    EXPECT_TRUE(writer_.write_snapshot(s)) << writer_.error();
    return s;
  }
  int events(int timeout_ms, const EventSink& sink) override {
    return inner_.events(timeout_ms, [&](const void* rec, size_t size) {
      writer_.write_events(rec, size, 1);
      sink(rec, size);
    });
  }
  model::Source source() const override { return inner_.source(); }
  std::string attach_mode() const override { return inner_.attach_mode(); }
  std::vector<std::string> notes() const override { return inner_.notes(); }

 private:
  model::SnapshotSource& inner_;
  model::TraceWriter& writer_;
};

// The consumer: a window over two snapshots ~0.5 s apart, events drained between them.
struct Seen {
  std::vector<uint32_t> tids;   // threads of the spinner's process
  double cpu_pct = 0;
  uint64_t events = 0;
};
Seen consume(model::SnapshotSource& src, pid_t pid) {
  const model::Snapshot a = src.snapshot();
  Seen seen;
  for (int i = 0; i < 5; ++i) seen.events += static_cast<uint64_t>(src.events(100, [](const void*, size_t) {}));
  const model::Snapshot b = src.snapshot();
  const model::Window w = model::make_window(a, b);
  for (const auto& t : w.threads) {
    if (t.pid != static_cast<uint32_t>(pid)) continue;
    seen.tids.push_back(t.tid);
    seen.cpu_pct = t.cpu_pct;
  }
  return seen;
}

void expect_spinner(const Seen& seen, pid_t pid, const char* what) {
  ASSERT_EQ(seen.tids, std::vector<uint32_t>{static_cast<uint32_t>(pid)}) << what;
  // A spinner runs whenever it is not preempted: at least a fair share on a loaded 2-CPU box.
  EXPECT_GT(seen.cpu_pct, 10.0) << what;
  EXPECT_LE(seen.cpu_pct, 105.0) << what;
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
  expect_spinner(consume(recorder, spin.pid()), spin.pid(), "bpf");
  ASSERT_TRUE(writer->finish("done")) << writer->error();

  opt.procfs = true;
  auto procfs_src = open_source(opt, error, note);
  ASSERT_TRUE(procfs_src) << error;
  EXPECT_EQ(procfs_src->source(), model::Source::procfs);
  expect_spinner(consume(*procfs_src, spin.pid()), spin.pid(), "procfs");

  auto replay = model::ReplaySource::open(path, error);
  ASSERT_TRUE(replay) << error;
  EXPECT_EQ(replay->source(), model::Source::bpf);
  expect_spinner(consume(*replay, spin.pid()), spin.pid(), "replay");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace platoon::bpf
