// The clocks of the snapshot contract. Every timestamp the BPF programs write, every
// Snapshot::ts_ns and every trace record is CLOCK_BOOTTIME (it keeps counting in suspend, as
// bpf_ktime_get_boot_ns does); the trace header also notes CLOCK_REALTIME to date the file.
#pragma once

#include <time.h>

#include <cstdint>

namespace platoon::snapshot {

inline uint64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t boottime_ns() { return clock_ns(CLOCK_BOOTTIME); }

}  // namespace platoon::snapshot
