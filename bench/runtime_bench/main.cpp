// runtime_bench: micro-benchmarks of the fiber runtime, printed and optionally written as JSON.
//
//   fiber_switch_ns     one fiber context switch = (this_fiber::yield() round trip of a lone fiber
//                       on an otherwise idle carrier) / 2; also yield_roundtrip_ns
//   spawn_finish_ns     spawn (here()) + run + finish of a trivial fiber, spawned in batches from a
//                       fiber on the same carrier, total time / fibers
//   unpark_p50_us/p99   rt::unpark() from an outside OS thread until the parked fiber runs again,
//                       the target carrier asleep in epoll_wait before every sample
//   pingpong_per_s      round trips of two fibers on carriers 0 and 1 unparking each other
//   os_floor            (in "unpark") a plain thread in epoll_wait woken by an eventfd write
//   boost_switch_ns     floors without the runtime: one raw boost::context::fiber switch,
//   boost_create_finish_ns  creating + running + finishing a raw fiber, one clock_gettime
//   clock_gettime_ns
//
// Every figure is the median of several repetitions; the JSON keeps every repetition.
//
// usage: runtime_bench [--json FILE] [--reps N] [--yields N] [--spawns N] [--unpark-samples N]
//                      [--pingpong-ms MS] [--no-pin] [--only a,b,...] [--budget-us N]
//        runtime_bench --usdt-demo SECONDS   (runs fibers that yield, sleep, park and unpark on
//                                             two carriers for that long; for tracer tests)
// --only takes any of: boost, yield, spawn, unpark, pingpong.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "bench/runtime_bench/bench.hpp"
#include "runtime/topology.hpp"

namespace bench = platoon::bench;
namespace rt = platoon::rt;

namespace {

// The benchmark groups, in the order they run. A group with min_carriers 0 runs before the
// runtime starts, without it; the others share one runtime and are skipped when it has fewer
// carriers than they need.
struct Benchmark {
  const char* name;  // as --only names it
  int min_carriers;
  void (*run)(const bench::Config&, rt::Runtime*, bench::Results&);
};

constexpr Benchmark kBenchmarks[] = {
    {"boost", 0, bench::run_boost},
    {"yield", 1, bench::run_yield},
    {"spawn", 1, bench::run_spawn},
    {"unpark", 2, bench::run_unpark},
    {"pingpong", 2, bench::run_pingpong},
};

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--json FILE] [--reps N] [--yields N] [--spawns N] [--spawn-batch N]\n"
               "          [--unpark-samples N] [--pingpong-ms MS] [--budget-us N] [--no-pin]\n"
               "          [--only boost,yield,spawn,unpark,pingpong]\n"
               "       %s --usdt-demo SECONDS\n",
               argv0, argv0);
  std::exit(2);
}

bench::Config parse_args(int argc, char** argv) {
  bench::Config cfg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage(argv[0]);
      return argv[++i];
    };
    if (a == "--json") cfg.json_path = val();
    else if (a == "--reps") cfg.reps = std::max(1, std::atoi(val().c_str()));
    else if (a == "--yields") cfg.yields = std::strtoull(val().c_str(), nullptr, 10);
    else if (a == "--spawns") cfg.spawns = std::strtoull(val().c_str(), nullptr, 10);
    else if (a == "--spawn-batch") cfg.spawn_batch = static_cast<uint32_t>(std::max(1, std::atoi(val().c_str())));
    else if (a == "--unpark-samples") cfg.unpark_samples = std::max(1, std::atoi(val().c_str()));
    else if (a == "--pingpong-ms") cfg.pingpong_ms = std::max(1, std::atoi(val().c_str()));
    else if (a == "--budget-us") cfg.budget_us = std::atoi(val().c_str());
    else if (a == "--no-pin") cfg.pin = false;
    else if (a == "--pin") cfg.pin = true;
    else if (a == "--usdt-demo") cfg.usdt_demo_s = std::atof(val().c_str());
    else if (a == "--only") {
      std::stringstream ss(val());
      std::string item;
      while (std::getline(ss, item, ',')) cfg.only.insert(item);
    } else usage(argv[0]);
  }
  return cfg;
}

// Runs the wanted groups that need the runtime in one runtime of two carriers. The bench thread
// sits on the CPU of carrier 0 (idle while carrier 1 is measured) and the unpark measurements
// target carrier 1, so the waker and the wakee never share a CPU.
void run_in_runtime(const bench::Config& cfg, bench::Results& res) {
  rt::Runtime runtime(bench::make_options(cfg));
  res.threads = runtime.threads();
  res.warnings = runtime.warnings();
  res.used_opts = runtime.options();
  if (cfg.pin && !res.allowed.empty()) res.bench_cpu = bench::pin_self_to(res.allowed.front());
  for (const Benchmark& b : kBenchmarks)
    if (b.min_carriers > 0 && cfg.want(b.name) && runtime.carrier_count() >= b.min_carriers)
      b.run(cfg, &runtime, res);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Config cfg = parse_args(argc, argv);
  if (cfg.usdt_demo_s >= 0) return bench::usdt_demo(cfg);

  bench::Results res;
  res.loadavg_start = bench::read_first_line("/proc/loadavg");
  res.allowed = rt::allowed_cpus();
  res.used_opts = bench::make_options(cfg);
  for (const Benchmark& b : kBenchmarks)
    if (b.min_carriers == 0 && cfg.want(b.name)) b.run(cfg, nullptr, res);
  run_in_runtime(cfg, res);

  if (cfg.json_path.empty()) return 0;
  return bench::write_report(cfg, res) ? 0 : 1;
}
