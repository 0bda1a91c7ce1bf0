#include "tui/analysis/doctor_machine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace platoon::model::doctor {

namespace {

// The CPUs the threads ran on (their switch-ins), or every CPU when the source has no placement.
std::set<uint32_t> cpus_of(const MachineCheckInput& in) {
  std::set<uint32_t> cpus;
  for (const ThreadWindow* t : in.threads)
    for (auto [cpu, pct] : t->cpu_distribution) cpus.insert(cpu);
  if (cpus.empty())
    for (const CpuWindow& c : in.w.cpus) cpus.insert(c.cpu);
  return cpus;
}

// The threads whose wait with one cause reaches kCauseWaitPctWarn, as evidence rows.
template <class Part>
Array cause_rows(const MachineCheckInput& in, Part part, const char* key, double* max_pct) {
  Array rows;
  for (const ThreadWindow* t : in.threads) {
    const double p = part(t->wait_split);
    *max_pct = std::max(*max_pct, p);
    if (p < kCauseWaitPctWarn) continue;
    rows.push_back(Object{{"thread", in.name(*t)}, {"tid", t->tid}, {"wait_pct", round_to(t->wait_pct, 2)}, {key, round_to(p, 2)}});
  }
  return rows;
}

struct CpuShare {
  uint32_t cpu = 0;
  double pct = 0;
};

// One per-CPU check (steal or interrupts): the worst of the threads' CPUs, and rows for each.
template <class Share>
CpuShare worst_cpu(const MachineCheckInput& in, const std::set<uint32_t>& cpus, Share share, Array* rows) {
  CpuShare worst;
  for (const CpuWindow& c : in.w.cpus) {
    if (!cpus.count(c.cpu)) continue;
    const double p = share(c);
    if (p > worst.pct || rows->empty()) worst = {c.cpu, p};
    rows->push_back(Object{{"cpu", c.cpu}, {"pct", round_to(p, 2)}, {"busy_pct", round_to(c.busy_pct, 1)},
                           {"idle_pct", round_to(c.idle_pct, 1)}});
  }
  return worst;
}

uint32_t busy_threads(const MachineCheckInput& in, const std::string& path) {
  uint32_t n = 0;
  for (const ThreadWindow* t : in.threads)
    if (t->cgroup == path && t->cpu_pct + t->wait_pct >= kBusyPct) ++n;
  return n;
}

}  // namespace

void check_throttled(const MachineCheckInput& in, std::vector<Finding>& out, std::vector<NotEvaluated>& skipped) {
  if (in.w.cgroups.empty()) {
    skipped.push_back({"cpu_throttled", "no CPU cgroup of the target was read (a recording before format 1.2, or "
                                        "no cgroup cpu controller)"});
    return;
  }
  for (const CgroupWindow& g : in.w.cgroups) {
    if (g.version == 0 || g.throttled_periods == 0) continue;
    double max_wait = 0;
    Array rows = cause_rows(in, [&](const WaitSplit& s) { return s.throttled_pct; }, "throttled_wait_pct", &max_wait);
    // Only the threads in this group count for it.
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [&](const Value& r) {
                                const double tid = *r.find("tid")->number();
                                return std::none_of(in.threads.begin(), in.threads.end(), [&](const ThreadWindow* t) {
                                  return t->tid == tid && t->cgroup == g.path;
                                });
                              }),
               rows.end());
    const bool warn = g.throttled_periods_pct >= kThrottledPeriodsPctWarn || max_wait >= kThrottledWaitPctWarn;
    if (!warn) continue;
    const bool critical = g.throttled_periods_pct >= kThrottledPeriodsPctCritical || max_wait >= kThrottledWaitPctCritical;
    Finding f;
    f.id = "cpu_throttled";
    f.severity = critical ? Severity::critical : Severity::warn;
    for (const ThreadWindow* t : in.threads)
      if (t->cgroup == g.path && t->wait_split.throttled_pct >= kThrottledWaitPctWarn) f.threads.push_back(in.name(*t));
    const double throttled_ms = static_cast<double>(g.throttled_ns) / 1e6;
    const std::string quota = g.quota_cpus > 0 ? fmt::format("{:.2f} CPUs ({} µs per {} µs)", g.quota_cpus, g.quota_us, g.period_us)
                                               : std::string("no quota now");
    f.title = fmt::format("cgroup {} is throttled by its CPU quota of {}: {:.0f}% of its periods, {:.0f} ms parked",
                          g.path, quota, g.throttled_periods_pct, throttled_ms);
    f.evidence = {{"cgroup", g.path},
                  {"cgroup_version", g.version},
                  {"quota_us", g.quota_us},
                  {"period_us", g.period_us},
                  {"quota_cpus", round_to(g.quota_cpus, 3)},
                  {"periods", g.periods},
                  {"throttled_periods", g.throttled_periods},
                  {"throttled_periods_pct", round_to(g.throttled_periods_pct, 1)},
                  {"throttled_ms", round_to(throttled_ms, 1)},
                  {"threads_in_group", g.threads},
                  {"busy_threads", busy_threads(in, g.path)},
                  {"max_throttled_wait_pct", round_to(max_wait, 2)},
                  {"threads", std::move(rows)}};
    // usage_cpus: null when the group's usage counter is not known (v1 without cpuacct).
    Value usage;
    if (g.usage_cpus > 0) usage = round_to(g.usage_cpus, 3);
    f.evidence.emplace_back("usage_cpus", std::move(usage));
    f.threshold = {{"throttled_periods_pct_warn", kThrottledPeriodsPctWarn},
                   {"throttled_periods_pct_critical", kThrottledPeriodsPctCritical},
                   {"throttled_wait_pct_warn", kThrottledWaitPctWarn},
                   {"throttled_wait_pct_critical", kThrottledWaitPctCritical}};
    const uint32_t fit = g.quota_cpus > 0 ? std::max<uint32_t>(1, static_cast<uint32_t>(std::floor(g.quota_cpus))) : 0;
    f.remedy = fit ? fmt::format("Raise the group's quota (cpu.max / cpu.cfs_quota_us; Kubernetes: the CPU limit, or no "
                                 "limit with a request), or size the server to it, not to the machine's CPUs: {}. "
                                 "A shorter period (cpu.cfs_period_us) shortens each stall.",
                                 in.remedies.size_carriers(fit))
                   : "The group was throttled earlier in the window; its quota is gone now: check who changes cpu.max.";
    out.push_back(std::move(f));
  }
}

void check_steal(const MachineCheckInput& in, std::vector<Finding>& out, std::vector<NotEvaluated>& skipped) {
  if (in.w.cpus.empty()) {
    skipped.push_back({"vm_steal", "no per-CPU times in this window (a recording before format 1.2)"});
    return;
  }
  Array cpu_rows;
  const CpuShare worst = worst_cpu(in, cpus_of(in), [](const CpuWindow& c) { return c.steal_pct; }, &cpu_rows);
  double max_wait = 0;
  Array rows = cause_rows(in, [](const WaitSplit& s) { return s.steal_pct; }, "steal_wait_pct", &max_wait);
  if (worst.pct < kStealPctWarn && max_wait < kCauseWaitPctWarn) return;
  Finding f;
  f.id = "vm_steal";
  f.severity = worst.pct >= kStealPctCritical ? Severity::critical : Severity::warn;
  for (const Value& r : rows) f.threads.push_back(*r.find("thread")->string());
  f.title = fmt::format("the hypervisor steals the target's CPUs: up to {:.1f}% of CPU {}", worst.pct, worst.cpu);
  f.evidence = {{"max_steal_pct", round_to(worst.pct, 2)}, {"max_steal_cpu", worst.cpu},
                {"max_steal_wait_pct", round_to(max_wait, 2)}, {"cpus", std::move(cpu_rows)}, {"threads", std::move(rows)}};
  f.threshold = {{"steal_pct_warn", kStealPctWarn}, {"steal_pct_critical", kStealPctCritical},
                 {"steal_wait_pct_warn", kCauseWaitPctWarn}};
  f.remedy = "Steal is the host running other guests on these vCPUs: ask for dedicated vCPUs (a dedicated-host or "
             "CPU-pinned instance type, no burstable/shared-core type), or move to a less loaded host. Inside the "
             "guest nothing wins it back; fewer busy threads than vCPUs only keeps the queues short while it lasts.";
  out.push_back(std::move(f));
}

void check_irq(const MachineCheckInput& in, std::vector<Finding>& out, std::vector<NotEvaluated>& skipped) {
  if (in.w.cpus.empty()) {
    skipped.push_back({"irq_pressure", "no per-CPU times in this window (a recording before format 1.2)"});
    return;
  }
  Array cpu_rows;
  const CpuShare worst = worst_cpu(in, cpus_of(in), [](const CpuWindow& c) { return c.irq_pct + c.softirq_pct; }, &cpu_rows);
  // A kernel without IRQ time accounting gives no irq part of wait: the finding then rests on the
  // CPUs' interrupt time alone, and its wait evidence is null, not a 0 that looks measured.
  const bool irq_wait_measured = in.w.has(kFieldWaitIrq);
  double max_wait = 0;
  Array rows = irq_wait_measured ? cause_rows(in, [](const WaitSplit& s) { return s.irq_pct; }, "irq_wait_pct", &max_wait)
                                 : Array{};
  if (worst.pct < kIrqPctWarn && max_wait < kCauseWaitPctWarn) return;
  Finding f;
  f.id = "irq_pressure";
  f.severity = worst.pct >= kIrqPctCritical ? Severity::critical : Severity::warn;
  for (const Value& r : rows) f.threads.push_back(*r.find("thread")->string());
  f.title = fmt::format("interrupts take the target's CPUs: up to {:.1f}% of CPU {} in hard and soft interrupts", worst.pct,
                        worst.cpu);
  f.evidence = {{"max_irq_pct", round_to(worst.pct, 2)}, {"max_irq_cpu", worst.cpu},
                {"max_irq_wait_pct", irq_wait_measured ? Value(round_to(max_wait, 2)) : Value()},
                {"cpus", std::move(cpu_rows)}, {"threads", std::move(rows)}};
  f.threshold = {{"irq_pct_warn", kIrqPctWarn}, {"irq_pct_critical", kIrqPctCritical}, {"irq_wait_pct_warn", kCauseWaitPctWarn}};
  f.remedy = "Move the interrupts off the carriers' CPUs: steer the NIC's IRQs to other CPUs (/proc/irq/N/smp_affinity_list, "
             "irqbalance --banirq or its banned CPUs), and its receive processing with RPS/XPS "
             "(/sys/class/net/DEV/queues/rx-N/rps_cpus); then keep the server on the CPUs left (" +
             in.remedies.pin_carriers() + ").";
  out.push_back(std::move(f));
}

}  // namespace platoon::model::doctor
