// The observer-cost arithmetic (tui/analysis/observer_cost.hpp) on readings with known answers:
// rates per program and in total, the recorder's CPU, unknown stats never read as free, the
// trace note written and read back exactly, and where the cost shows up: report text and JSON
// and the exporter's self-metrics (top's header: tests/bpf/observer_cost_test.sh).
#include "tui/analysis/observer_cost.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/model/builders.hpp"
#include "tui/outputs/prom_metrics.hpp"
#include "tui/outputs/report.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

using test::kSec;

CostSample sample(uint64_t wall_ns, uint64_t self_ns, std::vector<ProgramCost> progs, BpfStats st = BpfStats::on) {
  return {CostReading{st, st == BpfStats::on ? "held on by platoon while it runs" : "stats off", std::move(progs)},
          wall_ns, self_ns};
}

// 10 s apart: switch_btf ran 100,000 times for 9.5 ms (95 ns each), wakeup_btf 20,000 times
// for 1 ms (50 ns each), exit_btf not at all; the recorder used 40 ms of CPU.
ObserverCost ten_seconds() {
  const CostSample a = sample(5 * kSec, 100'000'000,
                              {{"switch_btf", 1000, 95'000, 0}, {"wakeup_btf", 10, 500, 0}, {"exit_btf", 3, 300, 0}});
  const CostSample b = sample(15 * kSec, 140'000'000,
                              {{"switch_btf", 101'000, 9'595'000, 2}, {"wakeup_btf", 20'010, 1'000'500, 0},
                               {"exit_btf", 3, 300, 0}});
  return observer_cost(a, b);
}

TEST(ObserverCost, RatesPerProgramAndInTotal) {
  const ObserverCost c = ten_seconds();
  EXPECT_EQ(c.stats, BpfStats::on);
  EXPECT_DOUBLE_EQ(c.wall_s, 10.0);
  ASSERT_EQ(c.programs.size(), 2u);  // exit_btf did not run in the span: not listed
  const ProgramRate& sw = c.programs[0];  // costliest first
  EXPECT_EQ(sw.name, "switch_btf");
  EXPECT_EQ(sw.runs, 100'000u);
  EXPECT_EQ(sw.run_ns, 9'500'000u);
  EXPECT_EQ(sw.misses, 2u);
  ASSERT_TRUE(sw.ns_per_run);
  EXPECT_DOUBLE_EQ(*sw.ns_per_run, 95.0);
  EXPECT_DOUBLE_EQ(sw.runs_per_s, 10'000.0);
  EXPECT_DOUBLE_EQ(sw.ns_per_s, 950'000.0);
  EXPECT_NEAR(sw.cpu_pct, 0.095, 1e-12);
  EXPECT_EQ(c.programs[1].name, "wakeup_btf");
  EXPECT_DOUBLE_EQ(*c.programs[1].ns_per_run, 50.0);
  EXPECT_EQ(c.bpf_runs, 120'000u);
  EXPECT_EQ(c.bpf_run_ns, 10'500'000u);
  EXPECT_DOUBLE_EQ(c.bpf_ns_per_s, 1'050'000.0);
  EXPECT_NEAR(c.bpf_cpu_pct, 0.105, 1e-12);
  EXPECT_EQ(c.self_cpu_ns, 40'000'000u);
  EXPECT_NEAR(c.self_cpu_pct, 0.4, 1e-12);
}

TEST(ObserverCost, UnknownStatsAreNotAZeroCost) {
  const CostSample a = sample(0, 0, {{"switch_btf", 0, 0, 0}}, BpfStats::unknown);
  const CostSample b = sample(2 * kSec, 20'000'000, {{"switch_btf", 0, 0, 0}}, BpfStats::unknown);
  const ObserverCost c = observer_cost(a, b);
  EXPECT_EQ(c.stats, BpfStats::unknown);
  EXPECT_TRUE(c.programs.empty());
  EXPECT_NEAR(c.self_cpu_pct, 1.0, 1e-12);  // the recorder's own CPU is known all the same
  const std::string s = cost_summary(c);
  EXPECT_NE(s.find("BPF unknown (stats off)"), std::string::npos) << s;
  EXPECT_NE(s.find("recorder 1.0% CPU"), std::string::npos) << s;
  EXPECT_EQ(cost_short(c), "cost: bpf ? cpu, self 1.0%");
}

TEST(ObserverCost, StatsTurnedOnMidwayAreUnknown) {
  const CostSample a = sample(0, 0, {{"switch_btf", 0, 0, 0}}, BpfStats::unknown);
  const CostSample b = sample(kSec, 0, {{"switch_btf", 10, 1000, 0}});
  EXPECT_EQ(observer_cost(a, b).stats, BpfStats::unknown);
}

TEST(ObserverCost, ReloadedProgramCountsFromZero) {
  const CostSample a = sample(0, 0, {{"switch_btf", 500, 50'000, 0}});
  const CostSample b = sample(kSec, 0, {{"switch_btf", 100, 10'000, 0}});
  const ObserverCost c = observer_cost(a, b);
  ASSERT_EQ(c.programs.size(), 1u);
  EXPECT_EQ(c.programs[0].runs, 100u);
}

TEST(ObserverCost, NoTimeNoRates) {
  const ObserverCost c = observer_cost(sample(kSec, 5, {{"p", 1, 10, 0}}), sample(kSec, 5, {{"p", 2, 20, 0}}));
  EXPECT_EQ(c.bpf_cpu_pct, 0);
  EXPECT_EQ(c.self_cpu_pct, 0);
  EXPECT_TRUE(std::isfinite(c.programs.at(0).runs_per_s));
}

TEST(ObserverCost, SummaryNamesTheCostliestPrograms) {
  const std::string s = cost_summary(ten_seconds(), "recorder", 1);
  EXPECT_EQ(s, "BPF 0.10% of a CPU (switch_btf 95 ns/run 10.0k/s, 1 more), recorder 0.40% CPU");
  EXPECT_EQ(cost_short(ten_seconds()), "cost: bpf 0.1% cpu, self 0.4%");
}

TEST(ObserverCost, NoteRoundTrips) {
  const ObserverCost c = ten_seconds();
  const std::string note = cost_note(c);
  EXPECT_TRUE(is_cost_note(note));
  EXPECT_EQ(note.rfind("observer cost: BPF 0.10% of a CPU", 0), 0u) << note;
  auto back = parse_cost_note(note);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->stats, BpfStats::on);
  EXPECT_EQ(back->why, c.why);
  EXPECT_EQ(back->wall_ns, 10 * kSec);
  EXPECT_EQ(back->self_cpu_ns, c.self_cpu_ns);
  ASSERT_EQ(back->programs.size(), 2u);
  EXPECT_EQ(back->programs[0].name, "switch_btf");
  EXPECT_EQ(back->programs[0].runs, 100'000u);
  EXPECT_EQ(back->programs[0].run_ns, 9'500'000u);
  EXPECT_EQ(back->programs[0].misses, 2u);
  EXPECT_DOUBLE_EQ(back->bpf_cpu_pct, c.bpf_cpu_pct);
  EXPECT_EQ(cost_note(*back), note);
}

// Sampled stats: 1 s of the 10 counted. The span's figures are the counted ones scaled by
// 10; ns per run is the same; misses (counted by the kernel always) are not scaled.
CostSample sampled(uint64_t wall_ns, uint64_t counted_ns, std::vector<ProgramCost> progs) {
  CostSample s = sample(wall_ns, 0, std::move(progs));
  s.bpf.sampled = true;
  s.bpf.counted_ns = counted_ns;
  return s;
}

TEST(ObserverCost, SampledStatsAreScaledToTheSpan) {
  const CostSample a = sampled(5 * kSec, kSec / 2, {{"switch_btf", 500, 47'500, 1}});
  const CostSample b = sampled(15 * kSec, kSec / 2 + kSec, {{"switch_btf", 10'500, 997'500, 3}});
  const ObserverCost c = observer_cost(a, b);
  EXPECT_EQ(c.stats, BpfStats::on);
  EXPECT_EQ(c.counted_ns, kSec);
  ASSERT_EQ(c.programs.size(), 1u);
  EXPECT_EQ(c.programs[0].runs, 100'000u);
  EXPECT_EQ(c.programs[0].run_ns, 9'500'000u);
  EXPECT_EQ(c.programs[0].misses, 2u);
  EXPECT_DOUBLE_EQ(*c.programs[0].ns_per_run, 95.0);
  EXPECT_DOUBLE_EQ(c.programs[0].runs_per_s, 10'000.0);
  EXPECT_NE(cost_summary(c).find("sampled 1.0 of 10.0 s"), std::string::npos) << cost_summary(c);
  // The note carries the estimates and the counted time: read back, nothing is scaled twice.
  auto back = parse_cost_note(cost_note(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->counted_ns, kSec);
  EXPECT_EQ(back->programs[0].runs, 100'000u);
  EXPECT_EQ(cost_note(*back), cost_note(c));
}

TEST(ObserverCost, SampledSpanWithoutAWindowIsUnknown) {
  const CostSample a = sampled(5 * kSec, kSec, {{"switch_btf", 500, 47'500, 0}});
  const CostSample b = sampled(5 * kSec + kSec / 2, kSec, {{"switch_btf", 500, 47'500, 0}});
  EXPECT_EQ(counted_between(a, b), 0u);
  const ObserverCost c = observer_cost(a, b);
  EXPECT_EQ(c.stats, BpfStats::unknown);
  EXPECT_TRUE(c.programs.empty());
  EXPECT_NE(c.why.find("no BPF stats sampling window"), std::string::npos) << c.why;
}

TEST(ObserverCost, UnknownNoteKeepsItsReason) {
  const ObserverCost c = observer_cost(BpfStats::unknown, "--no-bpf-stats and kernel.bpf_stats_enabled=0", kSec,
                                       1000, {});
  auto back = parse_cost_note(cost_note(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->stats, BpfStats::unknown);
  EXPECT_EQ(back->why, "--no-bpf-stats and kernel.bpf_stats_enabled=0");
}

TEST(ObserverCost, OtherNotesAndBrokenNotesDoNotParse) {
  for (const char* bad : {"bpf cost: switch_btf 95.0 ns/run over 100 runs", "observer cost: no data",
                          "observer cost: x | stats=maybe wall_ns=1 self_cpu_ns=1 why=",
                          "observer cost: x | stats=on wall_ns=1 why=", "observer cost: x | stats=on wall_ns=1 self_cpu_ns=1 prog=a/1/2 why=",
                          "observer cost: x | stats=on wall_ns=-1 self_cpu_ns=1 why="})
    EXPECT_FALSE(parse_cost_note(bad)) << bad;
  EXPECT_FALSE(is_cost_note("target 12 exited"));
}

TEST(ObserverCost, SelfCpuGrowsWithWork) {
  const uint64_t before = self_cpu_ns();
  volatile uint64_t x = 0;
  for (uint64_t i = 0; i < 200'000'000ull && self_cpu_ns() - before < 20'000'000; ++i) x = x + i;
  EXPECT_GE(self_cpu_ns() - before, 10'000'000u);  // getrusage ticks are coarse: a generous bound
}

TEST(ObserverCostReport, TextAndJson) {
  Window w = make_window(test::snapshot_at(0), test::snapshot_at(10 * kSec));
  ReportHeader h = header_for(w, "x.trace");
  EXPECT_NE(report_text(h, w).find("observer cost: unknown (the recording holds no cost note"), std::string::npos);
  rapidjson::Document none = test::parse_json(report_json(h, w));
  EXPECT_FALSE(none["observer_cost"]["known"].GetBool());

  h.cost = ten_seconds();
  const std::string text = report_text(h, w);
  EXPECT_NE(text.find("observer cost: BPF 0.10% of a CPU (switch_btf 95 ns/run 10.0k/s, wakeup_btf 50 ns/run "
                      "2.0k/s), recorder 0.40% CPU over 10.0 s\n"),
            std::string::npos)
      << text;
  rapidjson::Document d = test::parse_json(report_json(h, w));
  const auto& c = d["observer_cost"];
  EXPECT_TRUE(c["known"].GetBool());
  EXPECT_STREQ(c["bpf_stats"].GetString(), "on");
  EXPECT_NEAR(c["bpf_cpu_pct"].GetDouble(), 0.105, 1e-3);
  EXPECT_NEAR(c["recorder_cpu_pct"].GetDouble(), 0.4, 1e-3);
  EXPECT_EQ(c["bpf_runs"].GetUint64(), 120'000u);
  ASSERT_EQ(c["programs"].Size(), 2u);
  EXPECT_STREQ(c["programs"][0]["name"].GetString(), "switch_btf");
  EXPECT_DOUBLE_EQ(c["programs"][0]["ns_per_run"].GetDouble(), 95.0);

  // --vs: each side says what its recorder cost, in text and JSON.
  const ReportHeader old = header_for(w, "old.trace");
  const std::string vs = compare_text({h, w}, {old, w});
  EXPECT_NE(vs.find("\n   observer cost: BPF 0.10% of a CPU"), std::string::npos) << vs;
  EXPECT_NE(vs.find("\n   observer cost: unknown"), std::string::npos) << vs;
  rapidjson::Document v = test::parse_json(compare_json({h, w}, {old, w}));
  EXPECT_TRUE(v["a"]["observer_cost"]["known"].GetBool());
  EXPECT_FALSE(v["b"]["observer_cost"]["known"].GetBool());
}

TEST(ObserverCostExporter, SelfMetrics) {
  PromExposition e(10);
  e.observe(test::snapshot_at(kSec));
  PromScrapeInfo info;
  info.attach_mode = "tp_btf";
  info.bpf_cost = {BpfStats::on, "held", {{"switch_btf", 1000, 95'000, 1}, {"epoll_pwait2_exit", 0, 0, 0}}};
  info.self_cpu_seconds = 0.25;
  const std::string text = e.render(info);
  for (const char* want : {"platoon_bpf_stats_enabled 1\n", "platoon_bpf_run_seconds_total{program=\"switch_btf\"} 9.5e-05\n",
                           "platoon_bpf_runs_total{program=\"switch_btf\"} 1000\n",
                           "platoon_bpf_recursion_misses_total{program=\"switch_btf\"} 1\n",
                           "platoon_self_cpu_seconds_total 0.25\n", "# TYPE platoon_bpf_runs_total counter\n"})
    EXPECT_NE(text.find(want), std::string::npos) << want;
  EXPECT_EQ(text.find("epoll_pwait2_exit"), std::string::npos);  // never ran: no series of zeros

  info.bpf_cost.stats = BpfStats::unknown;  // counters standing still at 0 must not read as free
  const std::string off = e.render(info);
  EXPECT_NE(off.find("platoon_bpf_stats_enabled 0\n"), std::string::npos);
  EXPECT_EQ(off.find("platoon_bpf_runs_total{"), std::string::npos);
  EXPECT_NE(off.find("platoon_self_cpu_seconds_total 0.25\n"), std::string::npos);
  EXPECT_EQ(off.find("platoon_bpf_stats_sampled_seconds_total"), std::string::npos);

  // Sampled, 100 ms of every second: the windows' counts are scaled to the whole time.
  info.bpf_cost.stats = BpfStats::on;
  info.bpf_cost.sampled = true;
  info.bpf_cost.counted_ns = 300'000'000;
  const std::string sampled = e.render(info);
  for (const char* want : {"platoon_bpf_run_seconds_total{program=\"switch_btf\"} 0.00095\n",
                           "platoon_bpf_runs_total{program=\"switch_btf\"} 10000\n",
                           "platoon_bpf_recursion_misses_total{program=\"switch_btf\"} 1\n",
                           "platoon_bpf_stats_sampled_seconds_total 0.3\n"})
    EXPECT_NE(sampled.find(want), std::string::npos) << want << sampled;
}

}  // namespace
}  // namespace platoon::tests
