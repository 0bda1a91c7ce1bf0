#include "tui/analysis/histogram.hpp"

#include <algorithm>
#include <cmath>

namespace platoon::analysis {

uint64_t hist_total(std::span<const uint64_t> hist) {
  uint64_t sum = 0;
  for (uint64_t c : hist) sum += c;
  return sum;
}

Slots nonzero_slots(std::span<const uint64_t> hist) {
  Slots out;
  for (size_t i = 0; i < hist.size(); ++i) {
    if (hist[i] != 0) out.emplace_back(static_cast<uint32_t>(i), hist[i]);
  }
  return out;
}

double log2_slot_low(int slot) { return slot <= 0 ? 0.0 : std::ldexp(1.0, slot); }
double log2_slot_high(int slot) { return std::ldexp(1.0, std::max(slot, 0) + 1); }

namespace {
// Walks the histogram to the bucket holding rank p% of the samples and returns (slot, fraction
// of the way through that bucket). Ranks are continuous: rank = p/100 × total.
struct RankPos {
  int slot = -1;
  double fraction = 0;
};
RankPos find_rank(std::span<const uint64_t> hist, double p) {
  const uint64_t total = hist_total(hist);
  if (total == 0) return {};
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(total);
  double below = 0;
  int last_nonzero = -1;
  for (size_t i = 0; i < hist.size(); ++i) {
    if (hist[i] == 0) continue;
    last_nonzero = static_cast<int>(i);
    const double c = static_cast<double>(hist[i]);
    if (below + c >= rank) return {last_nonzero, std::clamp((rank - below) / c, 0.0, 1.0)};
    below += c;
  }
  return {last_nonzero, 1.0};  // rounding at p = 100
}
}  // namespace

double log2_percentile(std::span<const uint64_t> hist, double p) {
  const RankPos r = find_rank(hist, p);
  if (r.slot < 0) return 0;
  const double lo = log2_slot_low(r.slot), hi = log2_slot_high(r.slot);
  return lo + r.fraction * (hi - lo);
}

double log2_upper_bound(std::span<const uint64_t> hist) {
  for (size_t i = hist.size(); i-- > 0;) {
    if (hist[i] != 0) return log2_slot_high(static_cast<int>(i));
  }
  return 0;
}

double linear_percentile(std::span<const uint64_t> hist, double p) {
  const RankPos r = find_rank(hist, p);
  if (r.slot < 0) return 0;
  // A linear slot holds one value, so there is nothing to interpolate within it.
  return r.slot;
}

double linear_mean(std::span<const uint64_t> hist) {
  const uint64_t total = hist_total(hist);
  if (total == 0) return 0;
  double sum = 0;
  for (size_t i = 0; i < hist.size(); ++i) sum += static_cast<double>(i) * static_cast<double>(hist[i]);
  return sum / static_cast<double>(total);
}

LatencySummary summarize_log2_ns(std::span<const uint64_t> hist, uint64_t max_ns) {
  LatencySummary s;
  s.samples = hist_total(hist);
  if (s.samples == 0) return s;
  const double max = max_ns != 0 ? static_cast<double>(max_ns) : log2_upper_bound(hist);
  auto us = [&](double p) { return std::min(log2_percentile(hist, p), max) / 1e3; };
  s.p50_us = us(50);
  s.p90_us = us(90);
  s.p99_us = us(99);
  s.max_us = max / 1e3;
  return s;
}

}  // namespace platoon::analysis
