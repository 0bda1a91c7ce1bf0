#include "tui/analysis/doctor_batches.hpp"

#include <algorithm>
#include <cmath>

#include "tui/trace/trace_reader.hpp"  // event_as

namespace platoon::model::doctor {

void BatchStats::add(uint64_t wait_ns, double batch) {
  ++samples;
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

void BatchTracker::push(uint64_t ts, uint32_t tid, Kind kind, int64_t value) {
  pending_.push(Item{ts, seq_++, tid, kind, value});
}

void BatchTracker::add(const platoon_event_header& h, const void* record, size_t size) {
  ++events_;
  switch (h.type) {
    case PLATOON_EV_SWITCH:
      if (auto e = event_as<platoon_ev_switch>(record, size)) {
        push(h.ts_ns, h.tid, e->prev_state == 0 ? Kind::preempted : Kind::blocked, 0);
        push(h.ts_ns, e->next_tid, Kind::switch_in, h.tid);
        const auto comm = [](const char (&c)[PLATOON_COMM_LEN]) { return std::string(c, strnlen(c, PLATOON_COMM_LEN)); };
        // Latest names win: threads name themselves after they start.
        if (h.tid != 0) names_[h.tid] = {e->prev_pid, comm(e->prev_comm)};
        if (e->next_tid != 0) names_[e->next_tid] = {e->next_pid, comm(e->next_comm)};
      }
      break;
    case PLATOON_EV_WAKEUP:
    case PLATOON_EV_WAKEUP_NEW: push(h.ts_ns, h.tid, Kind::wake, 0); break;
    case PLATOON_EV_EPOLL:
      if (auto e = event_as<platoon_ev_epoll>(record, size); e && e->nevents >= 0)
        push(h.ts_ns, h.tid, Kind::epoll, e->nevents);
      break;
    case PLATOON_EV_DRAIN:
      if (auto e = event_as<platoon_ev_runtime>(record, size); e && e->a >= 0)
        push(h.ts_ns, h.tid, Kind::drain, e->a);
      break;
    default: break;  // waking (the wait starts at wakeup), migrate, exit, steal
  }
  newest_ = std::max<uint64_t>(newest_, h.ts_ns);
  if (newest_ > kReorderNs) release(newest_ - kReorderNs);
}

void BatchTracker::release(uint64_t upto) {
  while (!pending_.empty() && pending_.top().ts <= upto) {
    apply(pending_.top());
    pending_.pop();
  }
}

void BatchTracker::finish() { release(UINT64_MAX); }

void BatchTracker::add_wait(uint32_t tid, uint32_t prev, uint64_t wait) {
  ThreadBatches& t = out_for(tid);
  t.waits++;
  t.wait_ns += wait;
  if (prev == 0) {
    t.idle_exit_ns += wait;
    return;
  }
  auto it = t.behind.find(prev);
  if (it == t.behind.end()) {
    if (t.behind.size() >= kMaxBehind) prev = kOtherTid;
    auto name = names_.find(prev);
    it = t.behind.emplace(prev, Behind{name == names_.end() ? 0 : name->second.first,
                                      prev == kOtherTid ? "(others)" : name == names_.end() ? "?" : name->second.second,
                                      0, 0}).first;
  }
  it->second.count++;
  it->second.ns += wait;
}

void BatchTracker::apply(const Item& it) {
  if (it.tid == 0) return;  // the idle task
  State& s = state_[it.tid];
  switch (it.kind) {
    case Kind::wake:
      // A wakeup of a thread that is still on its CPU (it had not finished going to sleep)
      // starts no wait; neither does a second wakeup of a thread already queued.
      if (!s.on_cpu && s.runnable_since == 0) s.runnable_since = it.ts;
      break;
    case Kind::preempted:
      s.on_cpu = false;
      s.runnable_since = it.ts;
      out_for(it.tid).preemptions++;
      break;
    case Kind::blocked:
      s.on_cpu = false;
      s.runnable_since = 0;
      break;
    case Kind::switch_in:
      if (s.runnable_since != 0 && it.ts >= s.runnable_since) {
        const uint64_t wait = it.ts - s.runnable_since;
        s.epoll.wait += wait;
        s.drain.wait += wait;
        add_wait(it.tid, static_cast<uint32_t>(it.value), wait);
      }
      s.runnable_since = 0;
      s.on_cpu = true;
      break;
    case Kind::epoll: close_batch(s.epoll, out_for(it.tid).epoll, it.value); break;
    case Kind::drain: close_batch(s.drain, out_for(it.tid).drain, it.value); break;
  }
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

}  // namespace platoon::model::doctor
