// Test support shared by the runtime suites: a watchdog that turns a hang into a failure,
// polling waits with deadlines, and whether a sanitizer slows the build down.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
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

}  // namespace platoon::test
