// The state of `platoon top`, with no curses in it: the last Window, a bounded history of each
// thread's recent intervals (for sparklines and the detail graphs), the column table (from the
// metric catalog) and which columns are shown, sort column and direction, the name filter, the
// selection (kept by thread identity, so it stays on the same thread while rows re-sort), pause,
// the view on screen and the replay position. In whole-machine mode (`top --all`) it also ranks
// the window's processes (the process view, one level above the threads: Enter opens a process's
// threads, Esc comes back), with their own sort and a selection kept by pid.
// Views only read it; tui/commands/top.cpp changes it from key actions and new windows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tui/analysis/observer_cost.hpp"
#include "tui/analysis/window.hpp"
#include "tui/metrics/catalog.hpp"

namespace platoon::dashboard {

// The columns of the main view are the catalog's TUI columns (tui/metrics/catalog.hpp), in
// their order: header, width, sort direction and help come from there, so they cannot drift
// apart. Column names the ones this code and its tests refer to; any other catalog column (one
// added later, off by default) is Column(i), its index in columns().
enum class Column : uint8_t {
  tid, name, cpu, wait, csw, nvcsw, migr, where, io_cycles, ev_per_cycle, batch_p50, batch_p99, history,
};
struct ColumnInfo {
  Column id;
  const char* title;
  int width;
  bool left;          // left-aligned text
  bool sortable;
  bool default_desc;  // biggest first when first chosen
  int priority;       // on a narrow terminal the highest go first (1 = never)
  const char* help;
  bool shown;         // on the default screen
  const metrics::Metric* metric;
};
std::span<const ColumnInfo> columns();
const ColumnInfo& column_info(Column c);

// The value a row sorts by in column c (name and where sort elsewhere / not at all).
double sort_value(Column c, const analysis::ThreadWindow& t, const analysis::Window& w = {});
// The Field bits the given columns need (catalog needed_fields over their metrics).
uint32_t needed_fields(std::span<const Column> cols);

// The columns of the process view (whole-machine mode). PID, COMMAND and THR are the model's own
// (defined once, in top_state.cpp); every other one is a catalog TUI column whose Metric has a
// `process` getter, with that column's title, width, help and sort direction, read with
// process_value_of(), and on screen when its thread column is. ProcColumn names the three; any
// other is ProcColumn(i), its index in process_columns() (process_column_of finds it).
enum class ProcColumn : uint8_t { pid, command, threads };
struct ProcessColumnInfo {
  ProcColumn id;
  const char* title;
  int width;
  bool left;
  bool default_desc;
  int priority;
  const char* help;
  const metrics::Metric* metric;  // nullptr for PID, COMMAND and THR
  Column column;         // the thread column it sums (when metric is set)
};
std::span<const ProcessColumnInfo> process_columns();
const ProcessColumnInfo& process_column_info(ProcColumn c);
// The process column that sums thread column c; nullopt when c's metric has no process getter.
std::optional<ProcColumn> process_column_of(Column c);
// The value a process sorts by in column c (COMMAND sorts by text elsewhere: 0 here).
double process_sort_value(ProcColumn c, const analysis::ProcessWindow& p, const analysis::Window& w = {});

struct ThreadKey {
  uint32_t tid = 0;
  uint64_t first_seen_ns = 0;
  auto operator<=>(const ThreadKey&) const = default;
};
inline ThreadKey key_of(const analysis::ThreadWindow& t) { return {t.tid, t.first_seen_ns}; }

struct ThreadHistory {                 // one value per interval, oldest first
  std::deque<double> cpu_pct, wait_pct, events_per_cycle, queue_depth;
};

// processes: whole-machine mode's top level; table: the threads (of the opened process there).
enum class ViewMode : uint8_t { table, detail, help, processes };
enum class SparkMetric : uint8_t { wait, cpu };

struct Replay {                        // `top --replay`: position among the trace's windows
  bool active = false;
  size_t position = 0;                 // windows shown so far (1..count)
  size_t count = 0;
  double speed = 1.0;
};

class TopState {
 public:
  explicit TopState(size_t history_len = 60);

  // Whole-machine mode, set once by the command before the first window: the dashboard opens on
  // the process view. Off (the default), there is no process view and nothing else changes.
  void set_machine_wide(bool on);
  bool machine_wide() const { return machine_wide_; }

  // A new interval. Threads absent from it lose their history (bounded memory on churn).
  void push(analysis::Window w);
  void clear_history();                // replay seeks rebuild it
  const analysis::Window& window() const { return window_; }
  bool has_window() const { return has_window_; }
  const ThreadHistory* history(const ThreadKey& k) const;
  size_t history_len() const { return history_len_; }

  // Rows of the main view: filtered by name (substring, case-insensitive), sorted; only the
  // opened process's threads while one is open (open_process).
  std::vector<const analysis::ThreadWindow*> rows() const;
  const analysis::ThreadWindow* selected() const;
  int selected_index() const;          // in rows(); -1 when none
  // Up/Down/PgUp/..: in the process view it moves the process selection, else the thread's.
  void move_selection(int delta);      // clamps; INT_MIN/INT_MAX go to the ends
  void select_key(ThreadKey k) { selection_ = k; }
  // Keeps the selection inside a page of `height` rows; returns the first row to draw.
  size_t scroll_for(size_t height);

  // The process view's rows: the window's processes filtered by name (ProcessWindow::comm, as
  // the threads are), sorted by the process sort, ties by pid. The selection is kept by pid.
  std::vector<const analysis::ProcessWindow*> process_rows() const;
  const analysis::ProcessWindow* selected_process() const;
  int selected_process_index() const;  // in process_rows(); -1 when none
  void select_pid(uint32_t pid) { process_selection_ = pid; }
  size_t process_scroll_for(size_t height);
  // Enter in the process view: the thread table, limited to the selected process's threads,
  // with a selection and a filter of its own (the process filter comes back with Esc).
  void open_process();
  std::optional<uint32_t> open_pid() const { return open_pid_; }
  // The opened process in the current window; nullptr when none is open or it is gone.
  const analysis::ProcessWindow* opened_process() const;

  // The sort of the thread table. sort_step and invert_sort act on the table on screen: the
  // process sort in the process view (and in the help over it).
  Column sort_column() const { return sort_; }
  bool sort_desc() const { return desc_; }
  void set_sort(Column c);             // its default direction
  void sort_step(int delta);           // next/previous sortable column
  void invert_sort();
  ProcColumn process_sort_column() const { return process_sort_; }
  bool process_sort_desc() const { return process_desc_; }
  void set_process_sort(ProcColumn c); // its default direction
  // Columns off by default (catalog tui.shown = false) can be put on screen, and back.
  bool column_shown(Column c) const;
  void show_column(Column c, bool on);
  bool process_column_shown(ProcColumn c) const;  // PID, COMMAND, THR always; else as its thread column

  const std::string& filter() const { return filter_; }
  bool editing_filter() const { return editing_filter_; }
  void begin_filter() { editing_filter_ = true; }
  void filter_input(char c) { filter_.push_back(c); }
  void filter_backspace() { if (!filter_.empty()) filter_.pop_back(); }
  void end_filter(bool keep) { editing_filter_ = false; if (!keep) filter_.clear(); }

  bool paused() const { return paused_; }
  void toggle_pause() { paused_ = !paused_; }
  ViewMode view() const { return view_; }
  // Enter: in the process view it opens the selected process (open_process), in the thread
  // table the selected thread's detail.
  void open_detail();
  void toggle_help() { view_ = view_ == ViewMode::help ? back_ : (back_ = view_, ViewMode::help); }
  ViewMode help_over() const { return back_; }  // what the help is drawn over (and returns to)
  // Esc, one level back: help → previous view, detail → table, the table of an opened process →
  // the process view; at the top level it clears the filter.
  void back();
  SparkMetric spark() const { return spark_; }
  void toggle_spark() { spark_ = spark_ == SparkMetric::wait ? SparkMetric::cpu : SparkMetric::wait; }

  // Refresh interval, stepped through 0.25 s .. 10 s.
  double interval_s() const { return interval_s_; }
  void set_interval(double s) { interval_s_ = s; }
  void interval_step(int delta);

  Replay& replay() { return replay_; }
  const Replay& replay() const { return replay_; }
  void speed_step(int delta);          // replay speed ×2 / ÷2 within 1/8..64

  // Shown in the header; set by the loop.
  std::string target, source_line, recording, status;
  std::vector<std::string> notes;
  // What top itself cost over the last interval (live), or what the recorder cost (replay).
  std::optional<analysis::ObserverCost> cost;

 private:
  size_t history_len_;
  analysis::Window window_;
  bool has_window_ = false;
  std::map<ThreadKey, std::pair<uint64_t, ThreadHistory>> history_;  // (generation last seen, history)
  uint64_t generation_ = 0;
  std::optional<ThreadKey> selection_;
  size_t scroll_ = 0;
  Column sort_ = Column::cpu;
  bool desc_ = true;
  std::vector<bool> shown_;            // by column index; empty until a column is toggled
  std::string filter_;
  bool editing_filter_ = false;
  bool paused_ = false;
  ViewMode view_ = ViewMode::table;
  ViewMode back_ = ViewMode::table;
  SparkMetric spark_ = SparkMetric::wait;
  double interval_s_ = 1.0;
  Replay replay_;
  // Whole-machine mode: the process view's sort, selection and scroll, the opened process and
  // the process filter kept while its threads are shown.
  bool machine_wide_ = false;
  ProcColumn process_sort_;
  bool process_desc_ = true;
  std::optional<uint32_t> process_selection_;
  size_t process_scroll_ = 0;
  std::optional<uint32_t> open_pid_;
  std::string process_filter_;

  bool on_processes() const {
    return view_ == ViewMode::processes || (view_ == ViewMode::help && back_ == ViewMode::processes);
  }
};

}  // namespace platoon::dashboard
