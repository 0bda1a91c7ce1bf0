#include "tui/commands/target.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace platoon::cli {

std::string TargetSpec::describe() const {
  std::ostringstream out;
  if (!pids.empty()) {
    out << (pids.size() == 1 ? "pid " : "pids ");
    for (size_t i = 0; i < pids.size(); ++i) out << (i ? "," : "") << pids[i];
  } else if (!comm.empty()) {
    out << "comm " << comm;
  } else {
    out << "command";
    for (const auto& a : command) out << ' ' << a;
  }
  return out.str();
}

bool parse_pid_list(const std::string& text, std::vector<pid_t>& out, std::string& error) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno != 0 || v <= 0 || v > 4194304) {
      error = "not a pid: '" + item + "'";
      return false;
    }
    out.push_back(static_cast<pid_t>(v));
  }
  if (out.empty()) {
    error = "empty pid list";
    return false;
  }
  return true;
}

bool process_alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  // State is the first field after the parenthesised comm (which may itself hold ") ").
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z' &&
         line[close + 2] != 'X';
}

bool validate_target(const TargetSpec& spec, std::string& error) {
  const int given = !spec.pids.empty() + !spec.comm.empty() + !spec.command.empty();
  if (given != 1) {
    error = given == 0 ? "no target: give --pid P[,P..], --comm NAME or -- CMD ARGS.."
                       : "give only one of --pid, --comm and -- CMD";
    return false;
  }
  for (pid_t p : spec.pids) {
    if (!process_alive(p)) {
      error = "no such process: " + std::to_string(p);
      return false;
    }
  }
  if (!spec.comm.empty() && spec.comm.size() > 15) {
    error = "--comm NAME is matched against the kernel's 15-character comm: '" + spec.comm +
            "' is longer";
    return false;
  }
  return true;
}

std::optional<LaunchedCommand> LaunchedCommand::start(const std::vector<std::string>& argv,
                                                      std::string& error) {
  int go[2], exec_status[2];
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(exec_status, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    return std::nullopt;
  }
  if (pid == 0) {
    // Child: wait until the parent has attached (or died: read returns 0 either way).
    close(go[1]);
    close(exec_status[0]);
    char byte;
    while (read(go[0], &byte, 1) < 0 && errno == EINTR) {}
    signal(SIGINT, SIG_DFL);
    execvp(args[0], args.data());
    const int err = errno;
    (void)!write(exec_status[1], &err, sizeof err);
    _exit(127);
  }
  close(go[0]);
  close(exec_status[1]);
  return LaunchedCommand(pid, go[1], exec_status[0], argv[0]);
}

LaunchedCommand::LaunchedCommand(LaunchedCommand&& other) noexcept
    : pid_(other.pid_), go_fd_(other.go_fd_), exec_fd_(other.exec_fd_), name_(std::move(other.name_)),
      reaped_(other.reaped_) {
  other.pid_ = -1;
  other.go_fd_ = other.exec_fd_ = -1;
}

LaunchedCommand::~LaunchedCommand() {
  if (go_fd_ >= 0) {
    // Never released: the command must not run untraced.
    kill(pid_, SIGKILL);
    close(go_fd_);
  }
  if (exec_fd_ >= 0) close(exec_fd_);
  if (pid_ > 0 && !reaped_) waitpid(pid_, nullptr, go_fd_ >= 0 ? 0 : WNOHANG);
}

bool start_live_target(const TargetSpec& spec, LiveTarget& out, std::string& error) {
  out.pids = spec.pids;
  if (spec.command.empty()) return true;
  auto child = LaunchedCommand::start(spec.command, error);
  if (!child) return false;
  out.pids = {child->pid()};
  out.child.emplace(std::move(*child));
  return true;
}

bool LaunchedCommand::release(std::string& error) {
  close(go_fd_);
  go_fd_ = -1;
  int err = 0;
  ssize_t n;
  while ((n = read(exec_fd_, &err, sizeof err)) < 0 && errno == EINTR) {}
  close(exec_fd_);
  exec_fd_ = -1;
  if (n == static_cast<ssize_t>(sizeof err)) {
    error = "cannot run '" + name_ + "': " + std::strerror(err);
    waitpid(pid_, nullptr, 0);
    reaped_ = true;
    return false;
  }
  return true;
}

bool LaunchedCommand::poll_exit(std::string& status) {
  if (reaped_) return true;
  int st = 0;
  const pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r != pid_) return false;
  reaped_ = true;
  if (WIFEXITED(st)) status = "exited with status " + std::to_string(WEXITSTATUS(st));
  else if (WIFSIGNALED(st)) status = std::string("killed by signal ") + strsignal(WTERMSIG(st));
  else status = "ended";
  return true;
}

}  // namespace platoon::cli
