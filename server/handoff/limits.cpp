#include "server/handoff/limits.hpp"

#include <algorithm>
#include <cstdio>
#include <sys/resource.h>

namespace platoon::server {

namespace {
// Descriptors beyond clients and backend: listeners, event-loop and wakeup fds, stdio.
constexpr size_t kReservedFds = 128;
// Mappings beyond fiber stacks: the binary and its libraries, malloc arenas, thread stacks.
constexpr long kReservedMaps = 2048;
// A connection's fiber stack plus the handoff fiber of its request in flight, two mappings each.
constexpr long kMapsPerConnection = 4;

long read_max_map_count() {
  long n = 0;
  if (FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
    if (std::fscanf(f, "%ld", &n) != 1) n = 0;
    std::fclose(f);
  }
  return n;
}
}  // namespace

std::string ConnectionLimit::describe() const {
  return "max connections " + std::to_string(max_connections) + " (fd limit " + std::to_string(fd_limit) +
         ", vm.max_map_count " + (max_map_count > 0 ? std::to_string(max_map_count) : std::string("unknown")) + ")";
}

ConnectionLimit derive_connection_limit(size_t backend_fds) {
  ConnectionLimit l;
  rlimit rl{};
  l.fd_limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? static_cast<unsigned long>(rl.rlim_cur) : 1024;
  l.max_map_count = read_max_map_count();
  const size_t fd_used = kReservedFds + backend_fds;
  size_t n = l.fd_limit > fd_used ? l.fd_limit - fd_used : 0;
  if (l.max_map_count > kReservedMaps)
    n = std::min(n, static_cast<size_t>((l.max_map_count - kReservedMaps) / kMapsPerConnection));
  else if (l.max_map_count > 0)
    n = 0;
  // A server that refuses everyone is of no use; with this little room it still serves a few.
  l.max_connections = std::max<size_t>(n, 16);
  return l;
}

}  // namespace platoon::server
