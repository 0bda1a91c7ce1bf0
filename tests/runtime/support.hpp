// Test support shared by the runtime suites: a watchdog that turns a hang into a failure,
// polling waits with deadlines, futex waits for OS threads, and whether a sanitizer slows the
// build down. A suite says `using namespace platoon::test;` in its unnamed namespace and gets
// all of it, with the rt alias, Clock and the chrono literals.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <ctime>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/io.hpp"
#include "runtime/runtime.hpp"

namespace platoon::test {

namespace rt = platoon::rt;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit) : limit_(limit) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    name_ = info ? std::string(info->test_suite_name()) + "." + info->name() : "?";
    th_ = std::thread([this] {
      std::unique_lock lk(mu_);
      if (!cv_.wait_for(lk, limit_, [this] { return done_; })) {
        std::fprintf(stderr, "WATCHDOG: %s still running after %llds; aborting\n", name_.c_str(),
                     static_cast<long long>(limit_.count()));
        std::fflush(stderr);
        std::abort();
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    th_.join();
  }

 private:
  std::chrono::seconds limit_;
  std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread th_;
};

// The median of v. Timing checks bound the median of several runs: one run can be late by
// anything, the median of seven only if most of them are.
inline double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// How late a fiber timer (a sleep or an I/O timeout) may fire at the median of several runs,
// beyond the time its threads waited for a CPU. The runtime's libevent bases are precise
// (EVENT_BASE_FLAG_PRECISE_TIMER: a timerfd, and CLOCK_MONOTONIC): 0.05-0.15 ms late at the
// median, with two CPU hogs beside it too. Without the flag libevent reads
// CLOCK_MONOTONIC_COARSE (4 ms ticks at HZ=250) and sleeps in epoll_wait's whole milliseconds:
// a 5 ms timer comes 2.3-3.5 ms late at the median.
inline constexpr double kTimerLateMs = kSanitized ? 2.0 : 1.0;
// The runs a timing median is taken over.
inline constexpr int kTimingRuns = 7;

inline pid_t this_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// Time the threads `tids` of this process have waited runnable for a CPU so far, summed
// (/proc schedstat's run_delay, ns).
inline uint64_t run_delay_ns(const std::vector<pid_t>& tids) {
  uint64_t sum = 0;
  for (pid_t tid : tids) {
    std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/schedstat");
    uint64_t run = 0, delay = 0;
    if (f >> run >> delay) sum += delay;
  }
  return sum;
}

// One timed call with a timeout: its wall time, how much of that the threads serving it waited
// runnable for a CPU, and the call's error. A CPU hog beside the test delays a woken carrier by
// scheduler slices: that lateness is the scheduler's, not the timer's. (A wait before the timer
// fired is subtracted too, which only makes a loaded run more lenient: the checks bite on a
// quiet machine.)
struct TimedCall {
  double ms = -1;
  double waited_ms = 0;
  int err = -1;
};

// Runs call() (returning an errno) on a fiber and times it; `serving` names the threads besides
// the fiber's own carrier that take part (the master poller).
template <class Call>
TimedCall time_call(const std::vector<pid_t>& serving, Call&& call) {
  std::vector<pid_t> tids = serving;
  tids.push_back(this_tid());
  const uint64_t d0 = run_delay_ns(tids);
  const auto t0 = Clock::now();
  TimedCall r;
  r.err = call();
  r.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  r.waited_ms = static_cast<double>(run_delay_ns(tids) - d0) / 1e6;
  return r;
}

// Runs of a call with a timeout of `t` ms: each timed out, none early, none for ever (one run
// alone gets `slack`), and, over kTimingRuns runs or more, the median lateness beyond the CPU
// wait is under kTimerLateMs. `what` names the call.
inline void check_timeouts(const char* what, double t, const std::vector<TimedCall>& runs,
                           double slack = kSanitized ? 2000.0 : 1000.0) {
  ASSERT_FALSE(runs.empty()) << what;
  std::vector<double> late, waited;
  for (const TimedCall& r : runs) {
    EXPECT_EQ(r.err, ETIMEDOUT) << what << " timeout " << t << " ms: " << std::strerror(r.err);
    EXPECT_GE(r.ms, t) << what << " timed out early";
    EXPECT_LT(r.ms, t + slack) << what << " timed out late";
    late.push_back(r.ms - t - r.waited_ms);
    waited.push_back(r.waited_ms);
  }
  std::sort(late.begin(), late.end());
  const double med = median(late);
  std::printf("  %s timeout %4.0f ms x%zu: late beyond the CPU wait by min %.3f, median %.3f, max %.3f ms; "
              "CPU wait median %.3f ms\n",
              what, t, late.size(), late.front(), med, late.back(), median(waited));
  if (runs.size() >= static_cast<size_t>(kTimingRuns)) {
    EXPECT_LT(med, kTimerLateMs) << what << " timeout " << t << " ms: the timer is not precise";
  }
}

inline bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

inline bool join_within(rt::JoinHandle& h, std::chrono::milliseconds timeout) {
  if (!wait_until([&] { return h.done(); }, timeout)) return false;
  h.join();
  return true;
}

inline uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Burns CPU for `ns` of wall time without yielding.
inline void spin_for_ns(uint64_t ns) {
  const uint64_t end = mono_ns() + ns;
  while (mono_ns() < end) {
  }
}

inline bool join_all_within(std::vector<rt::JoinHandle>& hs, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (auto& h : hs) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!join_within(h, std::max(left, 1ms))) return false;
  }
  return true;
}

// Wakes every OS thread waiting on w (futex).
inline void futex_wake_all(std::atomic<uint32_t>& w) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&w), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

// Waits (futex, OS threads only: a fiber would block its carrier) until w >= target; false on
// timeout.
inline bool futex_wait_at_least(std::atomic<uint32_t>& w, uint32_t target, std::chrono::nanoseconds timeout) {
  const uint64_t deadline = mono_ns() + static_cast<uint64_t>(timeout.count());
  for (;;) {
    const uint32_t cur = w.load();
    if (cur >= target) return true;
    const uint64_t now = mono_ns();
    if (now >= deadline) return false;
    const uint64_t left = std::min<uint64_t>(deadline - now, 50'000'000);
    timespec ts{static_cast<time_t>(left / 1000000000), static_cast<long>(left % 1000000000)};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&w), FUTEX_WAIT_PRIVATE, cur, &ts, nullptr, 0);
  }
}

// A counter an OS thread can wait on with a timeout (futex), bumped by fibers.
struct Signal {
  std::atomic<uint32_t> v{0};
  void bump() {
    v.fetch_add(1);
    futex_wake_all(v);
  }
  // Waits until v >= target; false on timeout.
  bool wait_at_least(uint32_t target, std::chrono::nanoseconds timeout) { return futex_wait_at_least(v, target, timeout); }
};

// The runtime set-ups the suites run in: carrier mode with n carriers (work stealing as given,
// else the runtime's default), and pool mode with `loops` event loops and `workers` workers.
inline rt::Options carrier_mode(int n = 2) {
  rt::Options o;
  o.carriers = n;
  return o;
}
inline rt::Options stealing_carriers(bool stealing, int n = 2) {
  rt::Options o = carrier_mode(n);
  o.work_stealing = stealing;
  return o;
}
inline rt::Options pool_mode(int loops = 2, int workers = 2) {
  rt::Options o;
  o.scheduler = rt::Scheduler::pool;
  o.carriers = loops;
  o.workers = workers;
  return o;
}

// The name (comm) of thread `tid` of this process, as the kernel shows it.
inline std::string comm_of(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string s;
  std::getline(f, s);
  return s;
}

// The names of every thread of this process.
inline std::vector<std::string> all_task_comms() {
  std::vector<std::string> out;
  DIR* d = opendir("/proc/self/task");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    out.push_back(comm_of(std::atoi(e->d_name)));
  }
  closedir(d);
  return out;
}

// A loopback listening socket on a free port, shared so that fibers can accept on it; null when
// it could not be opened.
inline std::shared_ptr<rt::Socket> listen_loopback() {
  int err = 0;
  auto s = std::make_shared<rt::Socket>(rt::Socket::listen_tcp("127.0.0.1", 0, false, err));
  return err == 0 && s->valid() ? s : nullptr;
}

}  // namespace platoon::test

// Declares `listener` (listen_loopback()) and its `port`; ASSERTs it opened (a macro: an ASSERT
// in a helper function would not end the test).
#define LISTEN_LOOPBACK(listener, port)                                   \
  const auto listener = ::platoon::test::listen_loopback();              \
  ASSERT_TRUE(listener) << "cannot listen on 127.0.0.1";                 \
  const uint16_t port = listener->local_port()
