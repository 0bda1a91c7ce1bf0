#include "tui/dashboard/views/header_text.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tui/analysis/requests.hpp"
#include "tui/dashboard/views/glyphs.hpp"

namespace platoon::dashboard {


namespace {

std::string rate(double v) { return metrics::format_rate(v); }
std::string pct(double v) { return metrics::format_pct(v); }

// "quota /grp 0.20 CPU thr 45% 120ms  steal 3.1% cpu1  irq 12% cpu0", each part only when
// there is something to say (a quota, any steal or interrupts above a tenth of a percent).
std::string machine_summary(const analysis::Window& w) {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : "  ") + part; };
  for (const auto& g : w.cgroups) {
    if (g.version == 0 || (g.quota_cpus <= 0 && g.throttled_periods == 0)) continue;
    add(fmt::format("quota {} {:.2f} CPU thr {:.0f}% {:.0f}ms", g.path, g.quota_cpus, g.throttled_periods_pct,
                    double(g.throttled_ns) / 1e6));
  }
  const analysis::CpuWindow* steal = nullptr;
  const analysis::CpuWindow* irq = nullptr;
  for (const auto& c : w.cpus) {
    if (!steal || c.steal_pct > steal->steal_pct) steal = &c;
    if (!irq || c.irq_pct + c.softirq_pct > irq->irq_pct + irq->softirq_pct) irq = &c;
  }
  if (steal && steal->steal_pct >= 0.1) add(fmt::format("steal {:.1f}% cpu{}", steal->steal_pct, steal->cpu));
  if (irq && irq->irq_pct + irq->softirq_pct >= 0.1)
    add(fmt::format("irq {:.1f}% cpu{}", irq->irq_pct + irq->softirq_pct, irq->cpu));
  return s;
}

// "requests 995/s  server time p50 1.20ms p99 3.18ms  socket wait p99 155us: runnable 31%" over
// the server-side requests, with the reader's largest part of the socket wait.
std::string requests_summary(const analysis::Window& w) {
  if (!w.has(snapshot::kFieldRequests)) return {};
  const analysis::RequestRow r = analysis::server_requests(w);
  if (r.sum.count == 0) return "requests: none on the targets' listening ports";
  auto ms = [](uint64_t ns) { return printf_str("%.2fms", double(ns) / 1e6); };
  std::string l = "requests " + rate(r.rate) + "/s  server time p50 " + ms(r.sum.total.percentile_ns(50)) + " p99 " +
                  ms(r.sum.total.percentile_ns(99)) + "  socket wait p99 " +
                  printf_str("%.0fus", analysis::us(r.sum.wait.percentile_ns(99)));
  const auto pct = r.wait_by_part_pct();
  const size_t top = size_t(std::max_element(pct.begin(), pct.end()) - pct.begin());
  if (pct[top] > 0) l += fmt::format(": {} {:.0f}%", analysis::kWaitParts[top], pct[top]);
  return l;
}

}  // namespace

std::vector<std::string> header_lines(const TopState& st) {
  const auto& w = st.window();
  std::vector<std::string> out;
  // Early in the line: a narrow terminal cuts the end.
  std::string l1 = st.paused() ? "platoon top [PAUSED]  " : "platoon top  ";
  const auto& r = st.replay();
  if (r.active)
    l1 += "replay " + std::to_string(r.position) + "/" + std::to_string(r.count) + " x" + printf_str("%g", r.speed) +
          "  " + st.target;
  else
    l1 += st.target + "  every " + printf_str("%g", st.interval_s()) + "s";
  // Early too: which process's threads the table holds (whole-machine mode, after Enter).
  if (const auto pid = st.open_pid()) {
    const auto* p = st.opened_process();
    l1 += "  > pid " + std::to_string(*pid) + " " + (p ? p->comm : std::string("(gone)"));
  }
  l1 += "  source " + st.source_line + "  lost " + std::to_string(w.losses.lost_events);
  if (w.losses.untracked_threads || w.losses.lost_pairs)
    l1 += " untracked " + std::to_string(w.losses.untracked_threads) + " pairs " + std::to_string(w.losses.lost_pairs);
  out.push_back(l1);

  double cpu = 0, wait = 0, csw = 0, nvcsw = 0, migr = 0;
  uint64_t threads = 0, cycles = 0, events = 0;
  for (const auto& p : w.processes) {
    cpu += p.cpu_pct; wait += p.wait_pct; csw += p.cswch_per_s; nvcsw += p.nvcswch_per_s;
    migr += p.migrations_per_s; threads += p.threads; cycles += p.io_cycles; events += p.io_events;
  }
  // Fits 80 columns for one process: the totals matter more than spacing.
  std::string l2 = (w.processes.size() > 1 ? std::to_string(w.processes.size()) + " procs " : std::string()) +
                   std::to_string(threads) + " thr CPU " + pct(cpu) + "% wait " + pct(wait) + "% /s: csw " +
                   rate(csw) + " nvcs " + rate(nvcsw) + " mig " + rate(migr);
  if (w.has(snapshot::kFieldIo) && w.wall_s > 0)
    l2 += " cyc " + rate(double(cycles) / w.wall_s) + " ev/c " +
          printf_str("%.1f", cycles ? double(events) / double(cycles) : 0.0);
  out.push_back(l2);
  if (const std::string l = requests_summary(w); !l.empty()) out.push_back(l);

  std::string l3;
  for (const auto& t : w.threads) {
    if (!t.drain) continue;
    l3 += (l3.empty() ? "queue depth at drain: " : "  ") + t.comm + " avg " +
          printf_str("%.1f", t.drain->queue_depth_avg) + " p99 " +
          printf_str("%.0f", analysis::linear_percentile(t.delta.drain_depth_hist, 99));
  }
  if (l3.empty()) {
    const auto lacks = snapshot::missing_fields(w.fields);
    if (!lacks.empty()) {
      l3 = "lacks:";
      for (const auto& f : lacks) l3 += " " + f;
    } else {
      l3 = "no runtime drains (not a platoon-runtime target, or --no-usdt)";
    }
  }
  // What the machine and the container do: after the drains, or first when a group
  // is being throttled, which then explains most of the wait.
  const std::string machine = machine_summary(w);
  const bool throttled = std::any_of(w.cgroups.begin(), w.cgroups.end(), [](auto& g) { return g.throttled_periods > 0; });
  if (!machine.empty()) l3 = throttled ? machine + "  " + l3 : l3 + "  " + machine;
  out.push_back(l3);

  // The recording state replaces the legend (also in help) so that it fits 80 columns; what
  // top costs comes first, with a shorter legend after it.
  std::string l4;
  if (st.cost) l4 = analysis::cost_short(*st.cost) + "  ";
  if (!st.recording.empty()) l4 += st.recording;
  else l4 += st.cost ? "b50/b99: q drain depth, e epoll ev/cycle" : "batch b50/b99: q = drain queue depth, e = epoll events/cycle";
  if (st.editing_filter()) l4 = "filter: " + st.filter() + "_   (Enter keeps, Esc clears)";
  else if (!st.filter().empty()) l4 += "  filter: " + st.filter();
  if (!st.status.empty()) l4 += "  " + st.status;
  out.push_back(l4);
  return out;
}

}  // namespace platoon::dashboard
