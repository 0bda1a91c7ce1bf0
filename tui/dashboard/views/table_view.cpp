// The main view: header lines, the column header, one row per thread, the key hint.
#include <curses.h>

#include <algorithm>

#include "tui/dashboard/input/keymap.hpp"
#include "tui/dashboard/views/draw.hpp"

namespace platoon::tui {

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

void draw_header(const DrawContext& dc, const model::TopState& st, int lines) {
  const auto hl = header_lines(st);
  for (int i = 0; i < lines && i < static_cast<int>(hl.size()); ++i) {
    int a = i == 0 ? dc.attr(kPairTitle, 0) | A_BOLD : 0;
    if (i == 3 && st.editing_filter()) a = A_BOLD;
    put(dc, i, 0, hl[static_cast<size_t>(i)], a);
  }
}

void draw_table(const DrawContext& dc, model::TopState& st) {
  constexpr int kHeaderLines = 4;
  draw_header(dc, st, kHeaderLines);
  const auto cols = visible_columns(st, static_cast<size_t>(dc.cols), true);
  put(dc, kHeaderLines, 0, fit(column_header(cols, st), static_cast<size_t>(dc.cols)), dc.attr(kPairHeader, A_REVERSE));
  const int first = kHeaderLines + 1;
  const int height = dc.lines - first - 1;
  const auto rows = st.rows();
  if (!st.has_window()) put(dc, first, 0, "waiting for the first interval...");
  else if (rows.empty()) put(dc, first, 0, st.filter().empty() ? "no threads" : "no thread matches the filter");
  if (height > 0) {
    const size_t top = st.scroll_for(static_cast<size_t>(height));
    const int sel = st.selected_index();
    for (int i = 0; i < height && top + static_cast<size_t>(i) < rows.size(); ++i) {
      const size_t r = top + static_cast<size_t>(i);
      const int a = static_cast<int>(r) == sel ? dc.attr(kPairSelected, A_REVERSE) : 0;
      put(dc, first + i, 0, fit(row_text(cols, *rows[r], st, dc.glyphs), static_cast<size_t>(dc.cols)), a);
    }
  }
  // Where the selection is, when the threads do not fit on one page (a 1,000-thread server).
  if (height > 0 && rows.size() > static_cast<size_t>(height)) {
    const std::string pos = " " + std::to_string(st.selected_index() + 1) + "/" + std::to_string(rows.size());
    put(dc, kHeaderLines - 1, std::max(0, dc.cols - static_cast<int>(pos.size())), pos, A_BOLD);
  }
  put(dc, dc.lines - 1, 0, footer_hint(st.replay().active), A_DIM);
}

}  // namespace platoon::tui
