// The flags every live subcommand (record, top, doctor, exporter) shares, defined once: what to
// watch (--pid, --comm, -- CMD and what becomes of the command), the map sizes, and the source
// switches. Each command adds the groups it takes, in the order its --help lists them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tui/commands/commands.hpp"

namespace CLI {
class App;
}

namespace platoon::cli {

struct LiveFlags {
  std::string pids, comm, cgroup, kill_after, pair_idle;
  uint32_t threads_max = 0, pairs_max = 0;
  bool follow = false, no_follow = false, keep_running = false, no_usdt = false, all = false;
  // --no-bpf-stats: LiveOptions has no field for it, so the command passes it to
  // LiveSession::Setup::bpf_stats itself (bpf_stats()).
  bool no_bpf_stats = false;

  // --pid, --comm, --cgroup, --all, --follow-forks, --kill-after, --keep-running and the "Maps" group.
  void add_target(CLI::App& sub);
  // --procfs and --no-usdt take a help text each: what the command loses without BPF differs.
  void add_procfs(CLI::App& sub, LiveOptions& live, const std::string& help);
  void add_no_usdt(CLI::App& sub, const std::string& help);
  void add_raw_tp(CLI::App& sub, LiveOptions& live);
  void add_verbose(CLI::App& sub, LiveOptions& live);
  // --no-bpf-stats: do not turn the kernel's BPF run-time stats on (the observer cost is then
  // unknown unless kernel.bpf_stats_enabled=1).
  void add_no_bpf_stats(CLI::App& sub);
  bool bpf_stats() const { return !no_bpf_stats; }

  bool names_target(const std::vector<std::string>& command) const {
    return !pids.empty() || !comm.empty() || !command.empty() || all || !cgroup.empty();
  }
  // Fills `live` from the flags and `-- CMD`; false with a one-line message. With
  // whole_machine, naming no target means --all (top and record, like htop and perf record -a).
  bool resolve(const std::vector<std::string>& command, LiveOptions& live, std::string& error,
               bool whole_machine = false) const;
};

}  // namespace platoon::cli
