// Reports on synthetic windows: the JSON keys of ARCHITECTURE.md present and typed (parsed back
// with rapidjson), what procfs lacks left out and named, the text tables, --vs matching and
// ratios with zeros.
#include "tui/outputs/report.hpp"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "tests/model/builders.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

using test::kSec;

using test::parse_json;  // tests/model/builders.hpp
using test::Scenario;

// A bpf window: one carrier with everything, one master-poller preempting it.
Window bpf_window(double carrier_cpu_share = 0.71) {
  Scenario s;
  ThreadSample& c = s.add(1234, "carrier-0");
  c.run_ns = static_cast<uint64_t>(carrier_cpu_share * 10 * kSec);
  c.wait_ns = 1'100'000'000;
  c.switches_voluntary = 10, c.switches_involuntary = 900, c.migrations = 412;
  c.cpu_switch_ins = {44, 56};
  c.runq_hist[13] = 90, c.runq_hist[19] = 10, c.runq_max_ns = 4'000'000;
  c.io_cycles = 247000, c.io_events = 988000, c.io_events_hist[0] = 1000, c.io_events_hist[1] = 5000;
  c.drains = 240000, c.drain_depth_sum = 1920000, c.drain_depth_hist[0] = 10, c.drain_depth_hist[1] = 200;
  s.add(1240, "master-poller").run_ns = kSec;
  s.pair(1234, PairKind::preempted_by, 1240, 1200, "master-poller", 300, 90'000'000);
  s.pair(1234, PairKind::woken_by, 1240, 1200, "master-poller", 5000, 0);
  return s.window();
}

Window procfs_window(std::vector<std::pair<const char*, double>> threads, uint32_t first_tid = 100) {
  Scenario s(Source::procfs, kSec);
  for (auto [comm, cpu] : threads) {
    const uint32_t tid = first_tid + static_cast<uint32_t>(s.to.threads.size());
    ThreadSample& t = s.add(tid, comm, first_tid);
    t.run_ns = static_cast<uint64_t>(cpu * kSec);
    t.switches_voluntary = tid;
  }
  return s.window();
}

TEST(ReportJson, ArchitectureKeysPresentAndTyped) {
  Window w = bpf_window();
  rapidjson::Document d = parse_json(report_json(header_for(w, "run.platoon"), w));
  ASSERT_TRUE(d.IsObject());
  EXPECT_DOUBLE_EQ(d["duration_s"].GetDouble(), 10.0);
  EXPECT_STREQ(d["source"].GetString(), "bpf");
  EXPECT_EQ(d["lost_events"].GetUint64(), 0u);
  ASSERT_TRUE(d["threads"].IsArray());
  ASSERT_EQ(d["threads"].Size(), 2u);
  const auto& t = d["threads"][0];
  EXPECT_EQ(t["tid"].GetUint(), 1234u);
  EXPECT_EQ(t["pid"].GetUint(), 1200u);
  EXPECT_STREQ(t["comm"].GetString(), "carrier-0");
  EXPECT_NEAR(t["cpu_pct"].GetDouble(), 71.0, 1e-9);
  EXPECT_NEAR(t["wait_pct"].GetDouble(), 11.0, 1e-9);
  EXPECT_EQ(t["run_ns"].GetUint64(), 7'100'000'000u);
  EXPECT_EQ(t["wait_ns"].GetUint64(), 1'100'000'000u);
  EXPECT_EQ(t["switches_voluntary"].GetUint64(), 10u);
  EXPECT_EQ(t["switches_involuntary"].GetUint64(), 900u);
  EXPECT_EQ(t["migrations"].GetUint64(), 412u);
  ASSERT_TRUE(t["cpu_distribution"].IsObject());
  EXPECT_DOUBLE_EQ(t["cpu_distribution"]["0"].GetDouble(), 44.0);
  EXPECT_DOUBLE_EQ(t["cpu_distribution"]["1"].GetDouble(), 56.0);
  for (const char* k : {"p50", "p99", "max"}) EXPECT_TRUE(t["runq_latency_us"][k].IsNumber()) << k;
  EXPECT_DOUBLE_EQ(t["runq_latency_us"]["max"].GetDouble(), 4000.0);
  const auto& io = t["io"];
  EXPECT_EQ(io["cycles"].GetUint64(), 247000u);
  EXPECT_EQ(io["events"].GetUint64(), 988000u);
  EXPECT_DOUBLE_EQ(io["events_per_cycle"].GetDouble(), 4.0);
  ASSERT_TRUE(io["events_hist"].IsArray());
  EXPECT_EQ(io["events_hist"][1][0].GetUint(), 1u);
  EXPECT_EQ(io["events_hist"][1][1].GetUint64(), 5000u);
  const auto& dr = t["drain"];
  EXPECT_EQ(dr["batches"].GetUint64(), 240000u);
  EXPECT_DOUBLE_EQ(dr["queue_depth_avg"].GetDouble(), 8.0);
  EXPECT_EQ(dr["queue_depth_hist"][1][1].GetUint64(), 200u);
  const auto& pre = t["preempted_by"][0];
  EXPECT_EQ(pre["tid"].GetUint(), 1240u);
  EXPECT_STREQ(pre["comm"].GetString(), "master-poller");
  EXPECT_EQ(pre["count"].GetUint64(), 300u);
  EXPECT_EQ(pre["ns"].GetUint64(), 90'000'000u);
  const auto& wk = t["woken_by"][0];
  EXPECT_EQ(wk["tid"].GetUint(), 1240u);
  EXPECT_EQ(wk["count"].GetUint64(), 5000u);
  EXPECT_FALSE(d["threads"][1].HasMember("io"));  // the poller made no epoll calls here
  EXPECT_TRUE(d["fields_missing"].IsArray());
  EXPECT_EQ(d["fields_missing"].Size(), 0u);
  EXPECT_EQ(d["processes"][0]["threads"].GetUint(), 2u);
  // Compact output parses to the same document.
  rapidjson::Document c = parse_json(report_json(header_for(w), w, {.pretty = false}));
  EXPECT_EQ(c["threads"][0]["io"]["cycles"].GetUint64(), 247000u);
}

TEST(ReportJson, ProcfsLeavesOutAndNamesWhatItLacks) {
  Window w = procfs_window({{"main", 0.5}});
  ReportHeader h = header_for(w, "x");
  h.attach_mode = "pid";
  h.notes = {"procfs fallback: no BPF privileges"};
  rapidjson::Document d = parse_json(report_json(h, w));
  EXPECT_STREQ(d["source"].GetString(), "procfs");
  const auto& t = d["threads"][0];
  for (const char* k : {"cpu_distribution", "runq_latency_us", "io", "drain", "preempted_by", "woken_by"}) {
    EXPECT_FALSE(t.HasMember(k)) << k;
  }
  EXPECT_DOUBLE_EQ(t["cpu_pct"].GetDouble(), 50.0);
  std::vector<std::string> missing;
  for (const auto& m : d["fields_missing"].GetArray()) missing.emplace_back(m.GetString());
  EXPECT_NE(std::find(missing.begin(), missing.end(), "runq_latency"), missing.end());
  EXPECT_STREQ(d["notes"][0].GetString(), "procfs fallback: no BPF privileges");
  EXPECT_STREQ(d["attach_mode"].GetString(), "pid");
}

TEST(ReportText, HeaderAndTables) {
  Window w = bpf_window();
  std::string s = report_text(header_for(w, "run.platoon"), w);
  for (const char* want : {"source: bpf\n", "duration: 10.00 s", "lost: 0 events", "%wait", "nvcswch/s",
                           "carrier-0", "CPU distribution", "CPU 1", "44%", "Run-queue latency", "IO (epoll",
                           "Queue depth at drain", "Top preemptors", "Top wakers", "master-poller"}) {
    EXPECT_NE(s.find(want), std::string::npos) << want << "\n" << s;
  }
  Window p = procfs_window({{"main", 0.5}});
  std::string ps = report_text(header_for(p), p);
  EXPECT_NE(ps.find("source: procfs (lacks: cpu_distribution, runq_latency"), std::string::npos) << ps;
  EXPECT_NE(ps.find("lost: 0 events"), std::string::npos);
  EXPECT_EQ(ps.find("Run-queue latency"), std::string::npos);
  EXPECT_EQ(ps.find("Top preemptors"), std::string::npos);
}

TEST(ReportText, ShowsTheFortyBusiestOfABigProcess) {
  std::vector<std::pair<const char*, double>> many;
  for (int i = 0; i < 45; ++i) many.emplace_back("worker", i < 5 ? 0.0 : 0.01 * i);
  Window w = procfs_window(many);
  std::string s = report_text(header_for(w), w);
  EXPECT_NE(s.find("5 less busy threads left out"), std::string::npos) << s;
  EXPECT_EQ(s.find("     100      100  worker"), std::string::npos);  // the idle ones went
  EXPECT_NE(s.find("     100      144  worker"), std::string::npos);
  rapidjson::Document d = parse_json(report_json(header_for(w), w));
  EXPECT_EQ(d["threads"].Size(), 45u);  // JSON keeps all
}

TEST(Compare, RatioWithZerosAndUnknowns) {
  EXPECT_EQ(ratio(2.0, 5.0), 2.5);
  EXPECT_FALSE(ratio(0.0, 5.0));
  EXPECT_FALSE(ratio(0.0, 0.0));
  EXPECT_EQ(ratio(5.0, 0.0), 0.0);
  EXPECT_FALSE(ratio(std::nullopt, 1.0));
  EXPECT_FALSE(ratio(1.0, std::nullopt));
}

TEST(Compare, MatchesByCommThenByOrder) {
  Window a = procfs_window({{"carrier-0", 0.5}, {"carrier-1", 0.5}, {"x", 0.1}}, 100);
  Window b = procfs_window({{"carrier-1", 0.4}, {"y", 0.2}, {"carrier-0", 0.6}, {"z", 0.0}}, 200);
  auto m = match_threads(a, b);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].first->tid, 100u);
  EXPECT_EQ(m[0].second->tid, 202u);  // carrier-0 with carrier-0
  EXPECT_EQ(m[1].second->tid, 200u);
  EXPECT_EQ(m[2].first->comm, "x");
  EXPECT_EQ(m[2].second->comm, "y");  // fall back to order
  EXPECT_EQ(m[3].first, nullptr);
  EXPECT_EQ(m[3].second->comm, "z");
}

TEST(Compare, JsonAndTextRatios) {
  Window a = bpf_window(0.5), b = bpf_window(0.75);
  Window z = procfs_window({{"carrier-0", 0.0}});
  ReportHeader ha = header_for(a, "unpinned"), hb = header_for(b, "pinned");
  rapidjson::Document d = parse_json(compare_json({ha, a}, {hb, b}));
  ASSERT_TRUE(d["a"].IsObject());
  ASSERT_TRUE(d["b"].IsObject());
  EXPECT_STREQ(d["a"]["file"].GetString(), "unpinned");
  const auto& r = d["ratios"]["threads"][0];
  EXPECT_STREQ(r["comm"].GetString(), "carrier-0");
  EXPECT_DOUBLE_EQ(r["cpu_pct"].GetDouble(), 1.5);
  EXPECT_DOUBLE_EQ(r["events_per_cycle"].GetDouble(), 1.0);
  EXPECT_TRUE(r["cswch_per_s"].IsNumber());
  EXPECT_TRUE(d["ratios"]["processes"][0]["cpu_pct"].IsNumber());

  // A = 0 %CPU: the ratio is null in JSON and "-" in text; procfs B has no runq p99 at all.
  ReportHeader hz = header_for(z, "idle");
  rapidjson::Document dz = parse_json(compare_json({hz, z}, {hb, b}));
  EXPECT_TRUE(dz["ratios"]["threads"][0]["cpu_pct"].IsNull());
  EXPECT_TRUE(dz["ratios"]["threads"][0]["runq_p99_us"].IsNull());
  std::string s = compare_text({hz, z}, {hb, b});
  EXPECT_NE(s.find("carrier-0 (A 100 / B 1234)"), std::string::npos) << s;
  const size_t row = s.find("  %CPU ");
  ASSERT_NE(row, std::string::npos);
  const std::string line = s.substr(row, s.find('\n', row) - row);
  EXPECT_EQ(line.back(), '-') << line;
  EXPECT_NE(s.find("process totals"), std::string::npos);
  EXPECT_NE(s.find("A: idle  source: procfs (lacks:"), std::string::npos) << s;
}

}  // namespace
}  // namespace platoon::tests
