#include "tui/dashboard/input/keymap.hpp"

#include <curses.h>

#include <algorithm>
#include <string>
#include <vector>

namespace platoon::dashboard {
namespace {

constexpr int kEsc = 27;
// Keys follow htop and tokio-console: arrows or j/k, h/l or </> to move the sort column, i to
// invert it, / to filter, space to pause. Enter goes one level down (process → its threads →
// a thread's detail; the process level only in whole-machine mode), Esc one level up.
constexpr Binding kBindings[] = {
    {{KEY_UP, 'k', 0}, "Up k", Action::up, "select the previous thread", false},
    {{KEY_DOWN, 'j', 0}, "Down j", Action::down, "select the next thread", false},
    {{KEY_PPAGE, 0, 0}, "PgUp", Action::page_up, "one page up", false},
    {{KEY_NPAGE, 0, 0}, "PgDn", Action::page_down, "one page down", false},
    {{KEY_HOME, 'g', 0}, "Home g", Action::home, "first thread", false},
    {{KEY_END, 'G', 0}, "End G", Action::end, "last thread", false},
    {{'\n', KEY_ENTER, '\r'}, "Enter", Action::open, "a process's threads, or a thread's detail (histograms, CPUs, peers)", false,
     {3, "Enter:detail", "Enter:detail"}},
    {{kEsc, 0, 0}, "Esc", Action::back, "back one level (or clear the filter)", false},
    {{'<', 'h', KEY_LEFT}, "< h Left", Action::sort_left, "sort by the column to the left", false, {4, "<>:sort", "<>:sort"}},
    {{'>', 'l', KEY_RIGHT}, "> l Right", Action::sort_right, "sort by the column to the right", false},
    {{'i', 0, 0}, "i", Action::sort_invert, "invert the sort order", false, {5, "i:invert", "i:invert"}},
    {{'/', 0, 0}, "/", Action::filter, "filter threads by name (Enter keeps, Esc clears)", false, {6, "/:filter", "/:filter"}},
    {{' ', 0, 0}, "Space", Action::pause, "pause / resume", false, {7, "Spc:pause", "Spc:pause"}},
    {{'+', '=', 0}, "+", Action::faster, "live: shorter interval; replay: faster", false, {9, "+-:every", "+-:speed"}},
    {{'-', '_', 0}, "-", Action::slower, "live: longer interval; replay: slower", false},
    {{'r', 0, 0}, "r", Action::record, "start / stop recording snapshots to a trace file", false, {10, "r:rec", nullptr}},
    {{'w', 0, 0}, "w", Action::spark, "sparkline shows %wait or %CPU", false},
    {{'.', 'n', 0}, ". n", Action::step_forward, "replay: one interval forward (pauses)", true, {8, nullptr, ".,:step"}},
    {{',', 'p', 0}, ", p", Action::step_back, "replay: one interval back (pauses)", true},
    {{'?', KEY_F(1), 0}, "? F1", Action::help, "this help", false, {1, "?:help", "?:help"}},
    {{'q', 'Q', KEY_F(10)}, "q", Action::quit, "quit", false, {2, "q:quit", "q:quit"}},
};

std::string make_footer(bool replay) {
  std::vector<const Binding*> hinted;
  for (const Binding& b : kBindings)
    if (b.footer.at != 0 && (replay ? b.footer.replay : b.footer.live)) hinted.push_back(&b);
  std::sort(hinted.begin(), hinted.end(), [](auto* a, auto* b) { return a->footer.at < b->footer.at; });
  std::string line;
  for (const Binding* b : hinted) line += (line.empty() ? "" : " ") + std::string(replay ? b->footer.replay : b->footer.live);
  return line;
}

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

const std::string& footer_hint(bool replay) {
  static const std::string live_line = make_footer(false), replay_line = make_footer(true);
  return replay ? replay_line : live_line;
}

}  // namespace platoon::dashboard
