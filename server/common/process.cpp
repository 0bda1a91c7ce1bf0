#include "server/common/process.hpp"

#include <csignal>
#include <cstdio>
#include <pthread.h>

namespace platoon::process {

rlim_t raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  rlim_t want = 262144;
  if (FILE* f = std::fopen("/proc/sys/fs/nr_open", "r")) {
    unsigned long nr = 0;
    if (std::fscanf(f, "%lu", &nr) == 1 && nr < want) want = nr;
    std::fclose(f);
  }
  if (rl.rlim_max < want) {
    rlimit more{want, want};
    if (setrlimit(RLIMIT_NOFILE, &more) == 0) return want;
  }
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
}

sigset_t block_stop_signals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return stop;
}

}  // namespace platoon::process
