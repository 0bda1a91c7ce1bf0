// The curses side of `platoon top`: one Screen owns the terminal from open() to destruction
// (endwin on every exit path, including exceptions) and draws a TopState. It never changes the
// state except for the scroll position the table needs to keep the selection visible.
#pragma once

#include <memory>
#include <string>

#include "tui/dashboard/state/top_state.hpp"
#include "tui/dashboard/views/glyphs.hpp"

namespace platoon::dashboard {

class Screen {
 public:
  // Takes over the terminal; null and a message when it cannot (no terminal, unknown TERM).
  static std::unique_ptr<Screen> open(std::string& error);
  ~Screen();
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  // Waits up to timeout_ms for a key; ERR (-1) when none came.
  int read_key(int timeout_ms);
  void draw(TopState& st);
  int page_rows() const;               // thread rows on one page of the table
  Glyphs glyphs() const { return glyphs_; }

 private:
  Screen(bool colour, Glyphs g) : colour_(colour), glyphs_(g) {}
  bool colour_;
  Glyphs glyphs_;
};

}  // namespace platoon::dashboard
