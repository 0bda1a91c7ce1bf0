// platoon doctor: placeholder until the findings land (issue 6).
#include <cstdio>

#include "tui/commands/commands.hpp"

namespace platoon::cli {
int run_doctor(const DoctorOptions&) {
  std::fprintf(stderr, "platoon doctor: not implemented yet\n");
  return kExitUsage;
}
}  // namespace platoon::cli
