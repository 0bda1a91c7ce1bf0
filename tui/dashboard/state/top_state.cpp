#include "tui/dashboard/state/top_state.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cmath>

namespace platoon::dashboard {

namespace {

bool icontains(const std::string& hay, const std::string& needle) {
  if (needle.empty()) return true;
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

template <class T>
void push_bounded(std::deque<T>& d, T v, size_t n) {
  d.push_back(v);
  while (d.size() > n) d.pop_front();
}

constexpr std::array<double, 8> kIntervals{0.25, 0.5, 1, 2, 3, 5, 10, 30};

// The first row to draw so that row `sel` of n shows in a page of `height` rows, moving
// `scroll` as little as possible (both tables).
size_t keep_visible(size_t& scroll, int sel, size_t n, size_t height) {
  if (height == 0 || n == 0) return scroll = 0;
  if (sel >= 0) {
    const auto s = static_cast<size_t>(sel);
    if (s < scroll) scroll = s;
    if (s >= scroll + height) scroll = s + 1 - height;
  }
  if (scroll + height > n) scroll = n > height ? n - height : 0;
  return scroll;
}

// The row `delta` away from `current` (INT_MIN/INT_MAX: the ends), clamped to [0, n).
size_t step_row(int current, int delta, size_t n) {
  const long last = static_cast<long>(n) - 1;
  long i = current;
  if (delta == INT_MIN) i = 0;
  else if (delta == INT_MAX) i = last;
  else i = std::clamp(i + delta, 0L, last);
  return static_cast<size_t>(i);
}

// Orders rows by one column, the name column by text and the others by value (descending when
// `desc`); ties fall back to the id so that equal rows keep their order between refreshes.
template <class Row, class Value, class Id>
void sort_rows(std::vector<const Row*>& rows, bool by_name, bool desc, Value value, Id id) {
  std::stable_sort(rows.begin(), rows.end(), [&](const Row* a, const Row* b) {
    if (by_name && a->comm != b->comm) return desc ? a->comm > b->comm : a->comm < b->comm;
    if (!by_name) {
      const double va = value(*a), vb = value(*b);
      if (va != vb) return desc ? va > vb : va < vb;
    }
    return id(*a) < id(*b);
  });
}

}  // namespace

std::span<const ColumnInfo> columns() {
  static const std::vector<ColumnInfo> table = [] {
    std::vector<ColumnInfo> v;
    for (const metrics::Metric* m : metrics::tui_columns())
      v.push_back({static_cast<Column>(v.size()), m->title, m->width, m->tui.left, m->tui.sortable, m->desc,
                   m->tui.priority, m->help, m->tui.shown, m});
    return v;
  }();
  return table;
}

const ColumnInfo& column_info(Column c) { return columns()[static_cast<size_t>(c)]; }

double sort_value(Column c, const analysis::ThreadWindow& t, const analysis::Window& w) {
  const ColumnInfo& info = column_info(c);
  if (!info.sortable || c == Column::name) return 0;
  return info.metric->value(w, t).value_or(0);
}

std::span<const ProcessColumnInfo> process_columns() {
  static const std::vector<ProcessColumnInfo> table = [] {
    std::vector<ProcessColumnInfo> v{
        {ProcColumn::pid, "PID", 7, false, false, 1, "process id", nullptr, Column::tid},
        {ProcColumn::command, "COMMAND", 15, true, false, 1, "process name (its main thread's comm)", nullptr,
         Column::name},
        {ProcColumn::threads, "THR", 4, false, true, 5, "threads of the process in this interval", nullptr,
         Column::tid},
    };
    for (const auto& c : columns())
      if (c.metric->process && c.sortable)
        v.push_back({static_cast<ProcColumn>(v.size()), c.title, c.width, c.left, c.default_desc, c.priority, c.help,
                     c.metric, c.id});
    return v;
  }();
  return table;
}

const ProcessColumnInfo& process_column_info(ProcColumn c) { return process_columns()[static_cast<size_t>(c)]; }

std::optional<ProcColumn> process_column_of(Column c) {
  for (const auto& p : process_columns())
    if (p.metric && p.column == c) return p.id;
  return std::nullopt;
}

double process_sort_value(ProcColumn c, const analysis::ProcessWindow& p, const analysis::Window& w) {
  switch (c) {
    case ProcColumn::pid: return p.pid;
    case ProcColumn::command: return 0;
    case ProcColumn::threads: return p.threads;
  }
  return process_value_of(*process_column_info(c).metric, w, p).value_or(0);
}

uint32_t needed_fields(std::span<const Column> cols) {
  std::vector<const metrics::Metric*> shown;
  for (Column c : cols) shown.push_back(column_info(c).metric);
  return needed_fields(shown);
}

TopState::TopState(size_t history_len)
    : history_len_(history_len), process_sort_(*process_column_of(Column::wait)) {
  process_desc_ = process_column_info(process_sort_).default_desc;
}

void TopState::set_machine_wide(bool on) {
  machine_wide_ = on;
  view_ = back_ = on ? ViewMode::processes : ViewMode::table;
  open_pid_.reset();
}

void TopState::push(analysis::Window w) {
  window_ = std::move(w);
  has_window_ = true;
  // In place: moving std::deque allocates in libstdc++, and this runs for every thread.
  ++generation_;
  for (const auto& t : window_.threads) {
    auto& [gen, h] = history_[key_of(t)];
    gen = generation_;
    push_bounded(h.cpu_pct, t.cpu_pct, history_len_);
    push_bounded(h.wait_pct, t.wait_pct, history_len_);
    push_bounded(h.events_per_cycle, t.io ? t.io->events_per_cycle : 0.0, history_len_);
    push_bounded(h.queue_depth, t.drain ? t.drain->queue_depth_avg : 0.0, history_len_);
  }
  std::erase_if(history_, [this](const auto& kv) { return kv.second.first != generation_; });
}

void TopState::clear_history() {
  history_.clear();
  window_ = {};
  has_window_ = false;
}

const ThreadHistory* TopState::history(const ThreadKey& k) const {
  auto it = history_.find(k);
  return it == history_.end() ? nullptr : &it->second.second;
}

std::vector<const analysis::ThreadWindow*> TopState::rows() const {
  std::vector<const analysis::ThreadWindow*> out;
  out.reserve(window_.threads.size());
  for (const auto& t : window_.threads)
    if ((!open_pid_ || t.pid == *open_pid_) && icontains(t.comm, filter_)) out.push_back(&t);
  const Column c = sort_;
  const analysis::Window& w = window_;
  sort_rows(out, c == Column::name, desc_, [c, &w](const analysis::ThreadWindow& t) { return sort_value(c, t, w); },
            [](const analysis::ThreadWindow& t) { return t.tid; });
  return out;
}

int TopState::selected_index() const {
  const auto r = rows();
  if (r.empty()) return -1;
  if (selection_) {
    for (size_t i = 0; i < r.size(); ++i)
      if (key_of(*r[i]) == *selection_) return static_cast<int>(i);
  }
  return 0;  // the selected thread is gone or filtered out: the top row stands in
}

const analysis::ThreadWindow* TopState::selected() const {
  const auto r = rows();
  const int i = selected_index();
  return i < 0 ? nullptr : r[static_cast<size_t>(i)];
}

void TopState::move_selection(int delta) {
  if (on_processes()) {
    const auto r = process_rows();
    if (!r.empty()) process_selection_ = r[step_row(selected_process_index(), delta, r.size())]->pid;
    return;
  }
  const auto r = rows();
  if (r.empty()) return;
  selection_ = key_of(*r[step_row(selected_index(), delta, r.size())]);
}

size_t TopState::scroll_for(size_t height) { return keep_visible(scroll_, selected_index(), rows().size(), height); }

std::vector<const analysis::ProcessWindow*> TopState::process_rows() const {
  std::vector<const analysis::ProcessWindow*> out;
  out.reserve(window_.processes.size());
  for (const auto& p : window_.processes)
    if (icontains(p.comm, filter_)) out.push_back(&p);
  const ProcColumn c = process_sort_;
  const analysis::Window& w = window_;
  sort_rows(out, c == ProcColumn::command, process_desc_,
            [c, &w](const analysis::ProcessWindow& p) { return process_sort_value(c, p, w); },
            [](const analysis::ProcessWindow& p) { return p.pid; });
  return out;
}

int TopState::selected_process_index() const {
  const auto r = process_rows();
  if (r.empty()) return -1;
  if (process_selection_) {
    for (size_t i = 0; i < r.size(); ++i)
      if (r[i]->pid == *process_selection_) return static_cast<int>(i);
  }
  return 0;  // gone or filtered out: the top row stands in
}

const analysis::ProcessWindow* TopState::selected_process() const {
  const auto r = process_rows();
  const int i = selected_process_index();
  return i < 0 ? nullptr : r[static_cast<size_t>(i)];
}

size_t TopState::process_scroll_for(size_t height) {
  return keep_visible(process_scroll_, selected_process_index(), process_rows().size(), height);
}

void TopState::open_process() {
  const analysis::ProcessWindow* p = selected_process();
  if (!p) return;
  process_selection_ = p->pid;  // the row that stood in is the one Esc comes back to
  open_pid_ = p->pid;
  // The process filter named processes; the threads get a filter of their own.
  process_filter_ = std::move(filter_);
  filter_.clear();
  selection_.reset();
  scroll_ = 0;
  view_ = ViewMode::table;
}

const analysis::ProcessWindow* TopState::opened_process() const {
  if (!open_pid_) return nullptr;
  for (const auto& p : window_.processes)
    if (p.pid == *open_pid_) return &p;
  return nullptr;
}

void TopState::set_sort(Column c) {
  sort_ = c;
  desc_ = column_info(c).default_desc;
}

void TopState::set_process_sort(ProcColumn c) {
  process_sort_ = c;
  process_desc_ = process_column_info(c).default_desc;
}

void TopState::invert_sort() {
  if (on_processes()) process_desc_ = !process_desc_;
  else desc_ = !desc_;
}

void TopState::sort_step(int delta) {
  if (on_processes()) {
    const auto cols = process_columns();
    const int n = static_cast<int>(cols.size());
    int i = static_cast<int>(process_sort_);
    for (int tries = 0; tries < n; ++tries) {
      i = ((i + delta) % n + n) % n;
      if (process_column_shown(cols[static_cast<size_t>(i)].id)) {
        set_process_sort(cols[static_cast<size_t>(i)].id);
        return;
      }
    }
    return;
  }
  const auto cols = columns();
  const int n = static_cast<int>(cols.size());
  int i = static_cast<int>(sort_);
  for (int tries = 0; tries < n; ++tries) {
    i = ((i + delta) % n + n) % n;
    if (cols[static_cast<size_t>(i)].sortable && column_shown(cols[static_cast<size_t>(i)].id)) {
      set_sort(cols[static_cast<size_t>(i)].id);
      return;
    }
  }
}

bool TopState::column_shown(Column c) const {
  const auto i = static_cast<size_t>(c);
  return i < shown_.size() ? shown_[i] : column_info(c).shown;
}

void TopState::show_column(Column c, bool on) {
  if (shown_.empty())
    for (const auto& info : columns()) shown_.push_back(info.shown);
  shown_[static_cast<size_t>(c)] = on;
}

bool TopState::process_column_shown(ProcColumn c) const {
  const auto& info = process_column_info(c);
  return !info.metric || column_shown(info.column);
}

void TopState::open_detail() {
  if (on_processes()) open_process();
  else if (selected()) view_ = ViewMode::detail;
}

void TopState::back() {
  if (view_ == ViewMode::help) {
    view_ = back_;
  } else if (view_ == ViewMode::detail) {
    view_ = ViewMode::table;
  } else if (view_ == ViewMode::table && open_pid_) {
    open_pid_.reset();
    filter_ = std::move(process_filter_);
    process_filter_.clear();
    view_ = ViewMode::processes;
  } else {
    filter_.clear();
  }
}

void TopState::interval_step(int delta) {
  // The nearest step at or above the current interval, then one step in the asked direction.
  size_t i = 0;
  while (i + 1 < kIntervals.size() && kIntervals[i] < interval_s_ - 1e-9) ++i;
  if (delta > 0 && i + 1 < kIntervals.size()) ++i;
  if (delta < 0 && i > 0) --i;
  interval_s_ = kIntervals[i];
}

void TopState::speed_step(int delta) {
  replay_.speed = std::clamp(delta > 0 ? replay_.speed * 2 : replay_.speed / 2, 0.125, 64.0);
}

}  // namespace platoon::dashboard
