// The procfs producer of Snapshots, for runs without BPF privileges: per thread it reads
//   /proc/PID/task/TID/schedstat  run_ns (field 1), wait_ns = run_delay (field 2, pidstat's %wait),
//                                  switch_ins (field 3)
//   /proc/PID/task/TID/sched      se.nr_migrations, nr_voluntary_switches, nr_involuntary_switches
//   /proc/PID/task/TID/stat       comm (field 2), starttime (field 22), processor (field 39)
// The switch counts in `sched` are the same kernel counters (p->nvcsw, p->nivcsw) that `status`
// prints as voluntary_ctxt_switches / nonvoluntary_ctxt_switches (pidstat -w's source), and `stat`
// holds the same comm as `comm`: reading three files instead of five keeps a 1,000-thread target
// cheap. procfs counters are cumulative since each thread's birth, so a window between two samples
// (the first one taken at the start) needs no extra bookkeeping.
//
// Cost (what the kernel spends formatting the files is most of it): the three files are read
// through descriptors kept open per thread (pread, no path walk; up to half of RLIMIT_NOFILE,
// by path beyond that). schedstat is read every sample; sched and stat only when
// schedstat changed (the thread ran: a thread that did not run cannot have switched, and its
// migrations show up once it runs) and at least every kFullReadEvery samples (a comm renamed
// from another thread, a queued thread moved by load balancing).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bpf/collectors/machine_context.hpp"
#include "bpf/snapshot/snapshot.hpp"

namespace platoon::collectors {

namespace procfs_io {
class Fd;
}

struct ProcfsTarget {
  std::vector<uint32_t> pids;  // processes (a tid given here is turned into its process)
  std::string comm;            // and every process whose /proc/PID/comm matches, re-scanned each sample
  // and every descendant of those (by the parent pid in /proc/PID/stat), re-scanned each sample:
  // a child that forks and exits between two samples is not seen.
  bool follow_forks = false;
  bool all = false;            // every process but this one, re-listed each sample
  std::string cgroup_dir;      // every process of this cgroup and its descendants, re-read each sample
};

class ProcfsSampler {
 public:
  // nullopt and *error = "no such process: N" when a pid does not exist.
  static std::optional<ProcfsSampler> open(const ProcfsTarget& target, std::string* error,
                                           std::string proc_root = "/proc");

  // One snapshot of every thread of the targets. Threads that vanished since the previous sample
  // appear once more, with their last known counters and exited = true.
  snapshot::Snapshot sample();

  // sched and stat of a thread that did not run are re-read at least this often (in samples).
  static constexpr uint32_t kFullReadEvery = 30;

  // The processes read by the last sample (the pids plus the current comm matches).
  const std::vector<uint32_t>& pids() const { return pids_; }

 private:
  struct Task;  // per-thread state kept between samples (procfs_sampler.cpp)
  struct TaskDeleter {
    void operator()(Task* t) const;
  };
  using TaskPtr = std::unique_ptr<Task, TaskDeleter>;

  ProcfsSampler(std::vector<uint32_t> pids, std::string comm, std::string proc_root, bool follow_forks = false);
  void rescan_comm();          // also --all's and --cgroup's members
  void rescan_children();
  void read_process(uint32_t pid, snapshot::Snapshot& out);
  bool read_task(int task_dirfd, const char* tid_name, uint32_t pid, Task& task);
  std::string_view read_file(procfs_io::Fd& fd, int task_dirfd, const char* tid_name, const char* name,
                             char* buf, size_t cap);
  void report_exited(snapshot::Snapshot& out);

  std::vector<uint32_t> fixed_pids_;
  std::string comm_;
  bool follow_forks_ = false;
  bool all_ = false;
  std::string cgroup_dir_;
  std::string proc_root_;
  std::vector<uint32_t> pids_;
  std::vector<uint32_t> followed_;   // descendants found so far (follow_forks), sorted
  uint64_t ns_per_tick_;
  uint64_t round_ = 0;
  size_t fd_budget_;          // descriptors kept open, bounded by RLIMIT_NOFILE
  size_t open_fds_ = 0;
  std::unordered_map<uint32_t, TaskPtr> tasks_;  // by tid
  std::unique_ptr<MachineContext> context_;  // per-CPU times and cgroups, as the BPF collector
};

// Parsers of the three files, exposed for tests and fuzzing. They take the file's text and return
// nullopt for anything they cannot read (a truncated read of a dying task, say).
namespace procfs {
struct SchedStat {
  uint64_t run_ns = 0, wait_ns = 0, timeslices = 0;
};
std::optional<SchedStat> parse_schedstat(std::string_view text);

struct Sched {
  uint64_t migrations = 0, voluntary = 0, involuntary = 0;
};
std::optional<Sched> parse_sched(std::string_view text);

struct Stat {
  std::string comm;
  uint64_t starttime_ticks = 0;
  uint32_t processor = 0;
};
std::optional<Stat> parse_stat(std::string_view text);

// "Tgid:" of a status file.
std::optional<uint32_t> parse_status_tgid(std::string_view text);
}  // namespace procfs

}  // namespace platoon::collectors
