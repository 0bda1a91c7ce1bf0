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
#include "bpf/snapshot/clock.hpp"
#include "tui/commands/live_source.hpp"
#include "tui/commands/top_loop.hpp"
#include "tui/analysis/window.hpp"
#include "tui/version.hpp"
#include "tui/dashboard/views/screen.hpp"

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
  // A launched command's end is its exit status, never the /proc check below: the command may
  // exit between the two, and "target exited" would lose the status.
  if (child) return child->poll_exit(status) ? "command " + status : std::string();
  if (!opt.live.target.comm.empty()) return {};
  for (pid_t p : pids)
    if (process_alive(p)) return {};
  return pids.size() == 1 ? "target exited" : "all targets exited";
}

// The loop of a live session: keys between intervals, one snapshot per interval.
class LiveTop {
 public:
  LiveTop(const TopOptions& opt, std::unique_ptr<LiveSource> source, std::vector<pid_t> pids,
          std::optional<LaunchedCommand> child, std::unique_ptr<tui::Screen> screen)
      : opt_(opt), source_(std::move(source)), pids_(std::move(pids)), child_(std::move(child)),
        screen_(std::move(screen)) {
    st_.set_interval(opt.interval_s);
    st_.target = opt.live.target.describe();
    st_.source_line = source_line(*source_);
  }
  model::TopState& state() { return st_; }

  void run() {
    prev_ = source_->snapshot();
    next_ = model::boottime_ns() + interval_ns();
    if (screen_) screen_->draw(st_);
    while (!stop_requested()) {
      const uint64_t now = model::boottime_ns();
      if (now >= next_) {
        if (!tick()) break;
        continue;
      }
      // Sleep until the interval is due: waking more often is most of what a dashboard costs
      // (waking every 100 ms measured 1.2% of a core). Signals cut the wait short (EINTR).
      const int wait_ms = static_cast<int>(std::min<uint64_t>((next_ - now) / 1'000'000 + 1, 60'000));
      if (!screen_) {
        const timespec ts{wait_ms / 1000, static_cast<long>(wait_ms % 1000) * 1'000'000};
        nanosleep(&ts, nullptr);  // a signal ends it early
      } else if (const int key = screen_->read_key(wait_ms); key != -1 && !on_key(key)) {
        break;
      }
    }
  }

  int finish() {
    recorder_.stop(stop_requested() ? "interrupted" : "top quit");
    const std::string saved = recorder_.describe();
    const bool batch = screen_ == nullptr;
    screen_.reset();  // the terminal is ours again before anything is printed
    if (!saved.empty()) std::fprintf(stderr, "platoon top: %s\n", saved.c_str());
    if (batch && !ended_.empty()) std::fprintf(stderr, "platoon top: %s\n", ended_.c_str());
    std::string status;
    if (child_ && !child_->poll_exit(status)) kill(child_->pid(), SIGTERM);  // we started it: it ends with us
    return 0;
  }

 private:
  uint64_t interval_ns() const { return static_cast<uint64_t>(st_.interval_s() * 1e9); }

  // False to quit.
  bool on_key(int key) {
    const Intent in = apply_key(key, st_, screen_->page_rows());
    if (in == Intent::quit) return false;
    if (in == Intent::retime) next_ = model::boottime_ns() + interval_ns();
    if (in == Intent::record) {
      std::string error;
      if (recorder_.active()) recorder_.stop("stopped from top");
      else if (!recorder_.start(meta_for(opt_, *source_, pids_), prev_, error)) st_.status = error;
    }
    st_.recording = recorder_.describe();
    screen_->draw(st_);  // every key redraws; KEY_RESIZE lands here too
    return true;
  }

  // One interval: snapshot, window, model, output. False when a batch run is done.
  bool tick() {
    source_->refresh();
    model::Snapshot cur = source_->snapshot();
    recorder_.write(cur);
    st_.recording = recorder_.describe();
    // Paused: the model stands still, but the baseline moves on so that resuming shows the
    // latest interval rather than one as long as the pause.
    if (!st_.paused()) st_.push(model::make_window(prev_, cur));
    prev_ = std::move(cur);
    next_ += interval_ns();
    if (next_ < model::boottime_ns()) next_ = model::boottime_ns() + interval_ns();  // fell behind: no burst
    if (ended_.empty()) {
      ended_ = targets_gone(opt_, pids_, child_);
      if (!ended_.empty()) st_.status = screen_ ? ended_ + " (q quits)" : ended_;
    }
    if (screen_) {
      screen_->draw(st_);
      return true;
    }
    std::fputs(tui::batch_text(st_).c_str(), stdout);
    std::fflush(stdout);
    return ++done_ != opt_.iterations && ended_.empty();
  }

  const TopOptions& opt_;
  std::unique_ptr<LiveSource> source_;
  std::vector<pid_t> pids_;
  std::optional<LaunchedCommand> child_;
  std::unique_ptr<tui::Screen> screen_;
  model::TopState st_;
  Recorder recorder_;
  model::Snapshot prev_;
  uint64_t next_ = 0;
  long done_ = 0;
  std::string ended_;
};

}  // namespace

int run_top(const TopOptions& opt) {
  if (!opt.replay.empty()) return run_top_replay(opt);
  std::string error, note;
  const bool batch = opt.batch || !isatty(STDOUT_FILENO);

  LiveTarget target;
  if (!start_live_target(opt.live.target, {opt.live.kill_after_s, opt.live.keep_running}, target, error)) return fail(error);
  auto& child = target.child;
  const std::vector<pid_t>& pids = target.pids;
  // Without raw events: the live view reads the in-kernel aggregates once per interval only.
  auto source = LiveSource::open(opt.live, pids, /*record_events=*/false, error, note);
  if (!source) return fail(error);
  install_stop_signals();

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
  LiveTop top(opt, std::move(source), std::move(pids), std::move(child), std::move(screen));
  if (!note.empty()) top.state().status = note;  // why BPF was not used: shown until something newer
  top.run();
  return top.finish();
}

}  // namespace platoon::cli
