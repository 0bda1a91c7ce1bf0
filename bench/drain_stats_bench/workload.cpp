// drain_stats_bench --workload [--carriers N] [--stealing]: a platoon-runtime process with a
// known drain history, for tests/bpf/runtime_stats_test.cpp. It prints
//   ready pid PID
//   carrier INDEX TID            (one line per carrier)
// then reads commands from stdin, one a line:
//   run FIBERS YIELDS            FIBERS fibers on carrier 0, each yielding YIELDS times
//   quit
// and after each run, once every carrier is quiet again, its own account of what happened:
//   carrier INDEX TID drains D fibers F steals S stolen T ns N     (N: the run's wall time)
// drains and fibers come from the carrier's poll observer (each poll reports the fibers its
// previous drain ran: drains with fibers > 0, their sum), steals from the runtime's counters.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/runtime.hpp"

namespace rt = platoon::rt;

namespace {

struct Observed {
  std::atomic<uint64_t> drains{0}, fibers{0};
};

// Quiet: the counters stopped moving for a while (every carrier back asleep).
std::vector<rt::CarrierStats> settle(rt::Runtime& runtime) {
  std::vector<rt::CarrierStats> prev = runtime.stats();
  for (int still = 0; still < 3;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::vector<rt::CarrierStats> now = runtime.stats();
    bool same = true;
    for (size_t i = 0; i < now.size(); ++i)
      same &= now[i].cycles == prev[i].cycles && now[i].sleeps == prev[i].sleeps;
    still = same ? still + 1 : 0;
    prev = std::move(now);
  }
  return prev;
}

void run(rt::Runtime& runtime, int fibers, int yields) {
  std::vector<rt::JoinHandle> joins;
  for (int i = 0; i < fibers; ++i)
    joins.push_back(runtime.spawn_joinable(
        [yields] {
          for (int k = 0; k < yields; ++k) {
            // A little work per step, so a sibling finds this carrier busy and can steal.
            volatile uint64_t x = 0;
            for (int j = 0; j < 2000; ++j) x = x + static_cast<uint64_t>(j);
            rt::this_fiber::yield();
          }
        },
        rt::on_carrier(0)));
  for (auto& j : joins) j.join();
}

}  // namespace

int run_workload(int argc, char** argv) {
  rt::Options o;
  o.carriers = 1;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--carriers" && i + 1 < argc) o.carriers = std::max(1, std::atoi(argv[++i]));
    else if (a == "--stealing") o.work_stealing = true;
  }
  std::vector<Observed> seen(static_cast<size_t>(o.carriers));
  o.on_poll = [&seen](const rt::PollObservation& p) {
    if (p.fibers_in_last_drain == 0) return;
    Observed& s = seen[static_cast<size_t>(p.carrier)];
    s.drains.fetch_add(1, std::memory_order_relaxed);
    s.fibers.fetch_add(p.fibers_in_last_drain, std::memory_order_relaxed);
  };
  rt::Runtime runtime(o);
  std::vector<rt::ThreadInfo> threads = runtime.threads();
  std::printf("ready pid %d\n", static_cast<int>(getpid()));
  for (int i = 0; i < o.carriers; ++i) std::printf("carrier %d %d\n", i, static_cast<int>(threads[i].tid));
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "quit") break;
    if (cmd != "run") continue;
    int fibers = 0, yields = 0;
    in >> fibers >> yields;
    const uint64_t t0 = rt::now_ns();
    run(runtime, fibers, yields);
    const uint64_t ns = rt::now_ns() - t0;
    const std::vector<rt::CarrierStats> stats = settle(runtime);
    for (int i = 0; i < o.carriers; ++i) {
      const Observed& s = seen[static_cast<size_t>(i)];
      std::printf("carrier %d %d drains %llu fibers %llu steals %llu stolen %llu ns %llu\n", i,
                  static_cast<int>(threads[i].tid), (unsigned long long)s.drains.load(),
                  (unsigned long long)s.fibers.load(), (unsigned long long)stats[i].steals,
                  (unsigned long long)stats[i].stolen_fibers, (unsigned long long)ns);
    }
    std::fflush(stdout);
  }
  return 0;
}
