// The one list of per-thread metrics. Each entry says once what a quantity is (key, title,
// unit, the snapshot fields it reads, how to read it from a thread's window row, how to print
// it, what it means, which way it sorts) and where it appears: a column of `platoon top`, the
// report's tables and JSON, a CSV column, a Prometheus family. The TUI column table, the help
// screen, report text and JSON, the CSV header and rows and the exporter's per-thread and
// exited-thread families are views over this list, so a new metric is one entry
// (docs/metrics.md shows one).
//
// Each output keeps its own order (`at`, 1-based; 0 = not shown there): their column orders are
// contracts (JSON keys, CSV columns, the screen users and tests read) that no catalog order can
// change, so a new metric takes the next free position of each output it claims.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/snapshot/snapshot.hpp"
#include "tui/analysis/window.hpp"

namespace platoon::metrics {

// nullopt: the thread has none in this window (no epoll calls, no drains, no samples).
using Value = std::optional<double>;

enum class Unit : uint8_t { id, text, percent, per_second, ratio, count, ns, us };
const char* to_string(Unit u);

// The outputs a metric can claim, as bits: needed_fields() takes a set of them.
enum Output : uint32_t {
  kOutTui = 1u << 0,          // a column of top's main table
  kOutReportText = 1u << 1,   // report's thread or process table, and the --vs comparison
  kOutReportJson = 1u << 2,   // a key of each thread in report --format json
  kOutCsv = 1u << 3,          // a column of export --format csv
  kOutProm = 1u << 4,         // a family of the exporter (per thread, or its exited threads')
  kOutAll = 0x1f,
};

struct TuiColumn {
  int at = 0;
  int priority = 1;           // on a narrow terminal the highest goes first (1 = never)
  bool left = false;          // left-aligned text
  bool sortable = true;
  bool shown = true;          // false: available, but not on the default screen
  std::string (*format)(double) = nullptr;                          // the value as a cell
  std::string (*cell)(const analysis::Window&, const analysis::ThreadWindow&) = nullptr;  // or the whole cell
};

struct ReportColumn {         // in report text: the --vs rows, and the tables below
  int at = 0;                 // order among the compared metrics (also --vs JSON ratios, process JSON)
  const char* title = nullptr;
  bool thread_table = false;  // a column of the "Threads" table (the process table: any with `process`)
  int width = 0;              // in those tables
  int decimals = 1;
  const char* process_title = nullptr;  // the process table's header, when it differs from title
};

struct JsonKey {              // the metric's key, in each thread object
  int at = 0;
  bool integer = false;
};

struct CsvColumn {            // the metric's key as the column name
  int at = 0;
  int decimals = -1;          // -1: an integer
  // A thread with no value still prints 0 when this holds (CSV has always written 0 for a thread
  // that has the section but no samples in it; report shows "-" there).
  bool (*zero_if)(const analysis::ThreadWindow&) = nullptr;
};

// Which threads a family has a series for: every exported thread, or only those that made
// epoll calls / drained (as the histograms of the same group).
enum class PromRows : uint8_t { all, io, drain };

// The exporter's counters of one cumulative ThreadSample counter: a per-thread family, and the
// per-process family that sums the process's exited threads (their series leave with them, so
// that family keeps per-process totals monotonic). An entry may claim either or both.
struct PromFamily {
  int at = 0;                   // the per-thread family's position; 0: none
  const char* name = nullptr;
  const char* help = nullptr;   // nullptr: shares the family of the entry before (a label value)
  const char* label = nullptr;  // extra label of this entry's sample, e.g. kind="voluntary"
  PromRows rows = PromRows::all;
  uint64_t (*counter)(const snapshot::ThreadSample&) = nullptr;
  bool seconds = false;         // the counter is ns, exported in seconds
  int exited_at = 0;            // the exited threads' family's position; 0: none
  const char* exited_name = nullptr;
  const char* exited_help = nullptr;  // nullptr: shares the family of the entry before
};

struct Metric {
  const char* key;            // stable id: the JSON key and CSV column name
  const char* title;          // the TUI column header
  int width;                  // the TUI column width
  Unit unit;
  uint32_t fields;            // Field bits it reads; unknown when the source has none of them
  Value (*value)(const analysis::Window&, const analysis::ThreadWindow&);
  Value (*process)(const analysis::Window&, const analysis::ProcessWindow&) = nullptr;  // the sum over a process
  const char* help = "";
  bool desc = true;           // biggest first when first chosen as the sort column
  TuiColumn tui{};
  ReportColumn report{};
  JsonKey json{};
  CsvColumn csv{};
  PromFamily prom{};
};

std::span<const Metric> catalog();
const Metric* find_metric(std::string_view key);
uint32_t outputs_of(const Metric& m);  // Output bits it claims

// The platoon batch of a thread: from the runtime's drain queue depth when it drained, else
// from the epoll events-per-cycle histogram.
enum class BatchFrom : uint8_t { none, drain, epoll };
struct Batch {
  BatchFrom from = BatchFrom::none;
  double p50 = 0, p99 = 0;
};
Batch batch_of(const analysis::ThreadWindow& t);

// The metrics one output shows, in that output's order.
std::vector<const Metric*> tui_columns();
std::vector<const Metric*> report_metrics();
std::vector<const Metric*> json_metrics();
std::vector<const Metric*> csv_metrics();
std::vector<const Metric*> prom_metrics();         // per-thread families
std::vector<const Metric*> prom_exited_metrics();  // per-process families of exited threads

// The value as every view reads it: nullopt when the window's source has none of the metric's
// fields, else the getter's.
Value value_of(const Metric& m, const analysis::Window& w, const analysis::ThreadWindow& t);
Value process_value_of(const Metric& m, const analysis::Window& w, const analysis::ProcessWindow& p);

// The union of the Field bits that these metrics need: what a producer must collect for a view
// showing them (htop's process flags). By output set: every metric any of those outputs shows.
uint32_t needed_fields(std::span<const Metric* const> shown);
uint32_t needed_fields(uint32_t outputs);

// Formatters shared with the TUI's header lines.
std::string format_pct(double v);    // 12.3, 100
std::string format_rate(double v);   // 999, 12.3k, 4.5M in 6 columns
std::string format_fixed(double v, int decimals);

}  // namespace platoon::metrics
