#include "tui/dashboard/input/keymap.hpp"

#include <curses.h>

#include <array>

namespace platoon::tui {
namespace {

constexpr int kEsc = 27;
// Keys follow htop and tokio-console: arrows or j/k, h/l or </> to move the sort column, i to
// invert it, / to filter, space to pause. Enter goes one level down (process → its threads →
// a thread's detail; the process level only in whole-machine mode), Esc one level up.
const std::array<Binding, 21> kBindings{{
    {{KEY_UP, 'k', 0}, "Up k", Action::up, "select the previous thread", false},
    {{KEY_DOWN, 'j', 0}, "Down j", Action::down, "select the next thread", false},
    {{KEY_PPAGE, 0, 0}, "PgUp", Action::page_up, "one page up", false},
    {{KEY_NPAGE, 0, 0}, "PgDn", Action::page_down, "one page down", false},
    {{KEY_HOME, 'g', 0}, "Home g", Action::home, "first thread", false},
    {{KEY_END, 'G', 0}, "End G", Action::end, "last thread", false},
    {{'\n', KEY_ENTER, '\r'}, "Enter", Action::open, "a process's threads, or a thread's detail (histograms, CPUs, peers)", false},
    {{kEsc, 0, 0}, "Esc", Action::back, "back one level (or clear the filter)", false},
    {{'<', 'h', KEY_LEFT}, "< h Left", Action::sort_left, "sort by the column to the left", false},
    {{'>', 'l', KEY_RIGHT}, "> l Right", Action::sort_right, "sort by the column to the right", false},
    {{'i', 0, 0}, "i", Action::sort_invert, "invert the sort order", false},
    {{'/', 0, 0}, "/", Action::filter, "filter threads by name (Enter keeps, Esc clears)", false},
    {{' ', 0, 0}, "Space", Action::pause, "pause / resume", false},
    {{'+', '=', 0}, "+", Action::faster, "live: shorter interval; replay: faster", false},
    {{'-', '_', 0}, "-", Action::slower, "live: longer interval; replay: slower", false},
    {{'r', 0, 0}, "r", Action::record, "start / stop recording snapshots to a trace file", false},
    {{'w', 0, 0}, "w", Action::spark, "sparkline shows %wait or %CPU", false},
    {{'.', 'n', 0}, ". n", Action::step_forward, "replay: one interval forward (pauses)", true},
    {{',', 'p', 0}, ", p", Action::step_back, "replay: one interval back (pauses)", true},
    {{'?', KEY_F(1), 0}, "? F1", Action::help, "this help", false},
    {{'q', 'Q', KEY_F(10)}, "q", Action::quit, "quit", false},
}};

}  // namespace

std::span<const Binding> bindings() { return kBindings; }

Action action_for(int key) {
  for (const auto& b : kBindings)
    for (int k : b.keys)
      if (k != 0 && k == key) return b.action;
  return Action::none;
}

bool is_erase(int key) { return key == KEY_BACKSPACE || key == 127 || key == 8; }
bool is_text(int key) { return key >= 32 && key < 127; }

const char* footer_hint(bool replay) {
  return replay ? "?:help q:quit Enter:detail <>:sort i:invert /:filter Spc:pause .,:step +-:speed"
                : "?:help q:quit Enter:detail <>:sort i:invert /:filter Spc:pause +-:every r:rec";
}

}  // namespace platoon::tui
