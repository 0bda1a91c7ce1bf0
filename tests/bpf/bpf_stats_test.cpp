// The BPF run-time stats platoon holds on (bpf/collectors/bpf_stats.hpp) and the cost a BPF
// source reads through them: on while held, off once released, against the kernel's own view of
// it (the anon_inode:bpf-stats fd in /proc/self/fd, and a program's run count standing still or
// not). Needs root; skipped when kernel.bpf_stats_enabled=1 (then nothing turns on or off).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "bpf/collectors/bpf_stats.hpp"
#include "bpf/collectors/sources.hpp"
#include "bpf/snapshot/clock.hpp"
#include "tests/bpf/fixture.hpp"
#include "tests/bpf/stats_sysctl.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

// Stats fds this process holds, as the kernel lists them.
int stats_fds() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(e.path(), ec);
    n += !ec && target.string() == "anon_inode:bpf-stats";
  }
  return n;
}

// The sched_switch programs' runs and run time, summed.
snapshot::ProgramCost switch_programs(const snapshot::CostReading& r) {
  snapshot::ProgramCost sum{"switch", 0, 0, 0};
  for (const auto& p : r.programs)
    if (p.name.find("switch") != std::string::npos) {
      sum.run_cnt += p.run_cnt;
      sum.run_time_ns += p.run_time_ns;
    }
  return sum;
}
uint64_t switch_runs(const snapshot::CostReading& r) { return switch_programs(r).run_cnt; }
uint64_t switch_runs(const snapshot::SnapshotSource& s) { return switch_runs(s.cost()); }

// Context switches on this thread: sched_switch runs for each, traced or not.
void switch_a_lot() {
  for (int i = 0; i < 200; ++i) usleep(100);
}

// Context switches on the whole machine so far (/proc/stat ctxt): the kernel counts one where
// the sched_switch tracepoint fires, so it is how often the switch program ran.
uint64_t machine_switches() {
  std::ifstream in("/proc/stat");
  std::string key;
  uint64_t v = 0;
  while (in >> key) {
    if (key == "ctxt") {
      in >> v;
      return v;
    }
    in.ignore(1 << 16, '\n');
  }
  return 0;
}

// Threads of this process, other than the main one, that block SIGINT, SIGTERM and SIGHUP.
int threads_blocking_stop_signals() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    if (e.path().filename() == std::to_string(getpid())) continue;
    std::ifstream in(e.path() / "status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("SigBlk:", 0) == 0) {
        const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
        const unsigned long long stop = (1ull << (SIGINT - 1)) | (1ull << (SIGTERM - 1)) | (1ull << (SIGHUP - 1));
        n += (mask & stop) == stop;
      }
  }
  return n;
}

class BpfStatsTest : public testing::BpfTest {
 protected:
  void SetUp() override {
    testing::BpfTest::SetUp();
    if (IsSkipped()) return;
    // Off, so that what turns the stats on is what the test holds; put back after it.
    ASSERT_TRUE(sysctl_.written()) << "cannot write kernel.bpf_stats_enabled";
    ASSERT_FALSE(bpf_stats_sysctl_on());
    ASSERT_EQ(stats_fds(), 0) << "this process already holds the stats: a test before leaked its fd";
  }
  testing::StatsSysctl sysctl_{0};
};

TEST_F(BpfStatsTest, HeldOnWhileAliveAndOffAfter) {
  {
    BpfStatsHold hold = BpfStatsHold::acquire(true);
    ASSERT_TRUE(hold.counting()) << hold.why();
    EXPECT_TRUE(hold.holds());
    EXPECT_EQ(stats_fds(), 1);
    EXPECT_FALSE(bpf_stats_sysctl_on());  // the sysctl shows only what was written to it
    BpfStatsHold moved = std::move(hold);
    EXPECT_EQ(stats_fds(), 1);            // moved, not duplicated or closed
    EXPECT_TRUE(moved.holds());
  }
  EXPECT_EQ(stats_fds(), 0);
  const BpfStatsHold look = BpfStatsHold::acquire(false);
  EXPECT_FALSE(look.counting());
  EXPECT_FALSE(look.holds());
  EXPECT_EQ(look.why(), "--no-bpf-stats and kernel.bpf_stats_enabled=0");
}

TEST_F(BpfStatsTest, SourceCostCountsOnlyWithTheStats) {
  SourceOptions opt;
  opt.pids = {getpid()};
  std::string error, note;
  {
    opt.bpf_stats = collectors::BpfStatsMode::off;
    auto src = open_source(opt, error, note);
    ASSERT_TRUE(src) << error;
    ASSERT_EQ(src->source(), snapshot::Source::bpf) << note;
    EXPECT_EQ(src->cost().stats, snapshot::BpfStats::unknown);
    switch_a_lot();
    EXPECT_EQ(switch_runs(*src), 0u);     // nobody holds the stats: the kernel does not count
  }
  opt.bpf_stats = collectors::BpfStatsMode::always;
  auto src = open_source(opt, error, note);
  ASSERT_TRUE(src) << error;
  EXPECT_EQ(src->cost().stats, snapshot::BpfStats::on) << src->cost().why;
  const uint64_t before = switch_runs(*src);
  switch_a_lot();
  EXPECT_GE(switch_runs(*src) - before, 200u);  // at least one sched_switch run per sleep
  src.reset();
  EXPECT_EQ(stats_fds(), 0);
  opt.procfs = true;
  auto procfs = open_source(opt, error, note);
  ASSERT_TRUE(procfs) << error;
  EXPECT_EQ(procfs->cost().stats, snapshot::BpfStats::none);
}

// Sampled (the default of record, top and the exporter): the stats fd is held for about a tenth
// of the time, the counted time says so, and the runs scaled from it match the machine's own
// count of context switches over the same span.
TEST_F(BpfStatsTest, SampledStatsHoldAWindowOfEverySecond) {
  SourceOptions opt;
  opt.pids = {getpid()};
  opt.bpf_stats = collectors::BpfStatsMode::sampled;
  std::string error, note;
  // ThreadSanitizer starts its runtime's thread, which blocks every signal, at a process's first
  // pthread_create: a thread started and joined first puts it among those counted before.
  std::thread([] {}).join();
  const int blocking = threads_blocking_stop_signals();
  auto src = open_source(opt, error, note);
  ASSERT_TRUE(src) << error;
  ASSERT_EQ(src->source(), snapshot::Source::bpf) << note;
  // The sampler's thread takes no signals: Ctrl-C goes to the command's loop.
  EXPECT_EQ(threads_blocking_stop_signals(), blocking + 1);
  // A steady stream of switches, so that a tenth of the time stands for the whole.
  std::atomic<bool> stop{false};
  std::thread sleeper([&] {
    while (!stop) usleep(200);
  });
  const snapshot::CostReading a = src->cost();
  const uint64_t t0 = snapshot::boottime_ns(), ctxt0 = machine_switches();
  int held = 0, looks = 0;
  while (snapshot::boottime_ns() - t0 < 4'000'000'000ull) {
    held += stats_fds();
    ++looks;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const snapshot::CostReading b = src->cost();
  const uint64_t wall = snapshot::boottime_ns() - t0, ctxt = machine_switches() - ctxt0;
  stop = true;
  sleeper.join();

  EXPECT_TRUE(b.sampled);
  EXPECT_EQ(b.stats, snapshot::BpfStats::on) << b.why;
  const double held_share = static_cast<double>(held) / looks;
  EXPECT_GT(held_share, 0.03) << held << " of " << looks;
  EXPECT_LT(held_share, 0.30) << held << " of " << looks;
  const uint64_t counted = b.counted_ns - a.counted_ns;
  EXPECT_GT(counted, wall / 20) << "counted " << counted << " ns of " << wall;
  EXPECT_LT(counted, wall / 4) << "counted " << counted << " ns of " << wall;
  ASSERT_GT(counted, 0u);
  const double estimate = static_cast<double>(switch_runs(b) - switch_runs(a)) * static_cast<double>(wall) /
                          static_cast<double>(counted);
  std::printf("stats held at %d of %d looks; counted %.2f of %.2f s; %.0f switch runs estimated, %llu in /proc/stat\n",
              held, looks, counted / 1e9, wall / 1e9, estimate, static_cast<unsigned long long>(ctxt));
  EXPECT_GT(estimate, 0.75 * static_cast<double>(ctxt)) << estimate << " estimated, " << ctxt << " switches";
  EXPECT_LT(estimate, 1.33 * static_cast<double>(ctxt)) << estimate << " estimated, " << ctxt << " switches";
  EXPECT_GT(switch_programs(b).run_time_ns, switch_programs(a).run_time_ns);
  src.reset();
  EXPECT_EQ(stats_fds(), 0);   // the thread stopped with its window closed
}

}  // namespace
}  // namespace platoon::tests
