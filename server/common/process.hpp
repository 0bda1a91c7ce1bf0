// Process set-up shared by platoon-server, platoon-mock and platoon-load.
#pragma once

#include <csignal>
#include <sys/resource.h>

namespace platoon::process {

// 10,000 clients plus their backend connections: raises the soft open-file limit to the hard
// one, and the hard one too when allowed (root), up to the kernel's nr_open. Returns the soft
// limit in force afterwards.
rlim_t raise_fd_limit();

// Blocks SIGINT and SIGTERM in the calling thread (threads started later inherit the mask), so
// that the main thread receives them with sigwait(); ignores SIGPIPE. Returns the stop set.
sigset_t block_stop_signals();

}  // namespace platoon::process
