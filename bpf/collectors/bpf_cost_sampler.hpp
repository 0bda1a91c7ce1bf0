// What platoon's BPF programs cost, through the kernel's run-time stats, in the mode asked for
// (BpfStatsMode).
//
// Counting costs two clock reads per program run, about 40 ns (kernel 6.18; docs/record-report.md,
// "Counting adds two clock reads"): a fifth of the switch hook and a third of the epoll hook.
// So by default the stats are sampled: a thread turns them on (BpfStatsHold) for
// kStatsSampleOnNs at the start of every kStatsSamplePeriodNs, reads the programs' counters just after turning them on and just before turning them off, and sums
// what each window counted and how long it was open. A rate is then counted work over counted
// time (tui/analysis/observer_cost.hpp), which over a span of whole periods is the rate over
// the span. Summing only the windows' own differences keeps the figures right when someone
// else holds the stats on as well (another platoon, bpftool).
//
// kernel.bpf_stats_enabled=1 means the kernel counts everything already: the counters are read
// as they are, with nothing to toggle.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "bpf/snapshot/bpf_cost.hpp"

namespace platoon::collectors {

// How a live source has the kernel count its programs' run time: an option of the producers
// (sources.hpp), which the cost readings they hand out reflect.
enum class BpfStatsMode : uint8_t {
  off,       // --no-bpf-stats: counted only if someone else turned the stats on
  sampled,   // on for kStatsSampleOnNs of every kStatsSamplePeriodNs (the default)
  always,    // --bpf-stats-always: on for as long as the source lives
};

}  // namespace platoon::collectors

namespace platoon::collectors {

class BpfCostSampler {
 public:
  // The programs' cumulative counters now (Collector::program_stats), callable from the
  // sampler's thread for as long as this object lives.
  using ReadCounters = std::function<std::vector<snapshot::ProgramCost>()>;
  BpfCostSampler(BpfStatsMode mode, ReadCounters read);
  BpfCostSampler(const BpfCostSampler&) = delete;
  BpfCostSampler& operator=(const BpfCostSampler&) = delete;
  ~BpfCostSampler();   // stops the thread; the stats go off with the last window

  // The counters so far: sampled, the windows' sums including the one open now.
  snapshot::CostReading reading() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace platoon::collectors
