#include "bpf/collectors/bpf_stats.hpp"

#include <bpf/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace platoon::collectors {

bool bpf_stats_sysctl_on() {
  FILE* f = std::fopen("/proc/sys/kernel/bpf_stats_enabled", "r");
  if (!f) return false;
  int v = 0;
  const bool ok = std::fscanf(f, "%d", &v) == 1;
  std::fclose(f);
  return ok && v != 0;
}

BpfStatsHold BpfStatsHold::acquire(bool enable) {
  // Already on system-wide: read, and leave the setting to whoever made it.
  if (bpf_stats_sysctl_on()) return {-1, true, "kernel.bpf_stats_enabled=1"};
  if (!enable) return {-1, false, "--no-bpf-stats and kernel.bpf_stats_enabled=0"};
  const int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (fd < 0) {
    const int err = fd == -1 ? errno : -fd;   // libbpf returns -errno (and sets errno)
    const char* what = err == EPERM || err == EACCES ? "no permission (needs CAP_SYS_ADMIN)"
                       : err == EINVAL || err == ENOSYS ? "kernel too old (no BPF_ENABLE_STATS)"
                                                        : std::strerror(err);
    return {-1, false, std::string("cannot turn BPF run-time stats on: ") + what};
  }
  return {fd, true, "held on by platoon while it runs"};
}

BpfStatsHold::~BpfStatsHold() {
  if (fd_ >= 0) ::close(fd_);   // the kernel's count of holders drops; at 0 it stops counting
}

}  // namespace platoon::collectors
