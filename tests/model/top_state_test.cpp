// The model behind `platoon top`, without curses: sorting by every column and inverting, the
// name filter, a selection that follows its thread across re-sorts and refreshes, scrolling,
// bounded per-thread history, the batch source (drain vs epoll), interval and speed steps; and
// whole-machine mode's process view: ranking, its own sort columns, the selection by pid, the
// filter on process names, Enter and Esc through processes, their threads and the detail.
#include "tui/dashboard/state/top_state.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <string>

#include "tests/model/builders.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

ThreadWindow thread(uint32_t tid, const char* comm, double cpu, double wait) {
  ThreadWindow t;
  t.tid = tid;
  t.pid = 100;
  t.comm = comm;
  t.first_seen_ns = 1;
  t.cpu_pct = cpu;
  t.wait_pct = wait;
  return t;
}

Window window(std::vector<ThreadWindow> threads) {
  Window w;
  w.wall_s = 1;
  w.fields = kFieldsBpf;
  w.threads = std::move(threads);
  return w;
}

std::vector<uint32_t> tids(const TopState& st) {
  std::vector<uint32_t> out;
  for (const auto* t : st.rows()) out.push_back(t->tid);
  return out;
}

TEST(TopState, SortsByCpuDescendingFirstThenByChosenColumn) {
  TopState st;
  st.push(window({thread(1, "carrier-0", 10, 50), thread(2, "carrier-1", 30, 5), thread(3, "master-poller", 20, 20)}));
  EXPECT_EQ(tids(st), (std::vector<uint32_t>{2, 3, 1}));
  st.sort_step(1);  // %CPU -> %WAIT
  EXPECT_EQ(st.sort_column(), Column::wait);
  EXPECT_EQ(tids(st), (std::vector<uint32_t>{1, 3, 2}));
  st.invert_sort();
  EXPECT_EQ(tids(st), (std::vector<uint32_t>{2, 3, 1}));
  st.sort_step(-1);
  st.sort_step(-1);  // NAME, ascending by default
  EXPECT_EQ(st.sort_column(), Column::name);
  EXPECT_FALSE(st.sort_desc());
  EXPECT_EQ(tids(st), (std::vector<uint32_t>{1, 2, 3}));
}

TEST(TopState, SortStepSkipsColumnsThatCannotSortAndWraps) {
  TopState st;
  for (int i = 0; i < 40; ++i) {
    st.sort_step(1);
    EXPECT_TRUE(column_info(st.sort_column()).sortable);
  }
  st.set_sort(Column::tid);
  st.sort_step(-1);  // wraps past HIST (not sortable) to b99
  EXPECT_EQ(st.sort_column(), Column::batch_p99);
}

TEST(TopState, FilterIsACaseInsensitiveSubstringAndEscClearsIt) {
  TopState st;
  st.push(window({thread(1, "carrier-0", 1, 0), thread(2, "carrier-1", 2, 0), thread(3, "master-poller", 3, 0)}));
  st.begin_filter();
  for (char c : std::string("CARR")) st.filter_input(c);
  EXPECT_EQ(tids(st), (std::vector<uint32_t>{2, 1}));
  st.filter_backspace();
  EXPECT_EQ(st.filter(), "CAR");
  st.end_filter(true);
  EXPECT_FALSE(st.editing_filter());
  EXPECT_EQ(tids(st).size(), 2u);
  st.back();  // Esc in the table clears a kept filter
  EXPECT_EQ(tids(st).size(), 3u);
}

TEST(TopState, SelectionFollowsItsThreadWhenRowsResort) {
  TopState st;
  st.push(window({thread(1, "a", 10, 0), thread(2, "b", 20, 0), thread(3, "c", 30, 0)}));
  st.move_selection(1);  // rows 3,2,1: second row is tid 2
  ASSERT_NE(st.selected(), nullptr);
  EXPECT_EQ(st.selected()->tid, 2u);
  st.push(window({thread(1, "a", 10, 0), thread(2, "b", 50, 0), thread(3, "c", 30, 0)}));
  EXPECT_EQ(st.selected()->tid, 2u);
  EXPECT_EQ(st.selected_index(), 0);
  st.move_selection(INT_MAX);
  EXPECT_EQ(st.selected()->tid, 1u);
  st.move_selection(-100);
  EXPECT_EQ(st.selected()->tid, 2u);
  // The selected thread exits: the top row stands in.
  st.move_selection(1);
  st.push(window({thread(1, "a", 10, 0), thread(2, "b", 50, 0)}));
  EXPECT_EQ(st.selected()->tid, 2u);
}

TEST(TopState, ScrollKeepsTheSelectionOnScreen) {
  TopState st;
  std::vector<ThreadWindow> many;
  for (uint32_t i = 1; i <= 100; ++i) many.push_back(thread(i, "w", 0, 0));
  st.push(window(many));
  st.set_sort(Column::tid);
  st.move_selection(50);
  EXPECT_EQ(st.scroll_for(10), 41u);
  st.move_selection(INT_MIN);
  EXPECT_EQ(st.scroll_for(10), 0u);
  st.move_selection(INT_MAX);
  EXPECT_EQ(st.scroll_for(10), 90u);
  EXPECT_EQ(st.scroll_for(200), 0u);  // resized to a taller terminal
}

TEST(TopState, HistoryIsBoundedAndDroppedWithTheThread) {
  TopState st(5);
  for (int i = 0; i < 12; ++i) st.push(window({thread(1, "a", i, 2.0 * i), thread(2, "b", 0, 0)}));
  const auto* h = st.history({1, 1});
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->wait_pct.size(), 5u);
  EXPECT_DOUBLE_EQ(h->wait_pct.front(), 14);
  EXPECT_DOUBLE_EQ(h->cpu_pct.back(), 11);
  st.push(window({thread(1, "a", 0, 0)}));
  EXPECT_EQ(st.history({2, 1}), nullptr);
  // A reused tid with a new first_seen is a new thread: a fresh history.
  auto reborn = thread(1, "a", 0, 0);
  reborn.first_seen_ns = 99;
  st.push(window({reborn}));
  EXPECT_EQ(st.history({1, 99})->wait_pct.size(), 1u);
}

TEST(TopState, BatchComesFromDrainsWhenTheThreadDrainsElseFromEpoll) {
  auto t = thread(1, "carrier-0", 0, 0);
  EXPECT_EQ(batch_of(t).from, BatchFrom::none);
  t.delta.io_cycles = 100;
  t.delta.io_events_hist[3] = 100;
  EXPECT_EQ(batch_of(t).from, BatchFrom::epoll);
  EXPECT_NEAR(batch_of(t).p50, 3, 1);
  t.delta.drains = 10;
  t.delta.drain_depth_hist[8] = 10;
  EXPECT_EQ(batch_of(t).from, BatchFrom::drain);
  EXPECT_NEAR(batch_of(t).p99, 8, 1);
  EXPECT_DOUBLE_EQ(sort_value(Column::batch_p99, t), batch_of(t).p99);
}

TEST(TopState, ViewsHelpAndDetailReturnWhereTheyCameFrom) {
  TopState st;
  st.open_detail();  // no threads: nothing to open
  EXPECT_EQ(st.view(), ViewMode::table);
  st.push(window({thread(1, "a", 0, 0)}));
  st.open_detail();
  EXPECT_EQ(st.view(), ViewMode::detail);
  st.toggle_help();
  EXPECT_EQ(st.view(), ViewMode::help);
  st.back();
  EXPECT_EQ(st.view(), ViewMode::detail);
  st.toggle_help();
  st.toggle_help();
  EXPECT_EQ(st.view(), ViewMode::detail);
  st.back();
  EXPECT_EQ(st.view(), ViewMode::table);
}

TEST(TopState, IntervalAndSpeedStepWithinBounds) {
  TopState st;
  st.interval_step(-1);
  EXPECT_DOUBLE_EQ(st.interval_s(), 0.5);
  for (int i = 0; i < 10; ++i) st.interval_step(-1);
  EXPECT_DOUBLE_EQ(st.interval_s(), 0.25);
  for (int i = 0; i < 20; ++i) st.interval_step(1);
  EXPECT_DOUBLE_EQ(st.interval_s(), 30);
  st.set_interval(1.5);
  st.interval_step(1);
  EXPECT_DOUBLE_EQ(st.interval_s(), 3);
  for (int i = 0; i < 20; ++i) st.speed_step(1);
  EXPECT_DOUBLE_EQ(st.replay().speed, 64);
  for (int i = 0; i < 20; ++i) st.speed_step(-1);
  EXPECT_DOUBLE_EQ(st.replay().speed, 0.125);
}

// ---- whole-machine mode: the process view ----

ThreadWindow thread_of(uint32_t pid, uint32_t tid, const char* comm, double wait = 0) {
  ThreadWindow t = thread(tid, comm, 0, wait);
  t.pid = pid;
  return t;
}

ProcessWindow process(uint32_t pid, const char* comm, double cpu, double wait, uint32_t threads = 1) {
  ProcessWindow p;
  p.pid = pid;
  p.comm = comm;
  p.cpu_pct = cpu;
  p.wait_pct = wait;
  p.threads = threads;
  return p;
}

// Three processes: nginx (pid 10: threads 11, 12), java (20: 21, 22, 23), sshd (30: 30).
Window machine(double nginx_wait = 5, double java_wait = 40, double sshd_wait = 5) {
  Window w = window({thread_of(10, 11, "nginx"), thread_of(10, 12, "nginx"), thread_of(20, 21, "java"),
                     thread_of(20, 22, "GC thread"), thread_of(20, 23, "C2 compiler"), thread_of(30, 30, "sshd")});
  w.processes = {process(10, "nginx", 30, nginx_wait, 2), process(20, "java", 80, java_wait, 3),
                 process(30, "sshd", 1, sshd_wait, 1)};
  return w;
}

std::vector<uint32_t> pids(const TopState& st) {
  std::vector<uint32_t> out;
  for (const auto* p : st.process_rows()) out.push_back(p->pid);
  return out;
}

TopState machine_state(Window w = machine()) {
  TopState st;
  st.set_machine_wide(true);
  st.push(std::move(w));
  return st;
}

TEST(TopStateProcesses, OnlyWholeMachineModeOpensOnTheProcessView) {
  TopState st;
  EXPECT_FALSE(st.machine_wide());
  EXPECT_EQ(st.view(), ViewMode::table);
  st.push(machine());
  st.open_detail();  // Enter outside --all: the thread detail, as always
  EXPECT_EQ(st.view(), ViewMode::detail);
  st.back();
  st.back();  // Esc in the table never goes up to processes
  EXPECT_EQ(st.view(), ViewMode::table);
  EXPECT_EQ(tids(st).size(), 6u);

  TopState all;
  all.set_machine_wide(true);
  EXPECT_TRUE(all.machine_wide());
  EXPECT_EQ(all.view(), ViewMode::processes);
  all.open_detail();  // no window yet: nothing to open
  EXPECT_EQ(all.view(), ViewMode::processes);
  EXPECT_EQ(all.open_pid(), std::nullopt);
}

TEST(TopStateProcesses, RankedByWaitDescendingTiesByPid) {
  TopState st = machine_state();
  EXPECT_EQ(st.process_sort_column(), *process_column_of(Column::wait));
  EXPECT_TRUE(st.process_sort_desc());
  EXPECT_EQ(pids(st), (std::vector<uint32_t>{20, 10, 30}));  // 40%, then 5% and 5% by pid
  // The thread table keeps its own sort (%CPU).
  EXPECT_EQ(st.sort_column(), Column::cpu);
}

TEST(TopStateProcesses, RankedFromTheWindowsOwnProcessTotals) {
  test::Scenario s;
  s.thread(11, "nginx", 10, 2).pid = 10;
  s.from.threads.back().pid = 10;
  s.thread(21, "java", 30, 20).pid = 20;
  s.from.threads.back().pid = 20;
  s.thread(22, "GC thread", 10, 25).pid = 20;
  s.from.threads.back().pid = 20;
  s.thread(31, "sshd", 1, 9).pid = 30;
  s.from.threads.back().pid = 30;
  TopState st = machine_state(s.window());
  ASSERT_EQ(pids(st), (std::vector<uint32_t>{20, 30, 10}));
  EXPECT_NEAR(st.process_rows()[0]->wait_pct, 45, 0.01);
  EXPECT_EQ(st.process_rows()[0]->threads, 2u);
}

TEST(TopStateProcesses, SelectionFollowsItsPidAcrossRefreshesAndResorts) {
  TopState st = machine_state();
  st.move_selection(1);  // rows 20, 10, 30: nginx
  ASSERT_NE(st.selected_process(), nullptr);
  EXPECT_EQ(st.selected_process()->pid, 10u);
  // The thread selection did not move: keys act on the table on screen.
  EXPECT_EQ(st.selected_index(), 0);
  st.push(machine(90, 40, 5));  // nginx now waits most: first row, still selected
  EXPECT_EQ(pids(st), (std::vector<uint32_t>{10, 20, 30}));
  EXPECT_EQ(st.selected_process()->pid, 10u);
  EXPECT_EQ(st.selected_process_index(), 0);
  st.set_process_sort(ProcColumn::pid);  // a re-sort by the key
  EXPECT_EQ(st.selected_process()->pid, 10u);
  st.invert_sort();
  EXPECT_EQ(pids(st), (std::vector<uint32_t>{30, 20, 10}));
  EXPECT_EQ(st.selected_process_index(), 2);
  st.move_selection(INT_MIN);
  EXPECT_EQ(st.selected_process()->pid, 30u);
  st.move_selection(100);
  EXPECT_EQ(st.selected_process()->pid, 10u);
  // The selected process exits: the top row stands in.
  Window w = machine();
  w.processes.erase(w.processes.begin());
  st.push(std::move(w));
  EXPECT_EQ(st.selected_process()->pid, 30u);
}

TEST(TopStateProcesses, ScrollKeepsTheSelectedProcessOnScreen) {
  Window w;
  w.wall_s = 1;
  w.fields = kFieldsBpf;
  for (uint32_t i = 1; i <= 100; ++i) w.processes.push_back(process(i, "p", 0, 0));
  TopState st = machine_state(std::move(w));
  st.set_process_sort(ProcColumn::pid);
  st.move_selection(50);
  EXPECT_EQ(st.process_scroll_for(10), 41u);
  st.move_selection(INT_MAX);
  EXPECT_EQ(st.process_scroll_for(10), 90u);
  EXPECT_EQ(st.scroll_for(10), 0u);  // the thread table's scroll is its own
}

TEST(TopStateProcesses, EnterAndEscWalkProcessesThreadsAndDetail) {
  TopState st = machine_state();
  st.move_selection(1);  // nginx
  st.open_detail();      // Enter: its threads
  EXPECT_EQ(st.view(), ViewMode::table);
  ASSERT_EQ(st.open_pid(), std::optional<uint32_t>(10));
  ASSERT_NE(st.opened_process(), nullptr);
  EXPECT_EQ(st.opened_process()->comm, "nginx");
  EXPECT_EQ(tids(st), (std::vector<uint32_t>{11, 12}));
  st.move_selection(1);  // keys now move the thread selection
  EXPECT_EQ(st.selected()->tid, 12u);
  EXPECT_EQ(st.selected_process()->pid, 10u);
  st.open_detail();  // Enter: the thread's detail
  EXPECT_EQ(st.view(), ViewMode::detail);
  EXPECT_EQ(st.selected()->tid, 12u);
  st.toggle_help();  // help over the detail returns there
  st.back();
  EXPECT_EQ(st.view(), ViewMode::detail);
  st.back();  // Esc: the process's threads
  EXPECT_EQ(st.view(), ViewMode::table);
  EXPECT_EQ(st.open_pid(), std::optional<uint32_t>(10));
  EXPECT_EQ(tids(st), (std::vector<uint32_t>{11, 12}));
  st.back();  // Esc: the process table, the limit gone, the same process selected
  EXPECT_EQ(st.view(), ViewMode::processes);
  EXPECT_EQ(st.open_pid(), std::nullopt);
  EXPECT_EQ(st.opened_process(), nullptr);
  EXPECT_EQ(tids(st).size(), 6u);
  EXPECT_EQ(st.selected_process()->pid, 10u);
  st.back();  // the top level: nothing further up
  EXPECT_EQ(st.view(), ViewMode::processes);
  // Help from the process view returns to it, and keys under it act on the processes.
  st.toggle_help();
  EXPECT_EQ(st.view(), ViewMode::help);
  EXPECT_EQ(st.help_over(), ViewMode::processes);
  st.move_selection(INT_MIN);
  EXPECT_EQ(st.selected_process()->pid, 20u);
  st.back();
  EXPECT_EQ(st.view(), ViewMode::processes);
}

TEST(TopStateProcesses, OpenedProcessLimitsRowsAndNewThreadsJoinIt) {
  TopState st = machine_state();
  st.open_process();  // the top row: java
  EXPECT_EQ(st.open_pid(), std::optional<uint32_t>(20));
  EXPECT_EQ(tids(st).size(), 3u);
  for (const auto* t : st.rows()) EXPECT_EQ(t->pid, 20u);
  Window w = machine();
  w.threads.push_back(thread_of(20, 24, "new worker"));
  w.threads.push_back(thread_of(10, 13, "nginx"));
  st.push(std::move(w));
  EXPECT_EQ(tids(st).size(), 4u);
  // The process exits: no rows, opened_process() says it is gone, Esc still goes back.
  Window gone = machine();
  std::erase_if(gone.threads, [](const ThreadWindow& t) { return t.pid == 20; });
  std::erase_if(gone.processes, [](const ProcessWindow& p) { return p.pid == 20; });
  st.push(std::move(gone));
  EXPECT_TRUE(st.rows().empty());
  EXPECT_EQ(st.opened_process(), nullptr);
  EXPECT_EQ(st.open_pid(), std::optional<uint32_t>(20));
  st.open_detail();  // no thread: no detail
  EXPECT_EQ(st.view(), ViewMode::table);
  st.back();
  EXPECT_EQ(st.view(), ViewMode::processes);
  EXPECT_EQ(tids(st).size(), 3u);
}

TEST(TopStateProcesses, FilterMatchesProcessNamesAndComesBackAfterItsThreads) {
  TopState st = machine_state();
  st.begin_filter();
  for (char c : std::string("JAV")) st.filter_input(c);
  st.end_filter(true);
  EXPECT_EQ(pids(st), (std::vector<uint32_t>{20}));
  st.open_detail();
  // The threads of java are not all named java: they get a filter of their own, empty.
  EXPECT_EQ(st.filter(), "");
  EXPECT_EQ(tids(st).size(), 3u);
  st.begin_filter();
  st.filter_input('G');
  st.end_filter(true);
  EXPECT_EQ(tids(st), (std::vector<uint32_t>{22}));
  st.back();  // to the processes: their filter is back
  EXPECT_EQ(st.filter(), "JAV");
  EXPECT_EQ(pids(st), (std::vector<uint32_t>{20}));
  st.back();  // Esc at the top level clears it
  EXPECT_EQ(st.filter(), "");
  EXPECT_EQ(pids(st).size(), 3u);
  st.begin_filter();
  st.filter_input('z');
  st.end_filter(true);
  EXPECT_TRUE(st.process_rows().empty());
  EXPECT_EQ(st.selected_process(), nullptr);
  st.open_detail();  // nothing to open
  EXPECT_EQ(st.view(), ViewMode::processes);
}

TEST(TopStateProcesses, ProcessColumnsComeFromTheCatalogPlusPidCommandThreads) {
  const auto cols = process_columns();
  ASSERT_GE(cols.size(), 5u);
  EXPECT_STREQ(process_column_info(ProcColumn::pid).title, "PID");
  EXPECT_STREQ(process_column_info(ProcColumn::command).title, "COMMAND");
  EXPECT_STREQ(process_column_info(ProcColumn::threads).title, "THR");
  size_t from_catalog = 0;
  for (const auto& c : cols) {
    EXPECT_EQ(&process_column_info(c.id), &c);
    if (!c.metric) continue;
    ++from_catalog;
    // The catalog's column, its title and help (the same pointers: written once).
    EXPECT_NE(c.metric->process, nullptr);
    EXPECT_EQ(c.metric, column_info(c.column).metric);
    EXPECT_EQ(c.title, column_info(c.column).title);
    EXPECT_EQ(c.help, column_info(c.column).help);
    EXPECT_EQ(process_column_of(c.column), c.id);
  }
  size_t with_process = 0;
  for (const Metric* m : tui_columns()) with_process += m->process != nullptr;
  EXPECT_EQ(from_catalog, with_process);
  EXPECT_EQ(process_column_of(Column::tid), std::nullopt);
  EXPECT_EQ(process_column_of(Column::where), std::nullopt);
  ASSERT_TRUE(process_column_of(Column::cpu));
  const auto p = process(7, "x", 312, 4, 9);
  EXPECT_DOUBLE_EQ(process_sort_value(*process_column_of(Column::cpu), p, machine()), 312);
  EXPECT_DOUBLE_EQ(process_sort_value(ProcColumn::threads, p), 9);
  // A source without the metric's fields has no value: it sorts as 0.
  EXPECT_DOUBLE_EQ(process_sort_value(*process_column_of(Column::cpu), p, Window{}), 0);
}

TEST(TopStateProcesses, SortKeysActOnTheProcessColumnsInTheProcessView) {
  TopState st = machine_state();
  const ProcColumn cpu = *process_column_of(Column::cpu), wait = *process_column_of(Column::wait);
  st.sort_step(-1);  // %WAIT -> %CPU
  EXPECT_EQ(st.process_sort_column(), cpu);
  EXPECT_EQ(pids(st), (std::vector<uint32_t>{20, 10, 30}));
  EXPECT_EQ(st.sort_column(), Column::cpu);  // the thread sort is untouched
  EXPECT_TRUE(st.sort_desc());
  st.sort_step(-1);  // THR, biggest first
  EXPECT_EQ(st.process_sort_column(), ProcColumn::threads);
  EXPECT_TRUE(st.process_sort_desc());
  EXPECT_EQ(pids(st), (std::vector<uint32_t>{20, 10, 30}));
  st.sort_step(-1);  // COMMAND, by text, ascending
  EXPECT_EQ(st.process_sort_column(), ProcColumn::command);
  EXPECT_FALSE(st.process_sort_desc());
  EXPECT_EQ(pids(st), (std::vector<uint32_t>{20, 10, 30}));  // java, nginx, sshd
  st.invert_sort();
  EXPECT_EQ(pids(st), (std::vector<uint32_t>{30, 10, 20}));
  EXPECT_EQ(st.sort_desc(), true);
  st.sort_step(-1);  // PID ascending
  EXPECT_EQ(st.process_sort_column(), ProcColumn::pid);
  EXPECT_EQ(pids(st), (std::vector<uint32_t>{10, 20, 30}));
  // Wrapping left from PID skips the wait split (off screen by default) to ev/c.
  st.sort_step(-1);
  EXPECT_EQ(st.process_sort_column(), *process_column_of(Column::ev_per_cycle));
  const Metric* cont = find_metric("wait_contended_pct");
  ASSERT_NE(cont, nullptr);
  const auto cont_col = static_cast<Column>(cont->tui.at - 1);
  EXPECT_FALSE(st.process_column_shown(*process_column_of(cont_col)));
  st.show_column(cont_col, true);
  EXPECT_TRUE(st.process_column_shown(*process_column_of(cont_col)));
  st.set_process_sort(ProcColumn::pid);
  st.sort_step(-1);
  EXPECT_EQ(st.process_sort_column(), *process_column_of(cont_col));
  for (int i = 0; i < 40; ++i) {
    st.sort_step(1);
    EXPECT_TRUE(st.process_column_shown(st.process_sort_column()));
  }
  st.set_process_sort(wait);
  // In the threads of an opened process the keys sort the threads again.
  st.open_process();
  st.sort_step(1);
  EXPECT_EQ(st.sort_column(), Column::wait);
  EXPECT_EQ(st.process_sort_column(), wait);
  st.invert_sort();
  EXPECT_FALSE(st.sort_desc());
  EXPECT_TRUE(st.process_sort_desc());
}

}  // namespace
}  // namespace platoon::tests
