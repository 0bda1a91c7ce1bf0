// The model behind `platoon top`, without curses: sorting by every column and inverting, the
// name filter, a selection that follows its thread across re-sorts and refreshes, scrolling,
// bounded per-thread history, the batch source (drain vs epoll), interval and speed steps.
#include "tui/dashboard/state/top_state.hpp"

#include <gtest/gtest.h>

#include <climits>

namespace platoon::model {
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

}  // namespace
}  // namespace platoon::model
