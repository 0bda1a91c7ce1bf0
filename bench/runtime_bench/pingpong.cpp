// pingpong_per_s: round trips of two fibers on carriers 0 and 1 unparking each other.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>

#include "bench/runtime_bench/bench.hpp"

namespace platoon::bench {
namespace {

namespace tf = platoon::rt::this_fiber;

// ---- cross-carrier ping-pong ----
double pingpong(rt::Runtime& runtime, int ms) {
  std::atomic<rt::Fiber*> fa{nullptr}, fb{nullptr};
  std::atomic<int> turn{0};
  std::atomic<bool> stop{false};
  double rate = 0;
  auto hb = runtime.spawn_joinable(
      [&] {
        fb.store(tf::self());
        while (!fa.load()) tf::yield();
        rt::Fiber* a = fa.load();
        for (;;) {
          while (turn.load(std::memory_order_acquire) != 1) tf::park();
          if (stop.load(std::memory_order_acquire)) break;
          turn.store(0, std::memory_order_release);
          rt::unpark(a);
        }
      },
      rt::on_carrier(1));
  auto ha = runtime.spawn_joinable(
      [&] {
        fa.store(tf::self());
        while (!fb.load()) tf::yield();
        rt::Fiber* b = fb.load();
        const uint64_t t0 = now_ns();
        const uint64_t end = t0 + static_cast<uint64_t>(ms) * 1000000ull;
        uint64_t i = 0;
        for (;; ++i) {
          while (turn.load(std::memory_order_acquire) != 0) tf::park();
          if ((i & 255) == 0 && now_ns() >= end) break;
          turn.store(1, std::memory_order_release);
          rt::unpark(b);
        }
        const uint64_t t1 = now_ns();
        stop.store(true, std::memory_order_release);
        turn.store(1, std::memory_order_release);
        rt::unpark(b);
        rate = static_cast<double>(i) / (static_cast<double>(t1 - t0) / 1e9);
      },
      rt::on_carrier(0));
  ha.join();
  hb.join();
  return rate;
}

}  // namespace

void run_pingpong(const Config& cfg, rt::Runtime* runtime, Results& res) {
  Figure pp{"round trips/s", {}, "fibers on carrier 0 and 1 unparking each other, " +
                                     std::to_string(cfg.pingpong_ms) + " ms per repetition"};
  pingpong(*runtime, 100);  // warm up
  for (int r = 0; r < std::max(3, cfg.reps - 2); ++r) pp.reps.push_back(pingpong(*runtime, cfg.pingpong_ms));
  res.figs["pingpong_per_s"] = pp;
  std::printf("pingpong_per_s         %8.0f  (median of %zu x %d ms, min %.0f max %.0f; %.2f us per round trip)\n",
              pp.med(), pp.reps.size(), cfg.pingpong_ms, pp.lo(), pp.hi(), 1e6 / pp.med());
  std::fflush(stdout);
}

}  // namespace platoon::bench
