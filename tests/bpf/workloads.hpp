// Ground-truth workloads for the collector tests: threads that behave in a known way, and
// the /proc readers that give the independent truth to compare with (schedstat run_delay,
// se.nr_migrations, voluntary/nonvoluntary_ctxt_switches).
//
// Every workload thread runs its body, then parks (blocks on a condition variable) until the
// test releases it: the test samples the collector and /proc while the thread is alive and
// quiet, so both see exactly the same history (including the final switch-out into the park).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bpf/snapshot/clock.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::testing {

inline pid_t this_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

inline bool pin_to_cpu(int cpu, pid_t tid = 0) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(tid, sizeof set, &set) == 0;
}

inline bool unpin(pid_t tid = 0) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const long n = sysconf(_SC_NPROCESSORS_CONF);
  for (long i = 0; i < n; ++i) CPU_SET(static_cast<int>(i), &set);
  return sched_setaffinity(tid, sizeof set, &set) == 0;
}

// Burns CPU without a system call until `until_ns` (CLOCK_BOOTTIME via the vDSO) or `stop`.
inline void spin_until(uint64_t until_ns, const std::atomic<bool>* stop = nullptr) {
  while (platoon::tests::boottime_ns() < until_ns)
    if (stop && stop->load(std::memory_order_relaxed)) return;
}

// ---- a child process running a workload ----
// Tids of this process's threads, sorted (/proc/self/task).
inline std::vector<uint32_t> own_tids() {
  std::vector<uint32_t> tids;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') tids.push_back(static_cast<uint32_t>(std::strtoul(e->d_name, nullptr, 10)));
    closedir(d);
  }
  std::sort(tids.begin(), tids.end());
  return tids;
}

// A forked child that runs `body` (which never returns) until killed; killed and reaped on
// destruction. A process may hold threads its code never started: ThreadSanitizer's runtime
// starts its own in the child at fork, named as the process (so comm cannot tell it apart) and
// blocking every signal. The child lists, before its body starts anything, the threads it
// already has besides its own and sends them up a pipe: runtime_tids(), empty in a build
// without such a runtime (a forked child has one thread), so counts stay exact there.
class ForkedWorkload {
 public:
  explicit ForkedWorkload(const std::function<void()>& body) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(fds[0]);
      const uint32_t self = static_cast<uint32_t>(this_tid());
      std::vector<uint32_t> others;
      for (uint32_t tid : own_tids())
        if (tid != self) others.push_back(tid);
      const ssize_t bytes = static_cast<ssize_t>(others.size() * sizeof(uint32_t));
      if (write(fds[1], others.data(), static_cast<size_t>(bytes)) != bytes) _exit(1);
      close(fds[1]);
      body();
      _exit(0);
    }
    close(fds[1]);
    // Until the child closes its end (at once: it only lists a directory); 5 s at most.
    uint32_t tid;
    size_t got = 0;
    pollfd p{fds[0], POLLIN, 0};
    while (poll(&p, 1, 5000) == 1) {
      const ssize_t n = read(fds[0], reinterpret_cast<char*>(&tid) + got, sizeof tid - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
      if (got == sizeof tid) {
        runtime_tids_.push_back(tid);
        got = 0;
      }
    }
    close(fds[0]);
  }
  ~ForkedWorkload() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  ForkedWorkload(const ForkedWorkload&) = delete;
  ForkedWorkload& operator=(const ForkedWorkload&) = delete;

  pid_t pid() const { return pid_; }
  const std::vector<uint32_t>& runtime_tids() const { return runtime_tids_; }

 private:
  pid_t pid_ = -1;
  std::vector<uint32_t> runtime_tids_;
};

// ---- /proc/self/task/TID readers ----
// `rounds` rounds of `threads` short-lived threads, each blocking `sleeps` times for `us`,
// joined before `after_round` runs. Returns every spawned tid.
inline std::vector<uint32_t> short_lived_thread_rounds(int rounds, int threads, int sleeps, useconds_t us,
                                                       const std::function<void()>& after_round) {
  std::vector<uint32_t> spawned;
  std::mutex mu;
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i)
      ts.emplace_back([&] {
        {
          std::lock_guard lk(mu);
          spawned.push_back(static_cast<uint32_t>(this_tid()));
        }
        for (int k = 0; k < sleeps; ++k) usleep(us);
      });
    for (auto& t : ts) t.join();
    after_round();
  }
  return spawned;
}

inline std::string task_path(pid_t tid, const char* file) {
  return "/proc/self/task/" + std::to_string(tid) + "/" + file;
}

struct SchedStat {
  uint64_t run_ns = 0;      // field 1: time on CPU
  uint64_t wait_ns = 0;     // field 2: run_delay, time runnable but waiting on a run queue
  uint64_t slices = 0;      // field 3: times run on a CPU
};
inline SchedStat read_schedstat(pid_t tid) {
  SchedStat s;
  std::ifstream in(task_path(tid, "schedstat"));
  in >> s.run_ns >> s.wait_ns >> s.slices;
  return s;
}

// A "key : value" or "key: value" line of /proc/.../sched or /proc/.../status.
inline long long read_keyed(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    const size_t colon = line.find(':', key.size());
    if (colon == std::string::npos) continue;
    if (line.find_first_not_of(' ', key.size()) != colon) continue;  // a longer key
    return std::stoll(line.substr(colon + 1));
  }
  return -1;
}
inline long long read_nr_migrations(pid_t tid) { return read_keyed(task_path(tid, "sched"), "se.nr_migrations"); }
inline long long read_voluntary(pid_t tid) { return read_keyed(task_path(tid, "status"), "voluntary_ctxt_switches"); }
inline long long read_nonvoluntary(pid_t tid) { return read_keyed(task_path(tid, "status"), "nonvoluntary_ctxt_switches"); }

// Scheduler state letter from /proc/self/task/TID/stat ('R', 'S', ...).
inline char task_state(pid_t tid) {
  std::ifstream in(task_path(tid, "stat"));
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = all.rfind(')');
  return paren == std::string::npos || paren + 2 >= all.size() ? '?' : all[paren + 2];
}

// ---- a workload thread that parks when its body is done ----
class Worker {
 public:
  explicit Worker(std::function<void()> body) : thread_([this, b = std::move(body)] { run(b); }) {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [this] { return tid_ != 0; });
  }
  ~Worker() {
    release();
    if (thread_.joinable()) thread_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  pid_t tid() const { return tid_; }
  uint64_t start_ns() const { return start_ns_; }
  uint64_t end_ns() const { return end_ns_; }   // when the body returned

  // Waits until the body is done and the thread sleeps in its park (state S), so nothing
  // about it changes until release(). The short settle covers the gap between the state
  // change and the switch-out that follows it in schedule().
  void wait_parked() {
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [this] { return done_; });
    }
    for (int i = 0; i < 2000 && task_state(tid_) != 'S'; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  void release() {
    std::lock_guard lk(mu_);
    released_ = true;
    cv_.notify_all();
  }
  void join() {
    release();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run(const std::function<void()>& body) {
    {
      std::lock_guard lk(mu_);
      tid_ = this_tid();
      start_ns_ = platoon::tests::boottime_ns();
      cv_.notify_all();
    }
    body();
    std::unique_lock lk(mu_);
    end_ns_ = platoon::tests::boottime_ns();
    done_ = true;
    cv_.notify_all();
    cv_.wait(lk, [this] { return released_; });
  }

  std::mutex mu_;
  std::condition_variable cv_;
  pid_t tid_ = 0;
  uint64_t start_ns_ = 0, end_ns_ = 0;
  bool done_ = false, released_ = false;
  std::thread thread_;  // last: started once the members above exist
};

// A two-party start line for threads that may share one CPU: each arrives, then spins until
// the other has (no blocking, so the start is not itself a voluntary switch that skews counts
// — only preemptions happen while they wait for each other).
class SpinStart {
 public:
  void arrive_and_wait() {
    arrived_.fetch_add(1);
    while (arrived_.load() < 2) {
    }
  }

 private:
  std::atomic<int> arrived_{0};
};

enum class EpollCall { wait, pwait, pwait2 };

// N cycles, each: K eventfds written, one wait call that must return K, the K fds read.
inline void epoll_cycles(int k, int n, EpollCall call) {
  const int ep = epoll_create1(0);
  std::vector<int> fds;
  for (int i = 0; i < k + 2; ++i) {  // two more that never become ready
    const int fd = eventfd(0, EFD_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    fds.push_back(fd);
  }
  epoll_event out[64];
  for (int c = 0; c < n; ++c) {
    for (int i = 0; i < k; ++i) {
      const uint64_t one = 1;
      if (write(fds[i], &one, sizeof one) != sizeof one) std::abort();
    }
    int got = -1;
    switch (call) {
      case EpollCall::wait: got = epoll_wait(ep, out, 64, -1); break;
      case EpollCall::pwait: got = epoll_pwait(ep, out, 64, -1, nullptr); break;
      case EpollCall::pwait2: got = static_cast<int>(syscall(SYS_epoll_pwait2, ep, out, 64, nullptr, nullptr, 0)); break;
    }
    if (got != k) std::abort();
    for (int i = 0; i < k; ++i) {
      uint64_t v;
      if (read(fds[i], &v, sizeof v) != sizeof v) std::abort();
    }
  }
  for (int fd : fds) close(fd);
  close(ep);
}

}  // namespace platoon::testing
