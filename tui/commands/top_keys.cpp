#include "tui/commands/top_keys.hpp"

#include <climits>

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

}  // namespace platoon::cli
