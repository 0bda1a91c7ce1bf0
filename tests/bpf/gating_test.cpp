// Collection gated by what is shown: a collector asked only for what a %CPU/%WAIT view needs
// loads no epoll program and no runtime probe, and says so; run, wait and switches stay exact.
// Two collectors watch the same epoll workload side by side, one gated and one full: the full
// one sees every cycle, the gated one none.
#include <gtest/gtest.h>

#include <string>

#include "tests/bpf/fixture.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::testing {
namespace {

using platoon::testing::EpollCall;
using platoon::testing::Worker;

constexpr uint32_t kCpuAndWait = snapshot::kFieldRunWait | snapshot::kFieldSwitches;

bool loaded(const Collector& c, const std::string& part) {
  for (const auto& p : c.program_stats())
    if (p.name.find(part) != std::string::npos) return true;
  return false;
}

class GatingTest : public BpfTest {};

TEST_F(GatingTest, ViewWithoutIoLoadsNoEpollProgramsAndCountsNoCycles) {
  CollectorOptions gated_opt;
  gated_opt.fields = kCpuAndWait;
  auto gated = open(gated_opt);
  auto full = open();
  ASSERT_TRUE(gated && full);

  EXPECT_EQ(gated->fields() & (snapshot::kFieldIo | snapshot::kFieldDrain), 0u);
  EXPECT_NE(full->fields() & snapshot::kFieldIo, 0u);
  EXPECT_FALSE(loaded(*gated, "epoll"));
  EXPECT_FALSE(loaded(*gated, "usdt"));
  EXPECT_TRUE(loaded(*full, "epoll"));
  bool noted = false;
  for (const auto& n : gated->notes()) noted |= n == "not collected (no view shows it): io, drain";
  EXPECT_TRUE(noted);

  constexpr int kCycles = 200;
  Worker w([] { platoon::testing::epoll_cycles(3, kCycles, EpollCall::wait); });
  w.wait_parked();
  const snapshot::Snapshot g = gated->snapshot();
  const snapshot::Snapshot f = full->snapshot();
  const snapshot::ThreadSample* tg = find(g, w.tid());
  const snapshot::ThreadSample* tf = find(f, w.tid());
  ASSERT_TRUE(tg && tf);
  EXPECT_EQ(tf->io_cycles, uint64_t{kCycles});
  EXPECT_EQ(tg->io_cycles, 0u);
  EXPECT_EQ(tg->io_events, 0u);
  // What the view shows is still exact: both collectors saw every switch of the thread.
  EXPECT_EQ(tg->switches_voluntary, tf->switches_voluntary);
  EXPECT_EQ(tg->switches_involuntary, tf->switches_involuntary);
  EXPECT_EQ(tg->switches_voluntary, static_cast<uint64_t>(platoon::testing::read_voluntary(w.tid())));
}

}  // namespace
}  // namespace platoon::tests::testing
