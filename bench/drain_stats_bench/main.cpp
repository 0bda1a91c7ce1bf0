// drain_stats_bench: what keeping the drain aggregates in the runtime's stats table costs a
// drain (runtime/stats_table.hpp), with the `stats` semaphore down (no tracer: one load and
// branch) and up (as while platoon is attached). The semaphore is this process's own variable,
// raised here by hand, so no tracer is needed and nothing but the booking is measured.
//
//   booking_off_ns / booking_on_ns   the booking a drain does, alone, in a loop (clock read
//                                    and seqlocked slot update when on)
//   drain_off_ns / drain_on_ns       a real drain on a carrier: a fiber yielding in a loop
//                                    under a 1 us budget, time per drain (from the table's
//                                    drain count); on - off is the booking's cost in place,
//                                    within run-to-run noise (a drain is ~4 us on kernel 6.18)
//
// usage: drain_stats_bench [--reps N] [--json FILE]
//        drain_stats_bench --workload ...   (a test workload: see workload.cpp)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "runtime/probes.hpp"
#include "runtime/runtime.hpp"
#include "runtime/stats_table.hpp"

int run_workload(int argc, char** argv);

namespace rt = platoon::rt;
namespace tf = platoon::rt::this_fiber;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The booking exactly as Carrier::drain does it, kept out of line so the loop cannot hoist it.
__attribute__((noinline)) void book(rt::StatsSlot& slot, uint32_t depth, uint64_t start) {
  if (PLATOON_PROBE_ENABLED(stats)) slot.drain(depth, depth, rt::now_ns() - start);
}

double booking_ns(bool on, uint64_t n) {
  rt::StatsSlot slot = rt::StatsSlot::claim(1);
  PLATOON_SEMAPHORE(stats) = on ? 1 : 0;
  const uint64_t start = rt::now_ns();
  for (uint64_t i = 0; i < n; ++i) book(slot, static_cast<uint32_t>(i & 7) + 1, start);
  const double ns = static_cast<double>(rt::now_ns() - start) / static_cast<double>(n);
  PLATOON_SEMAPHORE(stats) = 0;
  return ns;
}

uint64_t table_drains() {
  uint64_t n = 0;
  const uint32_t used = platoon_runtime_stats.slots_used;
  for (uint32_t i = 0; i < used; ++i) n += __atomic_load_n(&platoon_runtime_stats.slots[i].drains, __ATOMIC_RELAXED);
  return n;
}

// ns per drain of a lone yielding fiber; drains counted by the table (semaphore up for the
// count, then the timed run with the wanted state: the drains of both runs are the same kind).
double drain_ns(rt::Runtime& runtime, bool on, uint64_t yields) {
  auto loop = [&] {
    uint64_t t = 0;
    runtime.spawn_joinable([&] {
      const uint64_t t0 = rt::now_ns();
      for (uint64_t i = 0; i < yields; ++i) tf::yield();
      t = rt::now_ns() - t0;
    }, rt::on_carrier(0)).join();
    return t;
  };
  PLATOON_SEMAPHORE(stats) = 1;
  const uint64_t d0 = table_drains();
  const uint64_t counted = loop();
  const uint64_t drains = table_drains() - d0;
  PLATOON_SEMAPHORE(stats) = on ? 1 : 0;
  const uint64_t t = on ? counted : loop();
  PLATOON_SEMAPHORE(stats) = 0;
  return drains ? static_cast<double>(t) / static_cast<double>(drains) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--workload") return run_workload(argc - 2, argv + 2);
  int reps = 7;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--json" && i + 1 < argc) json = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--reps N] [--json FILE] | --workload [--carriers N] [--stealing]\n", argv[0]);
      return 2;
    }
  }
  std::vector<double> boff, bon, doff, don, ddiff;
  for (int r = 0; r < reps; ++r) {
    boff.push_back(booking_ns(false, 20'000'000));
    bon.push_back(booking_ns(true, 20'000'000));
  }
  rt::Options o;
  o.carriers = 1;
  o.budget = std::chrono::microseconds(1);
  rt::Runtime runtime(o);
  for (int r = 0; r < reps; ++r) {
    doff.push_back(drain_ns(runtime, false, 2'000'000));
    don.push_back(drain_ns(runtime, true, 2'000'000));
    ddiff.push_back(don.back() - doff.back());
  }
  const double bo = median(boff), bn = median(bon), d0 = median(doff), d1 = median(don);
  std::printf("booking_off_ns  %7.2f  (semaphore down: load + branch)\n", bo);
  std::printf("booking_on_ns   %7.2f  (clock read + seqlocked slot update; goal <= 50)\n", bn);
  std::printf("drain_off_ns    %7.2f  (a 1 us-budget drain of a yielding fiber, table off)\n", d0);
  std::printf("drain_on_ns     %7.2f  (the same, table on: %+.2f ns per drain, median of paired runs;\n"
              "                          a drain here includes a poll, so this is noise-bound: see booking_on_ns)\n",
              d1, median(ddiff));
  if (json.empty()) return 0;
  FILE* f = std::fopen(json.c_str(), "w");
  if (!f) return std::fprintf(stderr, "drain_stats_bench: cannot write %s\n", json.c_str()), 1;
  std::fprintf(f,
               "{\"booking_off_ns\": %.3f, \"booking_on_ns\": %.3f, \"drain_off_ns\": %.3f, \"drain_on_ns\": %.3f, "
               "\"drain_stats_cost_ns\": %.3f, \"reps\": %d}\n",
               bo, bn, d0, d1, median(ddiff), reps);
  return std::fclose(f) == 0 ? 0 : 1;
}
