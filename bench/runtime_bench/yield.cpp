// fiber_switch_ns: the yield round trip of a lone fiber on an otherwise idle carrier, halved.
#include <cstdint>
#include <cstdio>

#include "bench/runtime_bench/bench.hpp"

namespace platoon::bench {
namespace {

namespace tf = platoon::rt::this_fiber;

// ---- yield round trip of a lone fiber on carrier 0 ----
double yield_roundtrip(rt::Runtime& runtime, uint64_t n) {
  double result = 0;
  runtime
      .spawn_joinable(
          [&] {
            for (int i = 0; i < 10000; ++i) tf::yield();  // warm up
            const uint64_t t0 = now_ns();
            for (uint64_t i = 0; i < n; ++i) tf::yield();
            const uint64_t t1 = now_ns();
            result = static_cast<double>(t1 - t0) / static_cast<double>(n);
          },
          rt::on_carrier(0))
      .join();
  return result;
}

}  // namespace

void run_yield(const Config& cfg, rt::Runtime* runtime, Results& res) {
  Figure rtt{"ns", {}, "this_fiber::yield() round trip, lone fiber on carrier 0, carrier 1 idle"};
  Figure sw{"ns", {}, "yield_roundtrip_ns / 2"};
  for (int r = 0; r < cfg.reps; ++r) {
    const double v = yield_roundtrip(*runtime, cfg.yields);
    rtt.reps.push_back(v);
    sw.reps.push_back(v / 2);
  }
  res.figs["yield_roundtrip_ns"] = rtt;
  res.figs["fiber_switch_ns"] = sw;
  std::printf("yield_roundtrip_ns     %8.2f  (median of %d x %llu yields, min %.2f max %.2f)\n",
              rtt.med(), cfg.reps, static_cast<unsigned long long>(cfg.yields), rtt.lo(), rtt.hi());
  std::printf("fiber_switch_ns        %8.2f  (goal <= 15)\n", sw.med());
  std::fflush(stdout);
}

}  // namespace platoon::bench
