// platoon-load's HDR histogram against exact percentiles of sorted random data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "server/load/histogram.hpp"

using platoon::load::Histogram;

namespace {

// The rank rule of hdr_value_at_percentile, on the sorted samples.
int64_t exact_percentile(const std::vector<int64_t>& sorted, double p) {
  auto rank = static_cast<int64_t>(p / 100.0 * double(sorted.size()) + 0.5);
  rank = std::max<int64_t>(rank, 1);
  return sorted[static_cast<size_t>(rank - 1)];
}

void expect_percentiles_match(const Histogram& h, std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  for (double p : {0.1, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.99, 100.0}) {
    const double exact = double(exact_percentile(values, p));
    const double got = double(h.value_at_percentile(p));
    EXPECT_GE(got, exact) << "p" << p;  // the highest equivalent value of the exact one
    EXPECT_LE(std::abs(got - exact), std::max(1.0, exact * 0.001)) << "p" << p << " exact " << exact << " got " << got;
  }
}

}  // namespace

TEST(LoadHistogram, LayoutMatchesHdrHistogramC) {
  const Histogram ns;  // 1 ns .. 1 h, 3 digits: platoon-load's
  EXPECT_EQ(ns.sub_bucket_count(), 2048);
  EXPECT_EQ(ns.bucket_count(), 32);
  const Histogram wrk2_like(1, 24LL * 3600 * 1'000'000, 3);  // wrk2: µs, 1 .. 24 h
  EXPECT_EQ(wrk2_like.bucket_count(), 27);                   // its "#[Buckets = 27, SubBuckets = 2048]"
  EXPECT_EQ(wrk2_like.sub_bucket_count(), 2048);
}

TEST(LoadHistogram, LogUniformPercentilesWithinATenthOfAPercent) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> exponent(3.0, 10.0);  // 1 µs .. 10 s in ns
  Histogram h;
  std::vector<int64_t> values;
  for (int i = 0; i < 300000; ++i) {
    const auto v = static_cast<int64_t>(std::pow(10.0, exponent(rng)));
    values.push_back(v);
    h.record(v);
  }
  EXPECT_EQ(h.count(), 300000);
  EXPECT_EQ(h.max(), *std::max_element(values.begin(), values.end()));
  EXPECT_EQ(h.min(), *std::min_element(values.begin(), values.end()));
  expect_percentiles_match(h, values);

  long double sum = 0;
  for (int64_t v : values) sum += v;
  const double mean = double(sum / values.size());
  long double sq = 0;
  for (int64_t v : values) sq += (v - mean) * (v - mean);
  const double stddev = std::sqrt(double(sq / values.size()));
  EXPECT_NEAR(h.mean(), mean, mean * 0.001);
  EXPECT_NEAR(h.stddev(), stddev, stddev * 0.001);
}

TEST(LoadHistogram, LatencyLikeDataAndSmallExactValues) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> lat(std::log(80'000.0), 0.8);  // ~80 µs median, long tail
  std::uniform_int_distribution<int64_t> small(0, 5000);              // exact below 2048
  Histogram h, hs;
  std::vector<int64_t> values, smalls;
  for (int i = 0; i < 200000; ++i) {
    const auto v = static_cast<int64_t>(lat(rng));
    values.push_back(v);
    h.record(v);
    const int64_t s = small(rng);
    smalls.push_back(s);
    hs.record(s);
  }
  expect_percentiles_match(h, values);
  expect_percentiles_match(hs, smalls);
  std::sort(smalls.begin(), smalls.end());
  EXPECT_EQ(hs.value_at_percentile(10), exact_percentile(smalls, 10));  // 10th percentile is ~500: exact
}

TEST(LoadHistogram, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(3);
  std::exponential_distribution<double> d(1.0 / 200'000.0);
  Histogram a, b, all;
  for (int i = 0; i < 100000; ++i) {
    const auto v = static_cast<int64_t>(d(rng));
    (i % 3 ? a : b).record(v);
    all.record(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
  EXPECT_DOUBLE_EQ(a.stddev(), all.stddev());
  for (double p : {50.0, 90.0, 99.0, 99.9, 100.0}) EXPECT_EQ(a.value_at_percentile(p), all.value_at_percentile(p));
  EXPECT_THROW(a.merge(Histogram(1, 1000, 3)), std::invalid_argument);
}

TEST(LoadHistogram, ResetClampAndEmpty) {
  Histogram h;
  EXPECT_EQ(h.count(), 0);
  EXPECT_EQ(h.value_at_percentile(99), 0);
  EXPECT_EQ(h.mean(), 0);
  EXPECT_TRUE(h.percentile_spectrum(5).empty());
  h.record(-5);
  h.record(2 * Histogram::kNsPerHour);
  EXPECT_EQ(h.clamped(), 2);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), Histogram::kNsPerHour);
  h.record(1000, 10);
  EXPECT_EQ(h.count(), 12);
  h.reset();
  EXPECT_EQ(h.count(), 0);
  EXPECT_EQ(h.max(), 0);
  EXPECT_EQ(h.value_at_percentile(50), 0);
  h.record(42);
  EXPECT_EQ(h.value_at_percentile(50), 42);
  EXPECT_EQ(h.value_at_percentile(0), 42);
}

TEST(LoadHistogram, PercentileSpectrumLikeHdrPercentilesPrint) {
  Histogram h;
  for (int64_t v = 1; v <= 10000; ++v) h.record(v * 1000);
  const auto ticks = h.percentile_spectrum(5);
  ASSERT_GE(ticks.size(), 10u);
  EXPECT_EQ(ticks.front().percentile, 0.0);
  EXPECT_EQ(ticks.front().value, h.highest_equivalent(1000));
  EXPECT_EQ(ticks.back().percentile, 100.0);
  EXPECT_EQ(ticks.back().cumulative, 10000);
  EXPECT_EQ(ticks.back().value, h.value_at_percentile(100));
  // 5 ticks per half distance: 0, 10, 20, .. 50, then 55, 60, .. 75, then 77.5 ...
  EXPECT_NEAR(ticks[1].percentile, 10.0, 1e-9);
  EXPECT_NEAR(ticks[5].percentile, 50.0, 1e-9);
  EXPECT_NEAR(ticks[6].percentile, 55.0, 1e-9);
  EXPECT_NEAR(ticks[11].percentile, 77.5, 1e-9);
  for (size_t i = 1; i < ticks.size(); ++i) {
    EXPECT_GE(ticks[i].percentile, ticks[i - 1].percentile);
    EXPECT_GE(ticks[i].cumulative, ticks[i - 1].cumulative);
    EXPECT_GE(ticks[i].value, ticks[i - 1].value);
  }
  // The 50% tick is at the value with half the count below it.
  EXPECT_NEAR(double(ticks[5].value), 5'000'000.0, 5'000'000.0 * 0.001);
  EXPECT_NEAR(double(ticks[5].cumulative), 5000.0, 5.0);  // buckets there hold ~4 values
}
