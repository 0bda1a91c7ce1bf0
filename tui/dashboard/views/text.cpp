#include "tui/dashboard/views/text.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>

#include <fmt/format.h>

namespace platoon::tui {

using model::Column;
using model::ThreadWindow;
using model::TopState;

namespace {

std::string printf_str(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string rate(double v) { return model::format_rate(v); }
std::string pct(double v) { return model::format_pct(v); }

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

std::vector<HistRow> linear_rows(const model::Slots& slots) {
  std::vector<HistRow> rows;
  for (const auto& [slot, count] : slots)
    rows.push_back({slot + 1 >= static_cast<uint32_t>(model::kBatchSlots) ? std::to_string(slot) + "+" : std::to_string(slot), count});
  return rows;
}

std::string peers_line(const model::Peer& p, bool with_ns) {
  std::string s = fit(p.comm, 13) + " " + fit(std::to_string(p.tid), 7, false) + " " +
                  fit(std::to_string(p.count) + "x", 7, false);
  if (with_ns) s += " " + fit(printf_str("%.1fms", double(p.ns) / 1e6), 8, false);
  return s;
}

}  // namespace

size_t text_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string fit(const std::string& s, size_t width, bool left) {
  const size_t w = text_width(s);
  if (w <= width) {
    const std::string pad(width - w, ' ');
    return left ? s + pad : pad + s;
  }
  // Cut at a glyph boundary.
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80 && n++ == width) break;
    out += s[i];
  }
  return out;
}

std::string sparkline(const std::deque<double>& values, size_t width, double max, Glyphs g) {
  static const std::array<const char*, 8> kBlocks{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char kAscii[] = "_.-:=+*#";
  std::string s;
  const size_t n = std::min(values.size(), width);
  s.append(width - n, ' ');
  for (size_t i = values.size() - n; i < values.size(); ++i) {
    const double f = max > 0 ? std::clamp(values[i] / max, 0.0, 1.0) : 0;
    const auto level = static_cast<size_t>(std::lround(f * 7));
    if (g.utf8) s += kBlocks[level];
    else s += kAscii[level];
  }
  return s;
}

std::string bar(double fraction, size_t width, Glyphs g) {
  static const std::array<const char*, 8> kEighths{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  const double f = std::clamp(fraction, 0.0, 1.0) * static_cast<double>(width);
  auto full = static_cast<size_t>(f);
  std::string s;
  for (size_t i = 0; i < full; ++i) s += g.utf8 ? "█" : "#";
  size_t used = full;
  if (full < width) {
    const auto eighth = static_cast<size_t>((f - static_cast<double>(full)) * 8);
    if (g.utf8 && eighth > 0) { s += kEighths[eighth]; ++used; }
    else if (!g.utf8 && fraction > 0 && full == 0) { s += '|'; ++used; }  // non-zero stays visible
  }
  s.append(width - used, ' ');
  return s;
}

namespace {

// Drops the lowest-priority columns (highest number) until the rest fit in `width`; columns of
// priority 1 always stay.
template <class Col, class Info>
void fit_columns(std::vector<Col>& cols, size_t width, Info info) {
  auto total = [&] {
    size_t w = 0;
    for (auto c : cols) w += static_cast<size_t>(info(c).width) + 1;
    return w;
  };
  while (total() > width + 1) {
    auto worst = std::max_element(cols.begin(), cols.end(), [&](Col a, Col b) { return info(a).priority < info(b).priority; });
    if (info(*worst).priority <= 1) break;
    cols.erase(worst);
  }
}

// The sorted column's title, marked with its direction.
std::string sort_title(std::string title, bool sorted, bool desc) { return sorted ? (desc ? "v" : "^") + title : title; }

}  // namespace

std::vector<Column> visible_columns(const TopState& st, size_t width, bool with_history) {
  std::vector<Column> cols;
  for (const auto& c : model::columns())
    if (st.column_shown(c.id) && (with_history || c.id != Column::history)) cols.push_back(c.id);
  fit_columns(cols, width, model::column_info);
  return cols;
}

std::vector<model::ProcColumn> visible_process_columns(const TopState& st, size_t width) {
  std::vector<model::ProcColumn> cols;
  for (const auto& c : model::process_columns())
    if (st.process_column_shown(c.id)) cols.push_back(c.id);
  fit_columns(cols, width, model::process_column_info);
  return cols;
}

std::string process_column_header(const std::vector<model::ProcColumn>& cols, const TopState& st) {
  std::string s;
  for (auto c : cols) {
    const auto& info = model::process_column_info(c);
    if (!s.empty()) s += ' ';
    s += fit(sort_title(info.title, c == st.process_sort_column(), st.process_sort_desc()),
             static_cast<size_t>(info.width), info.left);
  }
  return s;
}

std::string process_row_text(const std::vector<model::ProcColumn>& cols, const model::ProcessWindow& p,
                             const TopState& st) {
  std::string s;
  for (auto c : cols) {
    const auto& info = model::process_column_info(c);
    std::string cell;
    switch (c) {
      case model::ProcColumn::pid: cell = std::to_string(p.pid); break;
      case model::ProcColumn::command: cell = p.comm; break;
      case model::ProcColumn::threads: cell = std::to_string(p.threads); break;
      default: {
        const auto v = model::process_value_of(*info.metric, st.window(), p);
        cell = v ? info.metric->tui.format(*v) : "-";
      }
    }
    if (!s.empty()) s += ' ';
    s += fit(cell, static_cast<size_t>(info.width), info.left);
  }
  return s;
}

std::string column_header(const std::vector<Column>& cols, const TopState& st) {
  std::string s;
  for (auto c : cols) {
    const auto& info = model::column_info(c);
    std::string title = info.title;
    if (c == Column::history) title += st.spark() == model::SparkMetric::wait ? " %wait" : " %cpu";
    if (!s.empty()) s += ' ';
    s += fit(sort_title(title, c == st.sort_column(), st.sort_desc()), static_cast<size_t>(info.width), info.left);
  }
  return s;
}

namespace {

// The history column is drawn from the state (the sparkline); every other cell is the catalog's.
std::string cell_text(Column c, const ThreadWindow& t, const TopState& st, Glyphs g) {
  const auto& info = model::column_info(c);
  if (c == Column::history) {
    const auto* h = st.history(model::key_of(t));
    if (!h) return "";
    const auto& vals = st.spark() == model::SparkMetric::wait ? h->wait_pct : h->cpu_pct;
    const double peak = std::max(10.0, *std::max_element(vals.begin(), vals.end()));
    return sparkline(vals, static_cast<size_t>(info.width), peak, g);
  }
  const model::Metric& m = *info.metric;
  const auto v = model::value_of(m, st.window(), t);
  if (!v) return "-";
  return m.tui.cell ? m.tui.cell(st.window(), t) : m.tui.format(*v);
}

}  // namespace

std::string row_text(const std::vector<Column>& cols, const ThreadWindow& t, const TopState& st, Glyphs g) {
  std::string s;
  for (auto c : cols) {
    const auto& info = model::column_info(c);
    if (!s.empty()) s += ' ';
    s += fit(cell_text(c, t, st, g), static_cast<size_t>(info.width), info.left);
  }
  return s;
}

// "quota /grp 0.20 CPU thr 45% 120ms  steal 3.1% cpu1  irq 12% cpu0", each part only when
// there is something to say (a quota, any steal or interrupts above a tenth of a percent).
static std::string machine_summary(const model::Window& w) {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : "  ") + part; };
  for (const auto& g : w.cgroups) {
    if (g.version == 0 || (g.quota_cpus <= 0 && g.throttled_periods == 0)) continue;
    add(fmt::format("quota {} {:.2f} CPU thr {:.0f}% {:.0f}ms", g.path, g.quota_cpus, g.throttled_periods_pct,
                    double(g.throttled_ns) / 1e6));
  }
  const model::CpuWindow* steal = nullptr;
  const model::CpuWindow* irq = nullptr;
  for (const auto& c : w.cpus) {
    if (!steal || c.steal_pct > steal->steal_pct) steal = &c;
    if (!irq || c.irq_pct + c.softirq_pct > irq->irq_pct + irq->softirq_pct) irq = &c;
  }
  if (steal && steal->steal_pct >= 0.1) add(fmt::format("steal {:.1f}% cpu{}", steal->steal_pct, steal->cpu));
  if (irq && irq->irq_pct + irq->softirq_pct >= 0.1)
    add(fmt::format("irq {:.1f}% cpu{}", irq->irq_pct + irq->softirq_pct, irq->cpu));
  return s;
}

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
  if (w.has(model::kFieldIo) && w.wall_s > 0)
    l2 += " cyc " + rate(double(cycles) / w.wall_s) + " ev/c " +
          printf_str("%.1f", cycles ? double(events) / double(cycles) : 0.0);
  out.push_back(l2);

  std::string l3;
  for (const auto& t : w.threads) {
    if (!t.drain) continue;
    l3 += (l3.empty() ? "queue depth at drain: " : "  ") + t.comm + " avg " +
          printf_str("%.1f", t.drain->queue_depth_avg) + " p99 " +
          printf_str("%.0f", model::linear_percentile(t.delta.drain_depth_hist, 99));
  }
  if (l3.empty()) {
    const auto lacks = model::missing_fields(w.fields);
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
  if (st.cost) l4 = model::cost_short(*st.cost) + "  ";
  if (!st.recording.empty()) l4 += st.recording;
  else l4 += st.cost ? "b50/b99: q drain depth, e epoll ev/cycle" : "batch b50/b99: q = drain queue depth, e = epoll events/cycle";
  if (st.editing_filter()) l4 = "filter: " + st.filter() + "_   (Enter keeps, Esc clears)";
  else if (!st.filter().empty()) l4 += "  filter: " + st.filter();
  if (!st.status.empty()) l4 += "  " + st.status;
  out.push_back(l4);
  return out;
}

// Why the thread waited: the parts of its %wait, and its cgroup's quota when it has one.
static Section why_section(const model::Window& w, const ThreadWindow& t) {
  Section why{"why it waited (% of wall time)", {}};
  if (w.has(model::kFieldWaitSplit)) {
    // Two causes beside the total, then three a line, so that each line fits half of an
    // 80-column screen; "-": the source did not measure that part (no IRQ time accounting).
    std::string line = fmt::format("wait {:.1f}:", t.wait_pct);
    size_t room = 2, on_line = 0;
    for (const model::WaitCause& c : model::kWaitCauses) {
      if (on_line == room) {
        why.lines.push_back(std::move(line));
        line = " ";
        room = 3;
        on_line = 0;
      }
      const double pct = t.wait_split.*c.pct;
      line += fmt::format("{}{} {}", on_line ? "  " : " ", c.label,
                          model::measured(c, w.fields) ? fmt::format("{:.1f}", pct) : "-");
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

std::vector<Section> detail_sections(const TopState& st, const ThreadWindow& t, size_t width, size_t max_rows, Glyphs g) {
  const auto& w = st.window();
  std::vector<Section> out;
  auto unavailable = [&](Section& s, model::Field f, const char* none) {
    s.lines.push_back(w.has(f) ? none : "not available from this source");
  };

  Section io{"epoll events per cycle", {}};
  if (t.io) {
    io.lines.push_back(printf_str("%.0f/s", t.io->cycles_per_s) + printf_str("  avg %.2f", t.io->events_per_cycle) +
                       printf_str("  p50 %.0f", model::linear_percentile(t.delta.io_events_hist, 50)) +
                       printf_str("  p99 %.0f", model::linear_percentile(t.delta.io_events_hist, 99)) +
                       printf_str("  blk %.0f%%", t.io->blocked_pct));
    for (auto& l : hist_lines(linear_rows(t.io->events_hist), width, max_rows, g)) io.lines.push_back(l);
  } else {
    unavailable(io, model::kFieldIo, "no epoll waits in this interval");
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

  Section rq{"run-queue latency", {}};
  if (t.runq && t.runq->samples > 0) {
    rq.lines.push_back(printf_str("%.0f", double(t.runq->samples)) + printf_str(" p50 %.0fus", t.runq->p50_us) +
                       printf_str(" p99 %.0fus", t.runq->p99_us) + printf_str(" max %.0fus", t.runq->max_us));
    std::vector<HistRow> rows;
    for (const auto& [slot, count] : model::nonzero_slots(t.delta.runq_hist))
      rows.push_back({ns_label(model::log2_slot_low(static_cast<int>(slot))), count});
    for (auto& l : hist_lines(rows, width, max_rows, g)) rq.lines.push_back(l);
  } else {
    unavailable(rq, model::kFieldRunqHist, "no wakeups in this interval");
  }
  out.push_back(rq);

  Section cpus{"CPUs (share of switch-ins)", {}};
  for (const auto& [cpu, share] : t.cpu_distribution) {
    if (cpus.lines.size() >= max_rows) break;
    const size_t bw = width > 20 ? width - 20 : 1;
    cpus.lines.push_back(fit("cpu" + std::to_string(cpu), 9, false) + " " + bar(share / 100.0, bw, g) + " " +
                         fit(printf_str("%.1f%%", share), 8, false));
  }
  if (t.cpu_distribution.empty()) unavailable(cpus, model::kFieldCpuDist, "did not run in this interval");
  out.push_back(cpus);

  Section pre{"preempted by (times, wait after)", {}};
  for (const auto& p : t.preempted_by) pre.lines.push_back(peers_line(p, true));
  if (t.preempted_by.empty()) unavailable(pre, model::kFieldPairs, "nobody");
  out.push_back(pre);
  Section wk{"woken by", {}};
  for (const auto& p : t.woken_by) wk.lines.push_back(peers_line(p, false));
  if (t.woken_by.empty()) unavailable(wk, model::kFieldPairs, "nobody");
  out.push_back(wk);

  Section hist{"history (newest right)", {}};
  if (const auto* h = st.history(model::key_of(t))) {
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

std::string batch_text(const TopState& st) {
  std::string s;
  for (const auto& l : header_lines(st)) s += l + "\n";
  auto line = [&s](std::string r) {
    while (!r.empty() && r.back() == ' ') r.pop_back();
    s += r + "\n";
  };
  if (st.machine_wide()) {
    const auto cols = visible_process_columns(st, 1000);
    s += process_column_header(cols, st) + "\n";
    for (const auto* p : st.process_rows()) line(process_row_text(cols, *p, st));
    return s + "\n";
  }
  const auto cols = visible_columns(st, 1000, false);
  s += column_header(cols, st) + "\n";
  for (const auto* t : st.rows()) line(row_text(cols, *t, st, Glyphs{false}));
  return s + "\n";
}

}  // namespace platoon::tui
