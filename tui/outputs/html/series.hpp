// Each interval of a recording as `top --replay` shows it, thread by thread: the time series the
// HTML report draws. Built one snapshot at a time from consecutive pairs (analysis::make_window),
// so the figures are top's own. A long recording stays small: past max_points intervals,
// neighbours are merged in pairs (their times summed, so a merged point is the window the two
// together cover) and later intervals are taken that many at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "bpf/snapshot/snapshot.hpp"
#include "tui/analysis/wait_causes.hpp"

namespace platoon::outputs::html {

inline constexpr size_t kWaitCauseCount = std::size(analysis::kWaitCauses);

struct ThreadPoint {
  uint64_t run_ns = 0;
  uint64_t wait_ns = 0;
  std::array<double, kWaitCauseCount> cause_ns{};  // the wait by cause (kWaitCauses' order)
  uint64_t migrations = 0;
  std::vector<uint64_t> switch_ins;                // per CPU
};

struct Point {
  uint64_t start_ns = 0;       // CLOCK_BOOTTIME
  uint64_t end_ns = 0;
  uint64_t lost_events = 0;
  std::map<uint32_t, ThreadPoint> threads;  // by tid
  double wall_s() const { return static_cast<double>(end_ns - start_ns) / 1e9; }
};

class IntervalSeries {
 public:
  explicit IntervalSeries(size_t max_points = 400) : max_points_(max_points < 2 ? 2 : max_points) {}
  void add(const snapshot::Snapshot& s);
  const std::vector<Point>& points() const { return points_; }
  size_t per_point() const { return stride_; }   // recorded intervals each point stands for
  size_t intervals() const { return intervals_; }  // recorded intervals seen

 private:
  void append(Point p);
  size_t max_points_;
  size_t stride_ = 1;
  size_t intervals_ = 0;
  size_t pending_ = 0;         // intervals merged into the last point so far (< stride_)
  std::optional<snapshot::Snapshot> prev_;
  std::vector<Point> points_;
};

// b's figures added to a's: the window from a's start to b's end.
void merge_into(Point& a, const Point& b);

}  // namespace platoon::outputs::html
