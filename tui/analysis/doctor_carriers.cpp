// The checks of the event loops themselves: carrier_waiting, carrier_migrating, platoon_effect
// and poller_competing (doctor_checks.hpp lists them with what they need).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tui/analysis/doctor_checks.hpp"
#include "tui/analysis/doctor_peers.hpp"

namespace platoon::analysis::doctor {

namespace {

// One carrier's row of carrier_waiting's evidence.
Object waiting_row(const Context& c, const ThreadWindow& t, const ThreadBatches* tb, double contended) {
  Object row{{"thread", c.name(t)}, {"tid", t.tid}, {"wait_pct", round_to(t.wait_pct, 2)}};
  if (tb) {
    row.emplace_back("contended_wait_pct", round_to(contended, 2));
    row.emplace_back("idle_exit_wait_pct", round_to(c.pct_of_wall(tb->idle_exit_ns), 2));
  }
  row.emplace_back("cpu_pct", round_to(t.cpu_pct, 2));
  row.emplace_back("preemptions_per_s", round_to(t.nvcswch_per_s, 1));
  if (t.runq && t.runq->samples) {
    row.emplace_back("runq_p99_us", round_to(t.runq->p99_us, 1));
    row.emplace_back("runq_max_us", round_to(t.runq->max_us, 1));
  }
  return row;
}

std::string waiting_remedy(const Remedies& r, const Culprits& who) {
  return who.outsiders || !who.own
             ? "Keep other work off the carriers' CPUs: put the server on its own cpuset (taskset -c) and "
               "the tasks it waits behind (above) on others, and pin each carrier to one CPU (" +
                   r.pin_carriers() + "). On a shared machine, fewer carriers than CPUs leaves room."
             : "The carriers wait behind each other or their own process's threads: run no more busy "
               "threads than CPUs (" + r.size_carriers("N-1") + " with a master poller, N+1 cores), "
               "or pin each carrier to its own CPU (" + r.pin_carriers() + ").";
}

Object cpu_distribution(const ThreadWindow& t) {
  Object o;
  for (auto [cpu, pct] : t.cpu_distribution) o.emplace_back(std::to_string(cpu), round_to(pct, 1));
  return o;
}

}  // namespace

// With raw events the check is held against the contended wait (behind another task); without,
// against the whole tracepoint wait, which also holds the CPU's wake-up from idle.
void check_waiting(const Context& c, CheckResult& out) {
  Finding f;
  Array rows;
  std::map<uint32_t, Peer> preempted, behind;
  double max_wait = 0;
  const bool events = c.in.batches != nullptr;
  for (const ThreadWindow* t : c.roles.carriers) {
    const ThreadBatches* tb = c.batches_of(t->tid);
    const double contended = tb ? c.pct_of_wall(tb->contended_ns()) : 0;
    const double measured = events ? contended : t->wait_pct;
    if (measured < kWaitPctWarn) continue;
    f.threads.push_back(c.name(*t));
    max_wait = std::max(max_wait, measured);
    rows.push_back(waiting_row(c, *t, tb, contended));
    if (tb)
      for (const auto& [tid, b] : tb->behind) add_peer(behind, tid, b.pid, b.comm, b.count, b.ns);
    for (const auto& p : t->preempted_by) add_peer(preempted, p.tid, p.pid, p.comm, p.count, p.ns);
  }
  if (f.threads.empty()) return;
  f.severity = max_wait >= kWaitPctCritical ? Severity::critical : Severity::warn;
  f.evidence = {{events ? "max_contended_wait_pct" : "max_wait_pct", round_to(max_wait, 2)}, {"carriers", std::move(rows)}};
  // Who: the tasks the carriers waited behind (raw events), else the preemptors (aggregates).
  Culprits who;
  if (events) {
    const std::vector<PeerRow> waited_behind = peer_rows(behind, c, 5);
    who.note(waited_behind);
    f.evidence.emplace_back("waited_behind", array_of(waited_behind));
  }
  if (c.w.has(snapshot::kFieldPairs)) {
    const std::vector<PeerRow> preempted_by = peer_rows(preempted, c, 5);
    who.note(preempted_by);
    f.evidence.emplace_back("preempted_by", array_of(preempted_by));
  } else {
    f.evidence.emplace_back("preempted_by", "not recorded by this source (procfs): record with BPF to see who");
  }
  f.title = events ? fmt::format("carriers wait for a CPU another task holds: up to {:.1f}% of the time{}", max_wait, who.who)
                   : fmt::format("carriers wait for a CPU: up to {:.1f}% of the time runnable but not running{}", max_wait, who.who);
  f.threshold = {{"wait_pct_warn", kWaitPctWarn},
                 {"wait_pct_critical", kWaitPctCritical},
                 {"held_against", events ? "contended wait (raw events: the CPU was held by another task)"
                                         : "wait_pct (no raw events: includes the CPU's wake-up from idle)"}};
  f.remedy = waiting_remedy(c.remedies, who);
  out.findings.push_back(std::move(f));
}

void check_migrating(const Context& c, CheckResult& out) {
  Finding f;
  Array rows;
  double max_rate = 0;
  for (const ThreadWindow* t : c.roles.carriers) {
    const uint64_t ins = t->delta.switch_ins ? t->delta.switch_ins : t->delta.switches_voluntary + t->delta.switches_involuntary;
    const double share = ins ? 100.0 * static_cast<double>(t->migrations) / static_cast<double>(ins) : 100.0;
    if (t->migrations_per_s < kMigrationsPerSWarn || share < kMigrationShareWarn) continue;
    f.threads.push_back(c.name(*t));
    max_rate = std::max(max_rate, t->migrations_per_s);
    Object row{{"thread", c.name(*t)},
               {"tid", t->tid},
               {"migrations_per_s", round_to(t->migrations_per_s, 1)},
               {"migrations", t->migrations},
               {"migration_share_pct", round_to(share, 1)}};
    if (c.w.has(snapshot::kFieldCpuDist) && !t->cpu_distribution.empty()) {
      double top = 0;
      for (auto [cpu, pct] : t->cpu_distribution) top = std::max(top, pct);
      row.emplace_back("cpu_distribution", cpu_distribution(*t));
      row.emplace_back("top_cpu_share_pct", round_to(top, 1));
    }
    rows.push_back(std::move(row));
  }
  if (f.threads.empty()) return;
  f.severity = max_rate >= kMigrationsPerSCritical ? Severity::critical : Severity::warn;
  f.title = fmt::format("carriers move between CPUs: up to {:.0f} migrations/s (cold caches, and a carrier "
                        "queued behind whatever runs on the CPU it lands on)", max_rate);
  f.evidence = {{"max_migrations_per_s", round_to(max_rate, 1)}, {"carriers", std::move(rows)}};
  f.threshold = {{"migrations_per_s_warn", kMigrationsPerSWarn},
                 {"migration_share_pct_warn", kMigrationShareWarn},
                 {"migrations_per_s_critical", kMigrationsPerSCritical}};
  f.remedy = c.remedies.kind == snapshot::RuntimeKind::platoon
                 ? "Pin each carrier to its own CPU: platoon-server --pin (carrier i on the i-th allowed CPU), "
                   "or taskset -pc CPU TID per carrier thread."
                 : "Keep each carrier on one CPU: " + c.remedies.pin_carriers() + " (nginx: worker_cpu_affinity auto).";
  out.findings.push_back(std::move(f));
}

namespace {

// One kind of batch of one carrier: its evidence row, and whether it shows the effect.
struct EffectRow {
  std::string thread;
  uint32_t tid = 0;
  const char* kind = "";
  BatchStats stats;
  std::optional<double> correlation;
  double ratio = 0;            // mean batch after long waits ÷ after short ones
  double long_share_pct = 0;   // of the cycles, those after a long wait
  bool effect = false;

  Value value() const {
    Object row{{"thread", thread},
               {"tid", tid},
               {"batch", kind},
               {"cycles", stats.samples},
               {"after_long_wait", Object{{"cycles", stats.long_n}, {"mean", round_to(stats.long_mean(), 3)}}},
               {"long_wait_share_pct", round_to(long_share_pct, 2)},
               {"after_short_wait", Object{{"cycles", stats.short_n}, {"mean", round_to(stats.short_mean(), 3)}}}};
    row.emplace_back("ratio", std::isfinite(ratio) ? Value(round_to(ratio, 2)) : Value("inf"));
    row.emplace_back("correlation", correlation ? Value(round_to(*correlation, 3)) : Value("n/a"));
    return row;
  }
};

EffectRow effect_row(std::string thread, uint32_t tid, const char* kind, const BatchStats& s) {
  EffectRow e{std::move(thread), tid, kind, s, s.correlation()};
  const bool enough = s.long_n >= kMinEffectSamples && s.short_n >= kMinEffectSamples;
  const double lm = s.long_mean(), sm = s.short_mean();
  // With no batch at all after short waits, any batch after long ones is the effect.
  e.ratio = sm > 0 ? lm / sm : (lm > 0 ? INFINITY : 0);
  e.effect = enough && e.ratio >= kEffectRatioWarn && e.correlation && *e.correlation >= kMinCorrelation;
  e.long_share_pct = s.samples ? 100.0 * static_cast<double>(s.long_n) / static_cast<double>(s.samples) : 0;
  return e;
}

}  // namespace

void check_platoon_effect(const Context& c, CheckResult& out) {
  std::vector<EffectRow> rows;
  Finding f;
  double max_ratio = 0;
  bool common = false;  // long waits before at least kLongWaitSharePctCritical of a carrier's cycles
  for (const ThreadWindow* t : c.roles.carriers) {
    const ThreadBatches* b = c.batches_of(t->tid);
    if (!b) continue;
    bool shows = false;
    for (auto [kind, stats] : {std::pair{"events_per_epoll_return", &b->epoll}, std::pair{"queue_depth_at_drain", &b->drain}}) {
      if (stats->samples == 0) continue;
      EffectRow e = effect_row(c.name(*t), t->tid, kind, *stats);
      if (e.effect) {
        shows = true;
        max_ratio = std::max(max_ratio, e.ratio);
        common |= e.long_share_pct >= kLongWaitSharePctCritical;
      }
      rows.push_back(std::move(e));
    }
    if (shows) f.threads.push_back(c.name(*t));
  }
  if (rows.empty()) {
    out.not_evaluated = "the raw events hold no epoll return or drain of a carrier";
    return;
  }
  if (f.threads.empty()) return;  // evaluated (or too few long waits to matter): no effect
  f.severity = max_ratio >= kEffectRatioCritical && common ? Severity::critical : Severity::warn;
  f.title = fmt::format("platoon effect: after a run-queue wait of {} us or more a carrier finds batches up to {:.1f}x "
                        "as large as after short waits, so requests arrive and leave in platoons",
                        kLongWaitNs / 1000, std::isfinite(max_ratio) ? max_ratio : 99.0);
  f.evidence = {{"max_ratio", std::isfinite(max_ratio) ? Value(round_to(max_ratio, 2)) : Value("inf")},
                {"batches", array_of(rows)}};
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
  out.findings.push_back(std::move(f));
}

namespace {

// What one poller does to the carriers and what they do to it, over the window.
struct PollerLoad {
  uint64_t wakes = 0, preempts = 0, preempt_ns = 0;
  Array woken;                      // the carriers it woke, with how often
  uint64_t preempted_by_carriers = 0;
  double own_wait = 0;              // its wait for a CPU, contended part when raw events tell
  uint64_t behind_carriers_ns = 0;  // of that, behind carriers (raw events)
};

PollerLoad poller_load(const Context& c, const ThreadWindow& p) {
  PollerLoad l;
  for (const ThreadWindow* t : c.roles.carriers) {
    for (const auto& peer : t->woken_by)
      if (peer.tid == p.tid) {
        l.wakes += peer.count;
        l.woken.push_back(Object{{"thread", c.name(*t)}, {"count", peer.count}});
      }
    for (const auto& peer : t->preempted_by)
      if (peer.tid == p.tid) {
        l.preempts += peer.count;
        l.preempt_ns += peer.ns;
      }
  }
  for (const auto& peer : p.preempted_by)
    if (c.is_carrier(peer.tid)) l.preempted_by_carriers += peer.count;
  // Its own wait: behind another task when raw events tell (a poller wakes from idle often,
  // and that part of the tracepoint wait is the CPU's, not the carriers').
  const ThreadBatches* tb = c.batches_of(p.tid);
  l.own_wait = c.in.batches ? (tb ? c.pct_of_wall(tb->contended_ns()) : 0) : p.wait_pct;
  if (tb)
    for (const auto& [tid, b] : tb->behind)
      if (c.is_carrier(tid)) l.behind_carriers_ns += b.ns;
  return l;
}

}  // namespace

void check_poller(const Context& c, CheckResult& out) {
  for (const ThreadWindow* p : c.roles.pollers) {
    PollerLoad l = poller_load(c, *p);
    const double wakes_s = c.per_s(static_cast<double>(l.wakes));
    const double preempts_s = c.per_s(static_cast<double>(l.preempts));
    if (wakes_s < kPollerWakeupsPerS) continue;
    if (preempts_s < kPollerPreemptionsPerS && l.own_wait < kWaitPctWarn) continue;
    Finding f;
    f.severity = l.own_wait >= kWaitPctCritical ? Severity::critical : Severity::warn;
    f.threads = {c.name(*p)};
    f.title = fmt::format("{} wakes the carriers ({:.0f}/s) and competes with them for CPUs: it preempted them "
                          "{:.0f}/s and waited {:.1f}% of the time itself for a CPU (priority inversion: the carriers "
                          "wait for work only it can hand them)", c.name(*p), wakes_s, preempts_s, l.own_wait);
    f.evidence = {{"poller", c.name(*p)},
                  {"tid", p->tid},
                  {"wakes_carriers_per_s", round_to(wakes_s, 1)},
                  {"woken", std::move(l.woken)},
                  {"preempts_carriers_per_s", round_to(preempts_s, 1)},
                  {"carrier_wait_after_its_preemptions_ms", round_to(static_cast<double>(l.preempt_ns) / 1e6, 2)},
                  {"poller_wait_pct", round_to(p->wait_pct, 2)}};
    if (c.in.batches) {
      f.evidence.emplace_back("poller_contended_wait_pct", round_to(l.own_wait, 2));
      f.evidence.emplace_back("poller_waited_behind_carriers_ms", round_to(static_cast<double>(l.behind_carriers_ns) / 1e6, 2));
    }
    f.evidence.emplace_back("poller_preempted_by_carriers", l.preempted_by_carriers);
    f.threshold = {{"wakes_per_s", kPollerWakeupsPerS},
                   {"preempts_per_s", kPollerPreemptionsPerS},
                   {"poller_wait_pct", kWaitPctWarn},
                   {"poller_wait_held_against", c.in.batches ? "contended wait (raw events)" : "wait_pct"}};
    f.remedy = "Give the poller a CPU the carriers do not use (N+1 cores: " + c.remedies.size_carriers("N-1") +
               " for N CPUs, carriers pinned away from the poller's CPU), or rank it above them: " +
               c.remedies.poller_priority() + ".";
    out.findings.push_back(std::move(f));
  }
}

}  // namespace platoon::analysis::doctor
