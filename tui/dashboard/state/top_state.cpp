#include "tui/dashboard/state/top_state.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cmath>

namespace platoon::model {

namespace {

// priority: 1 always shown, higher numbers are dropped first on a narrow terminal.
constexpr std::array<ColumnInfo, 13> kColumns{{
    {Column::tid, "TID", 7, false, true, false, 1, "thread id"},
    {Column::name, "NAME", 13, true, true, false, 1, "thread name (comm)"},
    {Column::cpu, "%CPU", 5, false, true, true, 1, "on-CPU time / wall time"},
    {Column::wait, "%WAIT", 6, false, true, true, 1, "runnable but not running / wall time (pidstat %wait)"},
    {Column::csw, "csw/s", 6, false, true, true, 6, "voluntary context switches per second"},
    {Column::nvcsw, "nvcs/s", 6, false, true, true, 5, "involuntary context switches (preemptions) per second"},
    {Column::migr, "mig/s", 5, false, true, true, 7, "CPU migrations per second"},
    {Column::where, "CPUS", 9, true, false, false, 3, "where it ran: share of switch-ins per CPU (top 2)"},
    {Column::io_cycles, "cyc/s", 6, false, true, true, 2, "epoll wait calls (IO cycles) per second"},
    {Column::ev_per_cycle, "ev/c", 5, false, true, true, 2, "ready events per epoll wait call"},
    {Column::batch_p50, "b50", 4, false, true, true, 2, "batch size p50 (q: drain queue depth, e: epoll events/cycle)"},
    {Column::batch_p99, "b99", 5, false, true, true, 2, "batch size p99, with its source letter q or e"},
    {Column::history, "HIST", 10, true, false, false, 4, "sparkline of recent intervals (%wait or %CPU)"},
}};

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

}  // namespace

std::span<const ColumnInfo> columns() { return kColumns; }

const ColumnInfo& column_info(Column c) { return kColumns[static_cast<size_t>(c)]; }

Batch batch_of(const ThreadWindow& t) {
  Batch b;
  if (t.delta.drains > 0) {
    b.from = BatchFrom::drain;
    b.p50 = linear_percentile(t.delta.drain_depth_hist, 50);
    b.p99 = linear_percentile(t.delta.drain_depth_hist, 99);
  } else if (t.delta.io_cycles > 0) {
    b.from = BatchFrom::epoll;
    b.p50 = linear_percentile(t.delta.io_events_hist, 50);
    b.p99 = linear_percentile(t.delta.io_events_hist, 99);
  }
  return b;
}

double sort_value(Column c, const ThreadWindow& t) {
  switch (c) {
    case Column::tid: return t.tid;
    case Column::cpu: return t.cpu_pct;
    case Column::wait: return t.wait_pct;
    case Column::csw: return t.cswch_per_s;
    case Column::nvcsw: return t.nvcswch_per_s;
    case Column::migr: return t.migrations_per_s;
    case Column::io_cycles: return t.io ? t.io->cycles_per_s : 0;
    case Column::ev_per_cycle: return t.io ? t.io->events_per_cycle : 0;
    case Column::batch_p50: return batch_of(t).p50;
    case Column::batch_p99: return batch_of(t).p99;
    default: return 0;
  }
}

void TopState::push(Window w) {
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

std::vector<const ThreadWindow*> TopState::rows() const {
  std::vector<const ThreadWindow*> out;
  out.reserve(window_.threads.size());
  for (const auto& t : window_.threads)
    if (icontains(t.comm, filter_)) out.push_back(&t);
  const Column c = sort_;
  const bool desc = desc_;
  // Ties fall back to tid so that equal rows keep a stable order between refreshes.
  std::stable_sort(out.begin(), out.end(), [c, desc](const ThreadWindow* a, const ThreadWindow* b) {
    if (c == Column::name && a->comm != b->comm) return desc ? a->comm > b->comm : a->comm < b->comm;
    if (c != Column::name) {
      const double va = sort_value(c, *a), vb = sort_value(c, *b);
      if (va != vb) return desc ? va > vb : va < vb;
    }
    return a->tid < b->tid;
  });
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

const ThreadWindow* TopState::selected() const {
  const auto r = rows();
  const int i = selected_index();
  return i < 0 ? nullptr : r[static_cast<size_t>(i)];
}

void TopState::move_selection(int delta) {
  const auto r = rows();
  if (r.empty()) return;
  const long last = static_cast<long>(r.size()) - 1;
  long i = selected_index();
  if (delta == INT_MIN) i = 0;
  else if (delta == INT_MAX) i = last;
  else i = std::clamp(i + delta, 0L, last);
  selection_ = key_of(*r[static_cast<size_t>(i)]);
}

size_t TopState::scroll_for(size_t height) {
  const int sel = selected_index();
  const size_t n = rows().size();
  if (height == 0 || n == 0) return scroll_ = 0;
  if (sel >= 0) {
    const auto s = static_cast<size_t>(sel);
    if (s < scroll_) scroll_ = s;
    if (s >= scroll_ + height) scroll_ = s + 1 - height;
  }
  if (scroll_ + height > n) scroll_ = n > height ? n - height : 0;
  return scroll_;
}

void TopState::set_sort(Column c) {
  sort_ = c;
  desc_ = column_info(c).default_desc;
}

void TopState::sort_step(int delta) {
  const auto cols = columns();
  const int n = static_cast<int>(cols.size());
  int i = static_cast<int>(sort_);
  for (int tries = 0; tries < n; ++tries) {
    i = ((i + delta) % n + n) % n;
    if (cols[static_cast<size_t>(i)].sortable) {
      set_sort(cols[static_cast<size_t>(i)].id);
      return;
    }
  }
}

void TopState::back() {
  if (view_ == ViewMode::help) view_ = back_;
  else if (view_ == ViewMode::detail) view_ = ViewMode::table;
  else filter_.clear();
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

}  // namespace platoon::model
