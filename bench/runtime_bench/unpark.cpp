// unpark_p50_us / p99: rt::unpark() from an outside OS thread until the parked fiber runs again,
// the target carrier asleep in epoll_wait before every sample; and the same wake-up without the
// runtime (os_floor).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "bench/runtime_bench/bench.hpp"

namespace platoon::bench {
namespace {

namespace tf = platoon::rt::this_fiber;

// ---- unpark latency from an outside thread to a sleeping carrier ----
char thread_state(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  std::ifstream f(path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto p = s.rfind(')');
  if (p == std::string::npos || p + 2 >= s.size()) return '?';
  return s[p + 2];
}

// The syscall a thread is blocked in (/proc/.../syscall), -1 if running or unknown.
long thread_syscall(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", static_cast<int>(tid));
  std::ifstream f(path);
  std::string first;
  if (!(f >> first)) return -1;
  char* end = nullptr;
  const long n = std::strtol(first.c_str(), &end, 10);
  return end && *end == '\0' ? n : -1;
}

bool is_epoll_wait(long sc) {
#if defined(__x86_64__)
  return sc == 232 || sc == 281 || sc == 441;  // epoll_wait, epoll_pwait, epoll_pwait2
#else
  (void)sc;
  return true;
#endif
}

UnparkResult unpark_latency(rt::Runtime& runtime, int samples, int target) {
  UnparkResult res;
  std::atomic<rt::Fiber*> fiber{nullptr};
  std::atomic<int> parked_seq{-1};   // the fiber is about to park waiting for sample i
  std::atomic<int> go{-1};           // sample i may run
  std::atomic<int> ack{-1};
  std::vector<uint64_t> woke(static_cast<size_t>(samples), 0);
  auto h = runtime.spawn_joinable(
      [&] {
        fiber.store(tf::self());
        for (int i = 0; i < samples; ++i) {
          parked_seq.store(i, std::memory_order_seq_cst);
          while (go.load(std::memory_order_seq_cst) < i) tf::park();
          woke[static_cast<size_t>(i)] = now_ns();
          ack.store(i, std::memory_order_seq_cst);
        }
      },
      rt::on_carrier(target));
  pid_t tid = 0;
  for (auto& t : runtime.threads())
    if (t.name.rfind("carrier-" + std::to_string(target), 0) == 0 ||
        t.name.rfind("c" + std::to_string(target) + "@", 0) == 0)
      tid = t.tid;
  while (!fiber.load()) std::this_thread::yield();
  rt::Fiber* f = fiber.load();
  res.lat_us.reserve(static_cast<size_t>(samples));
  for (int i = 0; i < samples; ++i) {
    while (parked_seq.load() < i) std::this_thread::yield();
    // Idle: the carrier thread is blocked in epoll_wait and has not woken (its sleep count is
    // unchanged) over a whole 100-250 us interval.
    uint64_t prev_sleeps = runtime.stats()[static_cast<size_t>(target)].sleeps;
    bool idle = false;
    for (int tries = 0; tries < 200 && !idle; ++tries) {
      std::this_thread::sleep_for(std::chrono::microseconds(100 + (i * 37 + tries * 11) % 150));
      const uint64_t sl = runtime.stats()[static_cast<size_t>(target)].sleeps;
      if (tid == 0) { idle = sl != prev_sleeps || tries > 0; break; }
      const char st = thread_state(tid);
      const long sc = thread_syscall(tid);
      idle = sl == prev_sleeps && st == 'S' && (sc == -1 || is_epoll_wait(sc));
      if (idle && i % 64 == 0) res.syscalls.insert(sc);
      prev_sleeps = sl;
    }
    if (!idle) ++res.not_idle;
    const uint64_t t0 = now_ns();
    go.store(i, std::memory_order_seq_cst);
    rt::unpark(f);
    while (ack.load(std::memory_order_acquire) < i) {
    }
    res.lat_us.push_back(static_cast<double>(woke[static_cast<size_t>(i)] - t0) / 1000.0);
  }
  h.join();
  return res;
}

// ---- the floor of unpark latency: a plain thread blocked in epoll_wait on an eventfd, woken
// by a write from the bench thread; no runtime involved ----
std::vector<double> os_wake_latency(int samples, int cpu) {
  std::vector<double> lat;
  const int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (efd < 0 || ep < 0) return lat;
  epoll_event ev{};
  ev.events = EPOLLIN;
  epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
  std::atomic<pid_t> tid{0};
  std::atomic<int> waiting{-1}, ack{-1};
  std::vector<uint64_t> woke(static_cast<size_t>(samples), 0);
  std::thread t([&] {
    if (cpu >= 0) pin_self_to(cpu);
    tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
    for (int i = 0; i < samples; ++i) {
      waiting.store(i);
      epoll_event out{};
      while (epoll_wait(ep, &out, 1, -1) != 1) {
      }
      woke[static_cast<size_t>(i)] = now_ns();
      uint64_t v;
      while (read(efd, &v, sizeof v) == sizeof v) {
      }
      ack.store(i);
    }
  });
  while (tid.load() == 0) std::this_thread::yield();
  for (int i = 0; i < samples; ++i) {
    while (waiting.load() < i) std::this_thread::yield();
    for (int tries = 0; tries < 200; ++tries) {
      std::this_thread::sleep_for(std::chrono::microseconds(100 + (i * 37 + tries * 11) % 150));
      const long sc = thread_syscall(tid.load());
      if (thread_state(tid.load()) == 'S' && (sc == -1 || is_epoll_wait(sc))) break;
    }
    const uint64_t t0 = now_ns();
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = write(efd, &one, sizeof one);
    while (ack.load(std::memory_order_acquire) < i) {
    }
    lat.push_back(static_cast<double>(woke[static_cast<size_t>(i)] - t0) / 1000.0);
  }
  t.join();
  close(ep);
  close(efd);
  return lat;
}

}  // namespace

void run_unpark(const Config& cfg, rt::Runtime* runtime, Results& res) {
  Figure p50{"us", {}, "per repetition of " + std::to_string(cfg.unpark_samples) + " samples"};
  Figure p99{"us", {}, "per repetition of " + std::to_string(cfg.unpark_samples) + " samples"};
  UnparkResult& all = res.unpark_all;
  for (int r = 0; r < cfg.unpark_reps; ++r) {
    UnparkResult u = unpark_latency(*runtime, cfg.unpark_samples, 1);
    p50.reps.push_back(percentile(u.lat_us, 50));
    p99.reps.push_back(percentile(u.lat_us, 99));
    all.lat_us.insert(all.lat_us.end(), u.lat_us.begin(), u.lat_us.end());
    all.not_idle += u.not_idle;
    all.syscalls.insert(u.syscalls.begin(), u.syscalls.end());
  }
  // The same wake-up without the runtime, on carrier 1's CPU (carrier 1 sleeps meanwhile).
  int cpu1 = -1;
  for (auto& t : res.threads) if (t.name.rfind("carrier-1", 0) == 0) cpu1 = t.cpu;
  res.os_wake = os_wake_latency(cfg.unpark_samples, cpu1);
  res.figs["unpark_p50_us_by_rep"] = p50;
  res.figs["unpark_p99_us_by_rep"] = p99;
  std::printf("unpark_p50_us          %8.2f  (%zu samples; per-rep p50 %.2f..%.2f)\n",
              percentile(all.lat_us, 50), all.lat_us.size(), p50.lo(), p50.hi());
  std::printf("unpark_p99_us          %8.2f  (per-rep p99 %.2f..%.2f; max %.2f; carrier not asleep in %llu samples)\n",
              percentile(all.lat_us, 99), p99.lo(), p99.hi(), percentile(all.lat_us, 100),
              static_cast<unsigned long long>(all.not_idle));
  if (!res.os_wake.empty())
    std::printf("os_wake_p50_us         %8.2f  (p99 %.2f; the floor: plain thread in epoll_wait woken by an eventfd write, %zu samples)\n",
                percentile(res.os_wake, 50), percentile(res.os_wake, 99), res.os_wake.size());
  std::fflush(stdout);
}

}  // namespace platoon::bench
