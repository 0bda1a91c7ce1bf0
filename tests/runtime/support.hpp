// Test support shared by the runtime suites: a watchdog that turns a hang into a failure,
// polling waits with deadlines, and whether a sanitizer slows the build down.
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
#include <functional>
#include <mutex>
#include <string>
#include <thread>

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

// A counter an OS thread can wait on with a timeout (futex), bumped by fibers.
struct Signal {
  std::atomic<uint32_t> v{0};
  void bump() {
    v.fetch_add(1);
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&v), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  }
  // Waits until v >= target; false on timeout.
  bool wait_at_least(uint32_t target, std::chrono::nanoseconds timeout) {
    const uint64_t deadline = mono_ns() + static_cast<uint64_t>(timeout.count());
    for (;;) {
      const uint32_t cur = v.load();
      if (cur >= target) return true;
      const uint64_t now = mono_ns();
      if (now >= deadline) return false;
      const uint64_t left = std::min<uint64_t>(deadline - now, 50'000'000);
      timespec ts{static_cast<time_t>(left / 1000000000), static_cast<long>(left % 1000000000)};
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&v), FUTEX_WAIT_PRIVATE, cur, &ts, nullptr, 0);
    }
  }
};

}  // namespace platoon::test
