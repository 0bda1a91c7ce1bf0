// Thread detail (Enter): the batch histograms, run-queue latency, CPUs, preemptors and wakers in
// two columns, and the history graphs across the bottom.
#include <curses.h>

#include <algorithm>

#include "tui/keymap.hpp"
#include "tui/views/draw.hpp"

namespace platoon::tui {

namespace {

// Draws a section at (y, x) within `height` lines; returns the lines used.
int draw_section(const DrawContext& dc, const Section& s, int y, int x, int width, int height) {
  if (height <= 0) return 0;
  DrawContext clip = dc;
  clip.cols = std::min(dc.cols, x + width);
  put(clip, y, x, s.title, A_BOLD | dc.attr(kPairTitle, 0));
  int used = 1;
  for (const auto& l : s.lines) {
    if (used >= height) break;
    put(clip, y + used++, x, l);
  }
  return used;
}

}  // namespace

void draw_detail(const DrawContext& dc, const model::TopState& st) {
  draw_header(dc, st, 2);
  const auto* t = st.selected();
  if (!t) {
    put(dc, 3, 0, "the thread is gone (Esc: back)");
    return;
  }
  const auto all = visible_columns(static_cast<size_t>(dc.cols), false);
  put(dc, 2, 0, fit(column_header(all, st), static_cast<size_t>(dc.cols)), dc.attr(kPairHeader, A_REVERSE));
  put(dc, 3, 0, row_text(all, *t, st, dc.glyphs), A_BOLD);

  const bool two = dc.cols >= 70;
  const int colw = two ? dc.cols / 2 - 1 : dc.cols;
  const int top = 5, bottom = dc.lines - 1;
  const int hist_h = t->drain ? 5 : 4;
  const size_t max_rows = static_cast<size_t>(std::max(2, std::min(8, (bottom - top - hist_h) / 4)));
  auto sections = detail_sections(st, *t, static_cast<size_t>(colw), max_rows, dc.glyphs);
  Section history = sections.back();
  sections.pop_back();
  // Recompute the history at full width: it reads best across the whole screen.
  history = detail_sections(st, *t, static_cast<size_t>(dc.cols), max_rows, dc.glyphs).back();

  const int area_end = bottom - hist_h;
  int y = top, x = 0;
  for (const auto& s : sections) {
    const int need = 1 + static_cast<int>(s.lines.size());
    if (y + std::min(need, 3) > area_end && two && x == 0) { y = top; x = colw + 2; }
    y += draw_section(dc, s, y, x, colw, area_end - y) + 1;
  }
  draw_section(dc, history, area_end, 0, dc.cols, hist_h);
  put(dc, dc.lines - 1, 0, footer_hint(st.replay().active), A_DIM);
}

}  // namespace platoon::tui
