#include "tui/outputs/export_csv.hpp"

#include <cinttypes>
#include <cstdio>
#include <utility>
#include <vector>

#include "tui/metrics/catalog.hpp"

namespace platoon::outputs {
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

// After the row's identity, the catalog's CSV columns in their order (tui/metrics/catalog.hpp).
void write_csv_header(std::ostream& out) {
  out << "interval_start_s,interval_end_s,pid,tid,comm";
  for (const metrics::Metric* m : metrics::csv_metrics()) out << ',' << m->key;
  out << '\n';
}

void write_csv_rows(std::ostream& out, const analysis::Window& w, uint64_t origin_ns) {
  static const std::vector<const metrics::Metric*> columns = metrics::csv_metrics();
  const std::string start = num(static_cast<double>(w.start_ns - origin_ns) / 1e9, 6);
  const std::string end = num(static_cast<double>(w.end_ns - origin_ns) / 1e9, 6);
  for (const auto& t : w.threads) {
    out << start << ',' << end << ',' << t.pid << ',' << t.tid << ',' << csv_cell(t.comm);
    for (const metrics::Metric* m : columns) {
      metrics::Value v = value_of(*m, w, t);
      if (!v && m->csv.zero_if && (w.fields & m->fields) && m->csv.zero_if(t)) v = 0;
      out << ',';
      if (v) out << (m->csv.decimals < 0 ? num(static_cast<uint64_t>(*v)) : num(*v, m->csv.decimals));
    }
    out << '\n';
  }
}

void CsvExporter::add(snapshot::Snapshot s) {
  if (!have_prev_) {
    origin_ns_ = s.ts_ns;
    have_prev_ = true;
  } else {
    write_csv_rows(out_, analysis::make_window(prev_, s), origin_ns_);
    ++intervals_;
  }
  prev_ = std::move(s);
}

}  // namespace platoon::outputs
