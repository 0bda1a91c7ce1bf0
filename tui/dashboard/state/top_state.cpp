#include "tui/dashboard/state/top_state.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cmath>

namespace platoon::model {

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

}  // namespace

std::span<const ColumnInfo> columns() {
  static const std::vector<ColumnInfo> table = [] {
    std::vector<ColumnInfo> v;
    for (const Metric* m : tui_columns())
      v.push_back({static_cast<Column>(v.size()), m->title, m->width, m->tui.left, m->tui.sortable, m->desc,
                   m->tui.priority, m->help, m->tui.shown, m});
    return v;
  }();
  return table;
}

const ColumnInfo& column_info(Column c) { return columns()[static_cast<size_t>(c)]; }

double sort_value(Column c, const ThreadWindow& t, const Window& w) {
  const ColumnInfo& info = column_info(c);
  if (!info.sortable || c == Column::name) return 0;
  return info.metric->value(w, t).value_or(0);
}

uint32_t needed_fields(std::span<const Column> cols) {
  std::vector<const Metric*> shown;
  for (Column c : cols) shown.push_back(column_info(c).metric);
  return needed_fields(shown);
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
  const Window& w = window_;
  std::stable_sort(out.begin(), out.end(), [c, desc, &w](const ThreadWindow* a, const ThreadWindow* b) {
    if (c == Column::name && a->comm != b->comm) return desc ? a->comm > b->comm : a->comm < b->comm;
    if (c != Column::name) {
      const double va = sort_value(c, *a, w), vb = sort_value(c, *b, w);
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
