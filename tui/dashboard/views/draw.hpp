// Drawing functions of the views, on stdscr (curses). Internal to tui/dashboard/views.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "tui/dashboard/state/top_state.hpp"
#include "tui/dashboard/views/detail_sections.hpp"
#include "tui/dashboard/views/header_text.hpp"
#include "tui/dashboard/views/table_text.hpp"

namespace platoon::dashboard {

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

void draw_header(const DrawContext& dc, const TopState& st, int lines);

// What both tables (threads, processes) draw under kTableHeaderLines header lines: the column
// header, a page of rows from `top` on with the selected one marked, "selected/count" when they
// do not fit, the key hint. `empty` stands in for no rows (once there is a window).
inline constexpr int kTableHeaderLines = 4;
struct TableBody {
  std::string header;
  size_t count;
  int selected;
  size_t top;
  const char* empty;
  std::function<std::string(size_t)> row;  // the text of row r (only the page's are asked for)
};
int table_height(const DrawContext& dc);  // rows on one page
void draw_table_body(const DrawContext& dc, const TopState& st, const TableBody& body);

void draw_table(const DrawContext& dc, TopState& st);
void draw_processes(const DrawContext& dc, TopState& st);
void draw_detail(const DrawContext& dc, const TopState& st);
void draw_help(const DrawContext& dc, const TopState& st);

}  // namespace platoon::dashboard
