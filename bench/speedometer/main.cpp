// speedometer: how fast a CPU runs a fixed piece of work right now. This VM's CPUs change speed
// from minute to minute (other tenants on the host; no steal time shows it), by as much as the
// few percent a tracer costs, so a benchmark that compares the server's CPU per request across
// phases can divide each phase's figure by the CPU's speed in that phase.
//
// Every --period-ms it runs the same ~0.1 ms of integer work over a 64 KB table (no syscalls, so
// no tracer hook runs inside it) and prints one line: CLOCK_REALTIME ns at the end, the work's
// wall ns, the work's thread-CPU ns. Pinned to --cpu; at 20 ms it takes ~0.5% of that CPU.
//
// usage: speedometer [--cpu C] [--period-ms P] [--out FILE]   (runs until killed)
#include <pthread.h>
#include <sched.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>

namespace {

uint64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A xorshift walk that reads and writes a table the size of an L1 + L2 working set, like a
// server's: the same instructions every time, so only the CPU's speed changes the duration.
uint64_t work(std::array<uint32_t, 16384>& table, uint64_t x) {
  for (int i = 0; i < 40000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    table[x & (table.size() - 1)] += static_cast<uint32_t>(x);
  }
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  int cpu = 1, period_ms = 20;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cpu" && i + 1 < argc) cpu = std::atoi(argv[++i]);
    else if (a == "--period-ms" && i + 1 < argc) period_ms = std::atoi(argv[++i]);
    else if (a == "--out" && i + 1 < argc) out = argv[++i];
    else {
      std::fprintf(stderr, "usage: speedometer [--cpu C] [--period-ms P] [--out FILE]\n");
      return 2;
    }
  }
  if (period_ms < 1) return std::fprintf(stderr, "speedometer: --period-ms needs at least 1\n"), 2;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    return std::fprintf(stderr, "speedometer: cannot pin to CPU %d\n", cpu), 1;
  FILE* f = out.empty() ? stdout : std::fopen(out.c_str(), "w");
  if (!f) return std::fprintf(stderr, "speedometer: cannot write %s\n", out.c_str()), 1;
  static std::array<uint32_t, 16384> table{};
  uint64_t x = 88172645463325252ull;
  for (;;) {
    const uint64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    x = work(table, x);
    const uint64_t w1 = clock_ns(CLOCK_MONOTONIC), c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    std::fprintf(f, "%llu %llu %llu\n", static_cast<unsigned long long>(clock_ns(CLOCK_REALTIME)),
                 static_cast<unsigned long long>(w1 - w0), static_cast<unsigned long long>(c1 - c0));
    if (std::fflush(f) != 0) return 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(period_ms));
  }
}
