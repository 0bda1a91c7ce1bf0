// Text primitives of `platoon top` that need no curses: terminal widths, fitting, sparklines
// and bars, as UTF-8 block characters or an ASCII fallback.
#pragma once

#include <cstddef>
#include <deque>
#include <string>

namespace platoon::dashboard {

struct Glyphs {
  bool utf8 = false;
};

// Terminal columns of a UTF-8 string (every glyph used here is one column wide).
size_t text_width(const std::string& s);
// Cut or pad to exactly `width` columns.
std::string fit(const std::string& s, size_t width, bool left = true);

std::string sparkline(const std::deque<double>& values, size_t width, double max, Glyphs g);
std::string bar(double fraction, size_t width, Glyphs g);

// printf of one number into a string (fmt: one conversion of a double).
std::string printf_str(const char* fmt, double v);

}  // namespace platoon::dashboard
