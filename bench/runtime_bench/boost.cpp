// The floors without the runtime: raw Boost.Context switches and fiber creation, and what one
// clock read costs.
#include <boost/context/fiber.hpp>
#include <boost/context/preallocated.hpp>
#include <boost/context/stack_context.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "bench/runtime_bench/bench.hpp"

namespace platoon::bench {
namespace {

// ---- raw Boost.Context: the floor of a switch ----
double bench_boost_switch(uint64_t n) {
  namespace ctx = boost::context;
  uint64_t left = n;
  ctx::fiber f{[&left](ctx::fiber&& main) {
    while (left) main = std::move(main).resume();
    return std::move(main);
  }};
  f = std::move(f).resume();  // warm up
  const uint64_t t0 = now_ns();
  while (left) {
    --left;
    f = std::move(f).resume();
  }
  const uint64_t t1 = now_ns();
  if (f) f = std::move(f).resume();
  return static_cast<double>(t1 - t0) / static_cast<double>(n) / 2.0;  // two switches per resume
}

// Creating a boost::context::fiber on a preallocated stack, running it and letting it finish:
// the Boost.Context part of spawn_finish_ns (creation itself jumps onto the new stack and back).
double bench_boost_create_finish(uint64_t n) {
  namespace ctx = boost::context;
  struct Borrowed {
    ctx::stack_context allocate() { return {}; }
    void deallocate(ctx::stack_context&) noexcept {}
  };
  static constexpr std::size_t kStack = 64 * 1024;
  std::vector<char> mem(kStack);
  uint64_t ran = 0;
  const uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < n; ++i) {
    ctx::stack_context sc;
    sc.sp = mem.data() + kStack;
    sc.size = kStack;
    ctx::fiber f{std::allocator_arg, ctx::preallocated(sc.sp, sc.size, sc), Borrowed{},
                 [&ran](ctx::fiber&& back) {
                   ++ran;
                   return std::move(back);
                 }};
    f = std::move(f).resume();
  }
  const uint64_t t1 = now_ns();
  if (ran != n) std::abort();
  return static_cast<double>(t1 - t0) / static_cast<double>(n);
}

// ---- what one clock read costs: the runtime reads CLOCK_MONOTONIC after every fiber run ----
double bench_clock_gettime(uint64_t n) {
  uint64_t sink = 0;
  const uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < n; ++i) sink += now_ns();
  const uint64_t t1 = now_ns();
  asm volatile("" : : "r"(sink));
  return static_cast<double>(t1 - t0) / static_cast<double>(n);
}

double bench_rdtsc(uint64_t n) {
#if defined(__x86_64__)
  uint64_t sink = 0;
  const uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < n; ++i) sink += __builtin_ia32_rdtsc();
  const uint64_t t1 = now_ns();
  asm volatile("" : : "r"(sink));
  return static_cast<double>(t1 - t0) / static_cast<double>(n);
#else
  (void)n;
  return NAN;
#endif
}

}  // namespace

void run_boost(const Config& cfg, rt::Runtime*, Results& res) {
  Figure f{"ns", {}, "raw boost::context::fiber resume, no runtime: the floor of fiber_switch_ns"};
  Figure clk{"ns", {}, "clock_gettime(CLOCK_MONOTONIC) (vDSO); Carrier::drain reads it after every fiber run"};
  Figure tsc{"ns", {}, "rdtsc, for comparison"};
  Figure bcf{"ns", {}, "raw boost::context::fiber created on a preallocated stack, resumed once, finished: the floor of spawn_finish_ns"};
  // On a thread of its own: pinning the main thread now would narrow the CPUs the runtime
  // created below sees as allowed.
  std::thread([&] {
    if (cfg.pin && !res.allowed.empty()) pin_self_to(res.allowed.front());
    for (int r = 0; r < cfg.reps; ++r) f.reps.push_back(bench_boost_switch(cfg.yields));
    for (int r = 0; r < cfg.reps; ++r) bcf.reps.push_back(bench_boost_create_finish(cfg.spawns));
    for (int r = 0; r < cfg.reps; ++r) clk.reps.push_back(bench_clock_gettime(cfg.yields / 2));
    for (int r = 0; r < cfg.reps; ++r) tsc.reps.push_back(bench_rdtsc(cfg.yields / 2));
  }).join();
  res.figs["clock_gettime_ns"] = clk;
  res.figs["boost_create_finish_ns"] = bcf;
  res.figs["rdtsc_ns"] = tsc;
  res.figs["boost_switch_ns"] = f;
  std::printf("boost_switch_ns        %8.2f  (median of %d x %llu resumes)\n", f.med(), cfg.reps,
              static_cast<unsigned long long>(cfg.yields));
  std::printf("boost_create_finish_ns %8.2f\n", bcf.med());
  std::printf("clock_gettime_ns       %8.2f  (rdtsc %.2f)\n", clk.med(), tsc.med());
  std::fflush(stdout);
}

}  // namespace platoon::bench
