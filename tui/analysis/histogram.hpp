// Reading the two histogram layouts of bpf/platoon.h: percentiles, sums and the non-zero slots.
//   log2:   slot i = [2^i, 2^(i+1)) ns (slot 0 also holds 0) — run-queue latency
//   linear: slot i = exactly i for i < last, the last slot = "last or more" — epoll and drain batches
// Percentiles interpolate linearly inside the bucket that holds the rank, so a histogram of
// N samples in one bucket gives p50 in the middle of that bucket rather than at an edge.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace platoon::analysis {

using Slots = std::vector<std::pair<uint32_t, uint64_t>>;  // (slot, count), count > 0

uint64_t hist_total(std::span<const uint64_t> hist);
Slots nonzero_slots(std::span<const uint64_t> hist);

// Bounds of log2 slot i in ns.
double log2_slot_low(int slot);
double log2_slot_high(int slot);
// The p-th percentile (0..100) in ns; 0 for an empty histogram.
double log2_percentile(std::span<const uint64_t> hist, double p);
// Upper edge of the highest non-empty slot (an upper bound on the max); 0 when empty.
double log2_upper_bound(std::span<const uint64_t> hist);

// The p-th percentile of a linear histogram; the overflow slot counts as its own value.
double linear_percentile(std::span<const uint64_t> hist, double p);
// Mean from the slots (overflow counted as its own value): a lower bound when the overflow slot
// is used, so prefer an exact sum when the producer has one (io_events, drain_depth_sum).
double linear_mean(std::span<const uint64_t> hist);

// Run-queue latency of a window in µs. max_ns: the largest latency known to lie in the window,
// or 0 when unknown (then the highest slot's upper edge stands in); percentiles never exceed it.
struct LatencySummary {
  uint64_t samples = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
};
LatencySummary summarize_log2_ns(std::span<const uint64_t> hist, uint64_t max_ns);

}  // namespace platoon::analysis
