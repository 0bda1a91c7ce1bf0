// --usdt-demo SECONDS: fibers that yield, sleep, park and unpark on two carriers for that long,
// so that the runtime's USDT probes fire for a tracer (tests/bpf/usdt_test.sh).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <unistd.h>
#include <vector>

#include "bench/runtime_bench/bench.hpp"

namespace platoon::bench {

namespace tf = platoon::rt::this_fiber;

// ---- --usdt-demo: light, varied activity on two carriers for a tracer to watch ----
int usdt_demo(const Config& cfg) {
  rt::Options o = make_options(cfg);
  o.work_stealing = true;  // so that steal can fire too
  rt::Runtime runtime(o);
  const uint64_t end = now_ns() + static_cast<uint64_t>(cfg.usdt_demo_s * 1e9);
  std::printf("usdt-demo: pid %d, %.1f s\n", static_cast<int>(getpid()), cfg.usdt_demo_s);
  std::fflush(stdout);
  std::vector<rt::JoinHandle> hs;
  std::atomic<rt::Fiber*> peer[2] = {nullptr, nullptr};
  std::atomic<int> turn{0};
  std::atomic<bool> stop{false};
  for (int c = 0; c < 2; ++c) {
    // Yield a little, then sleep: drains, polls, sleeps and wakes on every carrier.
    hs.push_back(runtime.spawn_joinable(
        [end] {
          while (now_ns() < end) {
            for (int i = 0; i < 50; ++i) tf::yield();
            tf::sleep_for(std::chrono::microseconds(500));
          }
        },
        rt::on_carrier(c)));
    // Ping-pong across carriers every millisecond: park and unpark.
    hs.push_back(runtime.spawn_joinable(
        [c, end, &peer, &turn, &stop] {
          peer[c].store(tf::self());
          while (!peer[1 - c].load()) tf::sleep_for(std::chrono::microseconds(100));
          rt::Fiber* other = peer[1 - c].load();
          for (;;) {
            while (turn.load() != c && !stop.load()) tf::park();
            if (stop.load()) break;
            tf::sleep_for(std::chrono::milliseconds(1));
            if (now_ns() >= end) stop.store(true);
            turn.store(1 - c);
            rt::unpark(other);
          }
        },
        rt::on_carrier(c)));
  }
  // Bursts of short fibers on carrier 0 for carrier 1 to steal.
  hs.push_back(runtime.spawn_joinable(
      [end] {
        rt::Runtime* r = tf::runtime();
        while (now_ns() < end) {
          for (int i = 0; i < 32; ++i)
            r->spawn([] {
              for (int k = 0; k < 3; ++k) tf::yield();
            }, rt::here());
          tf::sleep_for(std::chrono::milliseconds(5));
        }
      },
      rt::on_carrier(0)));
  for (auto& h : hs) h.join();
  uint64_t drains = 0, sleeps = 0, steals = 0;
  for (auto& s : runtime.stats()) {
    drains += s.cycles;
    sleeps += s.sleeps;
    steals += s.steals;
  }
  std::printf("usdt-demo: done, %llu loop cycles, %llu sleeps, %llu steals\n",
              static_cast<unsigned long long>(drains), static_cast<unsigned long long>(sleeps),
              static_cast<unsigned long long>(steals));
  return 0;
}

}  // namespace platoon::bench
