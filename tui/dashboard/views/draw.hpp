// Drawing functions of the three views, on stdscr (curses). Internal to tui/dashboard/views.
#pragma once

#include "tui/dashboard/state/top_state.hpp"
#include "tui/dashboard/views/text.hpp"

namespace platoon::tui {

enum ColourPair : short { kPairTitle = 1, kPairHeader, kPairSelected, kPairBar, kPairWarn };

struct DrawContext {
  bool colour;
  Glyphs glyphs;
  int lines, cols;
  // An attribute with its monochrome fallback.
  int attr(ColourPair pair, int mono) const;
};

// Writes s cut to the screen width at (y, x); nothing outside the screen.
void put(const DrawContext& dc, int y, int x, const std::string& s, int attr = 0);

void draw_header(const DrawContext& dc, const model::TopState& st, int lines);
void draw_table(const DrawContext& dc, model::TopState& st);
void draw_detail(const DrawContext& dc, const model::TopState& st);
void draw_help(const DrawContext& dc, const model::TopState& st);

}  // namespace platoon::tui
