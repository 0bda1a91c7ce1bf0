#include "tui/analysis/doctor_batches.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <cstring>

namespace platoon::analysis::doctor {

int BatchGrid::wait_bin(uint64_t wait_ns) {
  const uint64_t us = wait_ns / 1000;
  return us == 0 ? 0 : std::min(static_cast<int>(std::bit_width(us)), kWaitBins - 1);
}

int BatchGrid::batch_bin(double batch) {
  if (!(batch > 0)) return 0;
  const auto n = static_cast<uint64_t>(batch);
  if (n < 8) return static_cast<int>(n);
  return std::min(static_cast<int>(std::bit_width(n)) + 4, kBatchBins - 1);  // 8-15 → 8
}

double BatchGrid::wait_bin_low_us(int bin) { return bin <= 0 ? 0 : std::ldexp(1.0, bin - 1); }

double BatchGrid::batch_bin_low(int bin) { return bin < 8 ? bin : std::ldexp(1.0, bin - 5); }

void BatchStats::add(uint64_t wait_ns, double batch) {
  ++samples;
  uint32_t& cell = grid.count[static_cast<size_t>(BatchGrid::wait_bin(wait_ns))][static_cast<size_t>(BatchGrid::batch_bin(batch))];
  if (cell < UINT32_MAX) ++cell;
  if (wait_ns >= kLongWaitNs) {
    ++long_n;
    long_sum += batch;
  } else {
    ++short_n;
    short_sum += batch;
  }
  const double x = static_cast<double>(std::min(wait_ns, kWaitCapNs)) / 1e3;
  sx += x;
  sy += batch;
  sxx += x * x;
  syy += batch * batch;
  sxy += x * batch;
}

std::optional<double> BatchStats::correlation() const {
  if (samples < 3) return std::nullopt;
  const double n = static_cast<double>(samples);
  const double vx = n * sxx - sx * sx, vy = n * syy - sy * sy;
  if (vx <= 0 || vy <= 0) return std::nullopt;
  return (n * sxy - sx * sy) / std::sqrt(vx * vy);
}

void BatchTracker::on_switch(const platoon_event_header& h, const platoon_ev_switch& e) {
  const auto comm = [](const char (&c)[PLATOON_COMM_LEN]) { return std::string(c, strnlen(c, PLATOON_COMM_LEN)); };
  // Latest names win (threads name themselves after they start): read at finish().
  if (h.tid != 0) names_[h.tid] = {e.prev_pid, comm(e.prev_comm)};
  if (e.next_tid != 0) names_[e.next_tid] = {e.next_pid, comm(e.next_comm)};
  switch_out(h.ts_ns, h.tid, e.prev_state == 0);
  switch_in(h.ts_ns, e.next_tid, h.tid);
}

// The wait starts at wakeup, not at waking.
void BatchTracker::on_wake(const platoon_event_header& h, const platoon_ev_wake&, trace::WakeKind kind) {
  if (kind == trace::WakeKind::waking || h.tid == 0) return;
  State& s = state_[h.tid];
  // A wakeup of a thread that is still on its CPU (it had not finished going to sleep) starts
  // no wait; neither does a second wakeup of a thread already queued.
  if (!s.on_cpu && s.runnable_since == 0) s.runnable_since = h.ts_ns;
}

void BatchTracker::on_epoll(const platoon_event_header& h, const platoon_ev_epoll& e) {
  if (h.tid == 0 || e.nevents < 0) return;  // a failed call (-EINTR) returned no batch
  close_batch(state_[h.tid].epoll, out_for(h.tid).epoll, e.nevents);
}

void BatchTracker::on_drain(const platoon_event_header& h, const platoon_ev_runtime& e) {
  if (h.tid == 0 || e.a < 0) return;
  close_batch(state_[h.tid].drain, out_for(h.tid).drain, e.a);
}

void BatchTracker::finish() {
  reader_.finish(*this);
  name_behind();
}

void BatchTracker::add_wait(uint32_t tid, uint32_t prev, uint64_t wait) {
  ThreadBatches& t = out_for(tid);
  t.waits++;
  t.wait_ns += wait;
  if (prev == 0) {
    t.idle_exit_ns += wait;
    return;
  }
  if (!t.behind.count(prev) && t.behind.size() >= kMaxBehind) prev = kOtherTid;
  Behind& b = t.behind[prev];  // named at finish()
  b.count++;
  b.ns += wait;
}

void BatchTracker::name_behind() {
  for (auto& [tid, t] : out_)
    for (auto& [other, b] : t.behind) {
      auto name = names_.find(other);
      b.pid = name == names_.end() ? 0 : name->second.first;
      b.comm = other == kOtherTid ? "(others)" : name == names_.end() ? "?" : name->second.second;
    }
}

void BatchTracker::switch_out(uint64_t ts, uint32_t tid, bool preempted) {
  if (tid == 0) return;  // the idle task
  State& s = state_[tid];
  s.on_cpu = false;
  s.runnable_since = preempted ? ts : 0;
  if (preempted) out_for(tid).preemptions++;
}

void BatchTracker::switch_in(uint64_t ts, uint32_t tid, uint32_t prev) {
  if (tid == 0) return;
  State& s = state_[tid];
  if (s.runnable_since != 0 && ts >= s.runnable_since) {
    const uint64_t wait = ts - s.runnable_since;
    s.epoll.wait += wait;
    s.drain.wait += wait;
    add_wait(tid, prev, wait);
  }
  s.runnable_since = 0;
  s.on_cpu = true;
}

ThreadBatches& BatchTracker::out_for(uint32_t tid) {
  ThreadBatches& t = out_[tid];
  t.tid = tid;
  return t;
}

// A batch of one kind ends the wait that came before it; the first one's history is unknown.
void BatchTracker::close_batch(Since& since, BatchStats& stats, int64_t batch) {
  if (since.seen) stats.add(since.wait, static_cast<double>(batch));
  since.seen = true;
  since.wait = 0;
}

}  // namespace platoon::analysis::doctor
