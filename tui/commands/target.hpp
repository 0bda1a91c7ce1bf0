// What the user asked to watch: --pid P[,P..], --comm NAME, --cgroup PATH, --all (the whole
// machine) or -- CMD ARGS.. . A command is started stopped (before exec) so that the collector
// is attached before its first instruction.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace platoon::cli {

// How describe() names the whole machine (a recording's meta.target; top --replay opens such a
// recording on its process view).
inline constexpr const char* kAllProcesses = "all processes";

struct TargetSpec {
  std::vector<pid_t> pids;
  std::string comm;
  std::vector<std::string> command;
  bool all = false;              // every process on the machine but platoon
  std::string cgroup;            // as given; its directory in cgroup_dir (validate_target)
  std::string cgroup_dir;
  std::string describe() const;  // "pid 12,13" / "comm nginx" / "cgroup /x" / "all processes" / "command ./x -y"
};

// Parses "12,13,14"; false with a message on anything else.
bool parse_pid_list(const std::string& text, std::vector<pid_t>& out, std::string& error);

// Exactly one must be given, each pid must exist and the cgroup be found (cgroup_dir is set).
bool validate_target(TargetSpec& spec, std::string& error);

// What becomes of a `-- CMD` when platoon ends for any reason but the command's own exit
// (duration, a signal, a write error, a crash): its process group gets SIGTERM, then SIGKILL
// after kill_after_s; keep_running leaves it alone.
struct CommandLifetime {
  double kill_after_s = 2.0;
  bool keep_running = false;
};

// A child forked for `-- CMD`, leader of its own process group. It execs only when release()
// sends it the go byte (once the probes are attached): if platoon dies before that, the pipe
// closes without one and the child exits, so the command never runs untraced. It also holds
// PR_SET_PDEATHSIG, so a platoon killed outright (SIGKILL) takes it along.
class LaunchedCommand {
 public:
  static std::optional<LaunchedCommand> start(const std::vector<std::string>& argv, const CommandLifetime& lifetime,
                                              std::string& error);
  LaunchedCommand(LaunchedCommand&& other) noexcept;
  LaunchedCommand& operator=(LaunchedCommand&&) = delete;
  LaunchedCommand(const LaunchedCommand&) = delete;
  ~LaunchedCommand();  // end_command() unless the command has exited

  pid_t pid() const { return pid_; }
  // Lets the child exec; false (with a message) if exec failed.
  bool release(std::string& error);
  // Non-blocking: true once the child has exited; `status` gets a readable description.
  bool poll_exit(std::string& status);
  // SIGTERM to the group, SIGKILL after the grace; or, with keep_running, a note that it runs on.
  void end_command();

 private:
  LaunchedCommand(pid_t pid, int go_fd, int exec_fd, std::string name, CommandLifetime lifetime)
      : pid_(pid), go_fd_(go_fd), exec_fd_(exec_fd), name_(std::move(name)), lifetime_(lifetime) {}
  // Reaps what of the group has ended (the leader, orphans re-parented to platoon); the
  // leader's wait status if it was among them, else -1.
  int reap_group();
  pid_t pid_ = -1;     // also the process group id
  int go_fd_ = -1;     // parent's write end: one byte lets the child exec, EOF makes it exit
  int exec_fd_ = -1;   // parent's read end of a CLOEXEC pipe: EOF = exec succeeded, data = errno
  std::string name_;
  CommandLifetime lifetime_;
  bool reaped_ = false;
};

// The processes a live command watches: the given pids, or a command launched held before exec
// (its pid; release() it once the source is attached). False with a message if it cannot start.
struct LiveTarget {
  std::optional<LaunchedCommand> child;
  std::vector<pid_t> pids;
};
bool start_live_target(const TargetSpec& spec, const CommandLifetime& lifetime, LiveTarget& out,
                       std::string& error);

// True while /proc/PID exists and is not a zombie.
bool process_alive(pid_t pid);

}  // namespace platoon::cli
