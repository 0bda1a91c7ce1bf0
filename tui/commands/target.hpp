// What the user asked to watch: --pid P[,P..], --comm NAME or -- CMD ARGS.. . A command is
// started stopped (before exec) so that the collector is attached before its first instruction.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace platoon::cli {

struct TargetSpec {
  std::vector<pid_t> pids;
  std::string comm;
  std::vector<std::string> command;
  std::string describe() const;  // "pid 12,13" / "comm nginx" / "command ./x -y"
};

// Parses "12,13,14"; false with a message on anything else.
bool parse_pid_list(const std::string& text, std::vector<pid_t>& out, std::string& error);

// Exactly one of the three must be given, and each pid must exist.
bool validate_target(const TargetSpec& spec, std::string& error);

// A child forked for `-- CMD`: it waits on a pipe until release(), then execs. The destructor
// of a never-released child kills it. Exit status is collected by poll_exit().
class LaunchedCommand {
 public:
  static std::optional<LaunchedCommand> start(const std::vector<std::string>& argv, std::string& error);
  LaunchedCommand(LaunchedCommand&& other) noexcept;
  LaunchedCommand& operator=(LaunchedCommand&&) = delete;
  LaunchedCommand(const LaunchedCommand&) = delete;
  ~LaunchedCommand();

  pid_t pid() const { return pid_; }
  // Lets the child exec; false (with a message) if exec failed.
  bool release(std::string& error);
  // Non-blocking: true once the child has exited; `status` gets a readable description.
  bool poll_exit(std::string& status);

 private:
  LaunchedCommand(pid_t pid, int go_fd, int exec_fd, std::string name)
      : pid_(pid), go_fd_(go_fd), exec_fd_(exec_fd), name_(std::move(name)) {}
  pid_t pid_ = -1;
  int go_fd_ = -1;     // parent's write end: closing it lets the child exec
  int exec_fd_ = -1;   // parent's read end of a CLOEXEC pipe: EOF = exec succeeded, data = errno
  std::string name_;
  bool reaped_ = false;
};

// The processes a live command watches: the given pids, or a command launched held before exec
// (its pid; release() it once the source is attached). False with a message if it cannot start.
struct LiveTarget {
  std::optional<LaunchedCommand> child;
  std::vector<pid_t> pids;
};
bool start_live_target(const TargetSpec& spec, LiveTarget& out, std::string& error);

// True while /proc/PID exists and is not a zombie.
bool process_alive(pid_t pid);

}  // namespace platoon::cli
