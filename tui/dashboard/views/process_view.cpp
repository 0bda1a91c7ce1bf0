// The process view of whole-machine mode (`top --all`): header lines, the process columns, one
// row per process of the window, the key hint; drawn like the thread table (draw_table_body).
#include "tui/dashboard/views/draw.hpp"

namespace platoon::dashboard {

void draw_processes(const DrawContext& dc, TopState& st) {
  draw_header(dc, st, kTableHeaderLines);
  const auto cols = visible_process_columns(st, static_cast<size_t>(dc.cols));
  const auto rows = st.process_rows();
  const int height = table_height(dc);
  const size_t top = height > 0 ? st.process_scroll_for(static_cast<size_t>(height)) : 0;
  draw_table_body(dc, st, {process_column_header(cols, st), rows.size(), st.selected_process_index(), top,
                           st.filter().empty() ? "no processes" : "no process matches the filter",
                           [&](size_t r) { return process_row_text(cols, *rows[r], st); }});
}

}  // namespace platoon::dashboard
