#include "tui/analysis/doctor.hpp"
#include "tui/analysis/doctor_machine.hpp"

#include <fmt/format.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <set>

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

double round_to(double v, int decimals) {
  const double f = std::pow(10.0, decimals);
  return std::round(v * f) / f;
}

const char* to_string(Severity s) {
  switch (s) {
    case Severity::info: return "info";
    case Severity::warn: return "warn";
    case Severity::critical: return "critical";
  }
  return "info";
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
  Remedies remedies{in.runtime};

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
  const Remedies& r = c.remedies;
  f.remedy = outsiders || !own
                 ? "Keep other work off the carriers' CPUs: put the server on its own cpuset (taskset -c) and "
                   "the tasks it waits behind (above) on others, and pin each carrier to one CPU (" +
                       r.pin_carriers() + "). On a shared machine, fewer carriers than CPUs leaves room."
                 : "The carriers wait behind each other or their own process's threads: run no more busy "
                   "threads than CPUs (" + r.size_carriers("N-1") + " with a master poller, N+1 cores), "
                   "or pin each carrier to its own CPU (" + r.pin_carriers() + ").";
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
  f.remedy = c.remedies.kind == RuntimeKind::platoon
                 ? "Pin each carrier to its own CPU: platoon-server --pin (carrier i on the i-th allowed CPU), "
                   "or taskset -pc CPU TID per carrier thread."
                 : "Keep each carrier on one CPU: " + c.remedies.pin_carriers() + " (nginx: worker_cpu_affinity auto).";
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
  f.remedy = "Shorten the carriers' waits (the findings above say whose CPU they wait for): pin carriers (" +
             c.remedies.pin_carriers() + "), keep other work off their CPUs, or let an idle sibling take a stalled "
             "carrier's queue (" + c.remedies.share_queues() + ").";
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
    f.remedy = "Give the poller a CPU the carriers do not use (N+1 cores: " + c.remedies.size_carriers("N-1") +
               " for N CPUs, carriers pinned away from the poller's CPU), or rank it above them: " +
               c.remedies.poller_priority() + ".";
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
    f.remedy = "Run no more busy threads than CPUs: fewer carriers or workers (" + c.remedies.size_carriers(allowed) +
               " here, one less to leave the poller a CPU), or give the process more CPUs (its cpuset / taskset); "
               "keep one CPU for the poller and helpers (N+1).";
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
             "reads; untracked threads/pairs: the maps hold 16,384 entries by default: raise --threads-max / --pairs-max or watch fewer processes. A cut-short "
             "recording holds what was written before; the findings cover only that.";
  c.out.findings.push_back(std::move(f));
}

// Quota, steal and interrupts: about the carriers when there are any, else the busy threads
// (a JVM's or Go's workers need not look like event loops to be throttled).
void check_machine(Ctx& c) {
  std::vector<const ThreadWindow*> threads = c.roles.carriers;
  if (threads.empty())
    for (const auto& t : c.w.threads)
      if (t.cpu_pct + t.wait_pct >= kBusyPct) threads.push_back(&t);
  if (threads.empty())
    for (const auto& t : c.w.threads) threads.push_back(&t);
  MachineCheckInput in{c.w, std::move(threads), [&c](const ThreadWindow& t) { return c.name(t); }, c.remedies};
  check_throttled(in, c.out.findings, c.out.not_evaluated);
  check_steal(in, c.out.findings, c.out.not_evaluated);
  check_irq(in, c.out.findings, c.out.not_evaluated);
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
  d.runtime = in.runtime;
  Ctx c{in, w, find_roles(w), Names(w), {}, {}, d};
  for (auto* t : c.roles.carriers) {
    c.carrier_tids.insert(t->tid);
    d.carriers.push_back(c.name(*t));
    d.carrier_wait.push_back({c.name(*t), t->tid, t->wait_pct,
                              w.has(kFieldWaitSplit) ? std::optional<WaitSplit>(t->wait_split) : std::nullopt,
                              w.fields});
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
  check_machine(c);
  check_losses(c);
  std::stable_sort(d.findings.begin(), d.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  d.key = key_numbers(c);
  return d;
}

}  // namespace platoon::model::doctor
