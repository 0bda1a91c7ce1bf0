#include "tui/commands/top_loop.hpp"

#include <time.h>

#include <climits>
#include <cstdio>
#include <ctime>

#include "tui/dashboard/input/keymap.hpp"

namespace platoon::cli {

Intent apply_key(int key, model::TopState& st, int page) {
  using tui::Action;
  const Action a = tui::action_for(key);
  if (st.editing_filter()) {
    if (a == Action::open) st.end_filter(true);
    else if (a == Action::back) st.end_filter(false);
    else if (tui::is_erase(key)) st.filter_backspace();
    else if (tui::is_text(key)) st.filter_input(static_cast<char>(key));
    else return Intent::none;
    return Intent::redraw;
  }
  switch (a) {
    case Action::none: return Intent::none;
    case Action::quit: return Intent::quit;
    case Action::up: st.move_selection(-1); break;
    case Action::down: st.move_selection(1); break;
    case Action::page_up: st.move_selection(-page); break;
    case Action::page_down: st.move_selection(page); break;
    case Action::home: st.move_selection(INT_MIN); break;
    case Action::end: st.move_selection(INT_MAX); break;
    case Action::open: st.open_detail(); break;
    case Action::back: st.back(); break;
    case Action::sort_left: st.sort_step(-1); break;
    case Action::sort_right: st.sort_step(1); break;
    case Action::sort_invert: st.invert_sort(); break;
    case Action::filter: st.begin_filter(); break;
    case Action::pause: st.toggle_pause(); break;
    case Action::spark: st.toggle_spark(); break;
    case Action::help: st.toggle_help(); break;
    case Action::faster:
      if (st.replay().active) st.speed_step(1);
      else st.interval_step(-1);
      return Intent::retime;
    case Action::slower:
      if (st.replay().active) st.speed_step(-1);
      else st.interval_step(1);
      return Intent::retime;
    case Action::record: return Intent::record;
    case Action::step_forward: return Intent::step_forward;
    case Action::step_back: return Intent::step_back;
  }
  return Intent::redraw;
}

// As often as `platoon record` writes them (record.cpp kCostNoteNs).
constexpr uint64_t kCostNoteNs = 5'000'000'000ull;

bool Recorder::start(model::TraceMeta meta, const model::Snapshot& baseline, const model::CostSample& cost,
                     std::string& error) {
  char stem[64];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(stem, sizeof stem, "platoon-top-%Y%m%d-%H%M%S", &tm);
  meta.start_boottime_ns = 0;  // the writer reads the clocks now
  meta.start_realtime_ns = 0;
  // `r` twice within a second gets "-2": a recording never replaces an earlier one.
  auto file = model::create_unique(stem, ".trace", &error);
  if (file) writer_ = model::TraceWriter::create(std::move(*file), meta, {}, &error);
  if (!writer_) {
    last_ = "REC failed: " + error;
    return false;
  }
  path_ = writer_->path();
  snapshots_ = 0;
  cost0_ = cost;
  cost_note_ns_ = cost.wall_ns;
  write(baseline, cost);
  return true;
}

void Recorder::cost_note(const model::CostSample& now) {
  writer_->write_note(now.wall_ns, model::cost_note(model::observer_cost(cost0_, now)));
  cost_note_ns_ = now.wall_ns;
}

void Recorder::write(const model::Snapshot& s, const model::CostSample& cost) {
  if (!writer_) return;
  if (cost.wall_ns - cost_note_ns_ >= kCostNoteNs) cost_note(cost);
  if (!writer_->write_snapshot(s)) {
    last_ = "REC failed: " + writer_->error();
    writer_.reset();
    return;
  }
  ++snapshots_;
}

void Recorder::stop(const std::string& reason, const model::CostSample* cost) {
  if (!writer_) return;
  if (cost) cost_note(*cost);
  writer_->finish(reason);
  writer_.reset();
  last_ = "saved " + path_ + " (" + std::to_string(snapshots_) + " snapshots)";
}

std::string Recorder::describe() const {
  if (writer_) return "REC " + path_ + " (" + std::to_string(snapshots_) + ")";
  return last_;
}

}  // namespace platoon::cli
