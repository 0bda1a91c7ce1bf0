// What a producer's own kernel programs have cost, as SnapshotSource::cost() hands it to the
// consumers (the observer-cost figures, the exporter's self-metrics, the report). The producers
// read it through the kernel's run-time stats (bpf/collectors/bpf_cost_sampler.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace platoon::snapshot {

// The kernel's cumulative counters for one program (bpf_prog_info), read at one instant. Two
// readings make a rate (tui/analysis/observer_cost.hpp).
struct ProgramCost {
  std::string name;
  uint64_t run_cnt = 0;
  uint64_t run_time_ns = 0;
  uint64_t misses = 0;            // runs the kernel skipped (the program already active on that CPU)
};
enum class BpfStats : uint8_t {
  none,      // the source runs no BPF programs (procfs, a replay): nothing to cost
  on,        // the kernel counts run time: the programs' figures are real
  unknown,   // it does not (stats off, --no-bpf-stats, no permission, old kernel): `why` says
};
inline const char* to_string(BpfStats s) {
  return s == BpfStats::on ? "on" : s == BpfStats::unknown ? "unknown" : "none";
}
// A sampled reading counts run time within windows of kStatsSampleOnNs at the start of every
// kStatsSamplePeriodNs: a consumer that wants the whole scales by their ratio.
inline constexpr uint64_t kStatsSampleOnNs = 100'000'000;
inline constexpr uint64_t kStatsSamplePeriodNs = 1'000'000'000;
// The two above in words, for help texts and metric descriptions: change them together.
inline constexpr const char* kStatsSampleText = "100 ms of every second";
struct CostReading {
  BpfStats stats = BpfStats::none;
  std::string why;                // how the stats are on, or why they are not
  // Sampled: the runs and run time counted within the sampling windows so far (misses are
  // counted by the kernel always, so they are the whole count), and the windows' total length.
  // Otherwise the kernel's counters as they are, and counted_ns 0.
  std::vector<ProgramCost> programs;
  bool sampled = false;
  uint64_t counted_ns = 0;
};

}  // namespace platoon::snapshot
