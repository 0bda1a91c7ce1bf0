// JSON text shared by the programs that write their results as JSON (platoon-load's report,
// the runtime benchmark's results).
#pragma once

#include <cstdio>
#include <string>

namespace platoon::json {

// s as a JSON string: quoted, with quotes, backslashes and control characters escaped.
inline std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}

}  // namespace platoon::json
