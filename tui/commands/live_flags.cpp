#include "tui/commands/live_flags.hpp"

#include <CLI/CLI.hpp>

namespace platoon::cli {

void LiveFlags::add_target(CLI::App& sub) {
  sub.add_option("-p,--pid", pids, "process id(s) to watch, comma separated");
  sub.add_option("-c,--comm", comm, "watch every process with this name, also ones started later");
  sub.add_option("--cgroup", cgroup,
                 "watch every process of this cgroup (a container: its directory, or its path as /proc/PID/cgroup "
                 "shows it) and of its child groups, also ones that join later");
  sub.add_flag("-a,--all", all, "watch every process on the machine (platoon itself excepted)");
  sub.add_flag("--follow-forks", follow, "also watch processes the targets fork (default for -- CMD)");
  sub.add_flag("--no-follow-forks", no_follow, "watch only the targets themselves");
  sub.add_option("--kill-after", kill_after,
                 "-- CMD: when platoon stops first, SIGTERM the command's process group, SIGKILL after this (default 2s)");
  sub.add_flag("--keep-running", keep_running, "-- CMD: leave the command running when platoon stops");
  sub.add_option("--threads-max", threads_max, "BPF thread map entries (default 16384)")->group("Maps");
  sub.add_option("--pairs-max", pairs_max, "BPF preemptor/waker pair map entries (default 16384)")->group("Maps");
  sub.add_option("--pair-idle", pair_idle, "age a pair out of the kernel map after this long unchanged (default 10s)")
      ->group("Maps");
}

void LiveFlags::add_procfs(CLI::App& sub, LiveOptions& live, const std::string& help) {
  sub.add_flag("--procfs", live.procfs, help);
}

void LiveFlags::add_no_usdt(CLI::App& sub, const std::string& help) { sub.add_flag("--no-usdt", no_usdt, help); }

void LiveFlags::add_no_io(CLI::App& sub) {
  sub.add_flag("--no-io", no_io,
               "scheduler data only, as perf sched collects it: no epoll programs, so no IO cycles, events per cycle "
               "or epoll batch sizes, and no syscall on the machine takes the kernel's traced path for them");
}

void LiveFlags::add_requests(CLI::App& sub) {
  sub.add_flag("--requests", requests,
               "per-request latency on the targets' TCP connections: socket wait, service and server time, "
               "and what the reading thread did while a request waited in its socket (Linux 6.3+)");
}

void LiveFlags::add_raw_tp(CLI::App& sub, LiveOptions& live) {
  sub.add_flag("--raw-tp", live.raw_tp, "attach with raw_tp even if tp_btf works");
}

void LiveFlags::add_verbose(CLI::App& sub, LiveOptions& live) {
  sub.add_flag("-v,--verbose", live.verbose, "show libbpf's messages");
}

void LiveFlags::add_bpf_stats(CLI::App& sub) {
  const std::string window = snapshot::kStatsSampleText;
  auto* no = sub.add_flag("--no-bpf-stats", no_bpf_stats,
                          "never turn the kernel's BPF run-time stats on (by default they are on " + window +
                              ", to say what platoon costs; without them its BPF cost is unknown)");
  sub.add_flag("--bpf-stats-always", bpf_stats_always,
               "keep the kernel's BPF run-time stats on the whole time rather than " + window +
                   " (exact totals; two more clock reads, ~40 ns, per probe run)")
      ->excludes(no);
}

namespace {

bool resolve_lifetime(const LiveFlags& f, const std::vector<std::string>& command, LiveOptions& live,
                      std::string& error) {
  if (!f.kill_after.empty() && (!parse_seconds(f.kill_after, live.kill_after_s) || live.kill_after_s < 0 ||
                                live.kill_after_s > 3600)) {
    error = "bad --kill-after '" + f.kill_after + "': give 0 to 3600 seconds (2, 500ms, 1m)";
    return false;
  }
  if ((f.keep_running || !f.kill_after.empty()) && command.empty()) {
    error = std::string(f.keep_running ? "--keep-running" : "--kill-after") + " applies only to -- CMD";
    return false;
  }
  if (f.keep_running && !f.kill_after.empty()) {
    error = "give only one of --keep-running and --kill-after";
    return false;
  }
  live.keep_running = f.keep_running;
  return true;
}

bool resolve_maps(const LiveFlags& f, LiveOptions& live, std::string& error) {
  const auto bad_size = [](uint32_t n) { return n && (n < 8 || n > (1u << 22)); };
  if (bad_size(f.threads_max) || bad_size(f.pairs_max)) {
    error = "--threads-max and --pairs-max must be 8..4194304";
    return false;
  }
  live.threads_max = f.threads_max;
  live.pairs_max = f.pairs_max;
  if (!f.pair_idle.empty() && (!parse_seconds(f.pair_idle, live.pair_idle_s) || live.pair_idle_s <= 0)) {
    error = "bad --pair-idle '" + f.pair_idle + "': give a positive time (10, 500ms, 1m)";
    return false;
  }
  return true;
}

}  // namespace

bool LiveFlags::resolve(const std::vector<std::string>& command, LiveOptions& live, std::string& error,
                        bool whole_machine) const {
  if (!pids.empty() && !parse_pid_list(pids, live.target.pids, error)) return false;
  live.target.comm = comm;
  live.target.command = command;
  live.target.cgroup = cgroup;
  live.target.all = all || (whole_machine && !names_target(command));
  if (follow && no_follow) {
    error = "give only one of --follow-forks and --no-follow-forks";
    return false;
  }
  if (follow || no_follow) live.follow_forks = follow;
  if (live.target.all && (follow || no_follow)) {
    error = "--all watches every process already: --follow-forks does not apply";
    return false;
  }
  if (!resolve_lifetime(*this, command, live, error) || !resolve_maps(*this, live, error)) return false;
  live.usdt = !no_usdt;
  if (no_io) live.fields &= ~snapshot::kFieldIo;
  if (requests) live.fields |= snapshot::kFieldRequests;
  if (no_bpf_stats) live.bpf_stats = collectors::BpfStatsMode::off;
  if (bpf_stats_always) live.bpf_stats = collectors::BpfStatsMode::always;
  return validate_target(live.target, error);
}

}  // namespace platoon::cli
