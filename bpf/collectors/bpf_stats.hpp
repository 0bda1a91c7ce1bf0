// The kernel's BPF run-time statistics (run_cnt, run_time_ns per program) held on for as long
// as platoon watches, so that it can say what its own programs cost.
//
// bpf_enable_stats(BPF_STATS_RUN_TIME) turns them on while the returned fd is open, and the
// kernel closes that fd on every exit, SIGKILL and crashes included, so the stats can never be
// left on by a platoon that died. Writing the sysctl kernel.bpf_stats_enabled instead would
// have to be undone by hand and would stay at 1 after a kill -9. (The sysctl keeps reading 0
// while only such fds hold the stats on: it shows what was written to it, not the kernel's
// state.) Counting costs two clock reads per program run, which is why --no-bpf-stats exists.
#pragma once

#include <string>

namespace platoon::collectors {

class BpfStatsHold {
 public:
  // enable: hold the stats on (unless the sysctl already has them on); false: only look.
  static BpfStatsHold acquire(bool enable);
  BpfStatsHold(BpfStatsHold&& o) noexcept : fd_(o.fd_), counting_(o.counting_), why_(std::move(o.why_)) { o.fd_ = -1; }
  BpfStatsHold& operator=(BpfStatsHold&&) = delete;
  BpfStatsHold(const BpfStatsHold&) = delete;
  BpfStatsHold& operator=(const BpfStatsHold&) = delete;
  ~BpfStatsHold();

  bool counting() const { return counting_; }
  // How they are on ("held on by platoon", "kernel.bpf_stats_enabled=1"), or why they are not.
  const std::string& why() const { return why_; }
  bool holds() const { return fd_ >= 0; }   // tests: this object turned them on

 private:
  BpfStatsHold(int fd, bool counting, std::string why) : fd_(fd), counting_(counting), why_(std::move(why)) {}
  int fd_ = -1;
  bool counting_ = false;
  std::string why_;
};

// kernel.bpf_stats_enabled as written (1: someone turned the stats on system-wide); false when
// it cannot be read.
bool bpf_stats_sysctl_on();

}  // namespace platoon::collectors
