// The BPF run-time stats platoon holds on (bpf/collectors/bpf_stats.hpp) and the cost a BPF
// source reads through them: on while held, off once released, against the kernel's own view of
// it (the anon_inode:bpf-stats fd in /proc/self/fd, and a program's run count standing still or
// not). Needs root; skipped when kernel.bpf_stats_enabled=1 (then nothing turns on or off).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "bpf/collectors/bpf_stats.hpp"
#include "bpf/collectors/sources.hpp"
#include "tests/bpf/fixture.hpp"

namespace platoon::bpf {
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

uint64_t switch_runs(const model::SnapshotSource& s) {
  uint64_t n = 0;
  for (const auto& p : s.cost().programs)
    if (p.name.find("switch") != std::string::npos) n += p.run_cnt;
  return n;
}

// Context switches on this thread: sched_switch runs for each, traced or not.
void switch_a_lot() {
  for (int i = 0; i < 200; ++i) usleep(100);
}

class BpfStatsTest : public testing::BpfTest {
 protected:
  void SetUp() override {
    testing::BpfTest::SetUp();
    if (IsSkipped()) return;
    if (bpf_stats_sysctl_on()) GTEST_SKIP() << "kernel.bpf_stats_enabled=1 already";
    if (stats_fds() != 0) GTEST_SKIP() << "this process already holds the stats";
  }
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
    opt.bpf_stats = false;
    auto src = open_source(opt, error, note);
    ASSERT_TRUE(src) << error;
    ASSERT_EQ(src->source(), model::Source::bpf) << note;
    EXPECT_EQ(src->cost().stats, model::BpfStats::unknown);
    switch_a_lot();
    EXPECT_EQ(switch_runs(*src), 0u);     // nobody holds the stats: the kernel does not count
  }
  opt.bpf_stats = true;
  auto src = open_source(opt, error, note);
  ASSERT_TRUE(src) << error;
  EXPECT_EQ(src->cost().stats, model::BpfStats::on) << src->cost().why;
  const uint64_t before = switch_runs(*src);
  switch_a_lot();
  EXPECT_GE(switch_runs(*src) - before, 200u);  // at least one sched_switch run per sleep
  src.reset();
  EXPECT_EQ(stats_fds(), 0);
  opt.procfs = true;
  auto procfs = open_source(opt, error, note);
  ASSERT_TRUE(procfs) << error;
  EXPECT_EQ(procfs->cost().stats, model::BpfStats::none);
}

}  // namespace
}  // namespace platoon::bpf
