// The one clock of platoon-load: CLOCK_MONOTONIC in nanoseconds (a vDSO call, ~20 ns).
#pragma once

#include <cstdint>
#include <ctime>

namespace platoon::load {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace platoon::load
