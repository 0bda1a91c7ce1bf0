// Test support: start one of the project's binaries as a child process, read the port it
// prints ("listening on HOST:PORT"), and stop it when the test ends.
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

class Child {
 public:
  Child(const std::string& program, const std::vector<std::string>& args) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    std::vector<std::string> all{program};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string path = bin_dir() + "/" + program;
    if (posix_spawn(&pid_, path.c_str(), &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    out_ = out[0];
  }
  ~Child() { stop(); if (out_ >= 0) close(out_); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }

  // Reads stdout until "listening on HOST:PORT"; 0 on timeout or exit.
  int wait_port(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, 50) > 0) {
        char buf[4096];
        const ssize_t n = read(out_, buf, sizeof buf);
        if (n <= 0) return 0;
        output_.append(buf, static_cast<size_t>(n));
        const auto at = output_.find("listening on ");
        if (at != std::string::npos) {
          const auto eol = output_.find('\n', at);
          if (eol == std::string::npos) continue;
          const std::string addr = output_.substr(at + 13, eol - at - 13);
          const auto colon = addr.find(':');
          const auto space = addr.find(' ', colon);
          return std::stoi(addr.substr(colon + 1, space == std::string::npos ? std::string::npos : space - colon - 1));
        }
      }
    }
    return 0;
  }
  const std::string& output() const { return output_; }

  // SIGINT, then SIGKILL if it lingers; returns the exit status (or -1).
  int stop(std::chrono::milliseconds grace = std::chrono::milliseconds(3000)) {
    if (pid_ <= 0) return status_;
    kill(pid_, SIGINT);
    const auto end = std::chrono::steady_clock::now() + grace;
    int st = 0;
    while (std::chrono::steady_clock::now() < end) {
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return status_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &st, 0);
    pid_ = -1;
    status_ = -1;
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int status_ = -1;
  std::string output_;
};

}  // namespace platoon::test
