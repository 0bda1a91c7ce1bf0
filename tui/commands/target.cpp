#include "tui/commands/target.hpp"

#include "bpf/collectors/cgroup_members.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>
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
  } else if (!cgroup.empty()) {
    out << "cgroup " << cgroup;
  } else if (all) {
    out << kAllProcesses;
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

bool validate_target(TargetSpec& spec, std::string& error) {
  const int given = !spec.pids.empty() + !spec.comm.empty() + !spec.command.empty() + spec.all + !spec.cgroup.empty();
  if (given != 1) {
    error = given == 0 ? "no target: give --pid P[,P..], --comm NAME, --cgroup PATH, --all or -- CMD ARGS.."
                       : "give only one of --pid, --comm, --cgroup, --all and -- CMD";
    return false;
  }
  if (!spec.cgroup.empty()) {
    spec.cgroup_dir = collectors::resolve_cgroup_dir(spec.cgroup, error);
    if (spec.cgroup_dir.empty()) return false;
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

namespace {

// The group a crash handler terminates: set once the command runs, cleared when it has ended.
volatile sig_atomic_t g_command_group = 0;

// A crashing platoon cannot wait out a grace: it sends the group SIGTERM on the way down (the
// direct child's PR_SET_PDEATHSIG covers SIGKILL, which no handler sees).
void on_crash(int sig) {
  if (g_command_group > 0) kill(-static_cast<pid_t>(g_command_group), SIGTERM);
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_crash_handlers() {
  struct sigaction sa{};
  sa.sa_handler = on_crash;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

uint64_t monotonic_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

}  // namespace

std::optional<LaunchedCommand> LaunchedCommand::start(const std::vector<std::string>& argv,
                                                      const CommandLifetime& lifetime, std::string& error) {
  int go[2], exec_status[2];
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(exec_status, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Orphans of the command (a shell's background job whose shell died) become platoon's
  // children rather than init's: they are reaped here, so an ended group really is gone.
  if (!lifetime.keep_running) prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    return std::nullopt;
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    close(go[1]);
    close(exec_status[0]);
    setpgid(0, 0);  // its own group, so that ending it reaches what it starts
    if (!lifetime.keep_running) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);  // platoon died before the prctl took hold
    }
    char byte = 0;
    ssize_t n;
    while ((n = read(go[0], &byte, 1)) < 0 && errno == EINTR) {}
    if (n != 1) _exit(127);  // no go byte: platoon gave up or died while attaching
    // The command starts with the dispositions and mask a shell would give it, not platoon's.
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGXFSZ}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvp(args[0], args.data());
    const int err = errno;
    (void)!write(exec_status[1], &err, sizeof err);
    _exit(127);
  }
  setpgid(pid, pid);  // also here: whichever runs first, the group exists before kill(-pid)
  close(go[0]);
  close(exec_status[1]);
  return LaunchedCommand(pid, go[1], exec_status[0], argv[0], lifetime);
}

LaunchedCommand::LaunchedCommand(LaunchedCommand&& other) noexcept
    : pid_(other.pid_), go_fd_(other.go_fd_), exec_fd_(other.exec_fd_), name_(std::move(other.name_)),
      lifetime_(other.lifetime_), reaped_(other.reaped_) {
  other.pid_ = -1;
  other.go_fd_ = other.exec_fd_ = -1;
}

LaunchedCommand::~LaunchedCommand() {
  if (pid_ <= 0) return;
  if (go_fd_ >= 0) {
    // Never released: closing the pipe without the go byte makes it exit before exec.
    close(go_fd_);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    reaped_ = true;
  }
  if (exec_fd_ >= 0) close(exec_fd_);
  end_command();
}

void LaunchedCommand::end_command() {
  if (pid_ <= 0 || reaped_) {
    g_command_group = 0;
    return;
  }
  if (lifetime_.keep_running) {
    std::fprintf(stderr, "platoon: left '%s' running (pid %d, --keep-running)\n", name_.c_str(), pid_);
    return;
  }
  // The whole group: a shell's children, a server's workers.
  kill(-pid_, SIGTERM);
  const uint64_t deadline = monotonic_ms() + static_cast<uint64_t>(lifetime_.kill_after_s * 1000);
  bool group_gone = false;
  while (monotonic_ms() < deadline) {
    reap_group();
    if (reaped_ && kill(-pid_, 0) != 0 && errno == ESRCH) {
      group_gone = true;
      break;
    }
    usleep(10'000);
  }
  if (!group_gone) {
    kill(-pid_, SIGKILL);
    if (!reaped_) waitpid(pid_, nullptr, 0);
    reaped_ = true;
    for (int i = 0; i < 100 && kill(-pid_, 0) == 0; ++i) {  // the rest die at once: reap them
      reap_group();
      usleep(10'000);
    }
    std::fprintf(stderr, "platoon: '%s' did not end within %.1f s of SIGTERM: killed (SIGKILL)\n", name_.c_str(),
                 lifetime_.kill_after_s);
  }
  reaped_ = true;
  g_command_group = 0;
}

bool start_live_target(const TargetSpec& spec, const CommandLifetime& lifetime, LiveTarget& out,
                       std::string& error) {
  out.pids = spec.pids;
  if (!spec.cgroup_dir.empty()) out.pids = collectors::cgroup_members(spec.cgroup_dir);  // now; the source follows it
  if (spec.command.empty()) return true;
  auto child = LaunchedCommand::start(spec.command, lifetime, error);
  if (!child) return false;
  out.pids = {child->pid()};
  out.child.emplace(std::move(*child));
  return true;
}

bool LaunchedCommand::release(std::string& error) {
  if (!lifetime_.keep_running) {
    g_command_group = pid_;
    install_crash_handlers();
  }
  const char go = 'g';
  ssize_t w;
  while ((w = write(go_fd_, &go, 1)) < 0 && errno == EINTR) {}
  close(go_fd_);
  go_fd_ = -1;
  int err = 0;
  ssize_t n;
  while ((n = read(exec_fd_, &err, sizeof err)) < 0 && errno == EINTR) {}
  close(exec_fd_);
  exec_fd_ = -1;
  if (w != 1 || n == static_cast<ssize_t>(sizeof err)) {
    error = "cannot run '" + name_ + "': " + std::strerror(w != 1 ? EPIPE : err);
    waitpid(pid_, nullptr, 0);
    reaped_ = true;
    g_command_group = 0;
    return false;
  }
  return true;
}

int LaunchedCommand::reap_group() {
  int st = 0, leader_status = -1;
  pid_t r;
  while ((r = waitpid(-pid_, &st, WNOHANG)) > 0)
    if (r == pid_) leader_status = st;
  if (leader_status >= 0) reaped_ = true;
  return leader_status;
}

bool LaunchedCommand::poll_exit(std::string& status) {
  if (reaped_) return true;
  const int st = reap_group();
  if (st < 0) return false;
  g_command_group = 0;
  if (WIFEXITED(st)) status = "exited with status " + std::to_string(WEXITSTATUS(st));
  else if (WIFSIGNALED(st)) status = std::string("killed by signal ") + strsignal(WTERMSIG(st));
  else status = "ended";
  return true;
}

}  // namespace platoon::cli
