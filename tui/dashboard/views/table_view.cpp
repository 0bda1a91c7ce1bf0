// The main view: header lines, the column header, one row per thread, the key hint; and the
// body it shares with the process view.
#include <curses.h>

#include <algorithm>

#include "tui/dashboard/input/keymap.hpp"
#include "tui/dashboard/views/draw.hpp"

namespace platoon::dashboard {

int DrawContext::attr(ColourPair pair, int mono) const { return colour ? static_cast<int>(COLOR_PAIR(pair)) : mono; }

void put(const DrawContext& dc, int y, int x, const std::string& s, int a) {
  if (y < 0 || y >= dc.lines || x >= dc.cols) return;
  // The bottom-right cell cannot be written without scrolling: stop one short on the last line.
  const int room = dc.cols - x - (y == dc.lines - 1 ? 1 : 0);
  if (room <= 0) return;
  if (a) attron(a);
  mvaddstr(y, x, fit(s, static_cast<size_t>(room)).c_str());
  if (a) attroff(a);
}

void draw_header(const DrawContext& dc, const TopState& st, int lines) {
  const auto hl = header_lines(st);
  for (int i = 0; i < lines && i < static_cast<int>(hl.size()); ++i) {
    int a = i == 0 ? dc.attr(kPairTitle, 0) | A_BOLD : 0;
    if (i == 3 && st.editing_filter()) a = A_BOLD;
    put(dc, i, 0, hl[static_cast<size_t>(i)], a);
  }
}

int table_height(const DrawContext& dc) { return dc.lines - kTableHeaderLines - 2; }

void draw_table_body(const DrawContext& dc, const TopState& st, const TableBody& body) {
  put(dc, kTableHeaderLines, 0, fit(body.header, static_cast<size_t>(dc.cols)), dc.attr(kPairHeader, A_REVERSE));
  const int first = kTableHeaderLines + 1;
  const int height = table_height(dc);
  if (!st.has_window()) put(dc, first, 0, "waiting for the first interval...");
  else if (body.count == 0) put(dc, first, 0, body.empty);
  if (height > 0) {
    for (int i = 0; i < height && body.top + static_cast<size_t>(i) < body.count; ++i) {
      const size_t r = body.top + static_cast<size_t>(i);
      const int a = static_cast<int>(r) == body.selected ? dc.attr(kPairSelected, A_REVERSE) : 0;
      put(dc, first + i, 0, fit(body.row(r), static_cast<size_t>(dc.cols)), a);
    }
  }
  // Where the selection is, when the rows do not fit on one page (a 1,000-thread server).
  if (height > 0 && body.count > static_cast<size_t>(height)) {
    const std::string pos = " " + std::to_string(body.selected + 1) + "/" + std::to_string(body.count);
    put(dc, kTableHeaderLines - 1, std::max(0, dc.cols - static_cast<int>(pos.size())), pos, A_BOLD);
  }
  put(dc, dc.lines - 1, 0, footer_hint(st.replay().active), A_DIM);
}

void draw_table(const DrawContext& dc, TopState& st) {
  draw_header(dc, st, kTableHeaderLines);
  const auto cols = visible_columns(st, static_cast<size_t>(dc.cols), true);
  const auto rows = st.rows();
  const int height = table_height(dc);
  const size_t top = height > 0 ? st.scroll_for(static_cast<size_t>(height)) : 0;
  const char* empty = !st.filter().empty() ? "no thread matches the filter"
                      : st.open_pid() && !st.opened_process() ? "the process is gone (Esc: back)"
                                                              : "no threads";
  draw_table_body(dc, st, {column_header(cols, st), rows.size(), st.selected_index(), top, empty,
                           [&](size_t r) { return row_text(cols, *rows[r], st, dc.glyphs); }});
}

}  // namespace platoon::dashboard
