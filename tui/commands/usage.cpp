#include <cstdio>

#include "tui/commands/commands.hpp"

namespace platoon::cli {

int usage_error(const std::string& cmd, const std::string& msg) {
  std::fprintf(stderr, "platoon%s%s: %s\n", cmd.empty() ? "" : " ", cmd.c_str(), msg.c_str());
  return kExitUsage;
}

}  // namespace platoon::cli
