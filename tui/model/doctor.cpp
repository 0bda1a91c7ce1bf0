#include "tui/model/doctor.hpp"

#include <fmt/format.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <set>

#include "tui/model/trace_reader.hpp"  // event_as

namespace platoon::model::doctor {

// ---- Value ----

const Value* find(const Object& o, std::string_view key) {
  for (const auto& [k, v] : o)
    if (k == key) return &v;
  return nullptr;
}
const Value* Value::find(std::string_view key) const {
  const Object* o = object();
  return o ? doctor::find(*o, key) : nullptr;
}

const char* to_string(Severity s) {
  switch (s) {
    case Severity::info: return "info";
    case Severity::warn: return "warn";
    case Severity::critical: return "critical";
  }
  return "info";
}

// ---- BatchStats, BatchTracker ----

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

// ---- roles ----

namespace {

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }
bool named_carrier(const ThreadWindow& t) { return starts_with(t.comm, "carrier"); }
bool drains(const ThreadWindow& t) { return t.drain && t.drain->batches > 0; }
bool polls(const ThreadWindow& t) { return t.io && t.io->cycles > 0; }
double per_s(double n, double wall_s) { return wall_s > 0 ? n / wall_s : 0; }

}  // namespace

Roles find_roles(const Window& w) {
  Roles r;
  // Wakeups each thread handed to event-loop-like threads (named carriers, drainers, pollers).
  std::map<uint32_t, uint64_t> wakes;
  for (const auto& t : w.threads) {
    if (!(named_carrier(t) || drains(t) || polls(t))) continue;
    for (const auto& p : t.woken_by)
      if (p.tid != t.tid && p.tid != 0) wakes[p.tid] += p.count;
  }
  for (const auto& t : w.threads) {
    const bool wakes_loops = per_s(static_cast<double>(wakes[t.tid]), w.wall_s) >= kPollerWakeupsPerS;
    // A thread that wakes the loops and does not run fibers itself is their poller.
    const bool poller = !named_carrier(t) && !drains(t) &&
                        (wakes_loops || (polls(t) && t.comm.find("poller") != std::string::npos));
    if (poller) r.pollers.push_back(&t);
    else if (named_carrier(t) || drains(t) || polls(t)) r.carriers.push_back(&t);
  }
  return r;
}

// ---- the checks ----

namespace {

double round_to(double v, int decimals) {
  const double f = std::pow(10.0, decimals);
  return std::round(v * f) / f;
}

// Thread names as findings list them: the comm, with the tid when another thread shares it.
class Names {
 public:
  explicit Names(const Window& w) {
    for (const auto& t : w.threads) count_[t.comm]++;
  }
  std::string operator()(const ThreadWindow& t) const {
    auto it = count_.find(t.comm);
    return it != count_.end() && it->second > 1 ? fmt::format("{}/{}", t.comm, t.tid) : t.comm;
  }

 private:
  std::map<std::string, int> count_;
};

struct Ctx {
  const DoctorInput& in;
  const Window& w;
  Roles roles;
  Names name;
  std::set<uint32_t> carrier_tids;
  std::set<uint32_t> target_pids;
  Diagnosis& out;

  bool is_carrier(uint32_t tid) const { return carrier_tids.count(tid) > 0; }
  void not_evaluated(std::string id, std::string reason) {
    out.not_evaluated.push_back({std::move(id), std::move(reason)});
  }
};

Object cpu_distribution(const ThreadWindow& t) {
  Object o;
  for (auto [cpu, pct] : t.cpu_distribution) o.emplace_back(std::to_string(cpu), round_to(pct, 1));
  return o;
}

const char* where_of(const Ctx& c, uint32_t tid, uint32_t pid) {
  return c.is_carrier(tid)            ? "carrier"
         : tid == kOtherTid           ? "others"
         : c.target_pids.count(pid)   ? "same process"
                                      : "outside the target";
}

// Peers summed by tid, heaviest wait first, as evidence rows with their share of the wait.
Array peer_rows(const std::map<uint32_t, Peer>& by_tid, const Ctx& c, size_t max) {
  std::vector<Peer> peers;
  uint64_t total_ns = 0;
  for (const auto& [tid, p] : by_tid) {
    peers.push_back(p);
    total_ns += p.ns;
  }
  std::sort(peers.begin(), peers.end(), [](const Peer& a, const Peer& b) { return a.ns != b.ns ? a.ns > b.ns : a.count > b.count; });
  if (peers.size() > max) peers.resize(max);
  Array out;
  for (const auto& p : peers) {
    out.push_back(Object{{"tid", p.tid},
                         {"pid", p.pid},
                         {"comm", p.comm},
                         {"where", where_of(c, p.tid, p.pid)},
                         {"count", p.count},
                         {"wait_ms", round_to(static_cast<double>(p.ns) / 1e6, 2)},
                         {"share_pct", round_to(total_ns ? 100.0 * static_cast<double>(p.ns) / static_cast<double>(total_ns) : 0, 1)}});
  }
  return out;
}

void add_peer(std::map<uint32_t, Peer>& sum, uint32_t tid, uint32_t pid, const std::string& comm, uint64_t count, uint64_t ns) {
  Peer& s = sum[tid];
  if (s.comm.empty()) s = Peer{tid, pid, comm, 0, 0};
  s.count += count;
  s.ns += ns;
}

const ThreadBatches* batches_of(const Ctx& c, uint32_t tid) {
  if (!c.in.batches) return nullptr;
  auto it = c.in.batches->threads().find(tid);
  return it == c.in.batches->threads().end() ? nullptr : &it->second;
}

double pct_of(uint64_t ns, double wall_s) { return wall_s > 0 ? static_cast<double>(ns) / 1e9 / wall_s * 100.0 : 0; }

// With raw events the check is held against the contended wait (behind another task); without,
// against the whole tracepoint wait, which also holds the CPU's wake-up from idle.
void check_waiting(Ctx& c) {
  if (!c.w.has(kFieldRunWait)) {
    c.not_evaluated("carrier_waiting", "the source has no run/wait times");
    return;
  }
  std::vector<const ThreadWindow*> flagged;
  Array rows;
  std::map<uint32_t, Peer> preempted, behind;
  double max_wait = 0;
  const bool events = c.in.batches != nullptr;
  for (const ThreadWindow* t : c.roles.carriers) {
    const ThreadBatches* tb = batches_of(c, t->tid);
    const double contended = tb ? pct_of(tb->contended_ns(), c.w.wall_s) : 0;
    const double measured = events ? contended : t->wait_pct;
    if (measured < kWaitPctWarn) continue;
    flagged.push_back(t);
    max_wait = std::max(max_wait, measured);
    Object row{{"thread", c.name(*t)}, {"tid", t->tid}, {"wait_pct", round_to(t->wait_pct, 2)}};
    if (tb) {
      row.emplace_back("contended_wait_pct", round_to(contended, 2));
      row.emplace_back("idle_exit_wait_pct", round_to(pct_of(tb->idle_exit_ns, c.w.wall_s), 2));
      for (const auto& [tid, b] : tb->behind) add_peer(behind, tid, b.pid, b.comm, b.count, b.ns);
    }
    row.emplace_back("cpu_pct", round_to(t->cpu_pct, 2));
    row.emplace_back("preemptions_per_s", round_to(t->nvcswch_per_s, 1));
    if (t->runq && t->runq->samples) {
      row.emplace_back("runq_p99_us", round_to(t->runq->p99_us, 1));
      row.emplace_back("runq_max_us", round_to(t->runq->max_us, 1));
    }
    for (const auto& p : t->preempted_by) add_peer(preempted, p.tid, p.pid, p.comm, p.count, p.ns);
    rows.push_back(std::move(row));
  }
  if (flagged.empty()) return;
  Finding f;
  f.id = "carrier_waiting";
  f.severity = max_wait >= kWaitPctCritical ? Severity::critical : Severity::warn;
  for (auto* t : flagged) f.threads.push_back(c.name(*t));
  f.evidence = {{events ? "max_contended_wait_pct" : "max_wait_pct", round_to(max_wait, 2)}, {"carriers", std::move(rows)}};
  // Who: the tasks the carriers waited behind (raw events), else the preemptors (aggregates).
  std::string who;
  bool outsiders = false, own = false;
  auto note_culprits = [&](const Array& peers) {
    for (const auto& p : peers) {
      const std::string where = *p.find("where")->string();
      outsiders |= where == "outside the target";
      own |= where == "carrier" || where == "same process";
    }
    if (peers.empty() || !who.empty()) return;
    const Value& top = peers.front();
    who = fmt::format("; mostly behind {} ({}, {:.0f}% of the wait)", *top.find("comm")->string(),
                      *top.find("where")->string(), *top.find("share_pct")->number());
  };
  if (events) {
    Array rows_behind = peer_rows(behind, c, 5);
    note_culprits(rows_behind);
    f.evidence.emplace_back("waited_behind", std::move(rows_behind));
  }
  if (c.w.has(kFieldPairs)) {
    Array rows_preempted = peer_rows(preempted, c, 5);
    note_culprits(rows_preempted);
    f.evidence.emplace_back("preempted_by", std::move(rows_preempted));
  } else {
    f.evidence.emplace_back("preempted_by", "not recorded by this source (procfs): record with BPF to see who");
  }
  f.title = events ? fmt::format("carriers wait for a CPU another task holds: up to {:.1f}% of the time{}", max_wait, who)
                   : fmt::format("carriers wait for a CPU: up to {:.1f}% of the time runnable but not running{}", max_wait, who);
  f.threshold = {{"wait_pct_warn", kWaitPctWarn},
                 {"wait_pct_critical", kWaitPctCritical},
                 {"held_against", events ? "contended wait (raw events: the CPU was held by another task)"
                                         : "wait_pct (no raw events: includes the CPU's wake-up from idle)"}};
  f.remedy = outsiders || !own
                 ? "Keep other work off the carriers' CPUs: put the server on its own cpuset (taskset -c) and "
                   "the tasks it waits behind (above) on others, and pin each carrier to one CPU "
                   "(platoon-server --pin). On a shared machine, fewer carriers than CPUs leaves room."
                 : "The carriers wait behind each other or their own process's threads: run no more busy "
                   "threads than CPUs (platoon-server --carriers N-1 with a master poller, N+1 cores), "
                   "or pin each carrier to its own CPU (--pin).";
  c.out.findings.push_back(std::move(f));
}

void check_migrating(Ctx& c) {
  if (!c.w.has(kFieldMigrations)) {
    c.not_evaluated("carrier_migrating", "the source has no migration counts");
    return;
  }
  std::vector<const ThreadWindow*> flagged;
  Array rows;
  double max_rate = 0;
  for (const ThreadWindow* t : c.roles.carriers) {
    const uint64_t ins = t->delta.switch_ins ? t->delta.switch_ins : t->delta.switches_voluntary + t->delta.switches_involuntary;
    const double share = ins ? 100.0 * static_cast<double>(t->migrations) / static_cast<double>(ins) : 100.0;
    if (t->migrations_per_s < kMigrationsPerSWarn || share < kMigrationShareWarn) continue;
    flagged.push_back(t);
    max_rate = std::max(max_rate, t->migrations_per_s);
    Object row{{"thread", c.name(*t)},
               {"tid", t->tid},
               {"migrations_per_s", round_to(t->migrations_per_s, 1)},
               {"migrations", t->migrations},
               {"migration_share_pct", round_to(share, 1)}};
    if (c.w.has(kFieldCpuDist) && !t->cpu_distribution.empty()) {
      double top = 0;
      for (auto [cpu, pct] : t->cpu_distribution) top = std::max(top, pct);
      row.emplace_back("cpu_distribution", cpu_distribution(*t));
      row.emplace_back("top_cpu_share_pct", round_to(top, 1));
    }
    rows.push_back(std::move(row));
  }
  if (flagged.empty()) return;
  Finding f;
  f.id = "carrier_migrating";
  f.severity = max_rate >= kMigrationsPerSCritical ? Severity::critical : Severity::warn;
  for (auto* t : flagged) f.threads.push_back(c.name(*t));
  f.title = fmt::format("carriers move between CPUs: up to {:.0f} migrations/s (cold caches, and a carrier "
                        "queued behind whatever runs on the CPU it lands on)", max_rate);
  f.evidence = {{"max_migrations_per_s", round_to(max_rate, 1)}, {"carriers", std::move(rows)}};
  f.threshold = {{"migrations_per_s_warn", kMigrationsPerSWarn},
                 {"migration_share_pct_warn", kMigrationShareWarn},
                 {"migrations_per_s_critical", kMigrationsPerSCritical}};
  f.remedy = "Pin each carrier to its own CPU: platoon-server --pin (carrier i on the i-th allowed CPU), "
             "or taskset -pc CPU TID per carrier thread (nginx: worker_cpu_affinity auto).";
  c.out.findings.push_back(std::move(f));
}

// One kind of batch of one carrier: its evidence row, and whether it shows the effect.
struct EffectRow {
  Object row;
  bool effect = false;
  bool enough = false;
  double ratio = 0;
  double long_share_pct = 0;   // of the cycles, those after a long wait
};

EffectRow effect_row(const std::string& thread, uint32_t tid, const char* kind, const BatchStats& s) {
  EffectRow e;
  e.enough = s.long_n >= kMinEffectSamples && s.short_n >= kMinEffectSamples;
  const auto r = s.correlation();
  const double lm = s.long_mean(), sm = s.short_mean();
  // With no batch at all after short waits, any batch after long ones is the effect.
  e.ratio = sm > 0 ? lm / sm : (lm > 0 ? INFINITY : 0);
  e.effect = e.enough && e.ratio >= kEffectRatioWarn && r && *r >= kMinCorrelation;
  e.long_share_pct = s.samples ? 100.0 * static_cast<double>(s.long_n) / static_cast<double>(s.samples) : 0;
  e.row = {{"thread", thread},
           {"tid", tid},
           {"batch", kind},
           {"cycles", s.samples},
           {"after_long_wait", Object{{"cycles", s.long_n}, {"mean", round_to(lm, 3)}}},
           {"long_wait_share_pct", round_to(e.long_share_pct, 2)},
           {"after_short_wait", Object{{"cycles", s.short_n}, {"mean", round_to(sm, 3)}}}};
  e.row.emplace_back("ratio", std::isfinite(e.ratio) ? Value(round_to(e.ratio, 2)) : Value("inf"));
  e.row.emplace_back("correlation", r ? Value(round_to(*r, 3)) : Value("n/a"));
  return e;
}

void check_platoon_effect(Ctx& c) {
  if (!c.in.batches) {
    c.not_evaluated("platoon_effect", c.in.no_events_reason.empty()
                                          ? "no raw events (switches, epoll returns, drains) to relate batches to waits"
                                          : c.in.no_events_reason);
    return;
  }
  Array rows;
  std::vector<std::string> threads;
  double max_ratio = 0;
  bool common = false;  // long waits before at least kLongWaitSharePctCritical of a carrier's cycles
  size_t with_batches = 0;
  for (const ThreadWindow* t : c.roles.carriers) {
    auto it = c.in.batches->threads().find(t->tid);
    if (it == c.in.batches->threads().end()) continue;
    const ThreadBatches& b = it->second;
    bool shows = false;
    for (auto [kind, stats] : {std::pair{"events_per_epoll_return", &b.epoll}, std::pair{"queue_depth_at_drain", &b.drain}}) {
      if (stats->samples == 0) continue;
      ++with_batches;
      EffectRow e = effect_row(c.name(*t), t->tid, kind, *stats);
      if (e.effect) {
        shows = true;
        max_ratio = std::max(max_ratio, e.ratio);
        common |= e.long_share_pct >= kLongWaitSharePctCritical;
      }
      rows.push_back(std::move(e.row));
    }
    if (shows) threads.push_back(c.name(*t));
  }
  if (with_batches == 0) {
    c.not_evaluated("platoon_effect", "the raw events hold no epoll return or drain of a carrier");
    return;
  }
  if (threads.empty()) return;  // evaluated (or too few long waits to matter): no effect
  Finding f;
  f.id = "platoon_effect";
  f.severity = max_ratio >= kEffectRatioCritical && common ? Severity::critical : Severity::warn;
  f.threads = threads;
  f.title = fmt::format("platoon effect: after a run-queue wait of {} us or more a carrier finds batches up to {:.1f}x "
                        "as large as after short waits, so requests arrive and leave in platoons",
                        kLongWaitNs / 1000, std::isfinite(max_ratio) ? max_ratio : 99.0);
  f.evidence = {{"max_ratio", std::isfinite(max_ratio) ? Value(round_to(max_ratio, 2)) : Value("inf")},
                {"batches", std::move(rows)}};
  f.threshold = {{"long_wait_us", static_cast<double>(kLongWaitNs) / 1e3},
                 {"min_cycles_each_side", kMinEffectSamples},
                 {"ratio_warn", kEffectRatioWarn},
                 {"ratio_critical", kEffectRatioCritical},
                 {"long_wait_share_pct_critical", kLongWaitSharePctCritical},
                 {"min_correlation", kMinCorrelation},
                 {"wait_cap_us_in_correlation", static_cast<double>(kWaitCapNs) / 1e3}};
  f.remedy = "Shorten the carriers' waits (the findings above say whose CPU they wait for): pin carriers "
             "(--pin), keep other work off their CPUs, or let an idle sibling take a stalled carrier's "
             "queue (platoon-server --work-stealing).";
  c.out.findings.push_back(std::move(f));
}

void check_poller(Ctx& c) {
  if (!c.w.has(kFieldPairs)) {
    c.not_evaluated("poller_competing", "the source has no wakers or preemptors (procfs)");
    return;
  }
  for (const ThreadWindow* p : c.roles.pollers) {
    uint64_t wakes = 0, preempts = 0, preempt_ns = 0;
    Array woken;
    for (const ThreadWindow* t : c.roles.carriers) {
      for (const auto& peer : t->woken_by)
        if (peer.tid == p->tid) {
          wakes += peer.count;
          woken.push_back(Object{{"thread", c.name(*t)}, {"count", peer.count}});
        }
      for (const auto& peer : t->preempted_by)
        if (peer.tid == p->tid) {
          preempts += peer.count;
          preempt_ns += peer.ns;
        }
    }
    uint64_t by_carriers = 0;
    for (const auto& peer : p->preempted_by)
      if (c.is_carrier(peer.tid)) by_carriers += peer.count;
    // Its own wait: behind another task when raw events tell (a poller wakes from idle often,
    // and that part of the tracepoint wait is the CPU's, not the carriers').
    const ThreadBatches* tb = batches_of(c, p->tid);
    const double own_wait = c.in.batches ? (tb ? pct_of(tb->contended_ns(), c.w.wall_s) : 0) : p->wait_pct;
    uint64_t behind_carriers_ns = 0;
    if (tb)
      for (const auto& [tid, b] : tb->behind)
        if (c.is_carrier(tid)) behind_carriers_ns += b.ns;
    const double wakes_s = per_s(static_cast<double>(wakes), c.w.wall_s);
    const double preempts_s = per_s(static_cast<double>(preempts), c.w.wall_s);
    if (wakes_s < kPollerWakeupsPerS) continue;
    if (preempts_s < kPollerPreemptionsPerS && own_wait < kWaitPctWarn) continue;
    Finding f;
    f.id = "poller_competing";
    f.severity = own_wait >= kWaitPctCritical ? Severity::critical : Severity::warn;
    f.threads = {c.name(*p)};
    f.title = fmt::format("{} wakes the carriers ({:.0f}/s) and competes with them for CPUs: it preempted them "
                          "{:.0f}/s and waited {:.1f}% of the time itself for a CPU (priority inversion: the carriers "
                          "wait for work only it can hand them)", c.name(*p), wakes_s, preempts_s, own_wait);
    f.evidence = {{"poller", c.name(*p)},
                  {"tid", p->tid},
                  {"wakes_carriers_per_s", round_to(wakes_s, 1)},
                  {"woken", std::move(woken)},
                  {"preempts_carriers_per_s", round_to(preempts_s, 1)},
                  {"carrier_wait_after_its_preemptions_ms", round_to(static_cast<double>(preempt_ns) / 1e6, 2)},
                  {"poller_wait_pct", round_to(p->wait_pct, 2)}};
    if (c.in.batches) {
      f.evidence.emplace_back("poller_contended_wait_pct", round_to(own_wait, 2));
      f.evidence.emplace_back("poller_waited_behind_carriers_ms", round_to(static_cast<double>(behind_carriers_ns) / 1e6, 2));
    }
    f.evidence.emplace_back("poller_preempted_by_carriers", by_carriers);
    f.threshold = {{"wakes_per_s", kPollerWakeupsPerS},
                   {"preempts_per_s", kPollerPreemptionsPerS},
                   {"poller_wait_pct", kWaitPctWarn},
                   {"poller_wait_held_against", c.in.batches ? "contended wait (raw events)" : "wait_pct"}};
    f.remedy = "Give the poller a CPU the carriers do not use (N+1 cores: --carriers one less than the CPUs, "
               "carriers pinned away from the poller's CPU), or rank it above them: platoon-server "
               "--poller-nice -5 or --carrier-nice 5 (renice/chrt for other servers).";
    c.out.findings.push_back(std::move(f));
  }
}

void check_oversubscribed(Ctx& c) {
  if (!c.w.has(kFieldRunWait)) {
    c.not_evaluated("oversubscribed", "the source has no run/wait times");
    return;
  }
  std::map<uint32_t, std::vector<const ThreadWindow*>> by_pid;
  for (const auto& t : c.w.threads) by_pid[t.pid].push_back(&t);
  for (const auto& [pid, ts] : by_pid) {
    uint32_t allowed = 0;
    std::string from;
    if (auto it = c.in.allowed_cpus.find(pid); it != c.in.allowed_cpus.end() && it->second > 0) {
      allowed = it->second;
      from = "affinity";
    } else if (c.w.has(kFieldCpuDist)) {
      std::set<uint32_t> cpus;
      for (auto* t : ts)
        for (auto [cpu, pct] : t->cpu_distribution) cpus.insert(cpu);
      allowed = static_cast<uint32_t>(cpus.size());
      if (c.in.ncpus) allowed = std::min(allowed, c.in.ncpus);
      from = "cpus the process ran on";
    }
    if (allowed == 0 && c.in.ncpus) {
      allowed = c.in.ncpus;
      from = "cpus of the machine";
    }
    if (allowed == 0) continue;
    Array busy;
    std::vector<std::string> names;
    double demand = 0;
    for (auto* t : ts) {
      const double share = t->cpu_pct + t->wait_pct;
      demand += share / 100.0;
      if (share < kBusyPct) continue;
      names.push_back(c.name(*t));
      busy.push_back(Object{{"thread", c.name(*t)}, {"tid", t->tid}, {"cpu_pct", round_to(t->cpu_pct, 1)},
                            {"wait_pct", round_to(t->wait_pct, 1)}});
    }
    const bool too_many = names.size() > allowed;
    const bool too_much = demand > kDemandFactor * allowed;
    if (!too_many && !too_much) continue;
    Finding f;
    f.id = "oversubscribed";
    f.severity = names.size() > 2 * static_cast<size_t>(allowed) || demand > 2.0 * allowed ? Severity::critical : Severity::warn;
    f.threads = names;
    f.title = fmt::format("pid {}: {} busy threads and {:.2f} CPUs of demand (run + wait) for {} CPU{} they may run on",
                          pid, names.size(), demand, allowed, allowed == 1 ? "" : "s");
    f.evidence = {{"pid", pid},         {"busy_threads", names.size()}, {"demand_cpus", round_to(demand, 2)},
                  {"allowed_cpus", allowed}, {"allowed_from", from},    {"busy", std::move(busy)}};
    f.threshold = {{"busy_pct", kBusyPct}, {"demand_per_allowed_cpu", kDemandFactor}};
    f.remedy = "Run no more busy threads than CPUs: fewer carriers or workers (--carriers), or give the process "
               "more CPUs (its cpuset / taskset); keep one CPU for the poller and helpers (N+1).";
    c.out.findings.push_back(std::move(f));
  }
}

void check_losses(Ctx& c) {
  const Losses& l = c.w.losses;
  const uint64_t got = c.in.batches ? c.in.batches->events() : 0;
  const double lost_pct = l.lost_events ? 100.0 * static_cast<double>(l.lost_events) / static_cast<double>(l.lost_events + got) : 0;
  const bool any = l.lost_events || l.untracked_threads || l.lost_pairs || l.lost_targets || c.in.truncated || !c.in.complete;
  if (!any) return;
  Finding f;
  f.id = "lost_events";
  const bool bad = lost_pct >= kLostEventsPctWarn || l.untracked_threads || l.lost_targets || c.in.truncated;
  f.severity = bad ? Severity::warn : Severity::info;
  std::vector<std::string> parts;
  if (l.lost_events) parts.push_back(fmt::format("{} raw events lost ({:.2f}%)", l.lost_events, lost_pct));
  if (l.untracked_threads) parts.push_back(fmt::format("{} threads not tracked", l.untracked_threads));
  if (l.lost_pairs) parts.push_back(fmt::format("{} preemptor/waker pairs lost", l.lost_pairs));
  if (l.lost_targets) parts.push_back(fmt::format("{} target processes missed", l.lost_targets));
  if (c.in.truncated) parts.push_back("the recording was cut short (" + c.in.truncated_reason + ")");
  else if (!c.in.complete) parts.push_back("the recorder did not stop cleanly");
  f.title = "the data is incomplete: " + fmt::format("{}", fmt::join(parts, "; "));
  f.evidence = {{"lost_events", l.lost_events},
                {"events_read", got},
                {"lost_events_pct", round_to(lost_pct, 3)},
                {"untracked_threads", l.untracked_threads},
                {"lost_pairs", l.lost_pairs},
                {"lost_targets", l.lost_targets},
                {"truncated", c.in.truncated ? 1 : 0},
                {"complete", c.in.complete ? 1 : 0},
                {"snapshots", c.in.snapshots}};
  f.threshold = {{"lost_events_pct_warn", kLostEventsPctWarn}, {"untracked_threads", 0}, {"lost_targets", 0}};
  f.remedy = "Lost events: a larger ring buffer (platoon record --ringbuf-mb 64) or a shorter interval between "
             "reads; untracked threads/pairs: the maps hold 16,384 entries, watch fewer processes. A cut-short "
             "recording holds what was written before; the findings cover only that.";
  c.out.findings.push_back(std::move(f));
}

KeyNumbers key_numbers(const Ctx& c) {
  KeyNumbers k;
  k.carriers = c.roles.carriers.size();
  if (c.roles.carriers.empty()) return k;
  uint64_t cycles = 0, events = 0, drains_n = 0, depth = 0;
  double migr = 0;
  for (const ThreadWindow* t : c.roles.carriers) {
    if (c.w.has(kFieldRunWait) && (!k.max_carrier_wait_pct || t->wait_pct > *k.max_carrier_wait_pct)) {
      k.max_carrier_wait_pct = t->wait_pct;
      k.max_wait_thread = c.name(*t);
    }
    migr += t->migrations_per_s;
    cycles += t->delta.io_cycles;
    events += t->delta.io_events;
    drains_n += t->delta.drains;
    depth += t->delta.drain_depth_sum;
  }
  if (c.w.has(kFieldMigrations)) k.carrier_migrations_per_s = migr;
  if (c.in.batches) {
    BatchStats all;  // the carriers' epoll returns pooled
    for (const ThreadWindow* t : c.roles.carriers) {
      const ThreadBatches* tb = batches_of(c, t->tid);
      if (!tb) continue;
      const double contended = pct_of(tb->contended_ns(), c.w.wall_s);
      if (!k.max_carrier_contended_wait_pct || contended > *k.max_carrier_contended_wait_pct)
        k.max_carrier_contended_wait_pct = contended;
      all.long_n += tb->epoll.long_n;
      all.long_sum += tb->epoll.long_sum;
      all.short_n += tb->epoll.short_n;
      all.short_sum += tb->epoll.short_sum;
    }
    if (all.long_n) k.batch_after_long_wait = all.long_mean();
    if (all.short_n) k.batch_after_short_wait = all.short_mean();
    if (all.long_n + all.short_n)
      k.long_wait_cycles_pct = 100.0 * static_cast<double>(all.long_n) / static_cast<double>(all.long_n + all.short_n);
  }
  if (c.w.has(kFieldIo) && cycles) k.events_per_cycle = static_cast<double>(events) / static_cast<double>(cycles);
  if (c.w.has(kFieldDrain) && drains_n) k.queue_depth_avg = static_cast<double>(depth) / static_cast<double>(drains_n);
  return k;
}

}  // namespace

size_t Diagnosis::count(Severity s) const {
  return static_cast<size_t>(std::count_if(findings.begin(), findings.end(), [s](const Finding& f) { return f.severity == s; }));
}
int Diagnosis::score() const {
  return static_cast<int>(100 * count(Severity::critical) + 10 * count(Severity::warn) + count(Severity::info));
}

Diagnosis diagnose(const DoctorInput& in) {
  Diagnosis d;
  static const Window kEmpty;
  const Window& w = in.window ? *in.window : kEmpty;
  d.label = in.label;
  d.source = to_string(w.source);
  d.duration_s = w.wall_s;
  Ctx c{in, w, find_roles(w), Names(w), {}, {}, d};
  for (auto* t : c.roles.carriers) {
    c.carrier_tids.insert(t->tid);
    d.carriers.push_back(c.name(*t));
  }
  for (const auto& t : w.threads) c.target_pids.insert(t.pid);

  if (c.roles.carriers.empty()) {
    const char* why = "no carrier or event-loop thread (none named carrier*, none with epoll cycles or drains)";
    for (const char* id : {"carrier_waiting", "carrier_migrating", "platoon_effect", "poller_competing"})
      c.not_evaluated(id, why);
  } else {
    check_waiting(c);
    check_migrating(c);
    check_platoon_effect(c);
    check_poller(c);
  }
  check_oversubscribed(c);
  check_losses(c);
  std::stable_sort(d.findings.begin(), d.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  d.key = key_numbers(c);
  return d;
}

// ---- text ----

namespace {

using Out = std::back_insert_iterator<std::string>;

std::string number(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.2f}", v);
}

std::string inline_value(const Value& v);
std::string inline_object(const Object& o) {
  std::vector<std::string> parts;
  for (const auto& [k, x] : o) parts.push_back(k + " " + inline_value(x));
  return fmt::format("{}", fmt::join(parts, ", "));
}
std::string inline_value(const Value& v) {
  if (v.null()) return "-";
  if (auto n = v.number()) return number(*n);
  if (auto s = v.string()) return *s;
  if (auto o = v.object()) return "{" + inline_object(*o) + "}";
  std::vector<std::string> parts;
  for (const auto& x : *v.array()) parts.push_back(inline_value(x));
  return "[" + fmt::format("{}", fmt::join(parts, "; ")) + "]";
}

// Evidence: scalars on one line each; a list of rows one row a line below its key.
void text_object(Out o, const Object& obj, const char* indent) {
  for (const auto& [k, v] : obj) {
    const Array* a = v.array();
    if (a && !a->empty() && (*a)[0].object()) {
      fmt::format_to(o, "{}{}:\n", indent, k);
      for (const auto& row : *a) fmt::format_to(o, "{}  - {}\n", indent, row.object() ? inline_object(*row.object()) : inline_value(row));
    } else {
      fmt::format_to(o, "{}{}: {}\n", indent, k, inline_value(v));
    }
  }
}

std::string upper(Severity s) {
  std::string u = to_string(s);
  for (char& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return u;
}

void text_findings(Out o, const Diagnosis& d) {
  if (d.findings.empty()) {
    if (d.carriers.empty())
      fmt::format_to(o, "no findings (but no carrier or event-loop thread was found: see below)\n");
    else
      fmt::format_to(o, "no findings: the carriers neither waited for a CPU nor migrated beyond the thresholds, "
                        "and the data is complete\n");
  } else {
    fmt::format_to(o, "{} finding{} ({} critical, {} warn, {} info)\n", d.findings.size(), d.findings.size() == 1 ? "" : "s",
                   d.count(Severity::critical), d.count(Severity::warn), d.count(Severity::info));
  }
  for (const auto& f : d.findings) {
    fmt::format_to(o, "\n[{}] {}: {}\n", upper(f.severity), f.id, f.title);
    if (!f.threads.empty()) fmt::format_to(o, "  threads: {}\n", fmt::join(f.threads, ", "));
    fmt::format_to(o, "  evidence:\n");
    text_object(o, f.evidence, "    ");
    fmt::format_to(o, "  threshold: {}\n", inline_object(f.threshold));
    fmt::format_to(o, "  remedy: {}\n", f.remedy);
  }
  if (!d.not_evaluated.empty()) {
    fmt::format_to(o, "\n");
    for (const auto& n : d.not_evaluated) fmt::format_to(o, "not evaluated: {}: {}\n", n.id, n.reason);
  }
}

void text_header(Out o, const Diagnosis& d) {
  fmt::format_to(o, "platoon doctor  {}\n", d.label);
  fmt::format_to(o, "source: {}, {:.2f} s; carriers: {}\n", d.source, d.duration_s,
                 d.carriers.empty() ? std::string("none found") : fmt::format("{}", fmt::join(d.carriers, ", ")));
}

}  // namespace

std::string text(const Diagnosis& d) {
  std::string s;
  text_header(std::back_inserter(s), d);
  text_findings(std::back_inserter(s), d);
  return s;
}

// ---- JSON ----

namespace {

template <class W>
void json_value(W& j, const Value& v) {
  if (v.null()) {
    j.Null();
  } else if (auto n = v.number()) {
    if (!std::isfinite(*n)) j.Null();
    else if (std::fabs(*n - std::round(*n)) < 1e-9 && std::fabs(*n) < 9e15) j.Int64(static_cast<int64_t>(std::llround(*n)));
    else j.Double(*n);
  } else if (auto s = v.string()) {
    j.String(s->c_str(), static_cast<rapidjson::SizeType>(s->size()));
  } else if (auto a = v.array()) {
    j.StartArray();
    for (const auto& x : *a) json_value(j, x);
    j.EndArray();
  } else {
    j.StartObject();
    for (const auto& [k, x] : *v.object()) {
      j.Key(k.c_str(), static_cast<rapidjson::SizeType>(k.size()));
      json_value(j, x);
    }
    j.EndObject();
  }
}

Value opt(std::optional<double> v, int decimals) {
  return v ? Value(round_to(*v, decimals)) : Value();
}

Object key_object(const KeyNumbers& k) {
  Object o{{"carriers", k.carriers}};
  if (k.max_carrier_wait_pct) {
    o.emplace_back("max_carrier_wait_pct", round_to(*k.max_carrier_wait_pct, 2));
    o.emplace_back("max_wait_thread", k.max_wait_thread);
  }
  if (k.max_carrier_contended_wait_pct)
    o.emplace_back("max_carrier_contended_wait_pct", round_to(*k.max_carrier_contended_wait_pct, 2));
  if (k.carrier_migrations_per_s) o.emplace_back("carrier_migrations_per_s", round_to(*k.carrier_migrations_per_s, 1));
  if (k.batch_after_long_wait) o.emplace_back("events_per_cycle_after_long_wait", round_to(*k.batch_after_long_wait, 3));
  if (k.batch_after_short_wait) o.emplace_back("events_per_cycle_after_short_wait", round_to(*k.batch_after_short_wait, 3));
  if (k.long_wait_cycles_pct) o.emplace_back("long_wait_cycles_pct", round_to(*k.long_wait_cycles_pct, 3));
  if (k.events_per_cycle) o.emplace_back("events_per_cycle", round_to(*k.events_per_cycle, 3));
  if (k.queue_depth_avg) o.emplace_back("queue_depth_avg", round_to(*k.queue_depth_avg, 3));
  return o;
}

Object finding_object(const Finding& f) {
  Array threads;
  for (const auto& t : f.threads) threads.emplace_back(t);
  return {{"id", f.id},          {"severity", to_string(f.severity)}, {"title", f.title}, {"threads", std::move(threads)},
          {"evidence", f.evidence}, {"threshold", f.threshold},         {"remedy", f.remedy}};
}

Object diagnosis_object(const Diagnosis& d) {
  Array findings, not_evaluated, carriers;
  for (const auto& f : d.findings) findings.emplace_back(finding_object(f));
  for (const auto& n : d.not_evaluated) not_evaluated.emplace_back(Object{{"id", n.id}, {"reason", n.reason}});
  for (const auto& c : d.carriers) carriers.emplace_back(c);
  return {{"source", d.source},
          {"file", d.label},
          {"duration_s", round_to(d.duration_s, 3)},
          {"carriers", std::move(carriers)},
          {"findings", std::move(findings)},
          {"not_evaluated", std::move(not_evaluated)},
          {"key_numbers", key_object(d.key)}};
}

std::string write_json(const Value& v, bool pretty) {
  rapidjson::StringBuffer buf;
  if (pretty) {
    rapidjson::PrettyWriter<rapidjson::StringBuffer> j(buf);
    j.SetIndent(' ', 2);
    json_value(j, v);
  } else {
    rapidjson::Writer<rapidjson::StringBuffer> j(buf);
    json_value(j, v);
  }
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

}  // namespace

std::string json(const Diagnosis& d, bool pretty) { return write_json(Value(diagnosis_object(d)), pretty); }

// ---- --vs ----

namespace {

std::string counts(const Diagnosis& d) {
  if (d.findings.empty()) return "0 findings";
  std::vector<std::string> parts;
  for (Severity s : {Severity::critical, Severity::warn, Severity::info})
    if (d.count(s)) parts.push_back(fmt::format("{} {}", d.count(s), to_string(s)));
  return fmt::format("{} finding{} ({})", d.findings.size(), d.findings.size() == 1 ? "" : "s", fmt::join(parts, ", "));
}

std::string opt_text(std::optional<double> v, int decimals) {
  return v ? fmt::format("{:.{}f}", *v, decimals) : std::string("-");
}

// Lower is better for every key number compared here; "notably" means beyond the noise of a
// shared 2-vCPU machine (1 point of %wait, 10 migrations/s).
void better_on(std::vector<std::string>& reasons, const char* what, std::optional<double> a, std::optional<double> b,
               double noise, int decimals, int healthier) {
  if (!a || !b || std::fabs(*a - *b) < noise) return;
  const bool b_lower = *b < *a;
  if ((healthier == 1) != b_lower) return;  // only the numbers that speak for the healthier run
  reasons.push_back(fmt::format("{} {} vs {}", what, opt_text(healthier == 1 ? b : a, decimals),
                                opt_text(healthier == 1 ? a : b, decimals)));
}

}  // namespace

Comparison compare(const Diagnosis& a, const Diagnosis& b) {
  Comparison c;
  const int sa = a.score(), sb = b.score();
  if (sa != sb) {
    c.healthier = sb < sa ? 1 : 0;
    const Diagnosis& h = c.healthier ? b : a;
    const Diagnosis& o = c.healthier ? a : b;
    c.reasons.push_back(fmt::format("{} vs {}", counts(h), counts(o)));
  } else {
    // Same findings weight: the key numbers decide, %wait first (it stalls a carrier's whole queue).
    auto lower = [](std::optional<double> x, std::optional<double> y, double noise) {
      return x && y && std::fabs(*x - *y) >= noise ? (*y < *x ? 1 : 0) : -1;
    };
    c.healthier = lower(a.key.max_carrier_contended_wait_pct, b.key.max_carrier_contended_wait_pct, 1.0);
    if (c.healthier < 0) c.healthier = lower(a.key.max_carrier_wait_pct, b.key.max_carrier_wait_pct, 1.0);
    if (c.healthier < 0) c.healthier = lower(a.key.carrier_migrations_per_s, b.key.carrier_migrations_per_s, 10.0);
    if (c.healthier < 0) {
      c.reasons.push_back(fmt::format("both have {} and their key numbers are within noise", counts(a)));
      return c;
    }
    c.reasons.push_back(fmt::format("both have {}", counts(a)));
  }
  const Diagnosis& h = c.healthier ? b : a;
  const Diagnosis& o = c.healthier ? a : b;
  // Which findings only the other run has.
  std::vector<std::string> only;
  for (const auto& f : o.findings)
    if (std::none_of(h.findings.begin(), h.findings.end(), [&](const Finding& g) { return g.id == f.id; }))
      only.push_back(fmt::format("{} ({})", f.id, to_string(f.severity)));
  if (!only.empty()) c.reasons.push_back(fmt::format("only the other run has {}", fmt::join(only, ", ")));
  better_on(c.reasons, "max carrier contended %wait", a.key.max_carrier_contended_wait_pct,
            b.key.max_carrier_contended_wait_pct, 1.0, 1, c.healthier);
  better_on(c.reasons, "max carrier %wait", a.key.max_carrier_wait_pct, b.key.max_carrier_wait_pct, 1.0, 1, c.healthier);
  better_on(c.reasons, "carrier migrations/s", a.key.carrier_migrations_per_s, b.key.carrier_migrations_per_s, 10.0, 0,
            c.healthier);
  return c;
}

std::string compare_text(const Diagnosis& a, const Diagnosis& b) {
  std::string s;
  Out o = std::back_inserter(s);
  const Comparison c = compare(a, b);
  fmt::format_to(o, "platoon doctor  A: {}  vs  B: {}\n\n", a.label, b.label);
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "", "A", "B");
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "findings", counts(a), counts(b));
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "carriers", a.key.carriers, b.key.carriers);
  auto wait = [](const KeyNumbers& k) {
    return k.max_carrier_wait_pct ? fmt::format("{:.1f} ({})", *k.max_carrier_wait_pct, k.max_wait_thread) : "-";
  };
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "max carrier %wait", wait(a.key), wait(b.key));
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "  contended (behind a task)", opt_text(a.key.max_carrier_contended_wait_pct, 1),
                 opt_text(b.key.max_carrier_contended_wait_pct, 1));
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "carrier migrations/s", opt_text(a.key.carrier_migrations_per_s, 1),
                 opt_text(b.key.carrier_migrations_per_s, 1));
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "events per epoll cycle", opt_text(a.key.events_per_cycle, 2),
                 opt_text(b.key.events_per_cycle, 2));
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "  after a wait >= 100 us", opt_text(a.key.batch_after_long_wait, 2),
                 opt_text(b.key.batch_after_long_wait, 2));
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "  after a shorter wait", opt_text(a.key.batch_after_short_wait, 2),
                 opt_text(b.key.batch_after_short_wait, 2));
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "  % cycles after >= 100 us", opt_text(a.key.long_wait_cycles_pct, 2),
                 opt_text(b.key.long_wait_cycles_pct, 2));
  fmt::format_to(o, "{:<26} {:>24} {:>24}\n", "queue depth at drain", opt_text(a.key.queue_depth_avg, 2),
                 opt_text(b.key.queue_depth_avg, 2));
  if (c.healthier < 0) fmt::format_to(o, "\nhealthier: neither: {}\n", fmt::join(c.reasons, "; "));
  else
    fmt::format_to(o, "\nhealthier: {} ({}): {}\n", c.healthier ? "B" : "A", c.healthier ? b.label : a.label,
                   fmt::join(c.reasons, "; "));
  fmt::format_to(o, "\n== A: {}\n", a.label);
  text_findings(o, a);
  fmt::format_to(o, "\n== B: {}\n", b.label);
  text_findings(o, b);
  return s;
}

std::string compare_json(const Diagnosis& a, const Diagnosis& b, bool pretty) {
  const Comparison c = compare(a, b);
  Array reasons;
  for (const auto& r : c.reasons) reasons.emplace_back(r);
  auto pair = [](std::optional<double> x, std::optional<double> y, int dec) { return Array{opt(x, dec), opt(y, dec)}; };
  Object side{{"findings", Array{a.findings.size(), b.findings.size()}},
              {"score", Array{a.score(), b.score()}},
              {"max_carrier_wait_pct", pair(a.key.max_carrier_wait_pct, b.key.max_carrier_wait_pct, 2)},
              {"max_carrier_contended_wait_pct", pair(a.key.max_carrier_contended_wait_pct, b.key.max_carrier_contended_wait_pct, 2)},
              {"carrier_migrations_per_s", pair(a.key.carrier_migrations_per_s, b.key.carrier_migrations_per_s, 1)},
              {"events_per_cycle", pair(a.key.events_per_cycle, b.key.events_per_cycle, 3)},
              {"events_per_cycle_after_long_wait", pair(a.key.batch_after_long_wait, b.key.batch_after_long_wait, 3)},
              {"events_per_cycle_after_short_wait", pair(a.key.batch_after_short_wait, b.key.batch_after_short_wait, 3)},
              {"long_wait_cycles_pct", pair(a.key.long_wait_cycles_pct, b.key.long_wait_cycles_pct, 3)},
              {"queue_depth_avg", pair(a.key.queue_depth_avg, b.key.queue_depth_avg, 3)}};
  Object top{{"healthier", c.healthier < 0 ? "neither" : c.healthier ? "b" : "a"},
             {"healthier_file", c.healthier < 0 ? "" : c.healthier ? b.label : a.label},
             {"why", std::move(reasons)},
             {"side_by_side", std::move(side)},
             {"a", diagnosis_object(a)},
             {"b", diagnosis_object(b)}};
  return write_json(Value(std::move(top)), pretty);
}

}  // namespace platoon::model::doctor
