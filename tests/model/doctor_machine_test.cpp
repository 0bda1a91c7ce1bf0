// doctor's cpu_throttled, vm_steal and irq_pressure on synthetic snapshots with known answers:
// each present when its numbers cross the limits, absent below them, and not evaluated when the
// window has no such data; remedies in the target runtime's own knobs.
#include <gtest/gtest.h>

#include "tests/model/builders.hpp"
#include "tests/model/doctor_helpers.hpp"
#include "tui/analysis/doctor.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::test {
namespace {

using namespace platoon::analysis::doctor;

Diagnosis run(const Window& w, RuntimeKind runtime = RuntimeKind::other) { return diagnosis_of(w, runtime); }

// A carrier in cgroup /box whose group was throttled `throttled` of `periods` periods, the
// carrier waiting `wait_throttled` % of the 10 s window while throttled.
Scenario throttled_box(uint64_t periods, uint64_t throttled, double wait_throttled, int64_t quota_us = 20000) {
  Scenario s;
  ThreadSample& t = s.carrier(11, "carrier-0", 20, wait_throttled + 1);
  t.cgroup = "/box";
  t.wait_throttled_ns = static_cast<uint64_t>(wait_throttled / 100 * 10 * kSec);
  s.from.threads.back().cgroup = "/box";
  CgroupCpu g0{"/box", 1, quota_us, 100000, 1000, 500, 5 * kSec, 0};
  CgroupCpu g1 = g0;
  g1.nr_periods += periods;
  g1.nr_throttled += throttled;
  g1.throttled_ns += throttled * 80'000'000;  // 80 ms parked per throttled period
  s.from.cgroups = {g0};
  s.to.cgroups = {g1};
  return s;
}

TEST(DoctorThrottled, PresentWithCpuStatEvidenceAndRemedyInTheRuntimesKnobs) {
  const Scenario s = throttled_box(100, 60, 48);
  const Window w = s.window();
  ASSERT_EQ(w.cgroups.size(), 1u);
  EXPECT_EQ(w.cgroups[0].throttled_periods, 60u);
  const Diagnosis d = run(w, RuntimeKind::go);
  const Finding* f = finding(d, "cpu_throttled");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::critical);
  EXPECT_EQ(*find(f->evidence, "cgroup")->string(), "/box");
  EXPECT_NEAR(num(f->evidence, "throttled_ms"), 60 * 80.0, 0.1);
  EXPECT_NEAR(num(f->evidence, "throttled_periods_pct"), 60, 0.01);
  EXPECT_NEAR(num(f->evidence, "quota_cpus"), 0.2, 1e-9);
  EXPECT_NEAR(num(f->evidence, "max_throttled_wait_pct"), 48, 0.01);
  EXPECT_EQ(f->threads, std::vector<std::string>{"carrier-0"});
  EXPECT_NE(f->remedy.find("GOMAXPROCS=1"), std::string::npos) << f->remedy;
  // The carrier's wait split says the same.
  EXPECT_NEAR(w.threads[0].wait_split.throttled_pct, 48, 0.01);
  EXPECT_NEAR(w.threads[0].wait_split.contended_pct, 1, 0.01);

  const Diagnosis jvm = run(w, RuntimeKind::jvm);
  ASSERT_NE(finding(jvm, "cpu_throttled"), nullptr);
  EXPECT_NE(finding(jvm, "cpu_throttled")->remedy.find("jdk.virtualThreadScheduler.parallelism=1"), std::string::npos);
  const Diagnosis platoon = run(w, RuntimeKind::platoon);
  EXPECT_NE(finding(platoon, "cpu_throttled")->remedy.find("platoon-server --carriers 1"), std::string::npos);
}

TEST(DoctorThrottled, WarnOnPeriodsAloneAbsentWhenRareAbsentWithoutThrottling) {
  const Diagnosis warn = run(throttled_box(100, 10, 0).window());
  ASSERT_NE(finding(warn, "cpu_throttled"), nullptr);
  EXPECT_EQ(finding(warn, "cpu_throttled")->severity, Severity::warn);
  EXPECT_EQ(finding(run(throttled_box(100, 2, 0.5).window()), "cpu_throttled"), nullptr);
  const Diagnosis none = run(throttled_box(100, 0, 0, -1).window());
  EXPECT_EQ(finding(none, "cpu_throttled"), nullptr);
  EXPECT_FALSE(not_evaluated(none, "cpu_throttled"));
}

TEST(DoctorThrottled, NotEvaluatedWithoutCgroups) {
  Scenario s;
  s.carrier(11, "carrier-0", 20, 1);
  const Diagnosis d = run(s.window());
  EXPECT_EQ(finding(d, "cpu_throttled"), nullptr);
  EXPECT_TRUE(not_evaluated(d, "cpu_throttled"));
  EXPECT_TRUE(not_evaluated(d, "vm_steal"));
  EXPECT_TRUE(not_evaluated(d, "irq_pressure"));
}

// Two CPUs over 10 s at 100 ticks/s: CPU 1 (the carrier's) gets `steal` and `irq` ticks of 1000.
Scenario with_cpus(uint64_t steal, uint64_t irq, uint64_t softirq) {
  Scenario s;
  s.carrier(11, "carrier-0", 50, 2);  // switch-ins on CPU 1
  s.from.tick_ns = s.to.tick_ns = 10'000'000;
  s.from.cpus = {CpuTimes{0, 100, 0, 100, 1000, 0, 0, 0, 0}, CpuTimes{1, 100, 0, 100, 1000, 0, 0, 0, 0}};
  s.to.cpus = s.from.cpus;
  s.to.cpus[0].idle += 1000;
  CpuTimes& c = s.to.cpus[1];
  c.steal += steal;
  c.irq += irq;
  c.softirq += softirq;
  c.user += 1000 - steal - irq - softirq;
  return s;
}

TEST(DoctorSteal, PresentOnTheCarriersCpuAbsentBelowTheLimit) {
  const Window w = with_cpus(150, 0, 0).window();
  ASSERT_EQ(w.cpus.size(), 2u);
  EXPECT_NEAR(w.cpus[1].steal_pct, 15, 1e-9);
  EXPECT_EQ(w.cpus[1].steal_ns, 150u * 10'000'000);
  const Diagnosis d = run(w);
  const Finding* f = finding(d, "vm_steal");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::warn);
  EXPECT_NEAR(num(f->evidence, "max_steal_pct"), 15, 0.01);
  EXPECT_EQ(num(f->evidence, "max_steal_cpu"), 1);
  EXPECT_NE(f->remedy.find("dedicated vCPUs"), std::string::npos);
  EXPECT_EQ(finding(run(with_cpus(250, 0, 0).window()), "vm_steal")->severity, Severity::critical);
  EXPECT_EQ(finding(run(with_cpus(20, 0, 0).window()), "vm_steal"), nullptr);
}

TEST(DoctorIrq, PresentFromHardAndSoftInterruptsAbsentBelowTheLimit) {
  const Diagnosis d = run(with_cpus(0, 50, 100).window(), RuntimeKind::platoon);
  const Finding* f = finding(d, "irq_pressure");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::warn);
  EXPECT_NEAR(num(f->evidence, "max_irq_pct"), 15, 0.01);
  EXPECT_NE(f->remedy.find("smp_affinity"), std::string::npos);
  EXPECT_NE(f->remedy.find("--pin"), std::string::npos);
  EXPECT_EQ(finding(run(with_cpus(0, 0, 350).window()), "irq_pressure")->severity, Severity::critical);
  EXPECT_EQ(finding(run(with_cpus(0, 10, 40).window()), "irq_pressure"), nullptr);
}

TEST(DoctorIrq, AThreadsOwnIrqWaitAloneIsEnough) {
  Scenario s = with_cpus(0, 0, 0);
  s.to.threads[0].wait_irq_ns = kSec / 2;  // 5% of 10 s
  s.to.threads[0].wait_ns = kSec;
  const Diagnosis d = run(s.window());
  const Finding* f = finding(d, "irq_pressure");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(num(f->evidence, "max_irq_wait_pct"), 5, 0.01);
}

// A kernel without IRQ time accounting: interrupts on the CPUs still make the finding, but no
// irq part of wait is shown, as a number or as a 0 (null in JSON, "-" in text).
TEST(DoctorIrq, WithoutIrqTimeAccountingTheIrqWaitIsNullNotZero) {
  Scenario s = with_cpus(0, 50, 100);
  s.to.threads[0].wait_irq_ns = kSec / 2;  // what a kernel without the accounting cannot give
  s.to.threads[0].wait_ns = kSec;
  s.from.fields &= ~kFieldWaitIrq;
  s.to.fields &= ~kFieldWaitIrq;
  const Diagnosis d = run(s.window());
  const Finding* f = finding(d, "irq_pressure");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(num(f->evidence, "max_irq_pct"), 15, 0.01);
  ASSERT_NE(find(f->evidence, "max_irq_wait_pct"), nullptr);
  EXPECT_TRUE(find(f->evidence, "max_irq_wait_pct")->null());
  EXPECT_TRUE(find(f->evidence, "threads")->array()->empty());
  EXPECT_NE(json(d, false).find("\"irq_pct\":null"), std::string::npos) << json(d, false);
  EXPECT_NE(text(d).find(", irq -, idle exit"), std::string::npos) << text(d);
  // Below the CPUs' limit, the unmeasured part cannot raise the finding on its own.
  Scenario quiet = with_cpus(0, 0, 0);
  quiet.to.threads[0].wait_irq_ns = kSec / 2;
  quiet.to.threads[0].wait_ns = kSec;
  quiet.from.fields &= ~kFieldWaitIrq;
  quiet.to.fields &= ~kFieldWaitIrq;
  EXPECT_EQ(finding(run(quiet.window()), "irq_pressure"), nullptr);
}

// The JSON contract: versioned, and each carrier's wait with its parts (null without the data).
TEST(DoctorJson, SchemaVersionAndCarrierWaitSplit) {
  const Diagnosis d = run(throttled_box(100, 60, 48).window());
  ASSERT_EQ(d.carrier_wait.size(), 1u);
  const std::string j = json(d, false);
  EXPECT_NE(j.find("\"schema_version\":3,"), std::string::npos) << j;
  EXPECT_NE(j.find("\"carrier_wait\":[{\"thread\":\"carrier-0\",\"tid\":11,\"wait_pct\":49,\"split\":{"
                   "\"contended_pct\":1,\"throttled_pct\":48,\"steal_pct\":0,\"irq_pct\":0,\"idle_exit_pct\":0}}]"),
            std::string::npos)
      << j;
  EXPECT_NE(text(d).find("carrier-0 wait 49.00%: contended 1.00, throttled 48.00"), std::string::npos) << text(d);

  Scenario procfs(Source::procfs);
  procfs.carrier(11, "carrier-0", 20, 5);
  const std::string pj = json(run(procfs.window()), false);
  EXPECT_NE(pj.find("\"wait_pct\":5,\"split\":null}"), std::string::npos) << pj;
}

}  // namespace
}  // namespace platoon::tests::test
