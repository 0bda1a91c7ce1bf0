// The listening sockets: one per loop thread, all bound to the same address with SO_REUSEPORT
// so that the kernel spreads incoming connections over the loops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace platoon::mock {

struct Listeners {
  std::vector<int> fds;  // non-blocking, listening
  uint16_t port = 0;     // the bound port (the kernel's choice when asked for 0)
};

// False (and `error`) when the host does not resolve or a bind fails; no fds leak then.
bool open_listeners(const std::string& host, uint16_t port, int count, Listeners& out, std::string& error);

}  // namespace platoon::mock
