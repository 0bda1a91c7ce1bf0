// How many client connections platoon-server can hold before it runs out of file descriptors or
// of memory mappings (each fiber stack is two: the stack and its guard page). Past that number a
// spawn throws std::bad_alloc or accept fails, so the server sheds connections before getting there.
#pragma once

#include <cstddef>
#include <string>

namespace platoon::server {

struct ConnectionLimit {
  size_t max_connections = 0;
  unsigned long fd_limit = 0;   // RLIMIT_NOFILE soft limit
  long max_map_count = 0;       // vm.max_map_count, 0 when unreadable
  std::string describe() const; // "max connections N (fd limit F, vm.max_map_count M)"
};

// `backend_fds`: the most connections the backend pools may hold at once.
ConnectionLimit derive_connection_limit(size_t backend_fds);

}  // namespace platoon::server
