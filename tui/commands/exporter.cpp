// platoon exporter: placeholder until the Prometheus exporter lands (issue 6).
#include <cstdio>

#include "tui/commands/commands.hpp"

namespace platoon::cli {
int run_exporter(const ExporterOptions&) {
  std::fprintf(stderr, "platoon exporter: not implemented yet\n");
  return kExitUsage;
}
}  // namespace platoon::cli
