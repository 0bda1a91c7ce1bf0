// The checks of the CPUs the target gets, rather than of its own threads: oversubscribed (its
// busy threads against the CPUs it may use), cpu_throttled (the CPU quota of its cgroup),
// vm_steal (the hypervisor takes its CPUs) and irq_pressure (interrupts eat its CPUs). The last
// three read the window's per-CPU times, cgroups and the wait split of the Context's subjects
// (the carriers when there are any, else every busy thread), so they answer for a JVM or a Go
// binary as for platoon-server.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "tui/analysis/doctor_checks.hpp"

namespace platoon::analysis::doctor {

namespace {

// A thread whose wait with one cause reaches kCauseWaitPctWarn.
struct CauseRow {
  const ThreadWindow* t = nullptr;
  std::string thread;
  std::string key;     // <cause>_wait_pct
  double pct = 0;

  Value value() const {
    return Object{{"thread", thread}, {"tid", t->tid}, {"wait_pct", round_to(t->wait_pct, 2)}, {key, round_to(pct, 2)}};
  }
};

// The subjects whose wait with one cause reaches kCauseWaitPctWarn, and the largest such wait of all.
template <class Part>
std::vector<CauseRow> cause_rows(const Context& c, Part part, const std::string& key, double* max_pct) {
  std::vector<CauseRow> rows;
  for (const ThreadWindow* t : c.subjects) {
    const double p = part(t->wait_split);
    *max_pct = std::max(*max_pct, p);
    if (p >= kCauseWaitPctWarn) rows.push_back({t, c.name(*t), key, p});
  }
  return rows;
}

uint32_t busy_threads(const Context& c, const std::string& path) {
  uint32_t n = 0;
  for (const ThreadWindow* t : c.subjects)
    if (t->cgroup == path && t->cpu_pct + t->wait_pct >= kBusyPct) ++n;
  return n;
}

// The CPUs a process may run on, and where that number comes from: its affinity (live), else
// the CPUs its threads ran on (at most the machine's), else the machine's CPUs; 0: unknown.
std::pair<uint32_t, const char*> allowed_cpus(const Context& c, uint32_t pid, const std::vector<const ThreadWindow*>& ts) {
  if (auto it = c.in.allowed_cpus.find(pid); it != c.in.allowed_cpus.end() && it->second > 0) return {it->second, "affinity"};
  if (c.w.has(snapshot::kFieldCpuDist)) {
    std::set<uint32_t> cpus;
    for (auto* t : ts)
      for (auto [cpu, pct] : t->cpu_distribution) cpus.insert(cpu);
    uint32_t allowed = static_cast<uint32_t>(cpus.size());
    if (c.in.ncpus) allowed = std::min(allowed, c.in.ncpus);
    if (allowed > 0) return {allowed, "cpus the process ran on"};
  }
  if (c.in.ncpus) return {c.in.ncpus, "cpus of the machine"};
  return {0, ""};
}

Object throttled_evidence(const Context& c, const CgroupWindow& g, double max_wait, std::vector<CauseRow> rows) {
  Object e{{"cgroup", g.path},
           {"cgroup_version", g.version},
           {"quota_us", g.quota_us},
           {"period_us", g.period_us},
           {"quota_cpus", round_to(g.quota_cpus, 3)},
           {"periods", g.periods},
           {"throttled_periods", g.throttled_periods},
           {"throttled_periods_pct", round_to(g.throttled_periods_pct, 1)},
           {"throttled_ms", round_to(static_cast<double>(g.throttled_ns) / 1e6, 1)},
           {"threads_in_group", g.threads},
           {"busy_threads", busy_threads(c, g.path)},
           {"max_throttled_wait_pct", round_to(max_wait, 2)},
           {"threads", array_of(rows)}};
  // usage_cpus: null when the group's usage counter is not known (v1 without cpuacct).
  Value usage;
  if (g.usage_cpus > 0) usage = round_to(g.usage_cpus, 3);
  e.emplace_back("usage_cpus", std::move(usage));
  return e;
}

std::string throttled_remedy(const Context& c, const CgroupWindow& g) {
  const uint32_t fit = g.quota_cpus > 0 ? std::max<uint32_t>(1, static_cast<uint32_t>(std::floor(g.quota_cpus))) : 0;
  return fit ? fmt::format("Raise the group's quota (cpu.max / cpu.cfs_quota_us; Kubernetes: the CPU limit, or no "
                           "limit with a request), or size the server to it, not to the machine's CPUs: {}. "
                           "A shorter period (cpu.cfs_period_us) shortens each stall.",
                           c.remedies.size_carriers(fit))
             : "The group was throttled earlier in the window; its quota is gone now: check who changes cpu.max.";
}

}  // namespace

void check_throttled(const Context& c, CheckResult& out) {
  for (const CgroupWindow& g : c.w.cgroups) {
    if (g.version == 0 || g.throttled_periods == 0) continue;
    double max_wait = 0;
    std::vector<CauseRow> rows =
        cause_rows(c, [](const WaitSplit& s) { return s.throttled_pct; }, "throttled_wait_pct", &max_wait);
    // Only the threads in this group count for it.
    std::erase_if(rows, [&](const CauseRow& r) { return r.t->cgroup != g.path; });
    const bool warn = g.throttled_periods_pct >= kThrottledPeriodsPctWarn || max_wait >= kThrottledWaitPctWarn;
    if (!warn) continue;
    const bool critical = g.throttled_periods_pct >= kThrottledPeriodsPctCritical || max_wait >= kThrottledWaitPctCritical;
    Finding f;
    f.severity = critical ? Severity::critical : Severity::warn;
    for (const ThreadWindow* t : c.subjects)
      if (t->cgroup == g.path && t->wait_split.throttled_pct >= kThrottledWaitPctWarn) f.threads.push_back(c.name(*t));
    const std::string quota = g.quota_cpus > 0 ? fmt::format("{:.2f} CPUs ({} µs per {} µs)", g.quota_cpus, g.quota_us, g.period_us)
                                               : std::string("no quota now");
    f.title = fmt::format("cgroup {} is throttled by its CPU quota of {}: {:.0f}% of its periods, {:.0f} ms parked",
                          g.path, quota, g.throttled_periods_pct, static_cast<double>(g.throttled_ns) / 1e6);
    f.evidence = throttled_evidence(c, g, max_wait, std::move(rows));
    f.threshold = {{"throttled_periods_pct_warn", kThrottledPeriodsPctWarn},
                   {"throttled_periods_pct_critical", kThrottledPeriodsPctCritical},
                   {"throttled_wait_pct_warn", kThrottledWaitPctWarn},
                   {"throttled_wait_pct_critical", kThrottledWaitPctCritical}};
    f.remedy = throttled_remedy(c, g);
    out.findings.push_back(std::move(f));
  }
}

namespace {

// A cause of wait that takes CPUs away from everything on them (the hypervisor's steal,
// interrupts): its share of each CPU the subjects ran on, and of each subject's wait.
struct CpuCause {
  const char* name;                             // keys: max_<name>_pct, <name>_pct_warn, ...
  double (*cpu_pct)(const CpuWindow& cpu);
  double (*wait_pct)(const WaitSplit& split);
  double warn;                                  // on the worst CPU; critical likewise
  double critical;
};

struct CpuRow {
  uint32_t cpu = 0;
  double pct = 0;       // the cause's share of the CPU
  double busy_pct = 0;
  double idle_pct = 0;
  Value value() const {
    return Object{{"cpu", cpu}, {"pct", round_to(pct, 2)}, {"busy_pct", round_to(busy_pct, 1)}, {"idle_pct", round_to(idle_pct, 1)}};
  }
};

// The CPUs the subjects ran on (their switch-ins), or every CPU when the source has no placement.
std::set<uint32_t> cpus_of(const Context& c) {
  std::set<uint32_t> cpus;
  for (const ThreadWindow* t : c.subjects)
    for (auto [cpu, pct] : t->cpu_distribution) cpus.insert(cpu);
  if (cpus.empty())
    for (const CpuWindow& cpu : c.w.cpus) cpus.insert(cpu.cpu);
  return cpus;
}

// A CPU cause's finding without its title and remedy, when its worst CPU or a subject's wait
// crosses the limits; worst is the CPU the title names.
struct CpuCauseFinding {
  Finding f;
  CpuRow worst;
};

// wait_measured false: the source cannot split this cause out of the wait, so the finding rests
// on the CPUs' times alone and its wait evidence is null, not a 0 that looks measured.
std::optional<CpuCauseFinding> cpu_cause(const Context& c, const CpuCause& cause, bool wait_measured) {
  const std::set<uint32_t> cpus = cpus_of(c);
  std::vector<CpuRow> cpu_rows;
  CpuRow worst;
  for (const CpuWindow& cpu : c.w.cpus) {
    if (!cpus.count(cpu.cpu)) continue;
    const CpuRow row{cpu.cpu, cause.cpu_pct(cpu), cpu.busy_pct, cpu.idle_pct};
    if (row.pct > worst.pct || cpu_rows.empty()) worst = row;
    cpu_rows.push_back(row);
  }
  const std::string name = cause.name;
  double max_wait = 0;
  std::vector<CauseRow> rows;
  if (wait_measured) rows = cause_rows(c, cause.wait_pct, name + "_wait_pct", &max_wait);
  if (worst.pct < cause.warn && max_wait < kCauseWaitPctWarn) return std::nullopt;
  CpuCauseFinding out{{}, worst};
  Finding& f = out.f;
  f.severity = worst.pct >= cause.critical ? Severity::critical : Severity::warn;
  for (const CauseRow& r : rows) f.threads.push_back(r.thread);
  f.evidence = {{"max_" + name + "_pct", round_to(worst.pct, 2)},
                {"max_" + name + "_cpu", worst.cpu},
                {"max_" + name + "_wait_pct", wait_measured ? Value(round_to(max_wait, 2)) : Value()},
                {"cpus", array_of(cpu_rows)},
                {"threads", array_of(rows)}};
  f.threshold = {{name + "_pct_warn", cause.warn},
                 {name + "_pct_critical", cause.critical},
                 {name + "_wait_pct_warn", kCauseWaitPctWarn}};
  return out;
}

// Evidence max_steal_pct, max_steal_cpu, max_steal_wait_pct; threshold steal_pct_warn, ....
constexpr CpuCause kSteal{"steal", [](const CpuWindow& cpu) { return cpu.steal_pct; },
                          [](const WaitSplit& s) { return s.steal_pct; }, kStealPctWarn, kStealPctCritical};
// Evidence max_irq_pct, max_irq_cpu, max_irq_wait_pct; threshold irq_pct_warn, ....
constexpr CpuCause kIrq{"irq", [](const CpuWindow& cpu) { return cpu.irq_pct + cpu.softirq_pct; },
                        [](const WaitSplit& s) { return s.irq_pct; }, kIrqPctWarn, kIrqPctCritical};

}  // namespace

void check_steal(const Context& c, CheckResult& out) {
  auto found = cpu_cause(c, kSteal, true);
  if (!found) return;
  Finding& f = found->f;
  f.title = fmt::format("the hypervisor steals the target's CPUs: up to {:.1f}% of CPU {}", found->worst.pct,
                        found->worst.cpu);
  f.remedy = "Steal is the host running other guests on these vCPUs: ask for dedicated vCPUs (a dedicated-host or "
             "CPU-pinned instance type, no burstable/shared-core type), or move to a less loaded host. Inside the "
             "guest nothing wins it back; fewer busy threads than vCPUs only keeps the queues short while it lasts.";
  out.findings.push_back(std::move(f));
}

// A kernel without IRQ time accounting gives no irq part of wait (kFieldWaitIrq).
void check_irq(const Context& c, CheckResult& out) {
  auto found = cpu_cause(c, kIrq, c.w.has(snapshot::kFieldWaitIrq));
  if (!found) return;
  Finding& f = found->f;
  f.title = fmt::format("interrupts take the target's CPUs: up to {:.1f}% of CPU {} in hard and soft interrupts",
                        found->worst.pct, found->worst.cpu);
  f.remedy = "Move the interrupts off the carriers' CPUs: steer the NIC's IRQs to other CPUs (/proc/irq/N/smp_affinity_list, "
             "irqbalance --banirq or its banned CPUs), and its receive processing with RPS/XPS "
             "(/sys/class/net/DEV/queues/rx-N/rps_cpus); then keep the server on the CPUs left (" +
             c.remedies.pin_carriers() + ").";
  out.findings.push_back(std::move(f));
}

void check_oversubscribed(const Context& c, CheckResult& out) {
  std::map<uint32_t, std::vector<const ThreadWindow*>> by_pid;
  for (const auto& t : c.w.threads) by_pid[t.pid].push_back(&t);
  for (const auto& [pid, ts] : by_pid) {
    const auto [allowed, from] = allowed_cpus(c, pid, ts);
    if (allowed == 0) continue;
    Array busy;
    Finding f;
    double demand = 0;
    for (auto* t : ts) {
      const double share = t->cpu_pct + t->wait_pct;
      demand += share / 100.0;
      if (share < kBusyPct) continue;
      f.threads.push_back(c.name(*t));
      busy.push_back(Object{{"thread", c.name(*t)}, {"tid", t->tid}, {"cpu_pct", round_to(t->cpu_pct, 1)},
                            {"wait_pct", round_to(t->wait_pct, 1)}});
    }
    const size_t n = f.threads.size();
    const bool too_many = n > allowed;
    const bool too_much = demand > kDemandFactor * allowed;
    if (!too_many && !too_much) continue;
    f.severity = n > 2 * static_cast<size_t>(allowed) || demand > 2.0 * allowed ? Severity::critical : Severity::warn;
    f.title = fmt::format("pid {}: {} busy threads and {:.2f} CPUs of demand (run + wait) for {} CPU{} they may run on",
                          pid, n, demand, allowed, allowed == 1 ? "" : "s");
    f.evidence = {{"pid", pid},         {"busy_threads", n},   {"demand_cpus", round_to(demand, 2)},
                  {"allowed_cpus", allowed}, {"allowed_from", from}, {"busy", std::move(busy)}};
    f.threshold = {{"busy_pct", kBusyPct}, {"demand_per_allowed_cpu", kDemandFactor}};
    f.remedy = "Run no more busy threads than CPUs: fewer carriers or workers (" + c.remedies.size_carriers(allowed) +
               " here, one less to leave the poller a CPU), or give the process more CPUs (its cpuset / taskset); "
               "keep one CPU for the poller and helpers (N+1).";
    out.findings.push_back(std::move(f));
  }
}

}  // namespace platoon::analysis::doctor
