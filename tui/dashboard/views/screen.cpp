#include "tui/dashboard/views/screen.hpp"

#include <curses.h>
#include <langinfo.h>
#include <poll.h>
#include <unistd.h>

#include <clocale>
#include <cstring>

#include "tui/dashboard/views/draw.hpp"

namespace platoon::dashboard {

std::unique_ptr<Screen> Screen::open(std::string& error) {
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
    error = "standard input and output must be a terminal (use --batch for pipes)";
    return nullptr;
  }
  // The user's locale decides whether UTF-8 block glyphs can be drawn (ncursesw needs it set).
  std::setlocale(LC_ALL, "");
  // newterm instead of initscr: initscr exits the process on an unknown TERM.
  if (newterm(nullptr, stdout, stdin) == nullptr) {
    error = "cannot set up the terminal (TERM unknown?)";
    return nullptr;
  }
  cbreak();  // Ctrl-C still raises SIGINT, which the loop turns into a clean quit
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  set_escdelay(25);  // Esc should feel immediate
  bool colour = has_colors();
  if (colour) {
    start_color();
    use_default_colors();
    init_pair(kPairTitle, COLOR_CYAN, -1);
    init_pair(kPairHeader, COLOR_BLACK, COLOR_GREEN);
    init_pair(kPairSelected, COLOR_BLACK, COLOR_CYAN);
    init_pair(kPairBar, COLOR_GREEN, -1);
    init_pair(kPairWarn, COLOR_RED, -1);
  }
  const char* codeset = nl_langinfo(CODESET);
  Glyphs g{codeset != nullptr && std::strcmp(codeset, "UTF-8") == 0};
  return std::unique_ptr<Screen>(new Screen(colour, g));
}

Screen::~Screen() { endwin(); }

int Screen::read_key(int timeout_ms) {
  // Our own poll rather than getch's timeout: ncurses resumes its wait after a signal, while
  // poll(2) returns at once on SIGINT/SIGTERM (stop) and SIGWINCH (KEY_RESIZE), so the loop
  // can sleep a whole interval and still answer within milliseconds.
  timeout(0);
  int key = getch();  // keys ncurses has already read and queued
  if (key != ERR) return key;
  pollfd fd{STDIN_FILENO, POLLIN, 0};
  poll(&fd, 1, timeout_ms);
  return getch();
}

int Screen::page_rows() const { return LINES > 7 ? LINES - 7 : 1; }

void Screen::draw(TopState& st) {
  erase();
  DrawContext dc{colour_, glyphs_, LINES, COLS};
  switch (st.view()) {
    case ViewMode::table: draw_table(dc, st); break;
    case ViewMode::detail: draw_detail(dc, st); break;
    case ViewMode::processes: draw_processes(dc, st); break;
    case ViewMode::help:
      if (st.help_over() == ViewMode::processes) draw_processes(dc, st);
      else draw_table(dc, st);
      draw_help(dc, st);
      break;
  }
  refresh();
}

}  // namespace platoon::dashboard
