// requests_waiting_in_sockets: requests whose bytes sat in their socket before a target thread
// read them (bpf/requests.bpf.h measures the wait and splits it by what the reader was doing;
// requests.hpp gives the rows per server port and per remote the target called).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>

#include "tui/analysis/doctor_checks.hpp"
#include "tui/analysis/doctor_peers.hpp"
#include "tui/analysis/requests.hpp"

namespace platoon::analysis::doctor {

namespace {

using snapshot::RequestSide;

// What a side's socket wait is held against: the whole time the target held the request
// (server), or the round trip it waited for the reply (client).
struct SideWords {
  const char* key;    // evidence: "<key>_p50_us"
  const char* label;  // title
  const char* what;   // "server :8080", "client of 127.0.0.1:9090"
};
SideWords words(RequestSide s) {
  return s == RequestSide::server ? SideWords{"server_time", "server time", "server"}
                                  : SideWords{"round_trip", "round trip", "client of"};
}

// Each part of the socket wait (kWaitParts' order): what the reader was doing, for the title,
// and what to change when it is most of the wait.
struct Part {
  const char* mostly;
  std::string (*remedy)(const Remedies& r);
};
constexpr std::array<Part, kWaitParts.size()> kParts{{
    {"mostly while the reader was runnable (waiting for a CPU)",
     [](const Remedies& r) {
       return "The readers were ready to run but had no CPU while the requests waited: keep other work off their "
              "CPUs and pin each to its own (" + r.pin_carriers() + "), or leave a CPU to the poller and helpers "
              "(N+1 cores: " + r.size_carriers("N-1") + " on N CPUs); preempted_by (above) names who held the CPUs.";
     }},
    {"mostly while the reader was throttled (its CPU quota spent)",
     [](const Remedies& r) {
       return "The readers' CPU quota was spent while the requests waited: raise it (cpu.max / cpu.cfs_quota_us; "
              "Kubernetes: the CPU limit) or size the server to it (" + r.size_carriers("Q") +
              " for a quota of Q CPUs); cpu_throttled has the group's numbers.";
     }},
    {"mostly while the reader was running (busy with other work)",
     [](const Remedies& r) {
       return "The readers were busy with other work when the requests arrived, and a loop reads its sockets only "
              "between turns: shorter turns (" + r.shorter_turns() + "), or the connections spread over more loops (" +
              r.size_carriers("N") + " for N CPUs the server may use).";
     }},
    {"mostly while the reader was blocked (asleep, not yet woken)",
     [](const Remedies& r) {
       return "The readers slept while their requests waited, so their wakeup came late: have a sleeping loop "
              "notice sooner (" + r.wake_sooner() + "); a poller that hands them ready sockets needs a CPU of its "
              "own or priority (" + r.poller_priority() + "); a blocking call on a loop thread holds it the same way.";
     }},
    {"mostly read by another thread than the connection's reader (unattributed)",
     [](const Remedies&) {
       return std::string("Most of these requests were read by another thread than the one that read their "
                          "connection before, so the wait cannot be split by what the reader did: keep each "
                          "connection on one loop (no handing sockets between threads) to see why they waited.");
     }},
}};

// socket_wait_by_state_pct: each part's share of the wait.
Object parts_object(const std::array<double, kWaitParts.size()>& pct) {
  Object o;
  for (size_t i = 0; i < pct.size(); ++i) o.emplace_back(kWaitParts[i], round_to(pct[i], 1));
  return o;
}

// One endpoint held against the limits.
struct EndpointRow {
  const RequestRow* row = nullptr;
  double wait_p50_us = 0, wait_p99_us = 0, time_p50_us = 0, time_p99_us = 0;
  double share_pct = 0;  // socket wait p99 of the server time (round trip) p99
  std::optional<Severity> severity;

  Value value() const {
    const SideWords sw = words(row->side);
    Object o{{"side", snapshot::to_string(row->side)},
             {"endpoint", row->endpoint()},
             {"pid", row->pid},
             {"requests", row->sum.count},
             {"requests_per_s", round_to(row->rate, 1)},
             {"socket_wait_p50_us", round_to(wait_p50_us, 1)},
             {"socket_wait_p99_us", round_to(wait_p99_us, 1)},
             {std::string(sw.key) + "_p50_us", round_to(time_p50_us, 1)},
             {std::string(sw.key) + "_p99_us", round_to(time_p99_us, 1)},
             {"socket_wait_p99_share_pct", round_to(share_pct, 1)},
             {"socket_wait_by_state_pct", parts_object(row->wait_by_part_pct())}};
    if (row->sum.overlapped) o.emplace_back("overlapped", row->sum.overlapped);
    return o;
  }
};

// The limits, in order: critical, then warn; nullopt when the endpoint is within them.
std::optional<Severity> level(const EndpointRow& e) {
  const bool tail = e.wait_p99_us >= kSocketWaitP99FloorUs;
  if ((tail && e.share_pct >= kSocketWaitP99SharePctCritical) || e.wait_p50_us >= kSocketWaitP50UsCritical)
    return Severity::critical;
  if ((tail && e.share_pct >= kSocketWaitP99SharePctWarn) || e.wait_p50_us >= kSocketWaitP50UsWarn) return Severity::warn;
  return std::nullopt;
}

EndpointRow endpoint_row(const RequestRow& r) {
  EndpointRow e;
  e.row = &r;
  e.wait_p50_us = us(r.sum.wait.percentile_ns(50));
  e.wait_p99_us = us(r.sum.wait.percentile_ns(99));
  e.time_p50_us = us(r.sum.total.percentile_ns(50));
  e.time_p99_us = us(r.sum.total.percentile_ns(99));
  e.share_pct = e.time_p99_us > 0 ? 100.0 * e.wait_p99_us / e.time_p99_us : 0;
  e.severity = level(e);
  return e;
}

bool same_endpoint(const RequestRow& r, const snapshot::RequestGroup& g) {
  return g.key.side == r.side && g.key.pid == r.pid && g.key.port == r.port && g.key.remote == r.remote;
}

// A thread that read the flagged endpoints' requests (row.tid), and how long they waited for it.
struct ReaderRow {
  std::string thread;
  RequestRow row;

  Value value() const {
    return Object{{"thread", thread},
                  {"tid", row.tid},
                  {"requests", row.sum.count},
                  {"socket_wait_ms", round_to(static_cast<double>(row.wait_ns()) / 1e6, 2)},
                  {"socket_wait_p99_us", round_to(us(row.sum.wait.percentile_ns(99)), 1)}};
  }
};

// The readers, longest summed socket wait first, the first kTopPeers of them.
std::vector<ReaderRow> readers(const Context& c, const std::vector<EndpointRow>& flagged) {
  std::map<uint32_t, ReaderRow> by_tid;
  for (const snapshot::RequestGroup& g : c.w.requests) {
    if (std::none_of(flagged.begin(), flagged.end(), [&](const EndpointRow& e) { return same_endpoint(*e.row, g); }))
      continue;
    ReaderRow& r = by_tid[g.key.tid];
    r.row.tid = g.key.tid;
    snapshot::merge_group(r.row.sum, g);
  }
  std::vector<ReaderRow> out;
  for (auto& [tid, r] : by_tid) {
    const auto t = std::find_if(c.w.threads.begin(), c.w.threads.end(), [tid](const ThreadWindow& x) { return x.tid == tid; });
    r.thread = t != c.w.threads.end() ? c.name(*t) : fmt::format("tid {}", tid);
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const ReaderRow& a, const ReaderRow& b) { return a.row.wait_ns() > b.row.wait_ns(); });
  if (out.size() > kTopPeers) out.resize(kTopPeers);
  return out;
}

// Who preempted the readers over the window (the window's pairs), summed by tid.
std::vector<PeerRow> preemptors(const Context& c, const std::vector<ReaderRow>& rs) {
  std::map<uint32_t, Peer> sum;
  for (const ReaderRow& r : rs)
    for (const ThreadWindow& t : c.w.threads)
      if (t.tid == r.row.tid)
        for (const Peer& p : t.preempted_by) add_peer(sum, p.tid, p.pid, p.comm, p.count, p.ns);
  return peer_rows(sum, c, kTopPeers);
}

// The flagged endpoints' socket wait by part (kWaitParts), pooled.
std::array<double, kWaitParts.size()> pooled_parts(const std::vector<EndpointRow>& flagged) {
  RequestRow all;
  for (const EndpointRow& e : flagged) snapshot::merge_group(all.sum, e.row->sum);
  return all.wait_by_part_pct();
}

// The largest part; nullopt when the wait was not split at all.
std::optional<size_t> dominant(const std::array<double, kWaitParts.size()>& pct) {
  const auto top = std::max_element(pct.begin(), pct.end());
  return *top > 0 ? std::optional<size_t>(static_cast<size_t>(top - pct.begin())) : std::nullopt;
}

std::string title(const EndpointRow& worst, std::optional<size_t> part, const Culprits& who) {
  const SideWords sw = words(worst.row->side);
  std::string s = fmt::format("requests wait in their sockets before a thread reads them: {} {} socket wait p50 {:.0f} us, "
                              "p99 {:.0f} us ({:.0f}% of the {} p99)",
                              sw.what, worst.row->endpoint(), worst.wait_p50_us, worst.wait_p99_us, worst.share_pct,
                              sw.label);
  if (part) s += fmt::format("; {}", kParts[*part].mostly);
  if (part == size_t{PLATOON_REQ_RUNNABLE}) s += who.who;
  return s;
}

Object thresholds() {
  return {{"min_requests", kMinRequests},
          {"socket_wait_p99_floor_us", kSocketWaitP99FloorUs},
          {"socket_wait_p99_share_pct_warn", kSocketWaitP99SharePctWarn},
          {"socket_wait_p99_share_pct_critical", kSocketWaitP99SharePctCritical},
          {"socket_wait_p50_us_warn", kSocketWaitP50UsWarn},
          {"socket_wait_p50_us_critical", kSocketWaitP50UsCritical}};
}

}  // namespace

// Every server port and every remote the target read replies from, with enough requests for a
// p99, is held against the limits; the finding lists those that crossed them, who read their
// requests and who preempted those readers, and words its remedy after what the readers were
// doing for most of the wait.
void check_requests_waiting(const Context& c, CheckResult& out) {
  const RequestsView v = requests_view(c.w);
  std::vector<EndpointRow> judged, flagged;
  for (const auto* rows : {&v.server, &v.client})
    for (const RequestRow& r : *rows)
      if (r.sum.count >= kMinRequests) judged.push_back(endpoint_row(r));
  if (judged.empty()) {
    out.not_evaluated = v.empty() ? "no request completed on the targets' TCP connections in the window"
                                  : fmt::format("no endpoint had {} complete requests in the window (a p99 of fewer "
                                                "is its slowest request)", kMinRequests);
    return;
  }
  for (const EndpointRow& e : judged)
    if (e.severity) flagged.push_back(e);
  if (flagged.empty()) return;
  // The worst: critical before warn, then the largest share of the p99.
  const EndpointRow& worst = *std::max_element(flagged.begin(), flagged.end(), [](const EndpointRow& a, const EndpointRow& b) {
    return a.severity != b.severity ? *a.severity < *b.severity : a.share_pct < b.share_pct;
  });
  const std::vector<ReaderRow> rs = readers(c, flagged);
  const auto pooled = pooled_parts(flagged);
  const std::optional<size_t> part = dominant(pooled);
  Finding f;
  f.severity = *worst.severity;
  for (const ReaderRow& r : rs) f.threads.push_back(r.thread);
  f.evidence = {{"endpoints", array_of(flagged)}, {"socket_wait_by_state_pct", parts_object(pooled)}, {"readers", array_of(rs)}};
  Culprits who;
  if (c.w.has(snapshot::kFieldPairs)) {
    const std::vector<PeerRow> by = preemptors(c, rs);
    who.note(by);
    f.evidence.emplace_back("preempted_by", array_of(by));
  } else {
    f.evidence.emplace_back("preempted_by", "not recorded by this source (procfs): record with BPF to see who");
  }
  f.title = title(worst, part, who);
  f.threshold = thresholds();
  f.remedy = kParts[part.value_or(PLATOON_REQ_RUNNABLE)].remedy(c.remedies);
  out.findings.push_back(std::move(f));
}

}  // namespace platoon::analysis::doctor
