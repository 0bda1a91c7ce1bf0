// Per-request records from the kernel (PLATOON_EV_REQUEST) against the designed workload's own
// log (request_workload.hpp). In each scenario the reader's state while a request waits in its
// socket is known by design; the records must show, against the log:
//   - one server-side record per request the server answered, none partial (the connection is
//     made after the attach) and at most the first one unattributed;
//   - each kernel moment inside the system call the log draws around it: the request's start
//     (ready: h.ts_ns - service - wait) inside the client's send(), since on loopback the
//     delivery and sk_data_ready run inside the sender's call; its end (h.ts_ns, the start of
//     the response's write) inside that write(); the read inside the server's read(), whose
//     tracepoint fires at the end of the receive. The log cannot place a moment closer than
//     its call, and send() alone took 25-35 us p50 and up to ~90 us on a quiet 2-CPU VM, so:
//   - each socket wait and service inside the interval those calls allow, for every request,
//     and within 50 us of its midpoint for 99% of those whose interval is at most 100 us wide
//     (a wider one cannot place the moment to 50 us: a throttled server's calls take that long,
//     and the interval alone holds it);
//   - the designed state holding >= 90% of the summed socket wait, and at least what the log
//     proves the reader spent in that state; each record's state parts adding up to its wait.
// The workload is first held to its own design (premise checks, from its clocks and /proc), so
// a failure says which side is off: the workload, or the records. A run that left its design
// (a loaded machine) is run again, up to three times, and the last is judged.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/bpf/fixture.hpp"
#include "tests/bpf/request_workload.hpp"

namespace platoon::tests::testing {
namespace {

using platoon::testing::ClientRun;
using platoon::testing::CpuCgroup;
using platoon::testing::ForkedWorkload;
using platoon::testing::ReaderPhase;
using platoon::testing::RequestPlan;
using platoon::testing::ServerEntry;
using platoon::testing::ServerLog;

constexpr int64_t kBoundNs = 50'000;       // socket wait and service from their intervals' midpoints
constexpr int64_t kClockSlackNs = 5'000;   // a user-space clock read and a tracepoint apart
constexpr uint64_t kPartsSlackNs = 5'000;  // the state parts against the socket wait
constexpr double kShareFloor = 0.90;       // the designed state's share of the summed wait
constexpr double kShareSlack = 0.02;       // the records' share below what the log proves
constexpr double kWithinBound = 0.99;      // requests that must be within kBoundNs of the midpoint

// Where a kernel duration must lie by the log alone, in ns.
struct Interval {
  int64_t lo, hi;
  int64_t mid() const { return lo + (hi - lo) / 2; }
  bool holds(int64_t v) const { return v >= lo - kClockSlackNs && v <= hi + kClockSlackNs; }
};

int64_t diff(uint64_t a, uint64_t b) { return static_cast<int64_t>(a - b); }

struct Request {
  uint64_t send_ns, sent_ns, recv_ns;  // the client's
  ServerEntry s;                       // the server's
  // The widest the log allows, for the shares and the printed figures.
  uint64_t wait() const { return s.read_ns - send_ns; }
  uint64_t service() const { return s.write_ns - s.read_ns; }
  // ready is inside send(), read inside read(), the write's start inside write().
  Interval wait_interval() const { return {diff(s.read_call_ns, sent_ns), diff(s.read_ns, send_ns)}; }
  Interval service_interval() const { return {diff(s.write_ns, s.read_ns), diff(s.written_ns, s.read_call_ns)}; }
};

struct Scenario {
  RequestPlan plan;
  ClientRun client;
  const ServerLog* log = nullptr;
  std::vector<Request> requests;  // those both sides logged, in order
  CpuCgroup::Stat before, after;  // throttled: the group's cpu.stat around the client's run
};

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

double ms_since(uint64_t t, uint64_t origin) { return static_cast<double>(diff(t, origin)) / 1e6; }
uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
  const uint64_t lo = std::max(a0, b0), hi = std::min(a1, b1);
  return hi > lo ? hi - lo : 0;
}

int expected_state(ReaderPhase p) {
  switch (p) {
    case ReaderPhase::blocked: return PLATOON_REQ_BLOCKED;
    case ReaderPhase::running: return PLATOON_REQ_RUNNING;
    case ReaderPhase::runnable: return PLATOON_REQ_RUNNABLE;
    case ReaderPhase::throttled: return PLATOON_REQ_THROTTLED;
  }
  return -1;
}

std::vector<Request> join(const ClientRun& client, const ServerLog& log) {
  std::vector<Request> out;
  const size_t n = std::min<size_t>(client.entries.size(), log.answered.load());
  for (size_t i = 0; i < n; ++i) {
    const auto& c = client.entries[i];
    out.push_back({c.send_ns, c.sent_ns, c.recv_ns, log.entries[i]});
  }
  return out;
}

// The part of a request's socket wait [send, read] that the log proves the reader spent in the
// designed state: asleep (the phase from the answer to the read holds the wait, and whatever of
// it the reader was neither on its CPU nor queued, it slept; nanosleep's deadline bounds it
// too); spinning, but for its silences; queued behind the FIFO burst until it ended; not
// polling (off its CPU under the quota: throttled, or queued once the group ran again).
uint64_t designed_part(ReaderPhase phase, const Request& q) {
  const uint64_t from = q.send_ns, to = q.s.read_ns;
  switch (phase) {
    case ReaderPhase::blocked: {
      const uint64_t awake = std::min(to - from, q.s.on_cpu_ns + q.s.run_delay_ns);
      return std::max(overlap(from, to, q.s.idle_start_ns, q.s.sleep_until_ns), to - from - awake);
    }
    case ReaderPhase::running: {
      uint64_t off = 0;
      for (uint32_t g = 0; g < q.s.gaps; ++g) off += overlap(from, to, q.s.gap_start_ns[g], q.s.gap_end_ns[g]);
      return overlap(from, to, q.s.idle_start_ns, to) - off;
    }
    case ReaderPhase::runnable: return overlap(from, to, q.s.burst_start_ns, q.s.burst_end_ns);
    case ReaderPhase::throttled: return to - std::max(from, q.s.last_poll_ns);
  }
  return 0;
}

// ---- the workload against its own design ----

// Requests sent while the reader was in its phase's own part (asleep, spinning, preempted by
// the burst) and read only after it; throttled has no such part (its polls are the phase).
size_t sent_inside_phase(const Scenario& r) {
  size_t n = 0, shown = 0;
  for (const Request& q : r.requests) {
    const bool runnable = r.plan.phase == ReaderPhase::runnable;
    const uint64_t from = runnable ? q.s.burst_start_ns : q.s.idle_start_ns;
    const uint64_t to = runnable ? q.s.burst_end_ns : q.s.idle_end_ns;
    const bool inside = q.send_ns >= from && q.send_ns < to && q.s.read_ns >= to;
    n += inside;
    if (!inside && shown++ < 5)
      std::printf("    request %u sent outside its phase: from the phase's start, send %+.3f ms, phase end %+.3f ms, "
                  "read %+.3f ms; the reader on CPU %.3f ms, queued %.3f ms\n",
                  q.s.seq, ms_since(q.send_ns, from), ms_since(to, from), ms_since(q.s.read_ns, from),
                  q.s.on_cpu_ns / 1e6, q.s.run_delay_ns / 1e6);
  }
  return n;
}

// The designed state's share of the summed socket wait, by the log; index 0 left out when
// `skip_first` (an unattributed first record).
double designed_share(const Scenario& r, bool skip_first) {
  uint64_t wait = 0, part = 0;
  for (size_t i = skip_first ? 1 : 0; i < r.requests.size(); ++i) {
    wait += r.requests[i].wait();
    part += designed_part(r.plan.phase, r.requests[i]);
  }
  return wait ? static_cast<double>(part) / static_cast<double>(wait) : 0;
}

void print_workload(const Scenario& r) {
  const ServerLog& log = *r.log;
  std::vector<double> waits, services, writes, sends;
  uint64_t wall = 0, cpu = 0, delay = 0;
  for (const Request& q : r.requests) {
    waits.push_back(static_cast<double>(q.wait()));
    services.push_back(static_cast<double>(q.service()));
    writes.push_back(static_cast<double>(q.s.written_ns - q.s.write_ns));
    sends.push_back(static_cast<double>(q.sent_ns - q.send_ns));
    wall += q.s.read_ns - q.s.idle_start_ns;
    cpu += q.s.on_cpu_ns;
    delay += q.s.run_delay_ns;
  }
  const double w = wall ? static_cast<double>(wall) / 100 : 1;
  std::printf("  workload %s: %zu requests, reader tid %u; socket wait (read - send) p50 %.3f ms [min %.3f, "
              "p99 %.3f, max %.3f]; service (write - read) p50 %.3f ms; send() p50 %.1f us, write() p50 %.1f us "
              "p99 %.1f us; from answer to read the reader was on CPU %.1f%%, queued %.1f%% (schedstat); "
              "switches voluntary %lld, involuntary %lld; the designed state's share of the wait %.1f%%\n",
              phase_name(r.plan.phase), r.requests.size(), log.reader_tid, pct(waits, 0.5) / 1e6,
              pct(waits, 0) / 1e6, pct(waits, 0.99) / 1e6, pct(waits, 1) / 1e6, pct(services, 0.5) / 1e6,
              pct(sends, 0.5) / 1e3, pct(writes, 0.5) / 1e3, pct(writes, 0.99) / 1e3, static_cast<double>(cpu) / w,
              static_cast<double>(delay) / w, log.voluntary[1] - log.voluntary[0],
              log.nonvoluntary[1] - log.nonvoluntary[0], designed_share(r, false) * 100);
  if (r.plan.phase == ReaderPhase::throttled)
    std::printf("  workload throttled: cpu.stat over the run: %" PRIu64 " of %" PRIu64 " periods throttled, %.1f ms\n",
                r.after.nr_throttled - r.before.nr_throttled, r.after.nr_periods - r.before.nr_periods,
                static_cast<double>(r.after.throttled_ns - r.before.throttled_ns) / 1e6);
}

// Where the workload left its design, by its own clocks and /proc: one line each. Decided
// without the records, so a scenario that went wrong is run again rather than judged.
std::vector<std::string> workload_deviations(const Scenario& r) {
  const auto& rs = r.requests;
  const ServerLog& log = *r.log;
  std::vector<std::string> out;
  size_t out_of_order = 0, pieces = 0;
  for (size_t i = 0; i < rs.size(); ++i) {
    out_of_order += rs[i].s.seq != i;
    pieces += rs[i].s.reads != 1;
  }
  if (out_of_order) out.push_back(std::to_string(out_of_order) + " requests answered out of order");
  if (pieces) out.push_back(std::to_string(pieces) + " requests that took more than one read()");
  // The client's timer can slip past a phase now and then (one in 150 was seen on a quiet VM):
  // such a request waits in another state, which the records must then show too, so only a
  // few are allowed; the designed share below holds the scenario to its state.
  if (r.plan.phase != ReaderPhase::throttled && double(sent_inside_phase(r)) < 0.97 * double(rs.size()))
    out.push_back("requests not sent inside the reader's designed phase");
  if (designed_share(r, false) < kShareFloor)
    out.push_back("the reader was not in the designed state while requests waited: " +
                  std::to_string(designed_share(r, false)) + " of the wait");
  if (r.plan.phase == ReaderPhase::runnable && log.nonvoluntary[1] - log.nonvoluntary[0] < r.plan.requests)
    out.push_back("the bursts did not preempt the reader");
  if (r.plan.phase == ReaderPhase::throttled &&
      r.after.nr_throttled - r.before.nr_throttled < static_cast<uint64_t>(r.plan.requests / 2))
    out.push_back("the quota did not throttle the server");
  return out;
}

void check_workload(const Scenario& r) {
  ASSERT_EQ(r.requests.size(), static_cast<size_t>(r.plan.requests)) << "requests both sides logged";
  for (const std::string& why : workload_deviations(r)) ADD_FAILURE() << why;
}

// ---- the records ----

// What the collector handed over: the server's request records and, as it records anyway, the
// reader's switch and wake records, which show what the kernel told of the reader when a
// record's state parts are off.
struct Drained {
  std::vector<platoon_ev_request> requests;
  std::vector<platoon_ev_switch> switches;  // the reader's, in and out
  std::vector<platoon_ev_wake> wakes;       // the reader's
  size_t foreign = 0;                       // request records of other processes or sides
};

// One ring record's events: several back to back, each sized by its type.
void take_events(const char* p, size_t size, pid_t pid, uint32_t reader, Drained& d) {
  while (size >= sizeof(platoon_event_header)) {
    platoon_event_header h;
    std::memcpy(&h, p, sizeof h);
    const size_t n = platoon_event_size(h.type);
    if (n == 0 || n > size) break;
    if (h.type == PLATOON_EV_REQUEST) {
      platoon_ev_request e;
      std::memcpy(&e, p, sizeof e);
      if (e.pid == static_cast<uint32_t>(pid) && e.side == PLATOON_REQ_SERVER) d.requests.push_back(e);
      else ++d.foreign;
    } else if (h.type == PLATOON_EV_SWITCH) {
      platoon_ev_switch e;
      std::memcpy(&e, p, sizeof e);
      if (e.h.tid == reader || e.next_tid == reader) d.switches.push_back(e);
    } else if ((h.type == PLATOON_EV_WAKING || h.type == PLATOON_EV_WAKEUP) && h.tid == reader) {
      platoon_ev_wake e;
      std::memcpy(&e, p, sizeof e);
      d.wakes.push_back(e);
    }
    p += n;
    size -= n;
  }
}

// Until no request record came for 300 ms (5 s at most); everything sorted by time.
Drained drain(Collector& c, pid_t pid, uint32_t reader) {
  Drained d;
  auto sink = [&](const void* data, size_t size) { take_events(static_cast<const char*>(data), size, pid, reader, d); };
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto last = start;
  size_t seen = 0;
  while (clock::now() - last < std::chrono::milliseconds(300) && clock::now() - start < std::chrono::seconds(5)) {
    c.poll_events(50, sink);
    if (d.requests.size() != seen) {
      seen = d.requests.size();
      last = clock::now();
    }
  }
  const auto by_time = [](const auto& a, const auto& b) { return a.h.ts_ns < b.h.ts_ns; };
  std::sort(d.requests.begin(), d.requests.end(), by_time);
  std::sort(d.switches.begin(), d.switches.end(), by_time);
  std::sort(d.wakes.begin(), d.wakes.end(), by_time);
  return d;
}

// The reader's switch-ins the kernel never reported: switch-outs with no switch-in since the
// last one. (On the VM kernel these tests were written on, no tracepoint fires while certain
// tasks are current, perf's included: a switch away from one of them is never seen, nor a
// wakeup from an interrupt that lands on it. bpf/requests.bpf.h's running_now copes.)
size_t untraced_switch_ins(const Drained& d, uint32_t reader) {
  size_t n = 0;
  bool out = false;
  for (const platoon_ev_switch& e : d.switches) {
    if (e.h.tid == reader) {
      n += out;
      out = true;
    } else {
      out = false;
    }
  }
  return n;
}

// The reader's switch and wake records in [from, to] in time order, times from `origin`.
void print_reader_events(const Drained& d, uint32_t reader, uint64_t from, uint64_t to, uint64_t origin) {
  const auto us = [origin](uint64_t t) { return static_cast<double>(static_cast<int64_t>(t - origin)) / 1e3; };
  size_t w = 0;
  const auto wakes_until = [&](uint64_t t) {
    for (; w < d.wakes.size() && d.wakes[w].h.ts_ns <= t; ++w) {
      const platoon_ev_wake& e = d.wakes[w];
      if (e.h.ts_ns >= from)
        std::printf("      %+10.1f us cpu %u %s by %u\n", us(e.h.ts_ns), e.h.cpu,
                    e.h.type == PLATOON_EV_WAKING ? "waking" : "wakeup", e.waker_tid);
    }
  };
  for (const platoon_ev_switch& e : d.switches) {
    if (e.h.ts_ns < from || e.h.ts_ns > to) continue;
    wakes_until(e.h.ts_ns);
    std::printf("      %+10.1f us cpu %u switch %s: %u %.16s (state %u) -> %u %.16s\n", us(e.h.ts_ns), e.h.cpu,
                e.h.tid == reader ? "out" : "in", e.h.tid, e.prev_comm, e.prev_state, e.next_tid, e.next_comm);
  }
  wakes_until(to);
}

struct Agreement {
  size_t partial = 0, unattributed = 0, unattributed_later = 0, overlapped = 0, wrong_tid = 0, parts_off = 0;
  size_t ready_outside = 0, end_outside = 0;     // ready outside send(), h.ts_ns outside write()
  size_t wait_outside = 0, service_outside = 0;  // outside the intervals the calls allow
  size_t wait_far = 0, service_far = 0;          // over kBoundNs from those intervals' midpoints
  size_t wait_far_wide = 0, service_far_wide = 0; // of those, intervals over 2 kBoundNs wide: the
                                                  // log cannot place them within kBoundNs
  std::set<uint64_t> conns;
  std::vector<double> wait_mid, service_mid, wait_width, service_width, ready_at, end_at, waits, services;
  uint64_t attributed_wait = 0, state[PLATOON_REQ_STATES] = {};
  // Blocked time in records whose reader the log proves never slept from the answer to the read.
  size_t sleepless = 0, blocked_sleepless = 0;
  double blocked_sleepless_max_ns = 0;
};

// One record against its request: its moments inside the calls, its durations inside their
// intervals and near their midpoints; one line when anything is off.
void compare_times(const platoon_ev_request& e, const Request& q, size_t i, Agreement& a, size_t* shown) {
  const Interval wi = q.wait_interval(), si = q.service_interval();
  const Interval send_call{0, diff(q.sent_ns, q.send_ns)}, write_call{0, diff(q.s.written_ns, q.s.write_ns)};
  const int64_t wait = static_cast<int64_t>(e.wait_ns), service = static_cast<int64_t>(e.service_ns);
  const int64_t ready = diff(e.h.ts_ns - e.service_ns - e.wait_ns, q.send_ns), end = diff(e.h.ts_ns, q.s.write_ns);
  const int64_t dw = wait - wi.mid(), ds = service - si.mid();
  a.wait_mid.push_back(static_cast<double>(std::abs(dw)));
  a.service_mid.push_back(static_cast<double>(std::abs(ds)));
  a.wait_width.push_back(static_cast<double>(wi.hi - wi.lo));
  a.service_width.push_back(static_cast<double>(si.hi - si.lo));
  a.ready_at.push_back(static_cast<double>(ready));
  a.end_at.push_back(static_cast<double>(end));
  a.waits.push_back(static_cast<double>(e.wait_ns));
  a.services.push_back(static_cast<double>(e.service_ns));
  const bool ready_out = !send_call.holds(ready), end_out = !write_call.holds(end);
  const bool w_out = !wi.holds(wait), s_out = !si.holds(service);
  const bool w_far = std::abs(dw) > kBoundNs, s_far = std::abs(ds) > kBoundNs;
  a.ready_outside += ready_out;
  a.end_outside += end_out;
  a.wait_outside += w_out;
  a.service_outside += s_out;
  a.wait_far += w_far;
  a.service_far += s_far;
  a.wait_far_wide += w_far && wi.hi - wi.lo > 2 * kBoundNs;
  a.service_far_wide += s_far && si.hi - si.lo > 2 * kBoundNs;
  if ((ready_out || end_out || w_out || s_out || w_far || s_far) && (*shown)++ < 5)
    std::printf("    request %zu: ready %+.1f us into the send() of %.1f us; h.ts_ns %+.1f us into the write() of "
                "%.1f us; wait %.1f us in [%.1f, %.1f] (midpoint %+.1f); service %.1f us in [%.1f, %.1f] (midpoint "
                "%+.1f); read() %.1f us\n", i, ready / 1e3, send_call.hi / 1e3, end / 1e3, write_call.hi / 1e3,
                wait / 1e3, wi.lo / 1e3, wi.hi / 1e3, dw / 1e3, service / 1e3, si.lo / 1e3, si.hi / 1e3, ds / 1e3,
                diff(q.s.read_ns, q.s.read_call_ns) / 1e3);
}

// A record whose reader the log proves never slept from the answer to the read: any blocked
// time in it is the records' error. The first few are shown with what the kernel reported of
// the reader from the previous read on (times from the client's send).
void check_sleepless(const Scenario& r, const Drained& d, size_t i, Agreement& a) {
  const platoon_ev_request& e = d.requests[i];
  const Request& q = r.requests[i];
  ++a.sleepless;
  const uint64_t blocked = e.state_ns[PLATOON_REQ_BLOCKED];
  a.blocked_sleepless_max_ns = std::max(a.blocked_sleepless_max_ns, static_cast<double>(blocked));
  if (blocked <= kPartsSlackNs || ++a.blocked_sleepless > 3) return;
  std::printf("    request %zu blocked %.1f us though the reader never slept: wait %.1f us = runnable %.1f + "
              "throttled %.1f + running %.1f + blocked %.1f; the log: on CPU %.1f us, queued %.1f us from the "
              "answer (%+.1f us) to the read (%+.1f us); the reader's switches and wakes:\n", i, blocked / 1e3,
              e.wait_ns / 1e3, e.state_ns[0] / 1e3, e.state_ns[1] / 1e3, e.state_ns[2] / 1e3, e.state_ns[3] / 1e3,
              q.s.on_cpu_ns / 1e3, q.s.run_delay_ns / 1e3, diff(q.s.idle_start_ns, q.send_ns) / 1e3,
              diff(q.s.read_ns, q.send_ns) / 1e3);
  const uint64_t from = i ? r.requests[i - 1].s.read_call_ns : q.s.idle_start_ns;
  print_reader_events(d, r.log->reader_tid, from, q.s.read_ns, q.send_ns);
}

Agreement compare(const Scenario& r, const Drained& d) {
  Agreement a;
  for (const auto& e : d.requests) {
    a.partial += (e.flags & PLATOON_REQ_PARTIAL) != 0;
    a.overlapped += (e.flags & PLATOON_REQ_OVERLAPPED) != 0;
    a.conns.insert(e.conn);
  }
  size_t shown = 0;
  for (size_t i = 0; i < std::min(d.requests.size(), r.requests.size()); ++i) {
    const platoon_ev_request& e = d.requests[i];
    compare_times(e, r.requests[i], i, a, &shown);
    if (e.flags & PLATOON_REQ_UNATTRIBUTED) {
      ++a.unattributed;
      a.unattributed_later += i != 0;
      continue;
    }
    a.wrong_tid += e.h.tid != r.log->reader_tid;
    uint64_t parts = 0;
    for (int s = 0; s < PLATOON_REQ_STATES; ++s) {
      parts += e.state_ns[s];
      a.state[s] += e.state_ns[s];
    }
    a.parts_off += static_cast<uint64_t>(std::abs(diff(parts, e.wait_ns))) > kPartsSlackNs;
    a.attributed_wait += e.wait_ns;
    if (r.requests[i].s.sleeps == 0) check_sleepless(r, d, i, a);
  }
  return a;
}

double share(const Agreement& a, int state) {
  return a.attributed_wait ? static_cast<double>(a.state[state]) / static_cast<double>(a.attributed_wait) : 0;
}

void print_agreement(const Scenario& r, const Agreement& a, const Drained& d, double truth) {
  const size_t untraced = untraced_switch_ins(d, r.log->reader_tid);
  std::vector<double> truth_waits, truth_services, sends;
  for (const Request& q : r.requests) {
    truth_waits.push_back(static_cast<double>(q.wait()));
    truth_services.push_back(static_cast<double>(q.service()));
    sends.push_back(static_cast<double>(q.sent_ns - q.send_ns));
  }
  const char* name = phase_name(r.plan.phase);
  std::printf("  %s: %zu requests, %zu records (partial %zu, unattributed %zu, overlapped %zu; %zu other records); "
              "socket wait p50 %.3f ms (log %.3f); service p50 %.3f ms (log %.3f); share runnable %.1f%% throttled "
              "%.1f%% running %.1f%% blocked %.1f%% (the log proves %.1f%% %s)\n",
              name, r.requests.size(), d.requests.size(), a.partial, a.unattributed, a.overlapped, d.foreign,
              pct(a.waits, 0.5) / 1e6, pct(truth_waits, 0.5) / 1e6, pct(a.services, 0.5) / 1e6,
              pct(truth_services, 0.5) / 1e6, share(a, PLATOON_REQ_RUNNABLE) * 100,
              share(a, PLATOON_REQ_THROTTLED) * 100, share(a, PLATOON_REQ_RUNNING) * 100,
              share(a, PLATOON_REQ_BLOCKED) * 100, truth * 100,
              r.plan.phase == ReaderPhase::throttled ? "off its CPU" : name);
  std::printf("  %s times: |wait - midpoint| p50 %.1f us p99 %.1f max %.1f, over 50 us %zu (%zu in intervals over "
              "100 us), outside %zu (interval width p50 %.1f us max %.1f); |service - midpoint| p50 %.1f us p99 %.1f "
              "max %.1f, over 50 us %zu (%zu in intervals over 100 us), outside %zu (width p50 %.1f us max %.1f)\n",
              name, pct(a.wait_mid, 0.5) / 1e3, pct(a.wait_mid, 0.99) / 1e3, pct(a.wait_mid, 1) / 1e3, a.wait_far,
              a.wait_far_wide, a.wait_outside, pct(a.wait_width, 0.5) / 1e3, pct(a.wait_width, 1) / 1e3,
              pct(a.service_mid, 0.5) / 1e3, pct(a.service_mid, 0.99) / 1e3, pct(a.service_mid, 1) / 1e3,
              a.service_far, a.service_far_wide, a.service_outside, pct(a.service_width, 0.5) / 1e3,
              pct(a.service_width, 1) / 1e3);
  std::printf("  %s moments: ready into send() p50 %.1f us [min %.1f, max %.1f] (send() p50 %.1f us max %.1f), "
              "outside %zu; h.ts_ns into write() p50 %.1f us [min %.1f, max %.1f], outside %zu; blocked over 5 us "
              "where the reader never slept: %zu of %zu (max %.1f us); the reader's switch-ins never traced: %zu\n",
              name, pct(a.ready_at, 0.5) / 1e3, pct(a.ready_at, 0) / 1e3, pct(a.ready_at, 1) / 1e3,
              pct(sends, 0.5) / 1e3, pct(sends, 1) / 1e3, a.ready_outside, pct(a.end_at, 0.5) / 1e3,
              pct(a.end_at, 0) / 1e3, pct(a.end_at, 1) / 1e3, a.end_outside, a.blocked_sleepless, a.sleepless,
              a.blocked_sleepless_max_ns / 1e3, untraced);
}

void check_records(const Scenario& r, const Drained& d) {
  const std::vector<platoon_ev_request>& recs = d.requests;
  const Agreement a = compare(r, d);
  const bool first_unattributed = !recs.empty() && (recs[0].flags & PLATOON_REQ_UNATTRIBUTED);
  const double truth = designed_share(r, first_unattributed);
  print_agreement(r, a, d, truth);
  const size_t n = a.wait_mid.size();
  const auto within = [n](size_t off) { return static_cast<double>(n - off) >= kWithinBound * static_cast<double>(n); };
  EXPECT_EQ(recs.size(), r.requests.size()) << "server-side records vs requests the server answered";
  EXPECT_EQ(a.partial, 0u) << "the connection was made after the attach";
  EXPECT_EQ(a.overlapped, 0u) << "the client never sends before the answer";
  EXPECT_EQ(a.conns.size(), 1u) << "one connection";
  EXPECT_EQ(a.unattributed_later, 0u) << "unattributed records past the connection's first request";
  EXPECT_EQ(a.wrong_tid, 0u) << "attributed records naming another reader than tid " << r.log->reader_tid;
  EXPECT_EQ(a.ready_outside, 0u) << "records whose start (h.ts_ns - service - wait) is not inside the client's send()";
  EXPECT_EQ(a.end_outside, 0u) << "records whose end (h.ts_ns) is not inside the response's write()";
  EXPECT_EQ(a.wait_outside, 0u) << "socket waits outside [read() start - send() end, read() end - send() start]";
  EXPECT_EQ(a.service_outside, 0u) << "services outside [write() start - read() end, write() end - read() start]";
  EXPECT_TRUE(within(a.wait_far - a.wait_far_wide))
      << a.wait_far << " of " << n << " socket waits over 50 us from their interval's midpoint ("
      << a.wait_far_wide << " of them in intervals over 100 us wide, held by the interval alone)";
  EXPECT_TRUE(within(a.service_far - a.service_far_wide))
      << a.service_far << " of " << n << " services over 50 us from their interval's midpoint ("
      << a.service_far_wide << " of them in intervals over 100 us wide, held by the interval alone)";
  EXPECT_EQ(a.parts_off, 0u) << "attributed records whose state parts do not add up to the socket wait within 5 us";
  EXPECT_EQ(a.blocked_sleepless, 0u) << "records with blocked time over 5 us where the reader never slept";
  const double got = share(a, expected_state(r.plan.phase));
  EXPECT_GE(got, kShareFloor) << "the designed state's share of the summed socket wait (" << phase_name(r.plan.phase) << ")";
  // Under the quota the log proves the reader off its CPU, throttled or queued after the group's
  // unthrottling: the two together are what it bounds.
  const double proven = r.plan.phase == ReaderPhase::throttled ? got + share(a, PLATOON_REQ_RUNNABLE) : got;
  EXPECT_GE(proven, truth - kShareSlack) << "the records give the designed state less than the log proves";
}

class RequestsTruthTest : public BpfTest {
 protected:
  void SetUp() override {
    BpfTest::SetUp();
    if (IsSkipped()) return;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs 2 CPUs: the reader on CPU 0, the client on CPU 1";
  }

  // One run of the scenario; *again when it left its design and another attempt is due.
  void attempt_scenario(ReaderPhase phase, int attempt, bool* again) {
    *again = false;
    Scenario r;
    r.plan = platoon::testing::request_plan(phase);
    // Declared before the server so that it is removed after the server is reaped.
    std::optional<CpuCgroup> group;
    if (phase == ReaderPhase::throttled) {
      std::string why;
      bool no_controller = false;
      group = CpuCgroup::make("platoon-requests-" + std::to_string(getpid()), r.plan.quota_us, r.plan.period_us,
                              &why, &no_controller);
      if (!group && no_controller) GTEST_SKIP() << why;
      ASSERT_TRUE(group) << why;
      r.plan.cgroup_dir = group->dir();
    }
    platoon::testing::SharedServerLog shared;
    ASSERT_TRUE(shared.get());
    ServerLog& log = *shared.get();
    ForkedWorkload server([&] { platoon::testing::run_request_server(r.plan, &log); });
    ASSERT_GT(server.pid(), 0);
    ASSERT_TRUE(platoon::testing::wait_for_stage(log, platoon::testing::kListening, 5000)) << log.error;
    // Recording too: poll_events hands the request records to its sink only while recording
    // (RequestBook's keep_records), whatever collector.hpp's comment on `requests` says.
    auto c = open({.pids = {server.pid()}, .record_events = true, .requests = true});
    ASSERT_TRUE(c);
    if (group) r.before = group->stat();
    r.client = platoon::testing::run_request_client(r.plan, &log);
    if (group) r.after = group->stat();
    ASSERT_TRUE(r.client.error.empty()) << r.client.error << "; " << log.error;
    const Drained d = drain(*c, server.pid(), log.reader_tid);
    if (d.requests.empty()) {
      std::printf("  no request records; collector %s, notes:\n", c->attach_mode());
      for (const std::string& note : c->notes()) std::printf("    %s\n", note.c_str());
    }
    r.log = &log;
    r.requests = join(r.client, log);
    print_workload(r);
    if (r.requests.size() == static_cast<size_t>(r.plan.requests) && attempt < kAttempts) {
      const std::vector<std::string> off = workload_deviations(r);
      if (!off.empty()) {
        std::printf("  attempt %d: the workload left its design (%s); running it again\n", attempt, off[0].c_str());
        *again = true;
        return;
      }
    }
    check_workload(r);
    check_records(r, d);
  }

  // A loaded machine can keep the workload from its design (a throttled server's own writes
  // stalled by the quota, a timer slipping past a phase): that scenario is run again, up to
  // kAttempts times, and judged by the last. The records are judged only in a run that kept to
  // its design, so a regression in them still fails.
  static constexpr int kAttempts = 3;
  void run(ReaderPhase phase) {
    bool again = true;
    for (int attempt = 1; again && attempt <= kAttempts; ++attempt) attempt_scenario(phase, attempt, &again);
  }
};

TEST_F(RequestsTruthTest, ReaderBlockedInNanosleep) { run(ReaderPhase::blocked); }
TEST_F(RequestsTruthTest, ReaderRunningASpin) { run(ReaderPhase::running); }
TEST_F(RequestsTruthTest, ReaderRunnablePreemptedByAFifoBurst) { run(ReaderPhase::runnable); }
TEST_F(RequestsTruthTest, ReaderThrottledByItsCgroupQuota) { run(ReaderPhase::throttled); }

}  // namespace
}  // namespace platoon::tests::testing
