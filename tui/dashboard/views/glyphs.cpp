#include "tui/dashboard/views/glyphs.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace platoon::dashboard {

std::string printf_str(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

size_t text_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string fit(const std::string& s, size_t width, bool left) {
  const size_t w = text_width(s);
  if (w <= width) {
    const std::string pad(width - w, ' ');
    return left ? s + pad : pad + s;
  }
  // Cut at a glyph boundary.
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80 && n++ == width) break;
    out += s[i];
  }
  return out;
}

std::string sparkline(const std::deque<double>& values, size_t width, double max, Glyphs g) {
  static const std::array<const char*, 8> kBlocks{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char kAscii[] = "_.-:=+*#";
  std::string s;
  const size_t n = std::min(values.size(), width);
  s.append(width - n, ' ');
  for (size_t i = values.size() - n; i < values.size(); ++i) {
    const double f = max > 0 ? std::clamp(values[i] / max, 0.0, 1.0) : 0;
    const auto level = static_cast<size_t>(std::lround(f * 7));
    if (g.utf8) s += kBlocks[level];
    else s += kAscii[level];
  }
  return s;
}

std::string bar(double fraction, size_t width, Glyphs g) {
  static const std::array<const char*, 8> kEighths{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  const double f = std::clamp(fraction, 0.0, 1.0) * static_cast<double>(width);
  auto full = static_cast<size_t>(f);
  std::string s;
  for (size_t i = 0; i < full; ++i) s += g.utf8 ? "█" : "#";
  size_t used = full;
  if (full < width) {
    const auto eighth = static_cast<size_t>((f - static_cast<double>(full)) * 8);
    if (g.utf8 && eighth > 0) { s += kEighths[eighth]; ++used; }
    else if (!g.utf8 && fraction > 0 && full == 0) { s += '|'; ++used; }  // non-zero stays visible
  }
  s.append(width - used, ' ');
  return s;
}

}  // namespace platoon::dashboard
