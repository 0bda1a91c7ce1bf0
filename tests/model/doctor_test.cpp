// platoon doctor on synthetic windows and event streams: every finding present when its numbers
// cross the threshold and absent when they do not, the checks a source cannot answer named, the
// JSON contract of ARCHITECTURE.md parsed back, and --vs picking the healthier run.
#include "tui/analysis/doctor.hpp"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstring>

#include "tests/model/builders.hpp"
#include "tests/model/doctor_helpers.hpp"
#include "tui/trace/trace_reader.hpp"

namespace platoon::analysis::doctor {
namespace {

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kUs = 1'000;
constexpr uint32_t kPid = 1200;

using test::parse_json;  // tests/model/builders.hpp
using test::Scenario;

// Raw event records laid end to end, as a recording holds them.
class Events {
 public:
  void sw(uint64_t ts, uint32_t prev, uint32_t next, bool preempted, const char* prev_comm = "x",
          const char* next_comm = "x") {
    platoon_ev_switch e{};
    head(e.h, ts, PLATOON_EV_SWITCH, prev);
    e.prev_pid = prev ? kPid : 0;
    e.next_tid = next;
    e.next_pid = next ? kPid : 0;
    e.prev_state = preempted ? 0 : 1;
    std::strncpy(e.prev_comm, prev_comm, sizeof e.prev_comm - 1);
    std::strncpy(e.next_comm, next_comm, sizeof e.next_comm - 1);
    put(e);
  }
  void wakeup(uint64_t ts, uint32_t tid) {
    platoon_ev_wake e{};
    head(e.h, ts, PLATOON_EV_WAKEUP, tid);
    put(e);
  }
  void epoll(uint64_t ts, uint32_t tid, int32_t n) {
    platoon_ev_epoll e{};
    head(e.h, ts, PLATOON_EV_EPOLL, tid);
    e.nevents = n;
    put(e);
  }
  void drain(uint64_t ts, uint32_t tid, int64_t depth) {
    platoon_ev_runtime e{};
    head(e.h, ts, PLATOON_EV_DRAIN, tid);
    e.a = depth;
    put(e);
  }
  // Feeds every record to a tracker, in file order or with neighbours swapped (the ring buffer
  // delivers nearly, not strictly, in timestamp order).
  BatchTracker track(bool shuffle = false) const {
    std::vector<std::pair<const uint8_t*, size_t>> recs;
    trace::for_each_event(std::span<const uint8_t>(bytes_), [&](const platoon_event_header&, const void* r, size_t n) {
      recs.emplace_back(static_cast<const uint8_t*>(r), n);
    });
    if (shuffle)
      for (size_t i = 0; i + 1 < recs.size(); i += 2) std::swap(recs[i], recs[i + 1]);
    BatchTracker t;
    for (auto [r, n] : recs) {
      platoon_event_header h;
      std::memcpy(&h, r, sizeof h);
      t.add(h, r, n);
    }
    t.finish();
    return t;
  }

 private:
  static void head(platoon_event_header& h, uint64_t ts, uint16_t type, uint32_t tid) {
    h.ts_ns = ts;
    h.type = type;
    h.tid = tid;
  }
  template <class T>
  void put(const T& e) {
    const auto* p = reinterpret_cast<const uint8_t*>(&e);
    bytes_.insert(bytes_.end(), p, p + sizeof e);
  }
  std::vector<uint8_t> bytes_;
};

// A carrier (tid 11) that every `every`-th cycle is preempted by a hog (tid 99) for `long_wait`
// and then returns `long_batch` events; the other cycles it sleeps, is woken onto an idle CPU
// (5 µs) and returns `short_batch`.
Events carrier_cycles(int cycles, int every, uint64_t long_wait, int long_batch, int short_batch) {
  Events ev;
  uint64_t t = kSec;
  for (int i = 0; i < cycles; ++i) {
    if (i % every == 0) {
      ev.sw(t, 11, 99, /*preempted=*/true, "carrier-0", "hog");
      t += long_wait;
      ev.sw(t, 99, 11, false, "hog", "carrier-0");
      ev.epoll(t + 2 * kUs, 11, long_batch);
      ev.drain(t + 3 * kUs, 11, long_batch);
    } else {
      ev.sw(t, 11, 0, false, "carrier-0", "swapper");
      ev.wakeup(t + 50 * kUs, 11);
      t += 55 * kUs;
      ev.sw(t, 0, 11, false, "swapper", "carrier-0");
      ev.epoll(t + 2 * kUs, 11, short_batch);
      ev.drain(t + 3 * kUs, 11, short_batch);
    }
    t += 10 * kUs;
  }
  return ev;
}

Diagnosis run(const Window& w, const BatchTracker* batches = nullptr, DoctorInput extra = {}) {
  extra.label = "test";
  extra.window = &w;
  extra.batches = batches;
  if (!extra.ncpus) extra.ncpus = 2;
  return diagnose(extra);
}


// ---- healthy ----

TEST(DoctorHealthy, NoFindingsAndAnEmptyJsonList) {
  tests::test::Scenario s;
  s.carrier(11, "carrier-0", 40, 1);
  s.carrier(12, "carrier-1", 40, 1);
  const Window w = s.window();
  const Diagnosis d = run(w);
  EXPECT_TRUE(d.findings.empty());
  EXPECT_EQ(d.carriers, (std::vector<std::string>{"carrier-0", "carrier-1"}));
  EXPECT_NE(text(d).find("no findings"), std::string::npos);
  auto j = tests::test::parse_json(json(d));
  ASSERT_TRUE(j["findings"].IsArray());
  EXPECT_EQ(j["findings"].Size(), 0u);
  EXPECT_STREQ(j["source"].GetString(), "bpf");
  // Without raw events the platoon effect is said to be unevaluated, never silently skipped.
  EXPECT_TRUE(not_evaluated(d, "platoon_effect"));
}

// ---- carrier_waiting ----

TEST(DoctorWaiting, PresentWithWhoPreempted) {
  tests::test::Scenario s;
  s.carrier(11, "carrier-0", 40, 7.5);
  s.carrier(12, "carrier-1", 40, 1);
  s.pair(11, PairKind::preempted_by, 50, 900, "mock-loop-0", 1000, 60'000'000);
  s.pair(11, PairKind::preempted_by, 51, 901, "platoon-load", 500, 20'000'000);
  const Window w = s.window();
  const Diagnosis d = run(w);
  const Finding* f = finding(d, "carrier_waiting");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::warn);
  EXPECT_EQ(f->threads, std::vector<std::string>{"carrier-0"});
  EXPECT_NEAR(num(f->evidence, "max_wait_pct"), 7.5, 0.01);
  EXPECT_DOUBLE_EQ(num(f->threshold, "wait_pct_warn"), kWaitPctWarn);
  const Array* by = find(f->evidence, "preempted_by")->array();
  ASSERT_TRUE(by && by->size() == 2);
  EXPECT_EQ(*(*by)[0].find("comm")->string(), "mock-loop-0");
  EXPECT_EQ(*(*by)[0].find("where")->string(), "outside the target");
  EXPECT_NEAR(*(*by)[0].find("share_pct")->number(), 75.0, 0.1);
  // An unknown runtime is told taskset; platoon-runtime its own flag.
  EXPECT_NE(f->remedy.find("taskset"), std::string::npos);
  DoctorInput platoon;
  platoon.runtime = RuntimeKind::platoon;
  EXPECT_NE(finding(run(w, nullptr, platoon), "carrier_waiting")->remedy.find("--pin"), std::string::npos);

  auto j = tests::test::parse_json(json(d));
  const auto& jf = j["findings"][0];
  EXPECT_STREQ(jf["id"].GetString(), "carrier_waiting");
  EXPECT_STREQ(jf["severity"].GetString(), "warn");
  EXPECT_STREQ(jf["threads"][0].GetString(), "carrier-0");
  EXPECT_TRUE(jf["evidence"].IsObject());
  EXPECT_TRUE(jf["threshold"].IsObject());
  EXPECT_TRUE(jf["remedy"].IsString());
}

TEST(DoctorWaiting, CriticalAtTenPercentAbsentBelowThree) {
  tests::test::Scenario hi, lo;
  hi.carrier(11, "carrier-0", 40, 12);
  lo.carrier(11, "carrier-0", 40, 2.9);
  const Window wh = hi.window(), wl = lo.window();
  ASSERT_NE(finding(run(wh), "carrier_waiting"), nullptr);
  EXPECT_EQ(finding(run(wh), "carrier_waiting")->severity, Severity::critical);
  EXPECT_EQ(finding(run(wl), "carrier_waiting"), nullptr);
}

TEST(DoctorWaiting, WithEventsOnlyTheContendedWaitCounts) {
  // 6% tracepoint wait, but every wait ends with a switch from the idle task: the CPU waking
  // up, not another task holding it (a pinned carrier on an idle machine).
  tests::test::Scenario s;
  s.carrier(11, "carrier-0", 40, 6);
  const Window w = s.window();
  Events idle;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t t = kSec + i * 1000 * kUs;
    idle.sw(t, 11, 0, false);
    idle.wakeup(t + 100 * kUs, 11);
    idle.sw(t + 160 * kUs, 0, 11, false);  // 60 ms of idle-exit wait in all
  }
  const BatchTracker ti = idle.track();
  EXPECT_EQ(ti.threads().at(11).idle_exit_ns, 60'000'000u);
  EXPECT_EQ(ti.threads().at(11).contended_ns(), 0u);
  EXPECT_EQ(finding(run(w, &ti), "carrier_waiting"), nullptr);

  // The same waits ended by a hog handing over the CPU: 600 ms = 6% contended.
  Events hog;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t t = kSec + i * 1000 * kUs;
    hog.sw(t, 11, 99, true, "carrier-0", "hog");
    hog.sw(t + 600 * kUs, 99, 11, false, "hog", "carrier-0");
  }
  const BatchTracker th = hog.track();
  const Diagnosis d = run(w, &th);
  const Finding* f = finding(d, "carrier_waiting");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(num(f->evidence, "max_contended_wait_pct"), 6.0, 0.01);
  const Array* behind = find(f->evidence, "waited_behind")->array();
  ASSERT_TRUE(behind && !behind->empty());
  EXPECT_EQ(*(*behind)[0].find("comm")->string(), "hog");
  EXPECT_EQ(*(*behind)[0].find("count")->number(), 1000);
}

// ---- carrier_migrating ----

TEST(DoctorMigrating, PresentCriticalWarnAndAbsent) {
  auto diag = [](uint64_t migrations, uint64_t ins, std::vector<uint64_t> dist) {
    tests::test::Scenario s;
    snapshot::ThreadSample& t = s.thread(11, "carrier-0", 40, 1, ins, dist);
    t.migrations = migrations;
    const Window w = s.window();
    return run(w);
  };
  const Diagnosis many = diag(5000, 36000, {18000, 18000});  // 500/s, 14% of switch-ins
  const Finding* f = finding(many, "carrier_migrating");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::critical);
  EXPECT_NEAR(num(f->evidence, "max_migrations_per_s"), 500, 0.01);
  const Value& row = (*find(f->evidence, "carriers")->array())[0];
  EXPECT_NEAR(*row.find("top_cpu_share_pct")->number(), 50, 0.01);
  EXPECT_NEAR(*row.find("cpu_distribution")->find("1")->number(), 50, 0.01);
  EXPECT_NE(f->remedy.find("taskset"), std::string::npos);

  const Diagnosis some = diag(200, 5000, {2500, 2500});  // 20/s, 4%
  ASSERT_NE(finding(some, "carrier_migrating"), nullptr);
  EXPECT_EQ(finding(some, "carrier_migrating")->severity, Severity::warn);

  EXPECT_EQ(finding(diag(0, 36000, {0, 36000}), "carrier_migrating"), nullptr);        // pinned
  EXPECT_EQ(finding(diag(150, 100000, {50000, 50000}), "carrier_migrating"), nullptr);  // 15/s but 0.15%
}

// ---- platoon_effect ----

TEST(DoctorPlatoonEffect, BatchesGrowAfterLongWaits) {
  tests::test::Scenario s;
  s.carrier(11, "carrier-0", 40, 1);
  const Window w = s.window();
  const BatchTracker t = carrier_cycles(2000, 5, 500 * kUs, 8, 1).track();
  const ThreadBatches& b = t.threads().at(11);
  // The first cycle's history is unknown and skipped; every 5th of the rest follows a long wait.
  EXPECT_EQ(b.epoll.samples, 1999u);
  EXPECT_EQ(b.epoll.long_n, 399u);
  EXPECT_DOUBLE_EQ(b.epoll.long_mean(), 8.0);
  EXPECT_DOUBLE_EQ(b.epoll.short_mean(), 1.0);
  EXPECT_GT(*b.epoll.correlation(), 0.9);
  EXPECT_EQ(b.preemptions, 400u);

  const Diagnosis d = run(w, &t);
  const Finding* f = finding(d, "platoon_effect");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::critical);  // 8x, and a fifth of the cycles
  EXPECT_NEAR(num(f->evidence, "max_ratio"), 8.0, 0.01);
  const Array* rows = find(f->evidence, "batches")->array();
  ASSERT_EQ(rows->size(), 2u);  // epoll returns and drains
  EXPECT_EQ(*(*rows)[0].find("batch")->string(), "events_per_epoll_return");
  EXPECT_NEAR(*(*rows)[0].find("after_long_wait")->find("mean")->number(), 8.0, 1e-9);
  EXPECT_NEAR(*(*rows)[0].find("after_short_wait")->find("mean")->number(), 1.0, 1e-9);
  EXPECT_GT(*(*rows)[0].find("correlation")->number(), 0.9);
  EXPECT_DOUBLE_EQ(num(f->threshold, "long_wait_us"), 100);
  EXPECT_FALSE(not_evaluated(d, "platoon_effect"));

  // Out-of-order delivery (neighbours swapped) gives the same statistics.
  const BatchTracker shuffled = carrier_cycles(2000, 5, 500 * kUs, 8, 1).track(true);
  EXPECT_EQ(shuffled.threads().at(11).epoll.long_n, 399u);
  EXPECT_DOUBLE_EQ(shuffled.threads().at(11).epoll.long_mean(), 8.0);
}

TEST(DoctorPlatoonEffect, AbsentWhenBatchesDoNotGrowOrWaitsAreRare) {
  tests::test::Scenario s;
  s.carrier(11, "carrier-0", 40, 1);
  const Window w = s.window();
  const BatchTracker flat = carrier_cycles(2000, 5, 500 * kUs, 1, 1).track();
  EXPECT_EQ(finding(run(w, &flat), "platoon_effect"), nullptr);
  // Too few cycles after long waits (20 < kMinEffectSamples) to tell.
  const BatchTracker rare = carrier_cycles(2000, 100, 500 * kUs, 8, 1).track();
  EXPECT_EQ(finding(run(w, &rare), "platoon_effect"), nullptr);
  // Waits under the long-wait limit are all short.
  const BatchTracker brief = carrier_cycles(2000, 5, 50 * kUs, 8, 1).track();
  EXPECT_EQ(finding(run(w, &brief), "platoon_effect"), nullptr);
}

TEST(DoctorPlatoonEffect, NotEvaluatedWithoutRawEventsOrCarrierBatches) {
  tests::test::Scenario s;
  s.carrier(11, "carrier-0", 40, 1);
  const Window w = s.window();
  DoctorInput in;
  in.no_events_reason = "the recording has no raw events";
  const Diagnosis d = run(w, nullptr, in);
  ASSERT_TRUE(not_evaluated(d, "platoon_effect"));
  EXPECT_NE(text(d).find("not evaluated: platoon_effect: the recording has no raw events"), std::string::npos);
  auto j = tests::test::parse_json(json(d));
  bool listed = false;
  for (const auto& n : j["not_evaluated"].GetArray()) listed |= std::string(n["id"].GetString()) == "platoon_effect";
  EXPECT_TRUE(listed);

  Events other;  // events, but none of a carrier's batches
  other.sw(kSec, 11, 99, true);
  other.sw(kSec + kUs, 99, 11, false);
  const BatchTracker t = other.track();
  EXPECT_TRUE(not_evaluated(run(w, &t), "platoon_effect"));
}

// ---- poller_competing ----

TEST(DoctorPoller, PresentWhenTheWakerAlsoPreemptsOrWaits) {
  auto scenario = [](uint64_t preempts, double poller_wait) {
    tests::test::Scenario s;
    s.carrier(11, "carrier-0", 40, 1);
    s.carrier(12, "carrier-1", 40, 1);
    snapshot::ThreadSample& p = s.thread(13, "master-poller", 20, poller_wait);
    p.io_cycles = 50000;  // it polls too: still not a carrier, it is the one that wakes them
    s.pair(11, PairKind::woken_by, 13, kPid, "master-poller", 30000, 0);
    s.pair(12, PairKind::woken_by, 13, kPid, "master-poller", 30000, 0);
    if (preempts) s.pair(11, PairKind::preempted_by, 13, kPid, "master-poller", preempts, 9'000'000);
    return s;
  };
  const Scenario competing = scenario(1000, 1);
  const Window w = competing.window();
  const Roles roles = find_roles(w);
  ASSERT_EQ(roles.pollers.size(), 1u);
  EXPECT_EQ(roles.pollers[0]->comm, "master-poller");
  EXPECT_EQ(roles.carriers.size(), 2u);
  const Diagnosis d = run(w);
  const Finding* f = finding(d, "poller_competing");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->threads, std::vector<std::string>{"master-poller"});
  EXPECT_NEAR(num(f->evidence, "wakes_carriers_per_s"), 6000, 0.01);
  EXPECT_NEAR(num(f->evidence, "preempts_carriers_per_s"), 100, 0.01);
  EXPECT_NE(f->remedy.find("N+1"), std::string::npos);

  const Scenario waiting = scenario(0, 12);  // never preempts, but waits itself: critical
  const Window ww = waiting.window();
  ASSERT_NE(finding(run(ww), "poller_competing"), nullptr);
  EXPECT_EQ(finding(run(ww), "poller_competing")->severity, Severity::critical);

  const Scenario calm = scenario(0, 1);
  const Window wc = calm.window();
  EXPECT_EQ(finding(run(wc), "poller_competing"), nullptr);
}

// ---- oversubscribed ----

TEST(DoctorOversubscribed, MoreBusyThreadsThanCpus) {
  tests::test::Scenario s;
  for (uint32_t i = 0; i < 4; ++i) s.thread(20 + i, "worker", 50, 40, 1000, {500, 500});  // on CPUs 0 and 1
  const Window w = s.window();
  const Diagnosis d = run(w);
  const Finding* f = finding(d, "oversubscribed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(num(f->evidence, "busy_threads"), 4);
  EXPECT_EQ(num(f->evidence, "allowed_cpus"), 2);
  EXPECT_NEAR(num(f->evidence, "demand_cpus"), 3.6, 1e-9);
  EXPECT_EQ(*find(f->evidence, "allowed_from")->string(), "cpus the process ran on");
  // Duplicate names are told apart by tid.
  EXPECT_EQ(f->threads.front(), "worker/20");

  // The live affinity overrides where they ran: 4 CPUs allowed, no finding.
  DoctorInput in;
  in.allowed_cpus[kPid] = 4;
  EXPECT_EQ(finding(run(w, nullptr, in), "oversubscribed"), nullptr);

  Scenario two;
  two.thread(20, "worker", 60, 5, 1000, {500, 500});
  two.thread(21, "worker", 60, 5, 1000, {500, 500});
  const Window w2 = two.window();
  EXPECT_EQ(finding(run(w2), "oversubscribed"), nullptr);
}

// ---- lost_events ----

TEST(DoctorLosses, LostEventsTruncationAndNone) {
  tests::test::Scenario s;
  s.carrier(11, "carrier-0", 40, 1);
  s.to.lost_events_per_cpu = {30, 20};
  s.to.lost_pairs = 3;
  const Window w = s.window();
  Events ev;
  for (int i = 0; i < 100; ++i) ev.sw(kSec + i, 11, 0, false);
  const BatchTracker t = ev.track();  // 100 read, 50 lost: 33%
  const Diagnosis d = run(w, &t);
  const Finding* f = finding(d, "lost_events");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::warn);
  EXPECT_EQ(num(f->evidence, "lost_events"), 50);
  EXPECT_EQ(num(f->evidence, "lost_pairs"), 3);
  EXPECT_NEAR(num(f->evidence, "lost_events_pct"), 33.333, 0.01);

  Scenario few;
  few.carrier(11, "carrier-0", 40, 1);
  few.to.lost_pairs = 1;
  const Window wf = few.window();
  ASSERT_NE(finding(run(wf), "lost_events"), nullptr);
  EXPECT_EQ(finding(run(wf), "lost_events")->severity, Severity::info);

  Scenario clean;
  clean.carrier(11, "carrier-0", 40, 1);
  const Window wc = clean.window();
  EXPECT_EQ(finding(run(wc), "lost_events"), nullptr);
  DoctorInput cut;
  cut.truncated = true;
  cut.truncated_reason = "incomplete chunk";
  const Diagnosis dc = run(wc, nullptr, cut);
  const Finding* tf = finding(dc, "lost_events");
  ASSERT_NE(tf, nullptr);
  EXPECT_EQ(tf->severity, Severity::warn);
  EXPECT_EQ(num(tf->evidence, "truncated"), 1);
}

// ---- roles and sources ----

TEST(DoctorRoles, EventLoopsOfAnyNameAreCarriers) {
  tests::test::Scenario s;
  snapshot::ThreadSample& w1 = s.thread(30, "nginx", 40, 8);
  w1.io_cycles = 1000;
  s.thread(31, "nginx-helper", 1, 0);  // no epoll, no drains: not a carrier
  ThreadSample& d = s.thread(32, "worker-0", 40, 0);
  d.drains = 10;
  const Window w = s.window();
  const Roles r = find_roles(w);
  ASSERT_EQ(r.carriers.size(), 2u);
  EXPECT_EQ(r.carriers[0]->comm, "nginx");
  EXPECT_EQ(r.carriers[1]->comm, "worker-0");
  EXPECT_NE(finding(run(w), "carrier_waiting"), nullptr);
}

TEST(DoctorRoles, NoCarrierSaysSo) {
  tests::test::Scenario s;
  s.thread(30, "sh", 90, 9);
  const Window w = s.window();
  const Diagnosis d = run(w);
  EXPECT_TRUE(d.findings.empty());
  EXPECT_TRUE(not_evaluated(d, "carrier_waiting"));
  EXPECT_NE(text(d).find("no carrier"), std::string::npos);
}

TEST(DoctorProcfs, FewerFieldsNameWhatCouldNotBeEvaluated) {
  tests::test::Scenario s(Source::procfs);
  snapshot::ThreadSample& t = s.thread(11, "carrier-0", 40, 8);
  t.migrations = 3000;
  const Window w = s.window();
  DoctorInput in;
  in.no_events_reason = "a procfs recording has no raw events";
  const Diagnosis d = run(w, nullptr, in);
  EXPECT_EQ(d.source, "procfs");
  const Finding* f = finding(d, "carrier_waiting");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(find(f->evidence, "preempted_by")->string()->find("procfs"), std::string::npos);
  EXPECT_NE(finding(d, "carrier_migrating"), nullptr);  // se.nr_migrations is in /proc
  EXPECT_TRUE(not_evaluated(d, "platoon_effect"));
  EXPECT_TRUE(not_evaluated(d, "poller_competing"));
}

// ---- --vs ----

TEST(DoctorCompare, PinnedRunIsHealthier) {
  tests::test::Scenario un, pin;
  snapshot::ThreadSample& a = un.carrier(11, "carrier-0", 20, 7);
  a.migrations = 5000;
  a.cpu_switch_ins = {5000, 5000};
  pin.carrier(11, "carrier-0@cpu1", 35, 0.5);
  const Window wu = un.window(), wp = pin.window();
  const Diagnosis du = run(wu), dp = run(wp);
  const Comparison c = compare(du, dp);
  EXPECT_EQ(c.healthier, 1);
  ASSERT_FALSE(c.reasons.empty());
  EXPECT_NE(c.reasons[0].find("0 findings"), std::string::npos);
  EXPECT_EQ(compare(dp, du).healthier, 0);
  const std::string txt = compare_text(du, dp);
  EXPECT_NE(txt.find("healthier: B"), std::string::npos);
  EXPECT_NE(txt.find("max carrier %wait"), std::string::npos);
  auto j = tests::test::parse_json(compare_json(du, dp));
  EXPECT_STREQ(j["healthier"].GetString(), "b");
  EXPECT_EQ(j["a"]["findings"].Size(), 2u);
  EXPECT_EQ(j["b"]["findings"].Size(), 0u);
  EXPECT_NEAR(j["side_by_side"]["max_carrier_wait_pct"][0].GetDouble(), 7.0, 1e-9);
  EXPECT_TRUE(j["side_by_side"]["events_per_cycle_after_long_wait"][0].IsNull());
}

TEST(DoctorCompare, SameFindingsNumbersDecideOrNeither) {
  tests::test::Scenario x, y;
  x.carrier(11, "carrier-0", 20, 2.5);
  y.carrier(11, "carrier-0", 20, 0.5);
  const Window wx = x.window(), wy = y.window();
  EXPECT_EQ(compare(run(wx), run(wy)).healthier, 1);  // both clean; 2 points less %wait
  EXPECT_EQ(compare(run(wx), run(wx)).healthier, -1);
  EXPECT_NE(compare_text(run(wx), run(wx)).find("healthier: neither"), std::string::npos);
}

}  // namespace
}  // namespace platoon::analysis::doctor
