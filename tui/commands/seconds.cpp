#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "tui/commands/commands.hpp"

namespace platoon::cli {

bool parse_seconds(const std::string& text, double& out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno != 0 || !std::isfinite(v) || v < 0) return false;
  const std::string unit = end;
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "ms") scale = 1e-3;
  else if (unit == "m") scale = 60;
  else if (unit == "h") scale = 3600;
  else return false;
  out = v * scale;
  return true;
}

}  // namespace platoon::cli
