// A log-linear HDR histogram, written here because Debian packages no C or C++ HdrHistogram
// (there is no libhdrhistogram-dev; only the Java and Go ports are packaged).
//
// It follows HdrHistogram_c (hdr_histogram.c, Gil Tene and Michael Barker, public domain / BSD-2)
// bucket for bucket: the same bucket layout, the same rank rule in value_at_percentile, the same
// "highest equivalent value" reporting and the same percentile iterator, so its numbers and its
// percentile spectrum read exactly like wrk2's. Header-only so the tests can use it directly.
//
// Layout: values below 2048 (with 3 significant digits) are exact; above that, bucket k holds
// [1024 * 2^k, 2048 * 2^k) in 1024 steps of 2^k, i.e. every value is kept to within 1/1024
// (0.098%) of itself. platoon-load records nanoseconds from 1 ns to 1 hour: 32 buckets,
// 33,792 counters, 270 KB.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace platoon::load {

class Histogram {
 public:
  static constexpr int64_t kNsPerHour = 3'600'000'000'000;

  explicit Histogram(int64_t lowest = 1, int64_t highest = kNsPerHour, int significant_digits = 3) {
    if (lowest < 1 || highest < 2 * lowest || significant_digits < 1 || significant_digits > 5)
      throw std::invalid_argument("histogram: bad range or precision");
    const int64_t single_unit_resolution = 2 * static_cast<int64_t>(std::pow(10, significant_digits));
    const int sub_bucket_count_magnitude = static_cast<int>(std::ceil(std::log2(double(single_unit_resolution))));
    sub_bucket_half_count_magnitude_ = std::max(sub_bucket_count_magnitude, 1) - 1;
    unit_magnitude_ = 63 - std::countl_zero(static_cast<uint64_t>(lowest));
    sub_bucket_count_ = int64_t{1} << (sub_bucket_half_count_magnitude_ + 1);
    sub_bucket_half_count_ = sub_bucket_count_ / 2;
    sub_bucket_mask_ = (sub_bucket_count_ - 1) << unit_magnitude_;
    // Buckets needed so that `highest` is trackable (buckets_needed_to_cover_value).
    int64_t smallest_untrackable = sub_bucket_count_ << unit_magnitude_;
    bucket_count_ = 1;
    while (smallest_untrackable <= highest) {
      smallest_untrackable <<= 1;
      ++bucket_count_;
    }
    highest_ = highest;
    significant_digits_ = significant_digits;
    counts_.assign(static_cast<size_t>((bucket_count_ + 1) * sub_bucket_half_count_), 0);
  }

  // Values outside [0, highest] are clamped (and counted in clamped()).
  void record(int64_t value, int64_t n = 1) {
    if (value < 0 || value > highest_) {
      value = value < 0 ? 0 : highest_;
      clamped_ += n;
    }
    counts_[index_of(value)] += n;
    total_ += n;
    if (value > max_) max_ = value;
    if (value < min_) min_ = value;
  }

  // Adds another histogram of the same layout.
  void merge(const Histogram& o) {
    if (o.counts_.size() != counts_.size() || o.unit_magnitude_ != unit_magnitude_)
      throw std::invalid_argument("histogram: merging different layouts");
    for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
    clamped_ += o.clamped_;
    max_ = std::max(max_, o.max_);
    min_ = std::min(min_, o.min_);
  }

  void reset() {
    std::fill(counts_.begin(), counts_.end(), 0);
    total_ = clamped_ = 0;
    max_ = 0;
    min_ = INT64_MAX;
  }

  int64_t count() const { return total_; }
  int64_t clamped() const { return clamped_; }
  int64_t max() const { return total_ ? max_ : 0; }  // exact
  int64_t min() const { return total_ ? min_ : 0; }  // exact
  int bucket_count() const { return bucket_count_; }
  int64_t sub_bucket_count() const { return sub_bucket_count_; }
  int significant_digits() const { return significant_digits_; }

  // hdr_value_at_percentile: the highest value equivalent to the one at rank
  // round(p/100 * count) (at least 1); p = 0 gives the lowest equivalent value of the minimum.
  int64_t value_at_percentile(double p) const {
    if (total_ == 0) return 0;
    const double requested = std::min(std::max(p, 0.0), 100.0);
    int64_t rank = static_cast<int64_t>(requested / 100.0 * double(total_) + 0.5);
    rank = std::max<int64_t>(rank, 1);
    int64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) {
        const int64_t v = value_at_index(i);
        return requested == 0.0 ? lowest_equivalent(v) : highest_equivalent(v);
      }
    }
    return 0;
  }

  // Mean and standard deviation over bucket midpoints (hdr_mean, hdr_stddev).
  double mean() const {
    if (total_ == 0) return 0;
    long double sum = 0;
    for_each_nonempty([&](int64_t v, int64_t n) { sum += static_cast<long double>(median_equivalent(v)) * n; });
    return static_cast<double>(sum / total_);
  }
  double stddev() const {
    if (total_ == 0) return 0;
    const long double m = mean();
    long double sum = 0;
    for_each_nonempty([&](int64_t v, int64_t n) {
      const long double d = static_cast<long double>(median_equivalent(v)) - m;
      sum += d * d * n;
    });
    return static_cast<double>(std::sqrt(sum / total_));
  }
  // Share of recorded values (in %) within one standard deviation of the mean (wrk's "+/- Stdev").
  double within_stdev_pct() const {
    if (total_ == 0) return 0;
    const double m = mean(), s = stddev();
    int64_t inside = 0;
    for_each_nonempty([&](int64_t v, int64_t n) {
      const double mid = double(median_equivalent(v));
      if (mid >= m - s && mid <= m + s) inside += n;
    });
    return 100.0 * double(inside) / double(total_);
  }

  // One line of hdr_percentiles_print: `percentile` in %, `value` the highest equivalent value.
  struct Tick {
    int64_t value;
    double percentile;
    int64_t cumulative;
  };
  // The percentile iterator of hdr_histogram.c (hdr_iter_percentile_init/percentile_iter_next):
  // `ticks_per_half_distance` lines per halving of the distance to 100%, then a final 100% line.
  std::vector<Tick> percentile_spectrum(int ticks_per_half_distance) const {
    std::vector<Tick> out;
    if (total_ == 0) return out;
    const auto len = static_cast<int64_t>(counts_.size());
    int64_t idx = -1, count = 0, cumulative = 0;
    auto step = [&]() {
      if (++idx >= len) return false;
      count = counts_[static_cast<size_t>(idx)];
      cumulative += count;
      return true;
    };
    double to = 0.0;  // the percentile to iterate to
    for (;;) {
      if (cumulative >= total_ && idx >= 0) {  // past the last value: one closing 100% line
        out.push_back({highest_equivalent(value_at_index(static_cast<size_t>(idx))), 100.0, cumulative});
        return out;
      }
      bool reported = false;
      while (idx >= 0 || step()) {
        const double current = 100.0 * double(cumulative) / double(total_);
        if (count != 0 && to <= current) {
          out.push_back({highest_equivalent(value_at_index(static_cast<size_t>(idx))), to, cumulative});
          const auto doublings = static_cast<int64_t>(std::log(100.0 / (100.0 - to)) / std::log(2.0)) + 1;
          const auto half_distance = static_cast<int64_t>(std::pow(2.0, double(doublings)));
          to += 100.0 / double(int64_t{ticks_per_half_distance} * half_distance);
          reported = true;
          break;
        }
        if (!step()) break;
      }
      if (!reported) return out;  // ran off the end (cannot happen with consistent counts)
    }
  }

  // Value-range helpers, as in hdr_histogram.c.
  int64_t lowest_equivalent(int64_t v) const {
    const int b = bucket_index(v);
    return value_from(b, sub_bucket_index(v, b));
  }
  int64_t equivalent_range(int64_t v) const {
    const int b = bucket_index(v);
    const int64_t s = sub_bucket_index(v, b);
    const int adjusted = s >= sub_bucket_count_ ? b + 1 : b;
    return int64_t{1} << (unit_magnitude_ + adjusted);
  }
  int64_t highest_equivalent(int64_t v) const { return lowest_equivalent(v) + equivalent_range(v) - 1; }
  int64_t median_equivalent(int64_t v) const { return lowest_equivalent(v) + (equivalent_range(v) >> 1); }

 private:
  int bucket_index(int64_t v) const {
    const int pow2ceiling = 64 - std::countl_zero(static_cast<uint64_t>(v | sub_bucket_mask_));
    return pow2ceiling - unit_magnitude_ - (sub_bucket_half_count_magnitude_ + 1);
  }
  int64_t sub_bucket_index(int64_t v, int b) const { return v >> (b + unit_magnitude_); }
  int64_t value_from(int b, int64_t s) const { return s << (b + unit_magnitude_); }
  size_t index_of(int64_t v) const {
    const int b = bucket_index(v);
    const int64_t s = sub_bucket_index(v, b);
    const int64_t base = int64_t{b + 1} << sub_bucket_half_count_magnitude_;
    return static_cast<size_t>(base + (s - sub_bucket_half_count_));
  }
  int64_t value_at_index(size_t index) const {
    const auto i = static_cast<int64_t>(index);
    int b = static_cast<int>((i >> sub_bucket_half_count_magnitude_) - 1);
    int64_t s = (i & (sub_bucket_half_count_ - 1)) + sub_bucket_half_count_;
    if (b < 0) {
      s -= sub_bucket_half_count_;
      b = 0;
    }
    return value_from(b, s);
  }
  template <class F>
  void for_each_nonempty(F f) const {
    for (size_t i = 0; i < counts_.size(); ++i)
      if (counts_[i]) f(value_at_index(i), counts_[i]);
  }

  std::vector<int64_t> counts_;
  int64_t total_ = 0, clamped_ = 0;
  int64_t max_ = 0, min_ = INT64_MAX;
  int64_t highest_ = 0;
  int64_t sub_bucket_count_ = 0, sub_bucket_half_count_ = 0, sub_bucket_mask_ = 0;
  int sub_bucket_half_count_magnitude_ = 0, unit_magnitude_ = 0, bucket_count_ = 0;
  int significant_digits_ = 3;
};

}  // namespace platoon::load
