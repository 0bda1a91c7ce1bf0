// platoon top --replay FILE: a recording played through the same views as a live target, one
// window per recorded interval, with pause, single steps both ways and a speed factor.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tui/commands/commands.hpp"
#include "bpf/snapshot/clock.hpp"
#include "tui/commands/top_loop.hpp"
#include "tui/trace/trace_reader.hpp"
#include "tui/analysis/window.hpp"
#include "tui/dashboard/views/screen.hpp"

namespace platoon::cli {

namespace {

// Shows window `pos` (1-based: snapshots pos-1 → pos). Moving one step forward appends to the
// history; any other jump rebuilds it from the windows before pos, so the sparklines are right.
void seek(model::TopState& st, const std::vector<model::Snapshot>& snaps, size_t pos) {
  auto& r = st.replay();
  if (pos != r.position + 1) {
    st.clear_history();
    const size_t from = pos > st.history_len() ? pos - st.history_len() + 1 : 1;
    for (size_t i = from; i < pos; ++i) st.push(model::make_window(snaps[i - 1], snaps[i]));
  }
  st.push(model::make_window(snaps[pos - 1], snaps[pos]));
  r.position = pos;
  st.status = pos == r.count ? "end of recording (, steps back, q quits)" : "";
}

uint64_t step_ns(const model::TopState& st, uint64_t interval_ns) {
  return static_cast<uint64_t>(static_cast<double>(interval_ns) / st.replay().speed);
}

}  // namespace

int run_top_replay(const TopOptions& opt) {
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr, "platoon top: %s\n", msg.c_str());
    return kExitFailure;
  };
  // Replay steps both ways, so it holds the snapshots; never the raw events, which it does not
  // show. The snapshots are bounded (kKeepSnapshotBytes): past it only a prefix is replayed.
  model::ReadOptions ro;
  ro.on_event = [](const platoon_event_header&, const void*, size_t) {};
  ro.max_snapshot_bytes = model::kKeepSnapshotBytes;
  std::string error;
  auto contents = model::read_trace(opt.replay, &error, ro);
  if (!contents) return fail(error);
  const auto& snaps = contents->snapshots;
  std::vector<std::string> warnings;
  if (contents->truncated)
    warnings.push_back(opt.replay + " is truncated at byte " + std::to_string(contents->truncated_at) + " (" +
                       contents->truncated_reason + "): replaying what precedes it");
  if (const std::string note = contents->cap_note(); !note.empty()) warnings.push_back(opt.replay + ": " + note);
  for (const auto& w : warnings) std::fprintf(stderr, "platoon top: %s\n", w.c_str());
  if (snaps.size() < 2)
    return fail(opt.replay + (contents->cut_snapshots ? " holds fewer than two snapshots within the replay's memory cap"
                                                      : " holds fewer than two snapshots: nothing to replay"));
  const bool batch = opt.batch || !isatty(STDOUT_FILENO);
  install_stop_signals();

  model::TopState st;
  auto& r = st.replay();
  r.active = true;
  r.count = snaps.size() - 1;
  const auto& meta = contents->meta;
  const uint64_t interval_ns =
      meta.interval_ns ? meta.interval_ns : std::max<uint64_t>(1, (snaps.back().ts_ns - snaps.front().ts_ns) / r.count);
  st.set_interval(static_cast<double>(interval_ns) / 1e9);
  const auto slash = opt.replay.find_last_of('/');
  st.target = meta.target + " from " + (slash == std::string::npos ? opt.replay : opt.replay.substr(slash + 1));
  st.source_line = std::string(model::to_string(meta.source)) + " (" + meta.attach_mode + ")";
  for (const auto& n : contents->notes) st.notes.push_back(n.text);
  for (const auto& w : warnings) st.notes.push_back(w);  // stderr is hidden behind the screen

  if (batch) {
    long done = 0;
    for (size_t pos = 1; pos <= r.count && !stop_requested(); ++pos) {
      seek(st, snaps, pos);
      std::fputs(tui::batch_text(st).c_str(), stdout);
      if (++done == opt.iterations) break;
    }
    std::fflush(stdout);
    return 0;
  }

  auto screen = tui::Screen::open(error);
  if (!screen) return fail(error);
  seek(st, snaps, 1);
  screen->draw(st);
  uint64_t next = model::boottime_ns() + step_ns(st, interval_ns);
  while (!stop_requested()) {
    const uint64_t now = model::boottime_ns();
    if (now < next) {
      const int key = screen->read_key(static_cast<int>(std::min<uint64_t>((next - now) / 1'000'000 + 1, 60'000)));
      if (key == -1) continue;
      const Intent in = apply_key(key, st, screen->page_rows());
      if (in == Intent::quit) break;
      if (in == Intent::retime) next = model::boottime_ns() + step_ns(st, interval_ns);
      if (in == Intent::record) st.status = "recording is for live targets";
      if (in == Intent::step_forward || in == Intent::step_back) {
        if (!st.paused()) st.toggle_pause();  // stepping means looking closely: hold still
        if (in == Intent::step_forward && r.position < r.count) seek(st, snaps, r.position + 1);
        if (in == Intent::step_back && r.position > 1) seek(st, snaps, r.position - 1);
      }
      screen->draw(st);
      continue;
    }
    next = model::boottime_ns() + step_ns(st, interval_ns);
    if (st.paused() || r.position >= r.count) continue;
    seek(st, snaps, r.position + 1);
    screen->draw(st);
  }
  return 0;
}

}  // namespace platoon::cli
