// platoon top: the live dashboard. Every interval it takes one snapshot of the in-kernel
// aggregates (the source is opened without raw events, so user space does no per-event work),
// makes the window since the previous one, updates the model and redraws; between intervals it
// waits for keys. --batch prints the table instead of drawing it.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>

#include "tui/commands/commands.hpp"
#include "tui/commands/live_source.hpp"
#include "tui/commands/top_loop.hpp"
#include "tui/model/window.hpp"
#include "tui/version.hpp"
#include "tui/views/screen.hpp"

namespace platoon::cli {

int run_top_replay(const TopOptions& opt);

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "platoon top: %s\n", msg.c_str());
  return kExitFailure;
}

std::string source_line(const LiveSource& src) {
  const std::string s = model::to_string(src.source());
  return src.attach_mode() == s ? s : s + " (" + src.attach_mode() + ")";
}

model::TraceMeta meta_for(const TopOptions& opt, const LiveSource& src, const std::vector<pid_t>& pids) {
  model::TraceMeta meta;
  meta.tool_version = kVersion;
  meta.source = src.source();
  meta.attach_mode = src.attach_mode();
  meta.interval_ns = static_cast<uint64_t>(opt.interval_s * 1e9);
  meta.target = opt.live.target.describe();
  for (pid_t p : pids) meta.pids.push_back(static_cast<uint32_t>(p));
  meta.comm = opt.live.target.comm;
  meta.command = opt.live.target.command;
  return meta;
}

// Which targets are gone; empty while any is alive (--comm keeps watching for new ones).
std::string targets_gone(const TopOptions& opt, const std::vector<pid_t>& pids, std::optional<LaunchedCommand>& child) {
  std::string status;
  if (child && child->poll_exit(status)) return "command " + status;
  if (!opt.live.target.comm.empty()) return {};
  for (pid_t p : pids)
    if (process_alive(p)) return {};
  return pids.size() == 1 ? "target exited" : "all targets exited";
}

}  // namespace

int run_top(const TopOptions& opt) {
  if (!opt.replay.empty()) return run_top_replay(opt);
  std::string error, note;
  const bool batch = opt.batch || !isatty(STDOUT_FILENO);

  const bool launch = !opt.live.target.command.empty();
  std::optional<LaunchedCommand> child =
      launch ? LaunchedCommand::start(opt.live.target.command, error) : std::nullopt;
  std::vector<pid_t> pids = opt.live.target.pids;
  if (launch) {
    if (!child) return fail(error);
    pids = {child->pid()};
  }
  auto source = LiveSource::open(opt.live, pids, /*record_events=*/false, error, note);
  if (!source) return fail(error);
  install_stop_signals();

  model::TopState st;
  st.set_interval(opt.interval_s);
  st.target = opt.live.target.describe();
  st.source_line = source_line(*source);
  if (!note.empty()) st.status = note;  // why BPF was not used: shown until something newer

  std::unique_ptr<tui::Screen> screen;
  if (!batch) {
    screen = tui::Screen::open(error);
    if (!screen) return fail(error);
  } else if (!note.empty()) {
    std::fprintf(stderr, "platoon top: %s\n", note.c_str());
  }
  if (child && !child->release(error)) {
    screen.reset();
    return fail(error);
  }

  Recorder recorder;
  model::Snapshot prev = source->snapshot();
  uint64_t next = boottime_ns() + static_cast<uint64_t>(st.interval_s() * 1e9);
  long done = 0;
  std::string ended;
  if (screen) screen->draw(st);
  while (!stop_requested()) {
    const uint64_t now = boottime_ns();
    if (now < next) {
      // Sleep until the interval is due: waking more often is most of what a dashboard costs
      // (waking every 100 ms measured 1.2% of a core). Signals cut the wait short (EINTR).
      const int wait_ms = static_cast<int>(std::min<uint64_t>((next - now) / 1'000'000 + 1, 60'000));
      if (!screen) {
        const timespec ts{wait_ms / 1000, static_cast<long>(wait_ms % 1000) * 1'000'000};
        nanosleep(&ts, nullptr);  // a signal ends it early
        continue;
      }
      const int key = screen->read_key(wait_ms);
      if (key == -1) continue;
      const Intent in = apply_key(key, st, screen->page_rows());
      if (in == Intent::quit) break;
      if (in == Intent::retime) next = boottime_ns() + static_cast<uint64_t>(st.interval_s() * 1e9);
      if (in == Intent::record) {
        if (recorder.active()) recorder.stop("stopped from top");
        else if (!recorder.start(meta_for(opt, *source, pids), prev, error)) st.status = error;
      }
      st.recording = recorder.describe();
      screen->draw(st);  // every key redraws; KEY_RESIZE lands here too
      continue;
    }
    source->refresh();
    model::Snapshot cur = source->snapshot();
    recorder.write(cur);
    st.recording = recorder.describe();
    // Paused: the model stands still, but the baseline moves on so that resuming shows the
    // latest interval rather than one as long as the pause.
    if (!st.paused()) st.push(model::make_window(prev, cur));
    prev = std::move(cur);
    next += static_cast<uint64_t>(st.interval_s() * 1e9);
    if (next < boottime_ns()) next = boottime_ns() + static_cast<uint64_t>(st.interval_s() * 1e9);
    if (ended.empty()) {
      ended = targets_gone(opt, pids, child);
      if (!ended.empty()) st.status = screen ? ended + " (q quits)" : ended;
    }
    if (screen) {
      screen->draw(st);
      continue;
    }
    std::fputs(tui::batch_text(st).c_str(), stdout);
    std::fflush(stdout);
    if (++done == opt.iterations || !ended.empty()) break;
  }
  recorder.stop(stop_requested() ? "interrupted" : "top quit");
  const std::string saved = recorder.describe();
  screen.reset();  // the terminal is ours again before anything is printed
  if (!saved.empty()) std::fprintf(stderr, "platoon top: %s\n", saved.c_str());
  if (batch && !ended.empty()) std::fprintf(stderr, "platoon top: %s\n", ended.c_str());
  if (child) {
    std::string status;
    if (!child->poll_exit(status)) kill(child->pid(), SIGTERM);  // we started it: it ends with us
  }
  return 0;
}

}  // namespace platoon::cli
