// spawn_finish_ns: spawn (here()) + run + finish of trivial fibers, spawned in batches.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "bench/runtime_bench/bench.hpp"

namespace platoon::bench {
namespace {

namespace tf = platoon::rt::this_fiber;

// ---- spawn + finish of trivial fibers, spawned in batches from a fiber on the same carrier ----
double spawn_finish(rt::Runtime& runtime, uint64_t total, uint32_t batch) {
  double result = 0;
  runtime
      .spawn_joinable(
          [&] {
            rt::Runtime* r = tf::runtime();
            uint64_t done = 0;
            auto one_batch = [&](uint32_t k) {
              const uint64_t target = done + k;
              for (uint32_t i = 0; i < k; ++i) r->spawn([d = &done] { ++*d; }, rt::here());
              while (done < target) tf::yield();  // FIFO: all k ran before we are back
            };
            for (int w = 0; w < 4; ++w) one_batch(batch);  // warm the record cache and stacks
            const uint64_t batches = std::max<uint64_t>(1, total / batch);
            const uint64_t t0 = now_ns();
            for (uint64_t b = 0; b < batches; ++b) one_batch(batch);
            const uint64_t t1 = now_ns();
            result = static_cast<double>(t1 - t0) / static_cast<double>(batches * batch);
          },
          rt::on_carrier(0))
      .join();
  return result;
}

}  // namespace

void run_spawn(const Config& cfg, rt::Runtime* runtime, Results& res) {
  Figure sf{"ns", {}, "spawn(here()) of a trivial fiber from a fiber on carrier 0 + run + finish, batches of " +
                          std::to_string(cfg.spawn_batch)};
  Figure sb{"ns", {}, "same, batches of " + std::to_string(cfg.spawn_big_batch) +
                          " (run-queue ring of 256 overflows, record cache spills)"};
  for (int r = 0; r < cfg.reps; ++r) sf.reps.push_back(spawn_finish(*runtime, cfg.spawns, cfg.spawn_batch));
  for (int r = 0; r < std::max(3, cfg.reps / 2); ++r)
    sb.reps.push_back(spawn_finish(*runtime, cfg.spawns / 2, cfg.spawn_big_batch));
  res.figs["spawn_finish_ns"] = sf;
  res.figs["spawn_finish_batch" + std::to_string(cfg.spawn_big_batch) + "_ns"] = sb;
  std::printf("spawn_finish_ns        %8.2f  (median of %d x %llu fibers in batches of %u, min %.2f max %.2f; goal <= 100)\n",
              sf.med(), cfg.reps, static_cast<unsigned long long>(cfg.spawns), cfg.spawn_batch, sf.lo(), sf.hi());
  std::printf("spawn_finish_batch%u_ns %7.2f\n", cfg.spawn_big_batch, sb.med());
  std::fflush(stdout);
}

}  // namespace platoon::bench
