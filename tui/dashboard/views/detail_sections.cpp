#include "tui/dashboard/views/detail_sections.hpp"

#include "tui/analysis/requests.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace platoon::dashboard {

using analysis::ThreadWindow;

namespace {

std::string ns_label(double ns) {
  if (ns < 1e3) return printf_str("%.0fns", ns);
  if (ns < 1e6) return printf_str("%.0fus", ns / 1e3);
  if (ns < 1e9) return printf_str("%.0fms", ns / 1e6);
  return printf_str("%.0fs", ns / 1e9);
}

struct HistRow {
  std::string label;
  uint64_t count;
};

// Groups adjacent rows so that at most max_rows remain: a wide histogram keeps its shape.
std::vector<HistRow> squeeze(const std::vector<HistRow>& rows, size_t max_rows) {
  if (rows.size() <= max_rows || max_rows == 0) return rows;
  const size_t group = (rows.size() + max_rows - 1) / max_rows;
  std::vector<HistRow> out;
  for (size_t i = 0; i < rows.size(); i += group) {
    const size_t j = std::min(rows.size(), i + group) - 1;
    uint64_t sum = 0;
    for (size_t k = i; k <= j; ++k) sum += rows[k].count;
    out.push_back({i == j ? rows[i].label : rows[i].label + ".." + rows[j].label, sum});
  }
  return out;
}

std::vector<std::string> hist_lines(const std::vector<HistRow>& in, size_t width, size_t max_rows, Glyphs g) {
  const auto rows = squeeze(in, max_rows);
  uint64_t peak = 1;
  for (const auto& r : rows) peak = std::max(peak, r.count);
  std::vector<std::string> out;
  const size_t label_w = 11, count_w = 7;
  const size_t bar_w = width > label_w + count_w + 2 ? width - label_w - count_w - 2 : 1;
  for (const auto& r : rows)
    out.push_back(fit(r.label, label_w, false) + " " + bar(double(r.count) / double(peak), bar_w, g) + " " +
                  fit(std::to_string(r.count), count_w, false));
  return out;
}

std::vector<HistRow> linear_rows(const analysis::Slots& slots) {
  std::vector<HistRow> rows;
  for (const auto& [slot, count] : slots)
    rows.push_back({slot + 1 >= static_cast<uint32_t>(snapshot::kBatchSlots) ? std::to_string(slot) + "+" : std::to_string(slot), count});
  return rows;
}

std::string peers_line(const analysis::Peer& p, bool with_ns) {
  std::string s = fit(p.comm, 13) + " " + fit(std::to_string(p.tid), 7, false) + " " +
                  fit(std::to_string(p.count) + "x", 7, false);
  if (with_ns) s += " " + fit(printf_str("%.1fms", double(p.ns) / 1e6), 8, false);
  return s;
}

// Why the thread waited: the parts of its %wait, and its cgroup's quota when it has one.
Section why_section(const analysis::Window& w, const analysis::ThreadWindow& t) {
  Section why{"why it waited (% of wall time)", {}};
  if (w.has(snapshot::kFieldWaitSplit)) {
    // Two causes beside the total, then three a line, so that each line fits half of an
    // 80-column screen; "-": the source did not measure that part (no IRQ time accounting).
    std::string line = fmt::format("wait {:.1f}:", t.wait_pct);
    size_t room = 2, on_line = 0;
    for (const analysis::WaitCause& c : analysis::kWaitCauses) {
      if (on_line == room) {
        why.lines.push_back(std::move(line));
        line = " ";
        room = 3;
        on_line = 0;
      }
      const double pct = t.wait_split.*c.pct;
      line += fmt::format("{}{} {}", on_line ? "  " : " ", c.label,
                          analysis::measured(c, w.fields) ? fmt::format("{:.1f}", pct) : "-");
      ++on_line;
    }
    why.lines.push_back(std::move(line));
    for (const auto& grp : w.cgroups) {
      if (grp.path != t.cgroup) continue;
      why.lines.push_back(fmt::format("cgroup {}  {}  throttled {}/{} periods", grp.path,
                                      grp.quota_cpus > 0 ? fmt::format("quota {:.2f} CPU", grp.quota_cpus) : "no quota",
                                      grp.throttled_periods, grp.periods));
    }
  } else {
    why.lines.push_back("not available from this source");
  }
  return why;
}

// The requests the thread read: their socket wait and (server side) server time, each with its
// histogram, and what the thread itself was doing while they waited.
std::vector<Section> request_sections(const analysis::Window& w, const analysis::ThreadWindow& t, size_t width,
                                      size_t max_rows, Glyphs g) {
  const analysis::RequestRow r = analysis::thread_requests(w, t.tid);
  Section wait{"socket wait of the requests it read", {}};
  if (r.sum.count == 0) {
    wait.lines.push_back("read no requests in this interval");
    return {wait};
  }
  auto latency_lines = [&](Section& s, const snapshot::LatencyHistogram& h) {
    s.lines.push_back(printf_str("%.0f/s", r.rate) + printf_str("  p50 %.0fus", analysis::us(h.percentile_ns(50))) +
                      printf_str("  p99 %.0fus", analysis::us(h.percentile_ns(99))) +
                      printf_str("  max %.0fus", analysis::us(h.percentile_ns(100))));
    std::vector<HistRow> rows;
    for (const auto& [bucket, count] : h.buckets())
      rows.push_back({ns_label(double(snapshot::LatencyHistogram::bucket_low(bucket))), count});
    for (auto& l : hist_lines(rows, width, max_rows, g)) s.lines.push_back(l);
  };
  latency_lines(wait, r.sum.wait);
  const auto pct = r.wait_by_part_pct();
  std::string parts = "it was:";
  for (size_t i = 0; i < pct.size(); ++i) parts += fmt::format(" {} {:.0f}%", analysis::kWaitParts[i], pct[i]);
  wait.lines.insert(wait.lines.begin() + 1, parts);
  Section total{"time in the server (ready to response or reply read)", {}};
  latency_lines(total, r.sum.total);
  return {wait, total};
}

}  // namespace

std::vector<Section> detail_sections(const TopState& st, const analysis::ThreadWindow& t, size_t width, size_t max_rows, Glyphs g) {
  const auto& w = st.window();
  std::vector<Section> out;
  auto unavailable = [&](Section& s, snapshot::Field f, const char* none) {
    s.lines.push_back(w.has(f) ? none : "not available from this source");
  };

  Section io{"epoll events per cycle", {}};
  if (t.io) {
    io.lines.push_back(printf_str("%.0f/s", t.io->cycles_per_s) + printf_str("  avg %.2f", t.io->events_per_cycle) +
                       printf_str("  p50 %.0f", analysis::linear_percentile(t.delta.io_events_hist, 50)) +
                       printf_str("  p99 %.0f", analysis::linear_percentile(t.delta.io_events_hist, 99)) +
                       printf_str("  blk %.0f%%", t.io->blocked_pct));
    for (auto& l : hist_lines(linear_rows(t.io->events_hist), width, max_rows, g)) io.lines.push_back(l);
  } else {
    unavailable(io, snapshot::kFieldIo, "no epoll waits in this interval");
  }
  out.push_back(io);

  if (t.drain) {
    Section d{"queue depth at drain", {}};
    d.lines.push_back(printf_str("%.0f", double(t.drain->batches)) + printf_str(" avg %.2f", t.drain->queue_depth_avg) +
                      printf_str(" fib/drain %.1f", t.drain->fibers_per_drain) + " steals " + std::to_string(t.drain->steals));
    for (auto& l : hist_lines(linear_rows(t.drain->queue_depth_hist), width, max_rows, g)) d.lines.push_back(l);
    out.push_back(d);
  }

  out.push_back(why_section(w, t));
  if (w.has(snapshot::kFieldRequests)) {
    for (Section& r : request_sections(w, t, width, max_rows, g)) out.push_back(std::move(r));
  }

  Section rq{"run-queue latency", {}};
  if (t.runq && t.runq->samples > 0) {
    rq.lines.push_back(printf_str("%.0f", double(t.runq->samples)) + printf_str(" p50 %.0fus", t.runq->p50_us) +
                       printf_str(" p99 %.0fus", t.runq->p99_us) + printf_str(" max %.0fus", t.runq->max_us));
    std::vector<HistRow> rows;
    for (const auto& [slot, count] : analysis::nonzero_slots(t.delta.runq_hist))
      rows.push_back({ns_label(analysis::log2_slot_low(static_cast<int>(slot))), count});
    for (auto& l : hist_lines(rows, width, max_rows, g)) rq.lines.push_back(l);
  } else {
    unavailable(rq, snapshot::kFieldRunqHist, "no wakeups in this interval");
  }
  out.push_back(rq);

  Section cpus{"CPUs (share of switch-ins)", {}};
  for (const auto& [cpu, share] : t.cpu_distribution) {
    if (cpus.lines.size() >= max_rows) break;
    const size_t bw = width > 20 ? width - 20 : 1;
    cpus.lines.push_back(fit("cpu" + std::to_string(cpu), 9, false) + " " + bar(share / 100.0, bw, g) + " " +
                         fit(printf_str("%.1f%%", share), 8, false));
  }
  if (t.cpu_distribution.empty()) unavailable(cpus, snapshot::kFieldCpuDist, "did not run in this interval");
  out.push_back(cpus);

  Section pre{"preempted by (times, wait after)", {}};
  for (const auto& p : t.preempted_by) pre.lines.push_back(peers_line(p, true));
  if (t.preempted_by.empty()) unavailable(pre, snapshot::kFieldPairs, "nobody");
  out.push_back(pre);
  Section wk{"woken by", {}};
  for (const auto& p : t.woken_by) wk.lines.push_back(peers_line(p, false));
  if (t.woken_by.empty()) unavailable(wk, snapshot::kFieldPairs, "nobody");
  out.push_back(wk);

  Section hist{"history (newest right)", {}};
  if (const auto* h = st.history(key_of(t))) {
    const size_t sw = width > 16 ? width - 16 : 1;
    auto line = [&](const char* name, const std::deque<double>& v, double floor_max) {
      const double peak = std::max(floor_max, v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
      hist.lines.push_back(fit(name, 6) + sparkline(v, sw, peak, g) + " " + fit(printf_str("%.1f", v.empty() ? 0 : v.back()), 6, false) +
                           " ");
    };
    line("%wait", h->wait_pct, 10);
    line("%cpu", h->cpu_pct, 10);
    line("ev/c", h->events_per_cycle, 1);
    if (t.drain) line("qdepth", h->queue_depth, 1);
  }
  out.push_back(hist);
  return out;
}

}  // namespace platoon::dashboard
