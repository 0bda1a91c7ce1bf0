#include "runtime/budget_clock.hpp"

#include <ctime>
#include <fstream>
#include <string>

namespace platoon::rt {

uint64_t BudgetClock::mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

BudgetClock::BudgetClock() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      use_tsc_ = line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
      break;
    }
  }
  if (!use_tsc_) return;
  const uint64_t t0 = mono_ns();
  const uint64_t c0 = __rdtsc();
  uint64_t t1;
  do t1 = mono_ns(); while (t1 - t0 < 2000000);
  const uint64_t c1 = __rdtsc();
  ticks_per_ns_ = static_cast<double>(c1 - c0) / static_cast<double>(t1 - t0);
  if (ticks_per_ns_ < 0.1 || ticks_per_ns_ > 100) use_tsc_ = false;  // implausible: do not trust it
}

const BudgetClock& BudgetClock::get() {
  static const BudgetClock clock;
  return clock;
}

}  // namespace platoon::rt
