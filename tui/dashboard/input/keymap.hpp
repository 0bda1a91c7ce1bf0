// The one place keys of `platoon top` are named: key → action, with the help line of each. The
// help view and the footer are generated from this table, so they cannot disagree with it.
#pragma once

#include <span>
#include <string>

namespace platoon::dashboard {

enum class Action {
  none, quit, up, down, page_up, page_down, home, end, open, back,
  sort_left, sort_right, sort_invert, filter, pause, faster, slower,
  record, spark, help, step_forward, step_back,
};

// A binding's word in the footer under the table, per mode; a pair of bindings (< and >) shares
// the first one's. `at` orders the footer (0: not in it).
struct FooterHint {
  int at = 0;
  const char* live = nullptr;    // nullptr: not shown live
  const char* replay = nullptr;  // nullptr: not shown in replay
};

struct Binding {
  int keys[3];          // curses key codes; 0 ends the list
  const char* label;    // how the help writes the keys
  Action action;
  const char* help;
  bool replay_only;
  FooterHint footer{};
};

std::span<const Binding> bindings();
Action action_for(int key);
// While the filter is being typed: keys that erase a character, and keys that are text.
bool is_erase(int key);
bool is_text(int key);
// The short "?:help q:quit ..." line under the table, from the bindings' footer hints.
const std::string& footer_hint(bool replay);

}  // namespace platoon::dashboard
