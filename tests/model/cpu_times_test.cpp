// /proc/stat's per-CPU lines as CpuTimes, and their exporter families.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "bpf/collectors/proc_stat.hpp"
#include "tui/outputs/prom_metrics.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

constexpr const char* kStat =
    "cpu  442658 0 237024 494335 1464 0 47434 0 0 0\n"
    "cpu0 191084 1 116705 271605 437 3 26156 7 0 0\n"
    "cpu1 251573 0 120319 222729 1026 0 21278 0 0 0\n"
    "cpu10 5 6 7 8 9 10 11 12 0 0\n"
    "cpu2 1 2 3\n"                      // too short: skipped
    "cpux 1 2 3 4 5 6 7 8\n"            // not a CPU number: skipped
    "intr 123 4 5\n"
    "ctxt 99\n";

TEST(CpuTimesTest, ParsesEveryCpuLineAndSkipsTheRest) {
  const auto c = parse_proc_stat(kStat);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].cpu, 0u);
  EXPECT_EQ(c[0].user, 191084u);
  EXPECT_EQ(c[0].nice, 1u);
  EXPECT_EQ(c[0].irq, 3u);
  EXPECT_EQ(c[0].softirq, 26156u);
  EXPECT_EQ(c[0].steal, 7u);
  EXPECT_EQ(c[1].cpu, 1u);
  EXPECT_EQ(c[1].idle, 222729u);
  EXPECT_EQ(c[2].cpu, 10u);
  EXPECT_EQ(c[2].steal, 12u);
  EXPECT_TRUE(parse_proc_stat("").empty());
  EXPECT_TRUE(parse_proc_stat("garbage\n\n\ncpu").empty());
}

TEST(CpuTimesTest, ThisMachineHasItsCpus) {
  const auto c = read_proc_stat();
  EXPECT_GE(c.size(), 1u);
  EXPECT_GT(seconds_per_tick(), 0.0);
}

TEST(CpuTimesTest, ExporterServesStealIrqAndSoftirqPerCpuInSeconds) {
  // The machine's per-CPU steal, hard- and soft-interrupt time comes with the snapshot, as the
  // collectors read it (bpf/collectors/machine_context.cpp).
  PromExposition e(16);
  Snapshot s;
  s.cpus = parse_proc_stat(kStat);
  s.tick_ns = static_cast<uint64_t>(seconds_per_tick() * 1e9 + 0.5);
  e.observe(s);
  const std::string text = e.render(PromScrapeInfo{});
  const double t = seconds_per_tick();
  auto has = [&](const std::string& line) { return text.find(line + "\n") != std::string::npos; };
  EXPECT_TRUE(has("# TYPE platoon_cpu_steal_seconds_total counter"));
  EXPECT_TRUE(has("platoon_cpu_steal_seconds_total{cpu=\"0\"} " + fmt::format("{}", 7 * t)));
  EXPECT_TRUE(has("platoon_cpu_irq_seconds_total{cpu=\"0\"} " + fmt::format("{}", 3 * t)));
  EXPECT_TRUE(has("platoon_cpu_softirq_seconds_total{cpu=\"10\"} " + fmt::format("{}", 11 * t)));
  // Without readings, no families (a source that cannot read /proc/stat says nothing).
  PromExposition none(16);
  none.observe(Snapshot{});
  EXPECT_EQ(none.render(PromScrapeInfo{}).find("platoon_cpu_steal"), std::string::npos);
}

}  // namespace
}  // namespace platoon::tests
