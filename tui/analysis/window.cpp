#include "tui/analysis/window.hpp"

#include "tui/trace/trace_format.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace platoon::analysis {

namespace {

// Counters only grow, but a producer that restarts a map entry (or fuzzed input) may hand us a
// smaller end value: clamp at zero instead of wrapping to 2^64.
uint64_t sub(uint64_t end, uint64_t base) { return end > base ? end - base : 0; }

// Makes a copy of the later sample a window's: each quantity of the field list becomes later
// minus earlier.
struct Subtract {
  snapshot::ThreadSample& d;
  const snapshot::ThreadSample& base;

  void counter(uint64_t snapshot::ThreadSample::*m, const char*) { d.*m = sub(d.*m, base.*m); }
  // A maximum has no delta: keep the cumulative one; derive() decides what the window knows.
  void maximum(uint64_t snapshot::ThreadSample::*, const char*) {}
  template <size_t N>
  void hist(std::array<uint64_t, N> snapshot::ThreadSample::*m, const char*) {
    for (size_t i = 0; i < N; ++i) (d.*m)[i] = sub((d.*m)[i], (base.*m)[i]);
  }
  // The lists may differ in length (a producer that learned of more CPUs): the later one's counts.
  void per_cpu(std::vector<uint64_t> snapshot::ThreadSample::*m, const char*) {
    const std::vector<uint64_t>& b = base.*m;
    for (size_t i = 0; i < (d.*m).size() && i < b.size(); ++i) (d.*m)[i] = sub((d.*m)[i], b[i]);
  }
};

// Identity and state (tid, comm, exited, ...) are the later sample's.
snapshot::ThreadSample subtract(const snapshot::ThreadSample& end, const snapshot::ThreadSample& base) {
  snapshot::ThreadSample d = end;
  snapshot::for_each_thread_field(Subtract{d, base});
  return d;
}

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }
double per_s(uint64_t n, double wall_s) { return ratio(static_cast<double>(n), wall_s); }
double pct(uint64_t ns, double wall_s) { return ratio(static_cast<double>(ns) / 1e9, wall_s) * 100.0; }

using ThreadKey = std::pair<uint32_t, uint64_t>;  // (tid, first_seen_ns)
ThreadKey key_of(const snapshot::ThreadSample& t) { return {t.tid, t.first_seen_ns}; }

using PairKey = std::tuple<uint32_t, snapshot::PairKind, uint32_t>;  // (tid, kind, other_tid)
using PairIndex = std::unordered_map<uint32_t, std::vector<const snapshot::PairSample*>>;  // by tid

PairIndex index_pairs(const snapshot::Snapshot& s) {
  PairIndex idx;
  for (const auto& p : s.pairs) idx[p.tid].push_back(&p);
  return idx;
}

// Where a thread ends inside the window: its last sample and the snapshot that held it.
struct End {
  const snapshot::ThreadSample* sample = nullptr;
  const snapshot::Snapshot* snap = nullptr;
};

std::vector<Peer> top_peers(std::vector<Peer> peers) {
  std::sort(peers.begin(), peers.end(), [](const Peer& a, const Peer& b) {
    return std::tie(b.ns, b.count, a.tid) < std::tie(a.ns, a.count, b.tid);
  });
  if (peers.size() > kTopPeers) peers.resize(kTopPeers);
  return peers;
}

void derive_peers(ThreadWindow& tw, const std::vector<const snapshot::PairSample*>& end_pairs,
                  const std::map<PairKey, const snapshot::PairSample*>* base_pairs) {
  std::vector<Peer> preempted, woken;
  for (const snapshot::PairSample* p : end_pairs) {
    const snapshot::PairSample* b = nullptr;
    if (base_pairs) {
      auto it = base_pairs->find({p->tid, p->kind, p->other_tid});
      if (it != base_pairs->end()) b = it->second;
    }
    Peer peer{p->other_tid, p->other_pid, p->other_comm, sub(p->count, b ? b->count : 0), sub(p->ns, b ? b->ns : 0)};
    if (peer.count == 0 && peer.ns == 0) continue;
    (p->kind == snapshot::PairKind::preempted_by ? preempted : woken).push_back(std::move(peer));
  }
  tw.preempted_by = top_peers(std::move(preempted));
  tw.woken_by = top_peers(std::move(woken));
}

// The window's run-queue max: the cumulative max only belongs to the window when it grew inside
// it (or the thread was born inside); otherwise the histogram's highest slot bounds it.
uint64_t window_runq_max(const snapshot::ThreadSample& d, const snapshot::ThreadSample* base) {
  if (hist_total(d.runq_hist) == 0) return 0;
  if (base == nullptr || d.runq_max_ns > base->runq_max_ns) return d.runq_max_ns;
  const double bound = log2_upper_bound(d.runq_hist);
  return std::min<uint64_t>(d.runq_max_ns, static_cast<uint64_t>(bound));
}

// The measured parts are clamped so that they never sum past the wait (a torn read of
// in-flight state); the part without a counter, the contended wait, is what is left.
WaitSplit split_of(const snapshot::ThreadSample& d, double wall_s) {
  uint64_t left = d.wait_ns;
  WaitSplit w;
  for (const WaitCause& c : kWaitCauses) {
    if (c.ns == nullptr) continue;
    const uint64_t part = std::min(d.*c.ns, left);
    left -= part;
    w.*c.pct = pct(part, wall_s);
  }
  for (const WaitCause& c : kWaitCauses)
    if (c.ns == nullptr) w.*c.pct = pct(left, wall_s);
  return w;
}

void add_split(WaitSplit& sum, const WaitSplit& x) {
  for (const WaitCause& c : kWaitCauses) sum.*c.pct += x.*c.pct;
}

std::vector<CpuWindow> cpu_windows(const snapshot::Snapshot& from, const snapshot::Snapshot& to) {
  std::vector<CpuWindow> out;
  const uint64_t tick = to.tick_ns;
  for (const snapshot::CpuTimes& e : to.cpus) {
    auto b = std::find_if(from.cpus.begin(), from.cpus.end(), [&](const snapshot::CpuTimes& c) { return c.cpu == e.cpu; });
    if (b == from.cpus.end()) continue;  // a CPU that came online inside the window
    CpuWindow c;
    c.cpu = e.cpu;
    const uint64_t busy = sub(e.user, b->user) + sub(e.nice, b->nice) + sub(e.system, b->system);
    const uint64_t idle = sub(e.idle, b->idle) + sub(e.iowait, b->iowait);
    const uint64_t irq = sub(e.irq, b->irq), softirq = sub(e.softirq, b->softirq), steal = sub(e.steal, b->steal);
    const double total = static_cast<double>(busy + idle + irq + softirq + steal);
    c.steal_ns = steal * tick;
    c.irq_ns = irq * tick;
    c.softirq_ns = softirq * tick;
    c.idle_ns = idle * tick;
    c.steal_pct = 100.0 * ratio(static_cast<double>(steal), total);
    c.irq_pct = 100.0 * ratio(static_cast<double>(irq), total);
    c.softirq_pct = 100.0 * ratio(static_cast<double>(softirq), total);
    c.idle_pct = 100.0 * ratio(static_cast<double>(idle), total);
    c.busy_pct = 100.0 * ratio(static_cast<double>(busy), total);
    out.push_back(c);
  }
  return out;
}

// The groups the window's threads are in, with cpu.stat's deltas. A group missing from the
// baseline (the threads moved into it inside the window) shows its quota but no counts: its
// counters since it was created are not the window's.
std::vector<CgroupWindow> cgroup_windows(const snapshot::Snapshot& from, const snapshot::Snapshot& to, const std::vector<ThreadWindow>& threads,
                                         double wall_s) {
  std::map<std::string, CgroupWindow> by_path;
  for (const auto& t : threads) {
    if (t.cgroup.empty()) continue;
    CgroupWindow& g = by_path[t.cgroup];
    g.path = t.cgroup;
    if (!t.exited) g.threads++;
    g.wait_throttled_ns += std::min(t.delta.wait_throttled_ns, t.delta.wait_ns);
  }
  auto find = [](const snapshot::Snapshot& s, const std::string& path) -> const snapshot::CgroupCpu* {
    auto it = std::lower_bound(s.cgroups.begin(), s.cgroups.end(), path,
                               [](const snapshot::CgroupCpu& c, const std::string& p) { return c.path < p; });
    return it != s.cgroups.end() && it->path == path ? &*it : nullptr;
  };
  std::vector<CgroupWindow> out;
  for (auto& [path, g] : by_path) {
    const snapshot::CgroupCpu* e = find(to, path);
    if (e) {
      const snapshot::CgroupCpu* b = find(from, path);
      if (!b) b = e;
      g.version = e->version;
      g.quota_us = e->quota_us;
      g.period_us = e->period_us;
      g.quota_cpus = e->quota_us > 0 && e->period_us > 0 ? static_cast<double>(e->quota_us) / static_cast<double>(e->period_us) : 0;
      g.periods = sub(e->nr_periods, b->nr_periods);
      g.throttled_periods = sub(e->nr_throttled, b->nr_throttled);
      g.throttled_ns = sub(e->throttled_ns, b->throttled_ns);
      g.throttled_periods_pct = 100.0 * ratio(static_cast<double>(g.throttled_periods), static_cast<double>(g.periods));
      if (e->usage_ns && b->usage_ns) g.usage_cpus = ratio(static_cast<double>(sub(e->usage_ns, b->usage_ns)) / 1e9, wall_s);
    }
    out.push_back(std::move(g));
  }
  return out;
}

void derive(ThreadWindow& tw, const Window& w, const snapshot::ThreadSample* base) {
  const snapshot::ThreadSample& d = tw.delta;
  // A thread born inside the window is still divided by the window's wall time, not its own
  // lifetime: that is pidstat's convention, and it keeps per-thread shares summable per process.
  tw.cpu_pct = pct(d.run_ns, w.wall_s);
  tw.wait_pct = pct(d.wait_ns, w.wall_s);
  tw.cswch_per_s = per_s(d.switches_voluntary, w.wall_s);
  tw.nvcswch_per_s = per_s(d.switches_involuntary, w.wall_s);
  tw.migrations = d.migrations;
  tw.migrations_per_s = per_s(d.migrations, w.wall_s);
  tw.wait_split = split_of(d, w.wall_s);
  tw.cgroup = d.cgroup;

  if (w.has(snapshot::kFieldCpuDist)) {
    uint64_t total = 0;
    for (uint64_t c : d.cpu_switch_ins) total += c;
    total += d.cpu_overflow;
    if (d.cpu_overflow > 0) tw.cpu_other_pct = 100.0 * static_cast<double>(d.cpu_overflow) / static_cast<double>(total);
    for (size_t cpu = 0; cpu < d.cpu_switch_ins.size(); ++cpu) {
      if (d.cpu_switch_ins[cpu] == 0) continue;
      tw.cpu_distribution.emplace_back(static_cast<uint32_t>(cpu),
                                       100.0 * static_cast<double>(d.cpu_switch_ins[cpu]) / static_cast<double>(total));
    }
  }
  if (w.has(snapshot::kFieldRunqHist)) tw.runq = summarize_log2_ns(d.runq_hist, window_runq_max(d, base));
  if (w.has(snapshot::kFieldIo) && d.io_cycles > 0) {
    IoWindow io;
    io.cycles = d.io_cycles;
    io.cycles_per_s = per_s(d.io_cycles, w.wall_s);
    io.events = d.io_events;
    io.events_per_cycle = ratio(static_cast<double>(d.io_events), static_cast<double>(d.io_cycles));
    io.events_hist = nonzero_slots(d.io_events_hist);
    io.blocked_pct = pct(d.io_blocked_ns, w.wall_s);
    tw.io = std::move(io);
  }
  if (w.has(snapshot::kFieldDrain) && (d.drains > 0 || d.steals > 0)) {
    DrainWindow dr;
    dr.batches = d.drains;
    dr.queue_depth_avg = ratio(static_cast<double>(d.drain_depth_sum), static_cast<double>(d.drains));
    dr.queue_depth_hist = nonzero_slots(d.drain_depth_hist);
    dr.fibers_per_drain = ratio(static_cast<double>(d.drain_fibers_run), static_cast<double>(d.drains));
    dr.steals = d.steals;
    dr.stolen_fibers = d.stolen_fibers;
    tw.drain = std::move(dr);
  }
}

std::vector<ProcessWindow> process_totals(const std::vector<ThreadWindow>& threads, double wall_s) {
  std::map<uint32_t, ProcessWindow> by_pid;
  std::map<uint32_t, uint64_t> depth_sum;
  for (const auto& t : threads) {
    ProcessWindow& p = by_pid[t.pid];
    p.pid = t.pid;
    if (t.tid == t.pid || p.comm.empty()) p.comm = t.comm;
    p.threads++;
    p.run_ns += t.delta.run_ns;
    p.wait_ns += t.delta.wait_ns;
    add_split(p.wait_split, t.wait_split);
    p.switches_voluntary += t.delta.switches_voluntary;
    p.switches_involuntary += t.delta.switches_involuntary;
    p.migrations += t.delta.migrations;
    if (t.io) {
      p.io_cycles += t.io->cycles;
      p.io_events += t.io->events;
    }
    if (t.drain) {
      p.drains += t.drain->batches;
      depth_sum[t.pid] += t.delta.drain_depth_sum;
    }
  }
  std::vector<ProcessWindow> out;
  for (auto& [pid, p] : by_pid) {
    p.cpu_pct = pct(p.run_ns, wall_s);
    p.wait_pct = pct(p.wait_ns, wall_s);
    p.cswch_per_s = per_s(p.switches_voluntary, wall_s);
    p.nvcswch_per_s = per_s(p.switches_involuntary, wall_s);
    p.migrations_per_s = per_s(p.migrations, wall_s);
    p.events_per_cycle = ratio(static_cast<double>(p.io_events), static_cast<double>(p.io_cycles));
    p.queue_depth_avg = ratio(static_cast<double>(depth_sum[pid]), static_cast<double>(p.drains));
    out.push_back(std::move(p));
  }
  return out;
}

Losses losses_between(const snapshot::Snapshot& from, const snapshot::Snapshot& to) {
  return {sub(to.lost_events(), from.lost_events()), sub(to.untracked_threads, from.untracked_threads),
          sub(to.lost_pairs, from.lost_pairs), sub(to.lost_targets, from.lost_targets),
          sub(to.lost_requests, from.lost_requests)};
}

Window build(const snapshot::Snapshot& from, const snapshot::Snapshot& to, const std::map<ThreadKey, End>& ends) {
  Window w;
  w.start_ns = from.ts_ns;
  w.end_ns = to.ts_ns;
  w.wall_s = static_cast<double>(sub(to.ts_ns, from.ts_ns)) / 1e9;
  w.source = to.source;
  w.fields = to.fields;
  w.losses = losses_between(from, to);

  std::map<ThreadKey, const snapshot::ThreadSample*> base;
  for (const auto& t : from.threads) base[key_of(t)] = &t;
  std::map<PairKey, const snapshot::PairSample*> base_pairs;
  for (const auto& p : from.pairs) base_pairs[{p.tid, p.kind, p.other_tid}] = &p;
  std::map<const snapshot::Snapshot*, PairIndex> pair_index;  // built once per snapshot that ends a thread

  static const snapshot::ThreadSample kZero;
  for (const auto& [key, end] : ends) {
    auto b = base.find(key);
    const snapshot::ThreadSample* bs = b == base.end() ? nullptr : b->second;
    if (bs && bs->exited) continue;  // gone before the window started
    ThreadWindow tw;
    tw.tid = end.sample->tid;
    tw.pid = end.sample->pid;
    tw.comm = end.sample->comm;
    tw.first_seen_ns = end.sample->first_seen_ns;
    tw.born = bs == nullptr;
    tw.exited = end.sample->exited || end.snap != &to;
    tw.delta = subtract(*end.sample, bs ? *bs : kZero);
    tw.delta.exited = tw.exited;
    derive(tw, w, bs);
    if (w.has(snapshot::kFieldPairs)) {
      auto [it, fresh] = pair_index.try_emplace(end.snap);
      if (fresh) it->second = index_pairs(*end.snap);
      static const std::vector<const snapshot::PairSample*> kNone;
      auto pit = it->second.find(tw.tid);
      // A reused tid must not inherit the old thread's pair counts as its baseline.
      derive_peers(tw, pit == it->second.end() ? kNone : pit->second, bs ? &base_pairs : nullptr);
    }
    w.threads.push_back(std::move(tw));
  }
  w.processes = process_totals(w.threads, w.wall_s);
  w.cpus = cpu_windows(from, to);
  w.cgroups = cgroup_windows(from, to, w.threads, w.wall_s);
  if (w.has(snapshot::kFieldRequests)) w.requests = snapshot::requests_minus(to.requests, from.requests);
  return w;
}

}  // namespace

Window make_window(const snapshot::Snapshot& from, const snapshot::Snapshot& to) {
  std::map<ThreadKey, End> ends;
  for (const auto& t : to.threads) ends[key_of(t)] = {&t, &to};
  return build(from, to, ends);
}

Window make_window(std::span<const snapshot::Snapshot> recording) {
  if (recording.empty()) return {};
  std::map<ThreadKey, End> ends;
  for (const auto& s : recording.subspan(1)) {
    for (const auto& t : s.threads) ends[key_of(t)] = {&t, &s};  // later snapshots win
  }
  return build(recording.front(), recording.back(), ends);
}

namespace {

uint64_t busy_of(const snapshot::ThreadSample& t) { return t.run_ns + t.wait_ns; }

// Heap order for the vanished threads: the front is the first to drop (least busy, then oldest).
template <class V>
bool drops_before(const V& a, const V& b) {
  return std::make_pair(busy_of(a.sample), a.seq) > std::make_pair(busy_of(b.sample), b.seq);
}

}  // namespace

void RecordingWindow::add(snapshot::Snapshot s) {
  if (count_++ == 0) {
    first_ = s;
    last_ = std::move(s);
    return;
  }
  // Threads of the previous snapshot missing from this one: keep their last sample and pairs.
  // Pairs are indexed by tid once: a thread × pair scan is quadratic in a big snapshot.
  std::set<ThreadKey> present;
  for (const auto& t : s.threads) present.insert(key_of(t));
  std::unordered_map<uint32_t, std::vector<const snapshot::PairSample*>> pairs_by_tid;
  for (const auto& t : last_.threads)
    if (!present.count(key_of(t))) pairs_by_tid.try_emplace(t.tid);
  for (const auto& p : last_.pairs)
    if (auto it = pairs_by_tid.find(p.tid); it != pairs_by_tid.end()) it->second.push_back(&p);
  auto order = [](const Vanished& a, const Vanished& b) { return drops_before(a, b); };
  for (auto& t : last_.threads) {
    if (present.count(key_of(t))) continue;
    Vanished v{std::move(t), {}, seq_++};  // last_ is replaced below: its samples can move
    for (const snapshot::PairSample* p : pairs_by_tid[v.sample.tid]) v.pairs.push_back(*p);
    vanished_.push_back(std::move(v));
    if (vanished_.size() <= kKeepVanishedThreads) {
      if (vanished_.size() == kKeepVanishedThreads) std::make_heap(vanished_.begin(), vanished_.end(), order);
      continue;
    }
    std::push_heap(vanished_.begin(), vanished_.end(), order);
    std::pop_heap(vanished_.begin(), vanished_.end(), order);
    vanished_.pop_back();
    ++dropped_;
  }
  last_ = std::move(s);
}

std::string RecordingWindow::cap_note() const {
  if (dropped_ == 0) return {};
  return "more than " + std::to_string(kKeepVanishedThreads) + " threads came and went: the " +
         std::to_string(dropped_) + " least busy of them are left out of the tables and totals";
}

Window RecordingWindow::window() const {
  if (count_ == 0) return {};
  if (count_ == 1) return make_window(first_, last_);
  // The end is the latest snapshot plus every vanished thread as it was last seen, marked
  // exited (it does not end in last_), which is what make_window(span) books for them. Nothing
  // is copied but the vanished threads' pairs.
  std::map<ThreadKey, End> ends;
  std::set<uint32_t> live_tids;
  for (const auto& t : last_.threads) {
    ends[key_of(t)] = {&t, &last_};
    live_tids.insert(t.tid);
  }
  std::map<ThreadKey, const Vanished*> latest;
  for (const auto& v : vanished_) {
    if (ends.count(key_of(v.sample))) continue;
    auto [it, fresh] = latest.try_emplace(key_of(v.sample), &v);
    if (!fresh && it->second->seq < v.seq) it->second = &v;
  }
  snapshot::Snapshot gone;  // holds the pairs of the vanished threads
  for (const auto& [key, v] : latest) {
    ends[key] = {&v->sample, &gone};
    // A vanished thread's pairs are kept only if no live thread now holds its tid.
    if (!live_tids.count(v->sample.tid)) gone.pairs.insert(gone.pairs.end(), v->pairs.begin(), v->pairs.end());
  }
  return build(first_, last_, ends);
}

}  // namespace platoon::analysis
