// doctor and request latency on synthetic request records with hand-computed answers:
// requests_waiting_in_sockets present and absent on each side of every limit, not evaluated
// without request data or with too few requests, its evidence (who read the requests, who
// preempted the readers) and its remedy by what the readers were doing; the request key
// numbers; and --vs putting request latency first and deciding by server time p99.
//
// Every latency below is the largest value of its histogram bucket (snapshot/requests.hpp:
// exact below 128 ns, then each power of two [2^e, 2^(e+1)) in 64 steps of 2^(e-6)), so the
// percentiles read back are the values written and the expectations are plain arithmetic.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "tests/model/builders.hpp"
#include "tests/model/doctor_helpers.hpp"
#include "tui/analysis/doctor.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::test {
namespace {

using namespace platoon::analysis::doctor;

constexpr uint32_t kPid = 1200;          // Scenario's process
constexpr uint16_t kPort = 18080;
constexpr uint16_t kBackendPort = 19090;

// Bucket tops, ns: base + k * step - 1.
constexpr uint64_t kFastWait = 16'384 + 15 * 256 - 1;             // 20,223: 20.2 us
constexpr uint64_t kFastTotal = 524'288 + 59 * 8'192 - 1;         // 1,007,615: 1007.6 us
constexpr uint64_t kTenMs = 10'000'000;

// What the reader did during a request's wait, in tenths: runnable, throttled, running; the
// rest blocked. Unattributed: read by another thread than expected (no split).
struct Split {
  std::array<uint64_t, 3> tenths{};
  bool unattributed = false;
};
constexpr Split kRunnable{{10, 0, 0}};

platoon_ev_request request(uint16_t side, uint32_t tid, uint64_t wait, uint64_t service, Split split, uint16_t flags) {
  platoon_ev_request r{};
  r.h.type = PLATOON_EV_REQUEST;
  r.h.tid = tid;
  r.h.ts_ns = kSec + wait + service;
  r.pid = kPid;
  r.side = side;
  r.flags = flags | (split.unattributed ? PLATOON_REQ_UNATTRIBUTED : 0);
  r.family = 2;  // AF_INET
  r.local_port = side == PLATOON_REQ_SERVER ? kPort : 40000;
  r.remote_port = side == PLATOON_REQ_SERVER ? 40000 : kBackendPort;
  r.remote_addr[0] = 127;
  r.remote_addr[3] = 1;
  r.wait_ns = wait;
  r.service_ns = service;
  if (!split.unattributed) {
    uint64_t left = wait;
    for (size_t i = 0; i < split.tenths.size(); ++i) left -= r.state_ns[i] = wait * split.tenths[i] / 10;
    r.state_ns[PLATOON_REQ_BLOCKED] = left;
  }
  return r;
}

// Two carriers of a platoon-runtime server (1% wait each: no carrier finding) over 10 s, and
// the requests they read.
struct Traffic {
  Scenario s;
  explicit Traffic(bool requests = true) {
    if (requests) {
      s.from.fields |= kFieldRequests;
      s.to.fields |= kFieldRequests;
    }
    s.carrier(11, "carrier-0", 40, 1);
    s.carrier(12, "carrier-1", 40, 1);
  }
  // n requests read by tid, each waiting `wait` in its socket and `total` in all.
  Traffic& add(int n, uint32_t tid, uint64_t wait, uint64_t total, Split split = kRunnable,
               uint16_t side = PLATOON_REQ_SERVER, uint16_t flags = 0) {
    for (int i = 0; i < n; ++i)
      snapshot::add_request(s.to.requests, request(side, tid, wait, total - wait, split, flags), 1024, &s.to.lost_requests);
    return *this;
  }
};

// 980 quick requests (wait 20.2 us, 1007.6 us in all) shared by the carriers, and 20 slow ones
// on carrier-0: of 1,000, the p50 (rank 500) is a quick one and the p99 (rank 990) a slow one.
Traffic tail(uint64_t wait, uint64_t total, Split split = kRunnable) {
  Traffic t;
  t.add(490, 11, kFastWait, kFastTotal, split).add(490, 12, kFastWait, kFastTotal, split).add(20, 11, wait, total, split);
  return t;
}

Diagnosis run(const Scenario& s, RuntimeKind runtime = RuntimeKind::platoon) {
  const Window w = s.window();
  return diagnosis_of(w, runtime);
}

const Finding* waiting(const Diagnosis& d) { return finding(d, "requests_waiting_in_sockets"); }

const Object& endpoint(const Finding& f, size_t i = 0) {
  return *(*find(f.evidence, "endpoints")->array())[i].object();
}

// ---- the p99: a floor, then its share of the server time p99 ----

TEST(DoctorRequests, TailNeedsTheFloor) {
  // Server time p99 1,048,576 + 13 * 16,384 - 1 = 1,261,567 ns; the waits are the buckets on
  // either side of 500 us: 262,144 + 58 (59) * 4,096 - 1.
  const uint64_t total = 1'261'567;
  const Diagnosis below = run(tail(499'711, total).s);  // 39.6% of the p99, but under 500 us
  EXPECT_EQ(waiting(below), nullptr);
  EXPECT_FALSE(not_evaluated(below, "requests_waiting_in_sockets"));

  const Diagnosis at = run(tail(503'807, total).s);  // 503,807 / 1,261,567 = 39.93%
  const Finding* f = waiting(at);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::warn);
  const Object& e = endpoint(*f);
  EXPECT_EQ(*find(e, "side")->string(), "server");
  EXPECT_EQ(*find(e, "endpoint")->string(), ":18080");
  EXPECT_EQ(num(e, "requests"), 1000);
  EXPECT_DOUBLE_EQ(num(e, "requests_per_s"), 100);
  EXPECT_DOUBLE_EQ(num(e, "socket_wait_p50_us"), 20.2);
  EXPECT_DOUBLE_EQ(num(e, "socket_wait_p99_us"), 503.8);
  EXPECT_DOUBLE_EQ(num(e, "server_time_p50_us"), 1007.6);
  EXPECT_DOUBLE_EQ(num(e, "server_time_p99_us"), 1261.6);
  EXPECT_DOUBLE_EQ(num(e, "socket_wait_p99_share_pct"), 39.9);
  EXPECT_DOUBLE_EQ(num(f->threshold, "socket_wait_p99_floor_us"), kSocketWaitP99FloorUs);
}

TEST(DoctorRequests, TailShareEdges) {
  // Server time p99 2,097,152 + 31 * 32,768 - 1 = 3,112,959 ns; a quarter is 778,239.75 and
  // half 1,556,479.5, each between two buckets: 524,288 + 31 (32) * 8,192 - 1 and
  // 1,048,576 + 31 (32) * 16,384 - 1.
  const uint64_t total = 3'112'959;
  EXPECT_EQ(waiting(run(tail(778'239, total).s)), nullptr);  // 24.99999%
  const Diagnosis quarter = run(tail(786'431, total).s);     // 25.26%
  ASSERT_NE(waiting(quarter), nullptr);
  EXPECT_EQ(waiting(quarter)->severity, Severity::warn);
  EXPECT_DOUBLE_EQ(num(endpoint(*waiting(quarter)), "socket_wait_p99_share_pct"), 25.3);
  const Diagnosis under_half = run(tail(1'556'479, total).s);  // 49.99998%
  ASSERT_NE(waiting(under_half), nullptr);
  EXPECT_EQ(waiting(under_half)->severity, Severity::warn);
  const Diagnosis half = run(tail(1'572'863, total).s);  // 50.53%
  ASSERT_NE(waiting(half), nullptr);
  EXPECT_EQ(waiting(half)->severity, Severity::critical);
  EXPECT_DOUBLE_EQ(num(endpoint(*waiting(half)), "socket_wait_p99_share_pct"), 50.5);
}

// ---- the median, whatever the share ----

TEST(DoctorRequests, MedianEdges) {
  // Every request waits the same and spends 10 ms more being served: the p99 is under a tenth
  // of the server time, so only the median can fire. Waits: 262,144 + 9 (10) * 4,096 - 1 and
  // 524,288 + 58 (59) * 8,192 - 1, the buckets either side of 300 us and 1 ms.
  auto all_wait = [](uint64_t wait) {
    Traffic t;
    t.add(500, 11, wait, wait + kTenMs).add(500, 12, wait, wait + kTenMs);
    return run(t.s);
  };
  EXPECT_EQ(waiting(all_wait(299'007)), nullptr);
  const Diagnosis warn = all_wait(303'103);
  ASSERT_NE(waiting(warn), nullptr);
  EXPECT_EQ(waiting(warn)->severity, Severity::warn);
  EXPECT_DOUBLE_EQ(num(endpoint(*waiting(warn)), "socket_wait_p50_us"), 303.1);
  const Diagnosis still_warn = all_wait(999'423);
  ASSERT_NE(waiting(still_warn), nullptr);
  EXPECT_EQ(waiting(still_warn)->severity, Severity::warn);
  const Diagnosis critical = all_wait(1'007'615);
  ASSERT_NE(waiting(critical), nullptr);
  EXPECT_EQ(waiting(critical)->severity, Severity::critical);
}

// ---- when it cannot be evaluated ----

TEST(DoctorRequests, NeedsAHundredCompleteRequests) {
  Traffic few;
  few.add(99, 11, 1'007'615, 1'007'615 + kTenMs);
  // Partial requests (their connection predates the recording) are counted, not timed.
  few.add(50, 11, 1'007'615, 1'007'615 + kTenMs, kRunnable, PLATOON_REQ_SERVER, PLATOON_REQ_PARTIAL);
  const Diagnosis d = run(few.s);
  EXPECT_EQ(waiting(d), nullptr);
  ASSERT_TRUE(not_evaluated(d, "requests_waiting_in_sockets"));
  EXPECT_NE(text(d).find("not evaluated: requests_waiting_in_sockets: no endpoint had 100 complete requests"),
            std::string::npos)
      << text(d);
  few.add(1, 12, 1'007'615, 1'007'615 + kTenMs);
  const Diagnosis enough = run(few.s);
  ASSERT_NE(waiting(enough), nullptr);
  EXPECT_EQ(waiting(enough)->severity, Severity::critical);
  EXPECT_FALSE(not_evaluated(enough, "requests_waiting_in_sockets"));
}

TEST(DoctorRequests, NotEvaluatedWithoutRequestData) {
  const Diagnosis none = run(Traffic(false).s);
  EXPECT_EQ(waiting(none), nullptr);
  ASSERT_TRUE(not_evaluated(none, "requests_waiting_in_sockets"));
  EXPECT_NE(text(none).find("not evaluated: requests_waiting_in_sockets: the source has no request latency "
                            "(record with platoon record --requests)"),
            std::string::npos)
      << text(none);
  auto j = parse_json(json(none));
  EXPECT_EQ(j["schema_version"].GetInt(), 3);
  EXPECT_STREQ(j["not_evaluated"][0]["id"].GetString(), "requests_waiting_in_sockets");

  // Recorded with --requests, but no request completed.
  const Diagnosis quiet = run(Traffic().s);
  ASSERT_TRUE(not_evaluated(quiet, "requests_waiting_in_sockets"));
  EXPECT_NE(text(quiet).find("requests_waiting_in_sockets: no request completed"), std::string::npos) << text(quiet);
}

// ---- its evidence: who read the requests, who preempted them, what they were doing ----

TEST(DoctorRequests, BehindWhomAndWhatTheReadersDid) {
  // Slow requests on both carriers, their waits 70% runnable, 20% running, 10% blocked.
  const Split split{{7, 0, 2}};
  Traffic t;
  t.add(490, 11, kFastWait, kFastTotal, split).add(480, 12, kFastWait, kFastTotal, split);
  t.add(20, 11, 1'572'863, 3'112'959, split).add(10, 12, 1'572'863, 3'112'959, split);
  t.s.pair(11, PairKind::preempted_by, 50, 900, "mock-loop-0", 1000, 60'000'000);
  t.s.pair(12, PairKind::preempted_by, 51, 901, "platoon-load", 500, 20'000'000);
  const Diagnosis d = run(t.s);
  const Finding* f = waiting(d);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::critical);  // p99 (rank 990 of 1,000: a slow one) 50.53%
  // carrier-0: 490 * 20,223 + 20 * 1,572,863 = 41,366,530 ns; carrier-1: 480 * 20,223 +
  // 10 * 1,572,863 = 25,435,670 ns.
  const Array& readers = *find(f->evidence, "readers")->array();
  ASSERT_EQ(readers.size(), 2u);
  EXPECT_EQ(*readers[0].find("thread")->string(), "carrier-0");
  EXPECT_EQ(*readers[0].find("requests")->number(), 510);
  EXPECT_DOUBLE_EQ(*readers[0].find("socket_wait_ms")->number(), 41.37);
  EXPECT_DOUBLE_EQ(*readers[1].find("socket_wait_ms")->number(), 25.44);
  EXPECT_EQ(f->threads, (std::vector<std::string>{"carrier-0", "carrier-1"}));
  // The readers' preemptors: 60 ms of 80 behind the mock.
  const Array& by = *find(f->evidence, "preempted_by")->array();
  ASSERT_EQ(by.size(), 2u);
  EXPECT_EQ(*by[0].find("comm")->string(), "mock-loop-0");
  EXPECT_EQ(*by[0].find("where")->string(), "outside the target");
  EXPECT_DOUBLE_EQ(*by[0].find("share_pct")->number(), 75);
  const Value* parts = find(f->evidence, "socket_wait_by_state_pct");
  EXPECT_DOUBLE_EQ(*parts->find("runnable")->number(), 70);
  EXPECT_DOUBLE_EQ(*parts->find("running")->number(), 20);
  EXPECT_DOUBLE_EQ(*parts->find("blocked")->number(), 10);
  EXPECT_DOUBLE_EQ(*parts->find("unattributed")->number(), 0);
  EXPECT_NE(f->title.find("p99 1573 us (51% of the server time p99)"), std::string::npos) << f->title;
  EXPECT_NE(f->title.find("mostly while the reader was runnable"), std::string::npos) << f->title;
  EXPECT_NE(f->title.find("mostly behind mock-loop-0 (outside the target, 75% of the wait)"), std::string::npos) << f->title;
  EXPECT_NE(f->remedy.find("platoon-server --pin"), std::string::npos) << f->remedy;

  // Found first among findings of its severity, and in the JSON as ARCHITECTURE.md has them.
  auto j = parse_json(json(d));
  EXPECT_STREQ(j["findings"][0]["id"].GetString(), "requests_waiting_in_sockets");
  EXPECT_STREQ(j["findings"][0]["severity"].GetString(), "critical");
  EXPECT_EQ(j["findings"][0]["evidence"]["endpoints"][0]["socket_wait_by_state_pct"]["runnable"].GetDouble(), 70);
}

TEST(DoctorRequests, RemedyFollowsWhatTheReadersDidMost) {
  struct Case {
    Split split;
    RuntimeKind runtime;
    const char* says;
  };
  const Case cases[] = {
      {{{6, 0, 2}}, RuntimeKind::platoon, "platoon-server --pin"},
      {{{2, 6, 2}}, RuntimeKind::platoon, "cpu.max"},
      {{{2, 0, 6}}, RuntimeKind::platoon, "platoon-server --budget-us"},
      {{{2, 0, 2}}, RuntimeKind::platoon, "platoon-server --idle-spin-us"},  // 60% blocked
      {{{2, 0, 2}}, RuntimeKind::other, "cpupower idle-set"},
      {{{2, 0, 6}}, RuntimeKind::go, "GOMAXPROCS"},
      {{{}, true}, RuntimeKind::platoon, "read by another thread"},
  };
  for (const Case& c : cases) {
    const Diagnosis d = run(tail(1'572'863, 3'112'959, c.split).s, c.runtime);
    ASSERT_NE(waiting(d), nullptr);
    EXPECT_NE(waiting(d)->remedy.find(c.says), std::string::npos) << c.says << ": " << waiting(d)->remedy;
  }
}

// ---- where the target is the client: the replies it reads ----

TEST(DoctorRequests, RepliesWaitingForTheClient) {
  Traffic t;
  t.add(500, 11, kFastWait, kFastTotal).add(500, 12, kFastWait, kFastTotal);  // its own clients: fine
  t.add(980, 11, kFastWait, kFastTotal, kRunnable, PLATOON_REQ_CLIENT);
  t.add(20, 11, 1'572'863, 3'112'959, kRunnable, PLATOON_REQ_CLIENT);
  const Diagnosis d = run(t.s);
  const Finding* f = waiting(d);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(find(f->evidence, "endpoints")->array()->size(), 1u);
  const Object& e = endpoint(*f);
  EXPECT_EQ(*find(e, "side")->string(), "client");
  EXPECT_EQ(*find(e, "endpoint")->string(), "127.0.0.1:19090");
  EXPECT_DOUBLE_EQ(num(e, "round_trip_p99_us"), 3113.0);
  EXPECT_EQ(find(e, "server_time_p99_us"), nullptr);
  // Its readers are those of the replies (all on carrier-0), not of the requests it served.
  EXPECT_EQ(f->threads, std::vector<std::string>{"carrier-0"});
  EXPECT_EQ(*(*find(f->evidence, "readers")->array())[0].find("requests")->number(), 1000);
  EXPECT_NE(f->title.find("client of 127.0.0.1:19090"), std::string::npos) << f->title;
  EXPECT_NE(f->title.find("of the round trip p99"), std::string::npos) << f->title;
}

// ---- key numbers ----

TEST(DoctorRequests, KeyNumbersRateAndServerTime) {
  // 1,000 server requests in 10 s; 30 of them slow (rank 990 is slow, rank 500 quick); 60% of
  // every wait runnable. Client requests do not count.
  const Split split{{6, 0, 2}};
  Traffic t;
  t.add(970, 12, kFastWait, kFastTotal, split).add(30, 11, 1'572'863, 3'112'959, split);
  t.add(400, 11, kFastWait, kFastTotal, split, PLATOON_REQ_CLIENT);
  const Diagnosis d = run(t.s);
  EXPECT_DOUBLE_EQ(*d.key.requests_per_s, 100);
  EXPECT_DOUBLE_EQ(*d.key.server_time_p50_us, 1007.615);
  EXPECT_DOUBLE_EQ(*d.key.server_time_p99_us, 3112.959);
  EXPECT_DOUBLE_EQ(*d.key.socket_wait_p99_us, 1572.863);
  EXPECT_NEAR(*d.key.socket_wait_runnable_pct, 60, 0.01);  // each split rounds its ns down
  EXPECT_NE(text(d).find("requests served: 100.0/s, server time p50 1007.6 us, p99 3113.0 us; socket wait p99 "
                         "1572.9 us, 60.0% of it runnable"),
            std::string::npos)
      << text(d);
  auto j = parse_json(json(d));
  ASSERT_TRUE(j["key_numbers"].HasMember("requests_per_s") && j["key_numbers"].HasMember("socket_wait_runnable_pct"));
  EXPECT_DOUBLE_EQ(j["key_numbers"]["requests_per_s"].GetDouble(), 100);
  EXPECT_DOUBLE_EQ(j["key_numbers"]["server_time_p99_us"].GetDouble(), 3113.0);
  EXPECT_DOUBLE_EQ(j["key_numbers"]["socket_wait_runnable_pct"].GetDouble(), 60);

  // None without request data: no keys, no line.
  const Diagnosis none = run(Traffic(false).s);
  EXPECT_FALSE(none.key.requests_per_s);
  EXPECT_FALSE(parse_json(json(none))["key_numbers"].HasMember("requests_per_s"));
  EXPECT_EQ(text(none).find("requests served"), std::string::npos);
}

// ---- --vs ----

// A run whose every request takes `total` (waits 20.2 us: no request finding); `busy` gives
// carrier-0 7.5% wait, a carrier_waiting warn.
Diagnosis vs_run(uint64_t total, bool busy = false, bool requests = true) {
  Traffic t(requests);
  if (busy) t.s.to.threads[0].wait_ns = 750'000'000;
  if (requests) t.add(500, 11, kFastWait, total).add(500, 12, kFastWait, total);
  return run(t.s);
}

size_t line_of(const std::string& text, const std::string& start) {
  const size_t at = text.find("\n" + start);
  return at == std::string::npos ? at : at + 1;
}

TEST(DoctorCompareRequests, LatencyRowsLeadWhenBothHaveThem) {
  const Diagnosis a = vs_run(3'112'959), b = vs_run(2'785'279), none = vs_run(0, false, false);
  const std::string both = compare_text(a, b);
  ASSERT_NE(line_of(both, "requests/s"), std::string::npos) << both;
  EXPECT_LT(line_of(both, "requests/s"), line_of(both, "server time p50 us"));
  EXPECT_LT(line_of(both, "server time p99 us"), line_of(both, "socket wait p99 us"));
  EXPECT_LT(line_of(both, "socket wait p99 us"), line_of(both, "  runnable share %"));
  EXPECT_LT(line_of(both, "  runnable share %"), line_of(both, "findings"));
  // Label padded to 26, then each side right-aligned in 24.
  EXPECT_NE(both.find("server time p99 us" + std::string(27, ' ') + "3113.0" + std::string(19, ' ') + "2785.3\n"),
            std::string::npos)
      << both;
  // One side without: below the carriers' rows, "-" on that side.
  const std::string one = compare_text(a, none);
  EXPECT_GT(line_of(one, "requests/s"), line_of(one, "queue depth at drain"));
  EXPECT_NE(one.find("server time p99 us" + std::string(27, ' ') + "3113.0" + std::string(24, ' ') + "-\n"),
            std::string::npos)
      << one;
  const std::string neither = compare_text(none, none);
  EXPECT_EQ(line_of(neither, "requests/s"), std::string::npos);
  // JSON: the request rows lead side_by_side when either has them, and are absent otherwise.
  auto j = parse_json(compare_json(a, b));
  EXPECT_STREQ(j["side_by_side"].MemberBegin()->name.GetString(), "requests_per_s");
  ASSERT_TRUE(j["side_by_side"].HasMember("server_time_p99_us"));
  EXPECT_DOUBLE_EQ(j["side_by_side"]["server_time_p99_us"][1].GetDouble(), 2785.3);
  auto half = parse_json(compare_json(a, none));
  ASSERT_TRUE(half["side_by_side"].HasMember("server_time_p99_us"));
  EXPECT_TRUE(half["side_by_side"]["server_time_p99_us"][1].IsNull());
  EXPECT_FALSE(parse_json(compare_json(none, none))["side_by_side"].HasMember("requests_per_s"));
}

TEST(DoctorCompareRequests, ServerTimeP99DecidesFirst) {
  // A: no findings, p99 3,112,959 ns; B: a carrier_waiting warn, p99 2,097,152 + 21 * 32,768 - 1
  // = 2,785,279 ns, 10.5% lower: B, for its latency, though it has a finding more.
  const Diagnosis a = vs_run(3'112'959), b = vs_run(2'785'279, true);
  ASSERT_NE(finding(b, "carrier_waiting"), nullptr);
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.healthier, 1);
  ASSERT_GE(c.reasons.size(), 2u);
  EXPECT_EQ(c.reasons[0], "server time p99 2785.3 vs 3113.0 us");
  EXPECT_EQ(c.reasons[1], "though it has 1 finding (1 warn) vs 0 findings");
  EXPECT_EQ(compare(b, a).healthier, 0);
  EXPECT_NE(compare_text(a, b).find("healthier: B (test): server time p99 2785.3 vs 3113.0 us"), std::string::npos);
  EXPECT_STREQ(parse_json(compare_json(a, b))["healthier"].GetString(), "b");
  // The same findings on both sides: said as such.
  const Comparison same = compare(a, vs_run(2'785'279));
  EXPECT_EQ(same.healthier, 1);
  ASSERT_GE(same.reasons.size(), 2u);
  EXPECT_EQ(same.reasons[1], "both have 0 findings");
}

TEST(DoctorCompareRequests, WithinNoiseOrWithoutRequestsTheFindingsDecide) {
  const Diagnosis a = vs_run(3'112'959);
  // 2,097,152 + 22 * 32,768 - 1 = 2,818,047: 9.5% lower, within the noise: A has no finding.
  const Comparison close = compare(a, vs_run(2'818'047, true));
  EXPECT_EQ(close.healthier, 0);
  ASSERT_FALSE(close.reasons.empty());
  EXPECT_EQ(close.reasons[0], "0 findings vs 1 finding (1 warn)");
  // Under 50 us apart is noise however large the share: 262,144 + 10 * 4,096 - 1 = 303,103 ns
  // against 2^18 - 1 = 262,143 (13.5%, 41.0 us) and 131,072 + 59 * 2,048 - 1 = 251,903 (51.2 us).
  EXPECT_EQ(compare(vs_run(303'103), vs_run(262'143, true)).healthier, 0);
  EXPECT_EQ(compare(vs_run(303'103), vs_run(251'903, true)).healthier, 1);
  // One side without request data: as before, the findings decide (B's), not a latency B lacks.
  const Diagnosis clean = vs_run(3'112'959), unknown = vs_run(0, true, false);
  EXPECT_EQ(compare(clean, unknown).healthier, 0);
  const Comparison without = compare(clean, unknown);
  ASSERT_FALSE(without.reasons.empty());
  EXPECT_EQ(without.reasons[0], "0 findings vs 1 finding (1 warn)");
  EXPECT_EQ(compare(unknown, clean).healthier, 1);
}

}  // namespace
}  // namespace platoon::tests::test
