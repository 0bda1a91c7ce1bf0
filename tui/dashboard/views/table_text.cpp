#include "tui/dashboard/views/table_text.hpp"

#include <algorithm>

namespace platoon::dashboard {

using analysis::ThreadWindow;

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

// The history column is drawn from the state (the sparkline); every other cell is the catalog's.
std::string cell_text(Column c, const analysis::ThreadWindow& t, const TopState& st, Glyphs g) {
  const auto& info = column_info(c);
  if (c == Column::history) {
    const auto* h = st.history(key_of(t));
    if (!h) return "";
    const auto& vals = st.spark() == SparkMetric::wait ? h->wait_pct : h->cpu_pct;
    const double peak = std::max(10.0, *std::max_element(vals.begin(), vals.end()));
    return sparkline(vals, static_cast<size_t>(info.width), peak, g);
  }
  const metrics::Metric& m = *info.metric;
  const auto v = metrics::value_of(m, st.window(), t);
  if (!v) return "-";
  return m.tui.cell ? m.tui.cell(st.window(), t) : m.tui.format(*v);
}

}  // namespace

std::vector<Column> visible_columns(const TopState& st, size_t width, bool with_history) {
  std::vector<Column> cols;
  for (const auto& c : columns())
    if (st.column_shown(c.id) && (with_history || c.id != Column::history)) cols.push_back(c.id);
  fit_columns(cols, width, column_info);
  return cols;
}

std::vector<ProcColumn> visible_process_columns(const TopState& st, size_t width) {
  std::vector<ProcColumn> cols;
  for (const auto& c : process_columns())
    if (st.process_column_shown(c.id)) cols.push_back(c.id);
  fit_columns(cols, width, process_column_info);
  return cols;
}

std::string process_column_header(const std::vector<ProcColumn>& cols, const TopState& st) {
  std::string s;
  for (auto c : cols) {
    const auto& info = process_column_info(c);
    if (!s.empty()) s += ' ';
    s += fit(sort_title(info.title, c == st.process_sort_column(), st.process_sort_desc()),
             static_cast<size_t>(info.width), info.left);
  }
  return s;
}

std::string process_row_text(const std::vector<ProcColumn>& cols, const analysis::ProcessWindow& p,
                             const TopState& st) {
  std::string s;
  for (auto c : cols) {
    const auto& info = process_column_info(c);
    std::string cell;
    switch (c) {
      case ProcColumn::pid: cell = std::to_string(p.pid); break;
      case ProcColumn::command: cell = p.comm; break;
      case ProcColumn::threads: cell = std::to_string(p.threads); break;
      default: {
        const auto v = metrics::process_value_of(*info.metric, st.window(), p);
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
    const auto& info = column_info(c);
    std::string title = info.title;
    if (c == Column::history) title += st.spark() == SparkMetric::wait ? " %wait" : " %cpu";
    if (!s.empty()) s += ' ';
    s += fit(sort_title(title, c == st.sort_column(), st.sort_desc()), static_cast<size_t>(info.width), info.left);
  }
  return s;
}

std::string row_text(const std::vector<Column>& cols, const analysis::ThreadWindow& t, const TopState& st, Glyphs g) {
  std::string s;
  for (auto c : cols) {
    const auto& info = column_info(c);
    if (!s.empty()) s += ' ';
    s += fit(cell_text(c, t, st, g), static_cast<size_t>(info.width), info.left);
  }
  return s;
}

}  // namespace platoon::dashboard
