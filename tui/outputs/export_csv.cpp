#include "tui/outputs/export_csv.hpp"

#include <cinttypes>
#include <cstdio>
#include <utility>

namespace platoon::model {
namespace {

// Fixed precision instead of the stream's default (6 significant digits, scientific for large
// values): a spreadsheet then reads every cell the same way.
std::string num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}
std::string num(uint64_t v) { return std::to_string(v); }

}  // namespace

std::string csv_cell(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

void write_csv_header(std::ostream& out) {
  out << "interval_start_s,interval_end_s,pid,tid,comm,cpu_pct,wait_pct,run_ns,wait_ns,"
         "switches_voluntary,switches_involuntary,migrations,io_cycles,io_events,events_per_cycle,"
         "drains,queue_depth_avg,runq_p50_us,runq_p99_us\n";
}

void write_csv_rows(std::ostream& out, const Window& w, uint64_t origin_ns) {
  const std::string start = num(static_cast<double>(w.start_ns - origin_ns) / 1e9, 6);
  const std::string end = num(static_cast<double>(w.end_ns - origin_ns) / 1e9, 6);
  const std::string none;
  for (const auto& t : w.threads) {
    const auto& d = t.delta;
    const bool rw = w.has(kFieldRunWait), sw = w.has(kFieldSwitches), io = w.has(kFieldIo),
               dr = w.has(kFieldDrain);
    out << start << ',' << end << ',' << t.pid << ',' << t.tid << ',' << csv_cell(t.comm) << ','
        << (rw ? num(t.cpu_pct, 3) : none) << ',' << (rw ? num(t.wait_pct, 3) : none) << ','
        << (rw ? num(d.run_ns) : none) << ',' << (rw ? num(d.wait_ns) : none) << ','
        << (sw ? num(d.switches_voluntary) : none) << ',' << (sw ? num(d.switches_involuntary) : none) << ','
        << (w.has(kFieldMigrations) ? num(t.migrations) : none) << ','
        << (io ? num(d.io_cycles) : none) << ',' << (io ? num(d.io_events) : none) << ','
        << (t.io ? num(t.io->events_per_cycle, 3) : none) << ','
        << (dr ? num(d.drains) : none) << ',' << (t.drain ? num(t.drain->queue_depth_avg, 3) : none) << ','
        << (t.runq ? num(t.runq->p50_us, 1) : none) << ',' << (t.runq ? num(t.runq->p99_us, 1) : none)
        << '\n';
  }
}

void CsvExporter::add(Snapshot s) {
  if (!have_prev_) {
    origin_ns_ = s.ts_ns;
    have_prev_ = true;
  } else {
    write_csv_rows(out_, make_window(prev_, s), origin_ns_);
    ++intervals_;
  }
  prev_ = std::move(s);
}

}  // namespace platoon::model
