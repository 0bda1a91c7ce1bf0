#include "tui/dashboard/views/batch_text.hpp"

#include "tui/dashboard/views/header_text.hpp"
#include "tui/dashboard/views/table_text.hpp"

namespace platoon::dashboard {


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

}  // namespace platoon::dashboard
