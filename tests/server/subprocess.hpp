// Test support: start one of the project's binaries (or any program) as a child process, read
// the port it prints ("listening on HOST:PORT") and what it writes, wait for it to exit, and stop
// it when the test ends. Every server suite starts its children here.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <poll.h>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace platoon::test {

// The directory of the running test binary: build/bin, where the programs are.
inline std::string bin_dir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

// A program run as a child: stdout on a pipe, read while the test waits on it; stopped, if
// still running, when the test ends. Its stderr stays the test's (visible in the log) unless
// asked for on a second pipe (errors()) or merged into stdout. `program` is a name in bin_dir()
// or a path with a '/'.
class Child {
 public:
  enum class Stderr { inherit, own_pipe, merged };

  Child(const std::string& program, const std::vector<std::string>& args, Stderr err = Stderr::inherit) {
    int out[2], errp[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) != 0) return;
    if (err == Stderr::own_pipe && pipe2(errp, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (err != Stderr::inherit) posix_spawn_file_actions_adddup2(&fa, err == Stderr::merged ? out[1] : errp[1], 2);
    std::vector<std::string> all{program};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string path = program.find('/') != std::string::npos ? program : bin_dir() + "/" + program;
    if (posix_spawn(&pid_, path.c_str(), &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    out_ = out[0];
    if (errp[1] >= 0) close(errp[1]);
    err_ = errp[0];
  }
  ~Child() {
    stop();
    if (out_ >= 0) close(out_);
    if (err_ >= 0) close(err_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  bool started() const { return port_ != 0; }

  // Reads stdout until "listening on HOST:PORT"; 0 on timeout or exit. port() keeps it.
  int wait_port(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (!read_some(out_, output_, 50)) return 0;
      const auto at = output_.find("listening on ");
      if (at == std::string::npos) continue;
      const auto eol = output_.find('\n', at);
      if (eol == std::string::npos) continue;
      const std::string addr = output_.substr(at + 13, eol - at - 13);
      const auto colon = addr.find(':');
      const auto space = addr.find(' ', colon);
      port_ = std::stoi(addr.substr(colon + 1, space == std::string::npos ? std::string::npos : space - colon - 1));
      return port_;
    }
    return 0;
  }
  const std::string& output() const { return output_; }
  const std::string& errors() const { return errors_; }

  // Waits for it to exit on its own, reading its output meanwhile; the exit status (128+signal
  // when killed), or -1 on timeout (it keeps running).
  int wait_exit(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    if (pid_ <= 0) return status_;
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!reaped()) {
      if (std::chrono::steady_clock::now() >= end) return -1;
      drain(10);
    }
    drain(0);
    return status_;
  }

  // `sig` (SIGINT unless given), then SIGKILL if it lingers past `grace`; returns the exit
  // status (or -1 when it had to be killed).
  int stop(std::chrono::milliseconds grace = std::chrono::milliseconds(3000), int sig = SIGINT) {
    if (pid_ <= 0) return status_;
    kill(pid_, sig);
    if (wait_exit(grace) >= 0 || pid_ <= 0) return status_;
    kill(pid_, SIGKILL);
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = -1;
    status_ = -1;
    drain(0);
    return status_;
  }

 private:
  bool reaped() {
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) != pid_) return false;
    pid_ = -1;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return true;
  }
  // Appends what fd has within timeout_ms; false at EOF or error.
  static bool read_some(int fd, std::string& into, int timeout_ms) {
    if (fd < 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return true;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    into.append(buf, static_cast<size_t>(n));
    return true;
  }
  // Reads whatever both pipes hold (waiting up to timeout_ms for the first bytes).
  void drain(int timeout_ms) {
    pollfd p[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
    while (poll(p, 2, timeout_ms) > 0) {
      bool any = false;
      if ((p[0].revents & POLLIN) && read_some(out_, output_, 0)) any = true;
      if ((p[1].revents & POLLIN) && read_some(err_, errors_, 0)) any = true;
      if (!any) break;
      timeout_ms = 0;
    }
  }

  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  int port_ = 0;
  int status_ = -1;
  std::string output_, errors_;
};

}  // namespace platoon::test
