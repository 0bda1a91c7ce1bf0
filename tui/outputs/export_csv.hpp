// platoon export --format csv: one row per thread per interval (each pair of consecutive
// snapshots), for spreadsheets and pandas. The numbers are the ones top and report show: each
// row comes from make_window(from, to), so every view agrees on what a field means.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "bpf/snapshot/snapshot.hpp"
#include "tui/analysis/window.hpp"

namespace platoon::outputs {

// The header line (with its newline): the column order every row follows; after the row's
// identity, the metric catalog's CSV columns (tui/metrics/catalog.hpp).
void write_csv_header(std::ostream& out);

// The rows of one window; interval times are seconds since origin_ns (the first snapshot).
// Cells of fields the source lacks (window.fields) are left empty, as are ratios with a zero
// denominator, so "unknown" never reads as 0.
void write_csv_rows(std::ostream& out, const analysis::Window& window, uint64_t origin_ns);

// Feeds snapshots in file order and writes one window per consecutive pair, keeping only the
// previous snapshot (a long recording need not fit in memory).
class CsvExporter {
 public:
  explicit CsvExporter(std::ostream& out) : out_(out) {}
  void add(snapshot::Snapshot s);
  size_t intervals() const { return intervals_; }

 private:
  std::ostream& out_;
  bool have_prev_ = false;
  uint64_t origin_ns_ = 0;
  snapshot::Snapshot prev_;
  size_t intervals_ = 0;
};

// RFC 4180: a cell with a comma, quote, CR or LF is quoted and its quotes doubled. comm is
// chosen by the traced program and may hold any of those.
std::string csv_cell(std::string_view text);

}  // namespace platoon::outputs
