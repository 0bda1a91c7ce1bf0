// The flags every live subcommand (record, top, doctor, exporter) shares, defined once: what to
// watch (--pid, --comm, -- CMD and what becomes of the command), the map sizes, and the source
// switches. Each command adds the groups it takes, in the order its --help lists them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bpf/snapshot/source.hpp"
#include "tui/commands/commands.hpp"

namespace CLI { class App; }

namespace platoon::cli {

struct LiveFlags {
  std::string pids, comm, cgroup, kill_after, pair_idle;
  uint32_t threads_max = 0, pairs_max = 0;
  bool follow = false, no_follow = false, keep_running = false, no_usdt = false, all = false, no_io = false;
  bool no_bpf_stats = false, bpf_stats_always = false, requests = false;

  // --pid, --comm, --cgroup, --all, --follow-forks, --kill-after, --keep-running and the "Maps" group.
  void add_target(CLI::App& sub);
  // --procfs and --no-usdt take a help text each: what the command loses without BPF differs.
  void add_procfs(CLI::App& sub, LiveOptions& live, const std::string& help);
  void add_no_usdt(CLI::App& sub, const std::string& help);
  // --no-io: no epoll programs (record, top and the exporter; top also leaves them out when no
  // shown column needs them).
  // Most of what platoon costs a server is theirs, because a syscall tracepoint puts every
  // syscall on the machine on the kernel's traced path (docs/benchmarks.md, "where the cost goes").
  void add_no_io(CLI::App& sub);
  // --requests: per-request latency on the targets' TCP connections (the socket programs,
  // bpf/requests.bpf.h), off unless asked for or shown.
  void add_requests(CLI::App& sub);
  void add_raw_tp(CLI::App& sub, LiveOptions& live);
  void add_verbose(CLI::App& sub, LiveOptions& live);
  // --no-bpf-stats (the kernel's BPF run-time stats never turned on: the observer cost is then
  // unknown unless kernel.bpf_stats_enabled=1) and --bpf-stats-always (on the whole time rather
  // than sampled).
  void add_bpf_stats(CLI::App& sub);

  bool names_target(const std::vector<std::string>& command) const {
    return !pids.empty() || !comm.empty() || !command.empty() || all || !cgroup.empty();
  }
  // Fills `live` from the flags and `-- CMD`; false with a one-line message. With
  // whole_machine, naming no target means --all (top and record, like htop and perf record -a).
  bool resolve(const std::vector<std::string>& command, LiveOptions& live, std::string& error,
               bool whole_machine = false) const;
};

// What a live subcommand's parser fills: its own options, the shared live flags, and the times
// it takes as text (parse_seconds reads them when the command runs, so that a bad value gets the
// command's own usage line). Held by a shared_ptr in the parser's callback.
template <class Options>
struct CommandFlags {
  Options opt;
  LiveFlags live;
  std::string duration, interval;
};

}  // namespace platoon::cli
