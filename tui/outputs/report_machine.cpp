#include "tui/outputs/report_machine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string_view>

namespace platoon::outputs {

namespace {

using Writer = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void str(Writer& j, const std::string& s) { j.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); }
void num(Writer& j, double v, int decimals = 3) {
  const double f = decimals == 1 ? 10.0 : decimals == 2 ? 100.0 : 1000.0;
  j.Double(static_cast<double>(static_cast<long long>(v * f + (v >= 0 ? 0.5 : -0.5))) / f);
}

// A cause's column: its label and a space, and at least room for "100.00".
size_t cause_width(const analysis::WaitCause& c) { return std::max<size_t>(7, std::string_view(c.label).size() + 1); }

}  // namespace

std::string text_wait_split(const analysis::Window& w, const std::vector<const analysis::ThreadWindow*>& threads) {
  if (!w.has(snapshot::kFieldWaitSplit)) return {};
  std::vector<const analysis::ThreadWindow*> waited;
  std::copy_if(threads.begin(), threads.end(), std::back_inserter(waited), [](auto* t) { return t->wait_pct >= 0.05; });
  if (waited.empty()) return {};
  std::string s;
  auto o = std::back_inserter(s);
  fmt::format_to(o, "\nWait by cause (% of wall time; contended = behind other tasks)\n");
  fmt::format_to(o, "{:>8}  {:<16} {:>7}", "TID", "NAME", "%wait");
  for (const analysis::WaitCause& c : analysis::kWaitCauses) fmt::format_to(o, " {:>{}}", c.label, cause_width(c));
  fmt::format_to(o, "\n");
  for (auto* t : waited) {
    fmt::format_to(o, "{:>8}  {:<16} {:>7.2f}", t->tid, t->comm, t->wait_pct);
    // A part the source does not measure is "-" (the source line says what it lacks).
    for (const analysis::WaitCause& c : analysis::kWaitCauses)
      fmt::format_to(o, " {:>{}}", measured(c, w.fields) ? fmt::format("{:.2f}", t->wait_split.*c.pct) : "-",
                     cause_width(c));
    fmt::format_to(o, "\n");
  }
  return s;
}

std::string text_cpus(const analysis::Window& w) {
  if (w.cpus.empty()) return {};
  std::string s;
  auto o = std::back_inserter(s);
  fmt::format_to(o, "\nCPUs (/proc/stat over the window: % of each CPU's time)\n");
  fmt::format_to(o, "{:>5} {:>7} {:>7} {:>8} {:>7} {:>7}\n", "CPU", "busy", "steal", "irq", "softirq", "idle");
  for (const analysis::CpuWindow& c : w.cpus)
    fmt::format_to(o, "{:>5} {:>7.1f} {:>7.2f} {:>8.2f} {:>7.2f} {:>7.1f}\n", c.cpu, c.busy_pct, c.steal_pct, c.irq_pct,
                   c.softirq_pct, c.idle_pct);
  return s;
}

std::string text_cgroups(const analysis::Window& w) {
  if (w.cgroups.empty()) return {};
  std::string s;
  auto o = std::back_inserter(s);
  fmt::format_to(o, "\nCPU cgroups (cpu.stat over the window)\n");
  fmt::format_to(o, "{:<32} {:>3} {:>11} {:>8} {:>10} {:>10} {:>12} {:>7}\n", "CGROUP", "v", "quota CPUs", "periods",
                 "throttled", "throttl%", "throttled ms", "threads");
  for (const analysis::CgroupWindow& g : w.cgroups) {
    if (g.version == 0) {
      fmt::format_to(o, "{:<32} {:>3} {}\n", g.path, "-", "(unreadable: no cpu controller file for it)");
      continue;
    }
    const std::string quota = g.quota_cpus > 0 ? fmt::format("{:.2f}", g.quota_cpus) : "none";
    fmt::format_to(o, "{:<32} {:>3} {:>11} {:>8} {:>10} {:>10.1f} {:>12.1f} {:>7}\n", g.path, g.version, quota, g.periods,
                   g.throttled_periods, g.throttled_periods_pct, static_cast<double>(g.throttled_ns) / 1e6, g.threads);
  }
  return s;
}

void json_cpus(Writer& j, const analysis::Window& w) {
  j.StartArray();
  for (const analysis::CpuWindow& c : w.cpus) {
    j.StartObject();
    j.Key("cpu"), j.Uint(c.cpu);
    j.Key("busy_pct"), num(j, c.busy_pct);
    j.Key("steal_pct"), num(j, c.steal_pct);
    j.Key("irq_pct"), num(j, c.irq_pct);
    j.Key("softirq_pct"), num(j, c.softirq_pct);
    j.Key("idle_pct"), num(j, c.idle_pct);
    j.Key("steal_ns"), j.Uint64(c.steal_ns);
    j.Key("irq_ns"), j.Uint64(c.irq_ns);
    j.Key("softirq_ns"), j.Uint64(c.softirq_ns);
    j.EndObject();
  }
  j.EndArray();
}

void json_cgroups(Writer& j, const analysis::Window& w) {
  j.StartArray();
  for (const analysis::CgroupWindow& g : w.cgroups) {
    j.StartObject();
    j.Key("path"), str(j, g.path);
    j.Key("version"), j.Uint(g.version);
    j.Key("quota_us"), j.Int64(g.quota_us);
    j.Key("period_us"), j.Uint64(g.period_us);
    j.Key("quota_cpus"), num(j, g.quota_cpus);
    j.Key("periods"), j.Uint64(g.periods);
    j.Key("throttled_periods"), j.Uint64(g.throttled_periods);
    j.Key("throttled_periods_pct"), num(j, g.throttled_periods_pct);
    j.Key("throttled_ns"), j.Uint64(g.throttled_ns);
    j.Key("usage_cpus"), num(j, g.usage_cpus);
    j.Key("threads"), j.Uint(g.threads);
    j.Key("wait_throttled_ns"), j.Uint64(g.wait_throttled_ns);
    j.EndObject();
  }
  j.EndArray();
}

}  // namespace platoon::outputs
