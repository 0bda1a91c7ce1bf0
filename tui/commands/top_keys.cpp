#include "tui/commands/top_keys.hpp"

#include <climits>

#include "tui/dashboard/input/keymap.hpp"

namespace platoon::cli {

Intent apply_key(int key, dashboard::TopState& st, int page) {
  using dashboard::Action;
  const dashboard::Action a = dashboard::action_for(key);
  if (st.editing_filter()) {
    if (a == dashboard::Action::open) st.end_filter(true);
    else if (a == dashboard::Action::back) st.end_filter(false);
    else if (dashboard::is_erase(key)) st.filter_backspace();
    else if (dashboard::is_text(key)) st.filter_input(static_cast<char>(key));
    else return Intent::none;
    return Intent::redraw;
  }
  switch (a) {
    case dashboard::Action::none: return Intent::none;
    case dashboard::Action::quit: return Intent::quit;
    case dashboard::Action::up: st.move_selection(-1); break;
    case dashboard::Action::down: st.move_selection(1); break;
    case dashboard::Action::page_up: st.move_selection(-page); break;
    case dashboard::Action::page_down: st.move_selection(page); break;
    case dashboard::Action::home: st.move_selection(INT_MIN); break;
    case dashboard::Action::end: st.move_selection(INT_MAX); break;
    case dashboard::Action::open: st.open_detail(); break;
    case dashboard::Action::back: st.back(); break;
    case dashboard::Action::sort_left: st.sort_step(-1); break;
    case dashboard::Action::sort_right: st.sort_step(1); break;
    case dashboard::Action::sort_invert: st.invert_sort(); break;
    case dashboard::Action::filter: st.begin_filter(); break;
    case dashboard::Action::pause: st.toggle_pause(); break;
    case dashboard::Action::spark: st.toggle_spark(); break;
    case dashboard::Action::help: st.toggle_help(); break;
    case dashboard::Action::faster:
      if (st.replay().active) st.speed_step(1);
      else st.interval_step(-1);
      return Intent::retime;
    case dashboard::Action::slower:
      if (st.replay().active) st.speed_step(-1);
      else st.interval_step(1);
      return Intent::retime;
    case dashboard::Action::record: return Intent::record;
    case dashboard::Action::step_forward: return Intent::step_forward;
    case dashboard::Action::step_back: return Intent::step_back;
  }
  return Intent::redraw;
}

}  // namespace platoon::cli
