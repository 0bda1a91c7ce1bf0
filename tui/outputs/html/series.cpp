#include "tui/outputs/html/series.hpp"

#include <utility>

#include "tui/analysis/window.hpp"

namespace platoon::outputs::html {
namespace {

// b's figures added to a's.
void add_into(ThreadPoint& a, const ThreadPoint& b) {
  a.run_ns += b.run_ns;
  a.wait_ns += b.wait_ns;
  for (size_t i = 0; i < kWaitCauseCount; ++i) a.cause_ns[i] += b.cause_ns[i];
  a.migrations += b.migrations;
  if (a.switch_ins.size() < b.switch_ins.size()) a.switch_ins.resize(b.switch_ins.size());
  for (size_t c = 0; c < b.switch_ins.size(); ++c) a.switch_ins[c] += b.switch_ins[c];
}

Point point_of(const analysis::Window& w) {
  Point p{.start_ns = w.start_ns, .end_ns = w.end_ns, .lost_events = w.losses.lost_events, .threads = {}};
  const double wall_ns = w.wall_s * 1e9;
  // Summed: a reused tid may stand twice in one window.
  for (const analysis::ThreadWindow& t : w.threads) {
    ThreadPoint tp{.run_ns = t.delta.run_ns, .wait_ns = t.delta.wait_ns, .cause_ns = {}, .migrations = t.migrations,
                   .switch_ins = t.delta.cpu_switch_ins};
    for (size_t i = 0; i < kWaitCauseCount; ++i) tp.cause_ns[i] = t.wait_split.*analysis::kWaitCauses[i].pct / 100.0 * wall_ns;
    add_into(p.threads[t.tid], tp);
  }
  return p;
}

}  // namespace

void merge_into(Point& a, const Point& b) {
  a.end_ns = b.end_ns;
  a.lost_events += b.lost_events;
  for (const auto& [tid, bt] : b.threads) add_into(a.threads[tid], bt);
}

void IntervalSeries::add(const snapshot::Snapshot& s) {
  if (prev_ && s.ts_ns > prev_->ts_ns) {
    ++intervals_;
    append(point_of(analysis::make_window(*prev_, s)));
  }
  if (!prev_ || s.ts_ns > prev_->ts_ns) prev_ = s;
}

void IntervalSeries::append(Point p) {
  if (pending_ > 0) {
    merge_into(points_.back(), p);
  } else {
    points_.push_back(std::move(p));
  }
  if (++pending_ == stride_) pending_ = 0;
  if (pending_ != 0 || points_.size() < max_points_) return;
  // Full: halve the resolution. Pairs merge; an odd last point waits for its partner.
  std::vector<Point> halved;
  halved.reserve(points_.size() / 2 + 1);
  for (size_t i = 0; i + 1 < points_.size(); i += 2) {
    halved.push_back(std::move(points_[i]));
    merge_into(halved.back(), points_[i + 1]);
  }
  const bool odd = points_.size() % 2 == 1;
  if (odd) halved.push_back(std::move(points_.back()));
  points_ = std::move(halved);
  pending_ = odd ? stride_ : 0;
  stride_ *= 2;
}

}  // namespace platoon::outputs::html
