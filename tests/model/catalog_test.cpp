// The metric catalog: keys unique, each output's positions a sequence, every entry that claims an
// output present in that output (a small synthetic window rendered through report JSON and text,
// CSV, Prometheus and the TUI column table), and needed_fields: what a view's metrics need.
#include "tui/metrics/catalog.hpp"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "tui/dashboard/state/top_state.hpp"
#include "tui/outputs/export_csv.hpp"
#include "tui/outputs/prom_metrics.hpp"
#include "tui/outputs/report.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

constexpr uint64_t kSec = 1'000'000'000;

// One carrier with every field non-zero, one idle thread beside it.
Snapshot snapshot_at(uint64_t k) {
  Snapshot s;
  s.ts_ns = k * kSec;
  ThreadSample c, idle;
  c.tid = c.pid = idle.pid = 10;
  idle.tid = 11;
  c.comm = "carrier-0", idle.comm = "idle";
  c.first_seen_ns = idle.first_seen_ns = 1;
  c.run_ns = k * kSec / 2, c.wait_ns = k * kSec / 10, c.switches_voluntary = 3 * k, c.switches_involuntary = 5 * k;
  c.migrations = k, c.wakeups = 7 * k, c.cpu_switch_ins = {k, k};
  c.runq_hist[12] = 4 * k;
  c.io_cycles = 10 * k, c.io_events = 30 * k, c.io_blocked_ns = k * 1000, c.io_events_hist[3] = 10 * k;
  c.drains = 2 * k, c.drain_depth_sum = 8 * k, c.drain_depth_hist[4] = 2 * k, c.drain_fibers_run = 6 * k, c.steals = k;
  s.threads = {c, idle};
  return s;
}

Window window() { return make_window(snapshot_at(1), snapshot_at(3)); }

using Pos = int (*)(const Metric&);
const std::pair<const char*, Pos> kOutputs[] = {
    {"tui", [](const Metric& m) { return m.tui.at; }},   {"report", [](const Metric& m) { return m.report.at; }},
    {"json", [](const Metric& m) { return m.json.at; }}, {"csv", [](const Metric& m) { return m.csv.at; }},
    {"prom", [](const Metric& m) { return m.prom.at; }},
};

TEST(Catalog, KeysAreUniqueAndEachOutputsPositionsCountFromOne) {
  std::set<std::string> keys;
  for (const Metric& m : catalog()) {
    EXPECT_TRUE(keys.insert(m.key).second) << "duplicate key " << m.key;
    EXPECT_NE(m.value, nullptr) << m.key;
    EXPECT_NE(outputs_of(m), 0u) << m.key << " is shown nowhere";
    if (m.tui.at) {
      EXPECT_TRUE(m.tui.format || m.tui.cell || std::string(m.key) == "history") << m.key;
    }
    if (m.report.at) {
      EXPECT_NE(m.report.title, nullptr) << m.key;
    }
    if (m.prom.at) {
      EXPECT_NE(m.prom.counter, nullptr) << m.key;
    }
  }
  for (const auto& [name, pos] : kOutputs) {
    std::vector<int> at;
    for (const Metric& m : catalog())
      if (pos(m)) at.push_back(pos(m));
    std::sort(at.begin(), at.end());
    for (size_t i = 0; i < at.size(); ++i) EXPECT_EQ(at[i], static_cast<int>(i) + 1) << name;
  }
}

TEST(Catalog, EveryJsonKeyIsInEachThreadOfTheReport) {
  const Window w = window();
  rapidjson::Document d;
  d.Parse(report_json(header_for(w), w).c_str());
  ASSERT_FALSE(d.HasParseError());
  const auto& t = d["threads"][0];
  for (const Metric* m : json_metrics()) EXPECT_TRUE(t.HasMember(m->key)) << m->key;
  EXPECT_DOUBLE_EQ(t["wakeups_per_s"].GetDouble(), 7.0);  // 14 wakeups over 2 s
  // A source without the field leaves the key out rather than writing 0.
  Snapshot a = snapshot_at(1), b = snapshot_at(3);
  a.fields = b.fields = kFieldsProcfs;
  const Window p = make_window(a, b);
  d.Parse(report_json(header_for(p), p).c_str());
  EXPECT_FALSE(d["threads"][0].HasMember("wakeups_per_s"));
  EXPECT_TRUE(d["threads"][0].HasMember("cpu_pct"));
}

TEST(Catalog, EveryReportTitleIsInTheTextAndTheComparison) {
  const Window w = window();
  const std::string text = report_text(header_for(w), w);
  const ReportHeader h = header_for(w);
  const std::string vs = compare_text({h, w}, {h, w});
  for (const Metric* m : report_metrics()) {
    EXPECT_NE(vs.find(m->report.title), std::string::npos) << m->key;
    if (m->report.thread_table) {
      EXPECT_NE(text.find(m->report.title), std::string::npos) << m->key;
    }
    if (m->process) {
      const char* t = m->report.process_title ? m->report.process_title : m->report.title;
      EXPECT_NE(text.find(t), std::string::npos) << m->key;
    }
  }
}

TEST(Catalog, EveryCsvColumnIsInTheHeaderInOrderAndEveryRowHasACellForIt) {
  std::ostringstream out;
  write_csv_header(out);
  std::string expected = "interval_start_s,interval_end_s,pid,tid,comm";
  for (const Metric* m : csv_metrics()) expected += std::string(",") + m->key;
  EXPECT_EQ(out.str(), expected + "\n");
  EXPECT_EQ(out.str().substr(out.str().size() - 20), ",wait_idle_exit_pct\n");  // new columns go last
  std::ostringstream rows;
  write_csv_rows(rows, window(), kSec);
  const std::string first = rows.str().substr(0, rows.str().find('\n'));
  EXPECT_EQ(std::count(first.begin(), first.end(), ','), std::count(expected.begin(), expected.end(), ','));
  // The cell under wakeups_per_s (a column added through the catalog alone).
  auto cells = [](const std::string& line) {
    std::vector<std::string> v;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) v.push_back(c);
    return v;
  };
  const auto names = cells(expected), values = cells(first);
  const auto at = std::find(names.begin(), names.end(), "wakeups_per_s") - names.begin();
  ASSERT_LT(static_cast<size_t>(at), values.size());
  EXPECT_EQ(values[static_cast<size_t>(at)], "7.000");
}

TEST(Catalog, EveryPromFamilyIsInTheExposition) {
  PromExposition e(10);
  e.observe(snapshot_at(3));
  const std::string text = e.render({});
  for (const Metric* m : prom_metrics()) {
    EXPECT_NE(text.find(std::string("# TYPE ") + m->prom.name + " counter\n"), std::string::npos) << m->key;
    std::string sample = std::string(m->prom.name) + "{pid=\"10\",process=\"carrier-0\",thread=\"carrier-0\",tid=\"10\"";
    if (m->prom.label) sample += std::string(",") + m->prom.label;
    EXPECT_NE(text.find(sample + "} "), std::string::npos) << m->key;
  }
  EXPECT_NE(text.find("platoon_thread_wakeups_total{pid=\"10\",process=\"carrier-0\",thread=\"carrier-0\",tid=\"10\"} 21\n"),
            std::string::npos);
}

TEST(Catalog, EveryTuiColumnIsInTheColumnTableInOrder) {
  const auto cols = columns();
  const auto metrics = tui_columns();
  ASSERT_EQ(cols.size(), metrics.size());
  for (size_t i = 0; i < cols.size(); ++i) {
    EXPECT_EQ(cols[i].metric, metrics[i]);
    EXPECT_EQ(static_cast<size_t>(cols[i].id), i);
    EXPECT_STREQ(cols[i].title, metrics[i]->title);
    EXPECT_STREQ(cols[i].help, metrics[i]->help);
  }
  // The names the TUI code uses are the catalog entries they mean.
  const std::pair<Column, const char*> named[] = {
      {Column::tid, "tid"},           {Column::name, "comm"},
      {Column::cpu, "cpu_pct"},       {Column::wait, "wait_pct"},
      {Column::csw, "cswch_per_s"},   {Column::nvcsw, "nvcswch_per_s"},
      {Column::migr, "migrations_per_s"}, {Column::where, "cpus"},
      {Column::io_cycles, "io_cycles_per_s"}, {Column::ev_per_cycle, "events_per_cycle"},
      {Column::batch_p50, "batch_p50"}, {Column::batch_p99, "batch_p99"},
      {Column::history, "history"},
  };
  for (auto [c, key] : named) EXPECT_STREQ(column_info(c).metric->key, key);
}

TEST(Catalog, AColumnOffByDefaultIsNotShownOrSortedUntilPutOnScreen) {
  const Metric* wak = find_metric("wakeups_per_s");
  ASSERT_NE(wak, nullptr);
  ASSERT_FALSE(wak->tui.shown);
  const Column c = static_cast<Column>(wak->tui.at - 1);
  TopState st;
  EXPECT_FALSE(st.column_shown(c));
  st.set_sort(Column::tid);
  st.sort_step(-1);
  EXPECT_EQ(st.sort_column(), Column::batch_p99);  // skips it
  st.show_column(c, true);
  EXPECT_TRUE(st.column_shown(c));
  st.set_sort(Column::tid);
  st.sort_step(-1);
  EXPECT_EQ(st.sort_column(), c);
  const Window w = window();
  EXPECT_DOUBLE_EQ(sort_value(c, w.threads[0], w), 7.0);
}

TEST(Catalog, NeededFieldsAreTheUnionOverWhatIsShown) {
  // A top showing only %CPU and %WAIT needs run/wait times: no epoll or drain programs.
  const Column cpu_wait[] = {Column::cpu, Column::wait};
  EXPECT_EQ(needed_fields(cpu_wait), static_cast<uint32_t>(kFieldRunWait));
  const Column with_batch[] = {Column::tid, Column::name, Column::cpu, Column::batch_p99};
  EXPECT_EQ(needed_fields(with_batch), static_cast<uint32_t>(kFieldRunWait | kFieldIo | kFieldDrain));
  const Column where[] = {Column::where};
  EXPECT_EQ(needed_fields(where), static_cast<uint32_t>(kFieldCpuDist));
  // By output: every field some metric of the output reads.
  EXPECT_EQ(needed_fields(kOutReportText) & (kFieldWakeups | kFieldPairs), 0u);
  EXPECT_NE(needed_fields(kOutCsv) & kFieldWakeups, 0u);
  EXPECT_EQ(needed_fields(kOutAll) & ~static_cast<uint32_t>(kFieldsKnown), 0u);
  const Metric* two[] = {find_metric("cpu_pct"), find_metric("wakeups_per_s")};
  EXPECT_EQ(needed_fields(two), static_cast<uint32_t>(kFieldRunWait | kFieldWakeups));
  EXPECT_EQ(needed_fields(std::span<const Metric* const>{}), 0u);
}

}  // namespace
}  // namespace platoon::tests
