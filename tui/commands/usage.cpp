#include <cstdio>

#include "tui/commands/commands.hpp"

namespace platoon::cli {

namespace {

int say(const std::string& cmd, const std::string& msg, int status) {
  std::fprintf(stderr, "platoon%s%s: %s\n", cmd.empty() ? "" : " ", cmd.c_str(), msg.c_str());
  return status;
}

}  // namespace

int usage_error(const std::string& cmd, const std::string& msg) { return say(cmd, msg, kExitUsage); }
int command_failure(const std::string& cmd, const std::string& msg) { return say(cmd, msg, kExitFailure); }

}  // namespace platoon::cli
