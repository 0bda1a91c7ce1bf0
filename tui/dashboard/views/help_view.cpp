// Help: generated from the key map, in a box over the table (threads or processes).
#include <curses.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tui/dashboard/input/keymap.hpp"
#include "tui/dashboard/views/draw.hpp"

namespace platoon::dashboard {

namespace {
struct WindowDeleter {
  void operator()(WINDOW* w) const { delwin(w); }
};
using WindowPtr = std::unique_ptr<WINDOW, WindowDeleter>;
}  // namespace

void draw_help(const DrawContext& dc, const TopState& st) {
  std::vector<std::string> lines;
  for (const auto& b : bindings()) {
    if (b.replay_only && !st.replay().active) continue;
    lines.push_back(fit(b.label, 10) + " " + b.help);
  }
  // The columns on screen too (their help is the metric catalog's), when the terminal is tall
  // enough for both: the process table's over the process view.
  std::vector<std::string> cols;
  if (st.help_over() == ViewMode::processes) {
    for (const auto& c : process_columns())
      if (st.process_column_shown(c.id)) cols.push_back(fit(c.title, 10) + " " + c.help);
  } else {
    lines.push_back("");
    lines.push_back("b50/b99: drain queue depth (q) when the thread drains, else epoll events/cycle (e)");
    for (const auto& c : columns())
      if (st.column_shown(c.id)) cols.push_back(fit(c.title, 10) + " " + c.help);
  }
  if (dc.lines >= static_cast<int>(lines.size() + cols.size()) + 4) {
    lines.push_back("");
    lines.insert(lines.end(), cols.begin(), cols.end());
  }
  const int h = std::min(dc.lines, static_cast<int>(lines.size()) + 2);
  const int w = std::min(dc.cols, 84);
  WindowPtr win(newwin(h, w, std::max(0, (dc.lines - h) / 2), std::max(0, (dc.cols - w) / 2)));
  if (!win) return;
  refresh();  // stdscr first, so that the box lands on top of it
  werase(win.get());
  box(win.get(), 0, 0);
  mvwaddstr(win.get(), 0, 2, " platoon top: keys (Esc or ? closes) ");
  for (int i = 0; i + 2 < h && i < static_cast<int>(lines.size()); ++i)
    mvwaddstr(win.get(), i + 1, 1, fit(lines[static_cast<size_t>(i)], static_cast<size_t>(w - 2)).c_str());
  wnoutrefresh(win.get());
  doupdate();
}

}  // namespace platoon::dashboard
