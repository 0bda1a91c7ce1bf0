#include "tui/outputs/report_machine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>

namespace platoon::outputs {

namespace {

using Writer = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void str(Writer& j, const std::string& s) { j.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); }
void num(Writer& j, double v, int decimals = 3) {
  const double f = decimals == 1 ? 10.0 : decimals == 2 ? 100.0 : 1000.0;
  // Rounded through an integer only where one holds it: a hostile recording's counters can
  // make a share beyond any long long (and the conversion undefined).
  const double scaled = v * f;
  if (!std::isfinite(scaled) || std::fabs(scaled) >= 9e18) return j.Double(std::isfinite(v) ? v : 0), void();
  j.Double(static_cast<double>(static_cast<long long>(scaled + (v >= 0 ? 0.5 : -0.5))) / f);
}

// The CPU table's shares of each CPU's time, in column order; text and JSON both iterate it.
// JSON carries the counter a share was measured from beside it, where there is one.
struct CpuShare {
  const char* title;     // text column
  int width, decimals;   // text cell
  const char* pct_key;   // JSON
  double analysis::CpuWindow::*pct;
  const char* ns_key;    // JSON, after all the shares; nullptr: none
  uint64_t analysis::CpuWindow::*ns;
};
constexpr CpuShare kCpuShares[] = {
    {"busy", 7, 1, "busy_pct", &analysis::CpuWindow::busy_pct, nullptr, nullptr},
    {"steal", 7, 2, "steal_pct", &analysis::CpuWindow::steal_pct, "steal_ns", &analysis::CpuWindow::steal_ns},
    {"irq", 8, 2, "irq_pct", &analysis::CpuWindow::irq_pct, "irq_ns", &analysis::CpuWindow::irq_ns},
    {"softirq", 7, 2, "softirq_pct", &analysis::CpuWindow::softirq_pct, "softirq_ns", &analysis::CpuWindow::softirq_ns},
    {"idle", 7, 1, "idle_pct", &analysis::CpuWindow::idle_pct, nullptr, nullptr},
};

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
  fmt::format_to(o, "{:>5}", "CPU");
  for (const CpuShare& share : kCpuShares) fmt::format_to(o, " {:>{}}", share.title, share.width);
  fmt::format_to(o, "\n");
  for (const analysis::CpuWindow& c : w.cpus) {
    fmt::format_to(o, "{:>5}", c.cpu);
    for (const CpuShare& share : kCpuShares) fmt::format_to(o, " {:>{}.{}f}", c.*share.pct, share.width, share.decimals);
    fmt::format_to(o, "\n");
  }
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
    for (const CpuShare& share : kCpuShares) j.Key(share.pct_key), num(j, c.*share.pct);
    for (const CpuShare& share : kCpuShares)
      if (share.ns) j.Key(share.ns_key), j.Uint64(c.*share.ns);
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
