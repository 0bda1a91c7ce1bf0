// platoon top: the live dashboard. Every interval it takes one snapshot of the in-kernel
// aggregates (the source is opened without raw events, so user space does no per-event work),
// makes the window since the previous one, updates the model and redraws; between intervals it
// waits for keys. --batch prints the table instead of drawing it.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>

#include "tui/commands/commands.hpp"
#include "tui/commands/live_flags.hpp"
#include "bpf/snapshot/clock.hpp"
#include "tui/commands/live_session.hpp"
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

model::TraceMeta meta_for(const TopOptions& opt, const LiveSession& session) {
  model::TraceMeta meta;
  meta.tool_version = kVersion;
  meta.source = session.source().source();
  meta.attach_mode = session.source().attach_mode();
  meta.interval_ns = static_cast<uint64_t>(opt.interval_s * 1e9);
  meta.target = opt.live.target.describe();
  for (pid_t p : session.pids()) meta.pids.push_back(static_cast<uint32_t>(p));
  meta.comm = opt.live.target.comm;
  meta.command = opt.live.target.command;
  return meta;
}

// The loop of a live session: keys between intervals, one snapshot per interval.
class LiveTop {
 public:
  LiveTop(const TopOptions& opt, LiveSession& session, std::unique_ptr<tui::Screen> screen)
      : opt_(opt), session_(session), source_(session.source()), screen_(std::move(screen)) {
    st_.set_interval(opt.interval_s);
    st_.target = opt.live.target.describe();
    st_.source_line = session.source_line();
  }
  model::TopState& state() { return st_; }

  void run() {
    prev_ = source_.snapshot();
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
    session_.end_command();  // we started it: it ends with us
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
      else if (!recorder_.start(meta_for(opt_, session_), prev_, error)) st_.status = error;
    }
    st_.recording = recorder_.describe();
    screen_->draw(st_);  // every key redraws; KEY_RESIZE lands here too
    return true;
  }

  // One interval: snapshot, window, model, output. False when a batch run is done.
  bool tick() {
    source_.refresh();
    model::Snapshot cur = source_.snapshot();
    recorder_.write(cur);
    st_.recording = recorder_.describe();
    // Paused: the model stands still, but the baseline moves on so that resuming shows the
    // latest interval rather than one as long as the pause.
    if (!st_.paused()) st_.push(model::make_window(prev_, cur));
    prev_ = std::move(cur);
    next_ += interval_ns();
    if (next_ < model::boottime_ns()) next_ = model::boottime_ns() + interval_ns();  // fell behind: no burst
    if (ended_.empty()) {
      ended_ = session_.targets_gone();
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
  LiveSession& session_;
  model::SnapshotSource& source_;
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
  std::string error;
  const bool batch = opt.batch || !isatty(STDOUT_FILENO);
  // Without raw events: the live view reads the in-kernel aggregates once per interval only.
  auto session = LiveSession::open(opt.live, {.record_events = false}, error);
  if (!session) return fail(error);
  const std::string& note = session->note();

  std::unique_ptr<tui::Screen> screen;
  if (!batch) {
    screen = tui::Screen::open(error);
    if (!screen) return fail(error);
  } else if (!note.empty()) {
    std::fprintf(stderr, "platoon top: %s\n", note.c_str());
  }
  if (!session->release(error)) {
    screen.reset();
    return fail(error);
  }
  LiveTop top(opt, *session, std::move(screen));
  if (!note.empty()) top.state().status = note;  // why BPF was not used: shown until something newer
  top.run();
  return top.finish();
}

CommandRun add_top(CLI::App& sub) {
  struct Flags {
    TopOptions opt;
    LiveFlags live;
    std::string interval = "1";
  };
  auto f = std::make_shared<Flags>();
  TopOptions& opt = f->opt;
  f->live.add_target(sub);
  sub.add_option("-i,--interval", f->interval, "refresh interval (0.25 to 3600 s; + and - change it live)")
      ->capture_default_str();
  sub.add_flag("-b,--batch", opt.batch, "print the table every interval as plain text (default when stdout is not a terminal)");
  sub.add_option("-n,--iterations", opt.iterations, "with --batch: stop after N intervals");
  sub.add_option("--replay", opt.replay, "play a trace file written by platoon record (or top's r key)");
  f->live.add_procfs(sub, opt.live, "sample /proc instead of loading BPF (fewer fields)");
  f->live.add_no_usdt(sub, "do not attach the runtime's USDT probes");
  f->live.add_raw_tp(sub, opt.live);
  f->live.add_verbose(sub, opt.live);
  sub.footer("Examples:\n  platoon top --pid 1234\n  platoon top --comm platoon-server --batch --iterations 5\n"
             "  platoon top -- build/bin/platoon-server --port 8080 --backend 127.0.0.1:9090\n"
             "  platoon top --replay run.trace\nKeys: ? in the dashboard.");
  return [f](const std::vector<std::string>& command) {
    TopOptions& o = f->opt;
    std::string error;
    if (!o.replay.empty()) {
      if (f->live.names_target(command)) return usage_error("top", "--replay takes no --pid, --comm or -- CMD");
    } else if (!f->live.resolve(command, o.live, error)) {
      return usage_error("top", error);
    }
    if (!parse_seconds(f->interval, o.interval_s) || o.interval_s < 0.25 || o.interval_s > 3600)
      return usage_error("top", "bad --interval '" + f->interval + "' (0.25 s to 1 h)");
    if (o.iterations < 0) return usage_error("top", "--iterations must be positive");
    return run_top(o);
  };
}

}  // namespace platoon::cli
