// The runtime's own drain/steal aggregates (runtime/stats_table.hpp), read by the collector from
// the target's memory (bpf/collectors/runtime_stats_reader.cpp) instead of a uprobe hit per
// drain. The target is a real platoon-runtime process (drain_stats_bench --workload) whose own
// account of its drains is the truth: its poll observer counts the drains that ran fibers and
// their fibers, its counters the steals; the raw drain events (the per-hit uprobe, asked for
// with drain_events) give every drain's depth independently of the table. Needs root.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bpf/collectors/collector.hpp"
#include "bpf/collectors/runtime_stats_reader.hpp"
#include "bpf/platoon.h"
#include "tests/bpf/fixture.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

using testing::find;
using testing::lost;

// What the workload says about one carrier after a run.
struct Truth {
  pid_t tid = 0;
  uint64_t drains = 0, fibers = 0, steals = 0, stolen = 0;
};

// drain_stats_bench --workload as a child with its stdin and stdout on pipes.
class Workload {
 public:
  static std::string binary() {
    return (std::filesystem::path(std::filesystem::read_symlink("/proc/self/exe")).parent_path() / "drain_stats_bench")
        .string();
  }

  explicit Workload(std::vector<std::string> args) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    const std::string bin = binary();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      std::vector<char*> argv{const_cast<char*>(bin.c_str()), const_cast<char*>("--workload")};
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(bin.c_str(), argv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
    std::string line = read_line();
    if (std::sscanf(line.c_str(), "ready pid %d", &ready_pid_) != 1) return;
    while (static_cast<int>(tids_.size()) < carriers(args)) {
      int index = 0, tid = 0;
      if (std::sscanf(read_line().c_str(), "carrier %d %d", &index, &tid) != 2) return;
      tids_.push_back(tid);
    }
  }
  ~Workload() {
    if (to_ >= 0) {
      [[maybe_unused]] ssize_t w = write(to_, "quit\n", 5);
      close(to_);
    }
    if (from_ >= 0) close(from_);
    if (pid_ > 0) {
      for (int i = 0; i < 200 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) usleep(10000);
      if (kill(pid_, 0) == 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
      }
    }
  }
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  bool ok() const { return ready_pid_ == pid_ && !tids_.empty(); }
  pid_t pid() const { return pid_; }
  const std::vector<pid_t>& tids() const { return tids_; }

  // Runs FIBERS fibers yielding YIELDS times on carrier 0; the runtime's account, per carrier.
  std::vector<Truth> run(int fibers, int yields) {
    const std::string cmd = "run " + std::to_string(fibers) + " " + std::to_string(yields) + "\n";
    std::vector<Truth> out;
    if (write(to_, cmd.data(), cmd.size()) != static_cast<ssize_t>(cmd.size())) return out;
    for (size_t i = 0; i < tids_.size(); ++i) {
      Truth t;
      int index = 0, tid = 0;
      unsigned long long d = 0, f = 0, s = 0, st = 0;
      if (std::sscanf(read_line().c_str(), "carrier %d %d drains %llu fibers %llu steals %llu stolen %llu", &index,
                      &tid, &d, &f, &s, &st) != 6)
        return {};
      t = {tid, d, f, s, st};
      out.push_back(t);
    }
    return out;
  }

 private:
  static int carriers(const std::vector<std::string>& args) {
    for (size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == "--carriers") return std::atoi(args[i + 1].c_str());
    return 1;
  }
  // One line, waiting at most 20 s for it (a hung child fails the test, not the suite).
  std::string read_line() {
    while (true) {
      const size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      pollfd p{from_, POLLIN, 0};
      if (poll(&p, 1, 20000) <= 0) return {};
      char chunk[512];
      const ssize_t n = read(from_, chunk, sizeof chunk);
      if (n <= 0) return {};
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

  pid_t pid_ = -1;
  int ready_pid_ = 0;
  int to_ = -1, from_ = -1;
  std::string buf_;
  std::vector<pid_t> tids_;
};

// The raw drain events of one thread, as the per-hit uprobe saw them.
struct Events {
  uint64_t drains = 0, depth_sum = 0, fibers = 0;
  std::array<uint64_t, PLATOON_BATCH_SLOTS> hist{};
};

std::map<pid_t, Events> drain_events(Collector& c) {
  std::map<pid_t, Events> out;
  auto sink = [&](const void* data, size_t size) {
    if (size < sizeof(platoon_ev_runtime)) return;
    platoon_ev_runtime e;
    std::memcpy(&e, data, sizeof e);
    if (e.h.type != PLATOON_EV_DRAIN) return;
    Events& ev = out[static_cast<pid_t>(e.h.tid)];
    ++ev.drains;
    ev.depth_sum += static_cast<uint64_t>(e.a);
    ev.fibers += static_cast<uint64_t>(e.b);
    ++ev.hist[std::min<uint64_t>(static_cast<uint64_t>(e.a), PLATOON_BATCH_SLOTS - 1)];
  };
  while (c.poll_events(0, sink) > 0) {
  }
  return out;
}

bool has_note(const Collector& c, const std::string& part) {
  for (const auto& n : c.notes()) {
    std::printf("  note: %s\n", n.c_str());
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

class RuntimeStatsTest : public testing::BpfTest {
 protected:
  void SetUp() override {
    BpfTest::SetUp();
    if (IsSkipped()) return;
    if (access(Workload::binary().c_str(), X_OK) != 0) GTEST_SKIP() << Workload::binary() << " not built";
  }
};

// 20 fibers yielding 50 times on one carrier: the snapshot's drain counts equal the runtime's
// own, and the raw events (recorded alongside, asked for) agree drain by drain.
TEST_F(RuntimeStatsTest, SnapshotCountsEqualTheRuntimesOwn) {
  Workload w({});
  ASSERT_TRUE(w.ok());
  CollectorOptions o;
  o.pids = {w.pid()};
  o.record_events = true;
  o.drain_events = true;
  auto c = open(o);
  ASSERT_TRUE(c);
  EXPECT_TRUE(has_note(*c, "read from its runtime stats table, raw drain events from probes"));
  const snapshot::Snapshot s0 = c->snapshot();
  const std::vector<Truth> truth = w.run(20, 50);
  ASSERT_EQ(truth.size(), 1u);
  const snapshot::Snapshot s1 = c->snapshot();
  const std::map<pid_t, Events> events = drain_events(*c);
  ASSERT_EQ(lost(s1), 0u);

  const snapshot::ThreadSample* before = find(s0, w.tids()[0]);
  const snapshot::ThreadSample* t = find(s1, w.tids()[0]);
  ASSERT_TRUE(t);
  if (before) {
    EXPECT_EQ(before->drains, 0u) << "counts start at attach";
  }
  std::printf("  runtime: %llu drains, %llu fibers; snapshot: %llu drains, depth sum %llu, %llu fibers, %.1f us\n",
              (unsigned long long)truth[0].drains, (unsigned long long)truth[0].fibers,
              (unsigned long long)t->drains, (unsigned long long)t->drain_depth_sum,
              (unsigned long long)t->drain_fibers_run, t->drain_ns / 1e3);
  EXPECT_EQ(truth[0].fibers, 20u * 51u);
  EXPECT_EQ(t->drains, truth[0].drains);
  EXPECT_EQ(t->drain_fibers_run, truth[0].fibers);
  ASSERT_TRUE(events.count(w.tids()[0]));
  const Events& e = events.at(w.tids()[0]);
  EXPECT_EQ(e.drains, t->drains) << "one raw event per drain: the events-only program books nothing twice";
  EXPECT_EQ(e.fibers, t->drain_fibers_run);
  EXPECT_EQ(e.depth_sum, t->drain_depth_sum);
  for (int i = 0; i < PLATOON_BATCH_SLOTS; ++i) EXPECT_EQ(e.hist[i], t->drain_depth_hist[i]) << "depth " << i;
  EXPECT_GT(t->drain_ns, 0u);
  EXPECT_LT(t->drain_ns, s1.ts_ns - s0.ts_ns) << "drain time within the window";
}

// Two carriers with stealing: each carrier's steals and stolen fibers equal its counters.
TEST_F(RuntimeStatsTest, StealsEqualTheRuntimesCounters) {
  Workload w({"--carriers", "2", "--stealing"});
  ASSERT_TRUE(w.ok());
  auto c = open({.pids = {w.pid()}});
  ASSERT_TRUE(c);
  const std::vector<Truth> truth = w.run(16, 200);
  ASSERT_EQ(truth.size(), 2u);
  const snapshot::Snapshot s = c->snapshot();
  uint64_t steals = 0;
  for (const Truth& tr : truth) {
    const snapshot::ThreadSample* t = find(s, tr.tid);
    ASSERT_TRUE(t) << tr.tid;
    std::printf("  carrier tid %d: runtime %llu drains %llu fibers %llu steals %llu stolen; snapshot %llu %llu %llu %llu\n",
                tr.tid, (unsigned long long)tr.drains, (unsigned long long)tr.fibers, (unsigned long long)tr.steals,
                (unsigned long long)tr.stolen, (unsigned long long)t->drains, (unsigned long long)t->drain_fibers_run,
                (unsigned long long)t->steals, (unsigned long long)t->stolen_fibers);
    EXPECT_EQ(t->drains, tr.drains);
    EXPECT_EQ(t->drain_fibers_run, tr.fibers);
    EXPECT_EQ(t->steals, tr.steals);
    EXPECT_EQ(t->stolen_fibers, tr.stolen);
    steals += tr.steals;
  }
  if (steals == 0) std::printf("  note: no steal happened (a busy machine); steal counts compared at 0\n");
}

// No tracer: the semaphore is down and the table does not move. While a collector is attached
// (aggregates only: no raw drain events even though it records) it moves; once it is gone, it
// stops again.
TEST_F(RuntimeStatsTest, DetachedProcessPaysNothing) {
  Workload w({});
  ASSERT_TRUE(w.ok());
  const pid_t tid = w.tids()[0];
  std::string why;
  auto reader = RuntimeStatsReader::open(w.pid(), &why);
  ASSERT_TRUE(reader) << why;
  std::printf("  table found in %s\n", reader->where().c_str());
  ASSERT_EQ(w.run(10, 20).size(), 1u);
  auto counts = reader->read();
  EXPECT_EQ(counts.count(tid) ? counts.at(tid).drains : 0u, 0u) << "semaphore down: table unchanged";
  EXPECT_EQ(counts.count(tid) ? counts.at(tid).drain_fibers_run : 0u, 0u);

  uint64_t during = 0;
  {
    auto c = open({.pids = {w.pid()}, .record_events = true});
    ASSERT_TRUE(c);
    const std::vector<Truth> truth = w.run(10, 20);
    ASSERT_EQ(truth.size(), 1u);
    const snapshot::Snapshot s = c->snapshot();
    const snapshot::ThreadSample* t = find(s, tid);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->drain_fibers_run, 10u * 21u);
    EXPECT_TRUE(drain_events(*c).empty()) << "raw drain events only when asked for";
    counts = reader->read();
    ASSERT_TRUE(counts.count(tid));
    EXPECT_EQ(counts.at(tid).drains, t->drains) << "the same table, read by both";
    during = counts.at(tid).drain_fibers_run;
    EXPECT_EQ(during, 10u * 21u);
  }
  ASSERT_EQ(w.run(10, 20).size(), 1u);
  counts = reader->read();
  EXPECT_EQ(counts.at(tid).drain_fibers_run, during) << "detached again: the semaphore dropped, the table stopped";
}

// A process without the table (this test binary has no runtime): drains and steals are booked
// per probe hit as before, and the notes say so (the probes fired: collector_test.cpp).
TEST_F(RuntimeStatsTest, WithoutTheTableProbesBook) {
  auto c = open();
  ASSERT_TRUE(c);
  std::string why;
  EXPECT_FALSE(RuntimeStatsReader::open(getpid(), &why));
  EXPECT_NE(why.find("no symbol platoon_runtime_stats"), std::string::npos) << why;
  EXPECT_TRUE(has_note(*c, "no runtime stats table in"));
}

}  // namespace
}  // namespace platoon::tests
