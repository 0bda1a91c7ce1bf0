// Test support: which epoll instance a thread sleeps in and which fds it watches, read from
// /proc (the kernel's own account, independent of the runtime's bookkeeping).
#pragma once

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <sys/syscall.h>
#include <sys/types.h>
#include <thread>
#include <unistd.h>

namespace platoon::test {

using namespace std::chrono_literals;

// What /proc/self/fd/<fd> points at, e.g. "socket:[123]" or "anon_inode:[eventpoll]".
inline std::string fd_target(int fd) {
  char buf[256];
  const std::string p = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = readlink(p.c_str(), buf, sizeof buf - 1);
  if (n < 0) return {};
  buf[n] = 0;
  return buf;
}

// The fds an epoll instance watches ("tfd:" lines of its fdinfo).
inline std::set<int> epoll_targets(int epfd) {
  std::set<int> out;
  std::ifstream f("/proc/self/fdinfo/" + std::to_string(epfd));
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("tfd:", 0) != 0) continue;
    std::istringstream in(line.substr(4));
    int fd = -1;
    if (in >> fd) out.insert(fd);
  }
  return out;
}

inline bool is_epoll_wait(long nr) {
#ifdef SYS_epoll_wait
  if (nr == SYS_epoll_wait) return true;
#endif
#ifdef SYS_epoll_pwait
  if (nr == SYS_epoll_pwait) return true;
#endif
#ifdef SYS_epoll_pwait2
  if (nr == SYS_epoll_pwait2) return true;
#endif
  return false;
}

// The epoll fd thread `tid` is blocked in, read from /proc/self/task/<tid>/syscall while it
// sleeps in epoll_wait; -1 if it was never caught there before `timeout`.
inline int epoll_fd_of_thread(pid_t tid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/syscall");
    long nr = -1;
    std::string arg0;
    if (f >> nr >> arg0 && is_epoll_wait(nr)) {
      const int fd = static_cast<int>(std::stol(arg0, nullptr, 16));
      if (fd_target(fd) == "anon_inode:[eventpoll]") return fd;
    }
    std::this_thread::sleep_for(200us);
  } while (std::chrono::steady_clock::now() < deadline);
  return -1;
}

}  // namespace platoon::test
