// platoon top: the dashboard, one loop over a snapshot::SnapshotSource. Live, every interval it
// takes one snapshot of the in-kernel aggregates (the source is opened without raw events, so user
// space does no per-event work), makes the window since the previous one, updates the model and
// redraws; between intervals it waits for keys. --replay plays a recording through the same loop,
// one window per recorded interval, with pause, single steps both ways and a speed factor.
// --batch prints the table instead of drawing it.
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
#include "tui/commands/top_keys.hpp"
#include "tui/commands/top_recorder.hpp"
#include "tui/analysis/observer_cost.hpp"
#include "tui/analysis/window.hpp"
#include "tui/trace/replay_source.hpp"
#include "tui/commands/version.hpp"
#include "tui/dashboard/views/batch_text.hpp"
#include "tui/dashboard/views/screen.hpp"

namespace platoon::cli {

namespace {

int fail(const std::string& msg) { return command_failure("top", msg); }

// Where the loop's snapshots come from: exactly one of a live session and a recording.
struct Feed {
  snapshot::SnapshotSource& source;
  LiveSession* session = nullptr;         // live: targets that end, the command, `r` recording
  trace::ReplaySource* replay = nullptr;  // replay: position, speed, steps, end of recording
  uint64_t replay_interval_ns = 0;        // replay: the recorded interval at speed 1
};

// The loop: keys between intervals, one window per interval.
class Top {
 public:
  Top(const TopOptions& opt, Feed feed, std::unique_ptr<dashboard::Screen> screen)
      : opt_(opt), feed_(feed), source_(feed.source), screen_(std::move(screen)) {}
  dashboard::TopState& state() { return st_; }

  void run() {
    prev_ = source_.snapshot();
    if (!feed_.replay) cost_shown_from_ = cost_prev_ = analysis::take_cost_sample(source_);
    // A replay opens on its first window at once.
    next_ = snapshot::boottime_ns() + (feed_.replay ? 0 : step_ns());
    if (screen_ && !feed_.replay) screen_->draw(st_);
    while (!stop_requested()) {
      const uint64_t now = snapshot::boottime_ns();
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
    const analysis::CostSample cost = analysis::take_cost_sample(source_);
    recorder_.stop(stop_requested() ? "interrupted" : "top quit", &cost);
    const std::string saved = recorder_.describe();
    const bool batch = screen_ == nullptr;
    screen_.reset();  // the terminal is ours again before anything is printed
    if (!saved.empty()) std::fprintf(stderr, "platoon top: %s\n", saved.c_str());
    if (batch && !ended_.empty()) std::fprintf(stderr, "platoon top: %s\n", ended_.c_str());
    if (feed_.session) feed_.session->end_command();  // we started it: it ends with us
    return 0;
  }

 private:
  // Time between intervals: live, the interval (+ and - change it); replay, the recorded one
  // over the speed (+ and - change that), and none at all in a batch run.
  uint64_t step_ns() const {
    if (!feed_.replay) return static_cast<uint64_t>(st_.interval_s() * 1e9);
    if (!screen_) return 0;
    return static_cast<uint64_t>(static_cast<double>(feed_.replay_interval_ns) / st_.replay().speed);
  }

  // False to quit.
  bool on_key(int key) {
    const Intent in = apply_key(key, st_, screen_->page_rows());
    if (in == Intent::quit) return false;
    if (in == Intent::retime) next_ = snapshot::boottime_ns() + step_ns();
    if (in == Intent::record) toggle_recording();
    if (in == Intent::step_forward || in == Intent::step_back) step(in == Intent::step_forward ? 1 : -1);
    st_.recording = recorder_.describe();
    screen_->draw(st_);  // every key redraws; KEY_RESIZE lands here too
    return true;
  }

  void toggle_recording() {
    std::string error;
    if (!feed_.session) st_.status = "recording is for live targets";
    else if (recorder_.active()) {
      const analysis::CostSample cost = analysis::take_cost_sample(source_);
      recorder_.stop("stopped from top", &cost);
    } else if (!recorder_.start(feed_.session->trace_meta(opt_.interval_s), prev_, cost_prev_, error)) {
      st_.status = error;
    }
  }

  // `.` and `,`: one window forward or back (replay only), paused: stepping means looking closely.
  void step(int delta) {
    if (!feed_.replay) return;
    const auto& r = st_.replay();
    if (!st_.paused()) st_.toggle_pause();
    if (delta > 0 && r.position < r.count) show(r.position + 1);
    if (delta < 0 && r.position > 1) show(r.position - 1);
  }

  // Replay: shows window `pos` (1-based: snapshots pos-1 → pos). One step forward appends to the
  // history; any other jump plays the windows before pos into a cleared one, so the sparklines
  // are right.
  void show(size_t pos) {
    auto& r = st_.replay();
    if (pos != r.position + 1) {
      st_.clear_history();
      const size_t from = pos > st_.history_len() ? pos - st_.history_len() + 1 : 1;
      feed_.replay->seek(from - 1);
      prev_ = source_.snapshot();
      for (size_t i = from; i < pos; ++i) advance();
    }
    advance();
    r.position = pos;
    st_.status = pos == r.count ? "end of recording (, steps back, q quits)" : "";
  }

  void advance() {
    snapshot::Snapshot cur = source_.snapshot();
    st_.push(analysis::make_window(prev_, cur));
    prev_ = std::move(cur);
  }

  // Live: one snapshot. Paused, the model stands still, but the baseline moves on so that
  // resuming shows the latest interval rather than one as long as the pause.
  void sample() {
    source_.refresh();
    snapshot::Snapshot cur = source_.snapshot();
    // What top itself cost over the interval: its BPF programs and its own CPU.
    analysis::CostSample cost = analysis::take_cost_sample(source_);
    recorder_.write(cur, cost);
    st_.recording = recorder_.describe();
    if (!st_.paused()) st_.push(analysis::make_window(prev_, cur));
    prev_ = std::move(cur);
    // Sampled stats: an interval shorter than the sampling period can hold no window; the header
    // then keeps its figures, and the next one covers both intervals.
    if (!cost.bpf.sampled || analysis::counted_between(cost_shown_from_, cost) > 0) {
      st_.cost = analysis::observer_cost(cost_shown_from_, cost);
      cost_shown_from_ = cost;
    } else if (st_.cost) {
      st_.cost->self_cpu_pct = analysis::observer_cost(cost_prev_, cost).self_cpu_pct;
    }
    cost_prev_ = std::move(cost);
    if (ended_.empty()) {
      ended_ = feed_.session->targets_gone();
      if (!ended_.empty()) st_.status = screen_ ? ended_ + " (q quits)" : ended_;
    }
  }

  // One interval: the next window, then output. False when a batch run is done.
  bool tick() {
    const auto& r = st_.replay();
    const bool moves = !feed_.replay || (!st_.paused() && r.position < r.count);
    if (feed_.replay && moves) show(r.position + 1);
    if (!feed_.replay) sample();
    const uint64_t now = snapshot::boottime_ns();
    next_ += step_ns();
    if (next_ < now) next_ = now + step_ns();  // fell behind: no burst
    if (!moves) return true;                    // a replay paused or at its end: nothing new
    if (screen_) {
      screen_->draw(st_);
      return true;
    }
    std::fputs(dashboard::batch_text(st_).c_str(), stdout);
    std::fflush(stdout);
    const bool over = feed_.replay ? r.position >= r.count : !ended_.empty();
    return ++done_ != opt_.iterations && !over;
  }

  const TopOptions& opt_;
  Feed feed_;
  snapshot::SnapshotSource& source_;
  std::unique_ptr<dashboard::Screen> screen_;
  dashboard::TopState st_;
  Recorder recorder_;
  snapshot::Snapshot prev_;
  analysis::CostSample cost_prev_;     // live: the cost counters at the last interval
  analysis::CostSample cost_shown_from_;  // and where the header's figures start
  uint64_t next_ = 0;
  long done_ = 0;
  std::string ended_;  // live: the targets are gone
};

std::unique_ptr<dashboard::Screen> open_screen(bool batch, std::string& error) {
  return batch ? nullptr : dashboard::Screen::open(error);
}

// --columns: the columns named (by catalog key) go on screen, the others off; TID and NAME stay.
// False with a one-line error naming the valid keys.
bool choose_columns(const std::vector<std::string>& keys, std::vector<dashboard::Column>& out, std::string& error) {
  std::string valid;
  for (const auto& info : dashboard::columns()) {
    const std::string key = info.metric->key;
    if (info.id == dashboard::Column::tid || info.id == dashboard::Column::name) continue;
    valid += (valid.empty() ? "" : ",") + key;
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) out.push_back(info.id);
  }
  for (const auto& k : keys) {
    const bool known = std::any_of(dashboard::columns().begin(), dashboard::columns().end(),
                                   [&](const dashboard::ColumnInfo& i) { return k == i.metric->key; });
    if (!known) {
      error = "unknown column '" + k + "' in --columns (one of " + valid + ")";
      return false;
    }
  }
  return true;
}

void show_only(dashboard::TopState& st, const std::vector<dashboard::Column>& shown) {
  if (shown.empty()) return;
  for (const auto& info : dashboard::columns()) {
    const bool identity = info.id == dashboard::Column::tid || info.id == dashboard::Column::name;
    st.show_column(info.id, identity || std::find(shown.begin(), shown.end(), info.id) != shown.end());
  }
}

int run_live(const TopOptions& opt, const std::vector<dashboard::Column>& shown, bool batch) {
  std::string error;
  // Without raw events: the live view reads the in-kernel aggregates once per interval only.
  auto session = LiveSession::open(opt.live, {.record_events = false}, error);
  if (!session) return fail(error);
  const std::string& note = session->note();
  auto screen = open_screen(batch, error);
  if (!batch && !screen) return fail(error);
  if (batch && !note.empty()) std::fprintf(stderr, "platoon top: %s\n", note.c_str());
  if (!session->release(error)) {
    screen.reset();
    return fail(error);
  }
  Top top(opt, Feed{.source = session->source(), .session = session.get()}, std::move(screen));
  dashboard::TopState& st = top.state();
  show_only(st, shown);
  st.set_machine_wide(opt.live.target.all);   // opens on the processes, ranked by %wait
  st.set_interval(opt.interval_s);
  st.target = opt.live.target.describe();
  st.source_line = session->source_line();
  if (!note.empty()) st.status = note;  // why BPF was not used: shown until something newer
  top.run();
  return top.finish();
}

// The replay's header: the recording's target, file, source and notes, and what the reader
// could not read (stderr is hidden behind the screen, so the warnings are notes too).
void describe_replay(dashboard::TopState& st, const std::string& path, const trace::ReplaySource& replay,
                     const std::vector<std::string>& warnings) {
  const auto& meta = replay.contents().meta;
  const auto slash = path.find_last_of('/');
  st.target = meta.target + " from " + (slash == std::string::npos ? path : path.substr(slash + 1));
  st.source_line = std::string(snapshot::to_string(meta.source)) + " (" + meta.attach_mode + ")";
  st.notes = replay.notes();
  for (const auto& w : warnings) st.notes.push_back(w);
  // The recorder's last cost note covers the whole recording (record writes one every few s).
  for (const auto& n : replay.contents().notes)
    if (auto cost = analysis::parse_cost_note(n.text)) st.cost = std::move(cost);
}

// Replay steps both ways, so it holds the snapshots (within kKeepSnapshotBytes: past it only a
// prefix is replayed), never the raw events, which it does not show.
int run_replay(const TopOptions& opt, const std::vector<dashboard::Column>& shown, bool batch) {
  std::string error;
  auto replay = trace::ReplaySource::open(opt.replay, error, {.keep_events = false});
  if (!replay) return fail(error);
  const trace::TraceContents& c = replay->contents();
  std::vector<std::string> warnings;
  if (c.truncated)
    warnings.push_back(opt.replay + " is truncated at byte " + std::to_string(c.truncated_at) + " (" +
                       c.truncated_reason + "): replaying what precedes it");
  if (const std::string note = c.cap_note(); !note.empty()) warnings.push_back(opt.replay + ": " + note);
  for (const auto& w : warnings) std::fprintf(stderr, "platoon top: %s\n", w.c_str());
  if (replay->count() < 2)
    return fail(opt.replay + (c.cut_snapshots ? " holds fewer than two snapshots within the replay's memory cap"
                                              : " holds fewer than two snapshots: nothing to replay"));
  install_stop_signals();
  auto screen = open_screen(batch, error);
  if (!batch && !screen) return fail(error);

  const size_t windows = replay->count() - 1;
  const uint64_t interval_ns =
      c.meta.interval_ns ? c.meta.interval_ns
                         : std::max<uint64_t>(1, (replay->at(windows).ts_ns - replay->at(0).ts_ns) / windows);
  Top top(opt, Feed{.source = *replay, .replay = replay.get(), .replay_interval_ns = interval_ns}, std::move(screen));
  dashboard::TopState& st = top.state();
  show_only(st, shown);
  st.replay().active = true;
  st.replay().count = windows;
  st.set_interval(static_cast<double>(interval_ns) / 1e9);
  describe_replay(st, opt.replay, *replay, warnings);
  st.set_machine_wide(c.meta.target == kAllProcesses);   // a recording of the whole machine
  top.run();
  return top.finish();
}

}  // namespace

// --requests without --columns: the default columns and the request columns.
std::vector<dashboard::Column> default_and_request_columns() {
  std::vector<dashboard::Column> out;
  for (const auto& info : dashboard::columns())
    if (info.shown || (info.metric->fields & snapshot::kFieldRequests)) out.push_back(info.id);
  return out;
}

int run_top(const TopOptions& opt) {
  std::vector<dashboard::Column> shown;
  std::string error;
  if (!choose_columns(opt.columns, shown, error)) return usage_error("top", error);
  const bool requests = (opt.live.fields & snapshot::kFieldRequests) != 0;
  if (requests && shown.empty()) shown = default_and_request_columns();
  const bool batch = opt.batch || !isatty(STDOUT_FILENO);
  if (!opt.replay.empty()) return run_replay(opt, shown, batch);
  TopOptions live = opt;
  // The header and the detail view read the scheduler's fields; IO and drain (the epoll
  // programs, the runtime probes) only the columns that show them.
  // --no-io has taken kFieldIo out of opt.live.fields already, and columns do not put it back.
  // Requests (opt-in) load when --requests asks or a shown column needs them.
  if (!shown.empty())
    live.live.fields =
        (opt.live.fields & ((snapshot::kFieldsBpf & ~(snapshot::kFieldIo | snapshot::kFieldDrain)) | dashboard::needed_fields(shown))) |
        (dashboard::needed_fields(shown) & snapshot::kFieldRequests);
  return run_live(live, shown, batch);
}

CommandRun add_top(CLI::App& sub) {
  auto f = std::make_shared<CommandFlags<TopOptions>>();
  f->interval = "1";
  TopOptions& opt = f->opt;
  f->live.add_target(sub);
  sub.add_option("-i,--interval", f->interval, "refresh interval (0.25 to 3600 s; + and - change it live)")
      ->capture_default_str();
  sub.add_flag("-b,--batch", opt.batch, "print the table every interval as plain text (default when stdout is not a terminal)");
  sub.add_option("-n,--iterations", opt.iterations, "with --batch: stop after N intervals");
  sub.add_option("--replay", opt.replay, "play a trace file written by platoon record (or top's r key)");
  sub.add_option("--columns", opt.columns,
                 "metric columns on screen, by catalog key (e.g. cpu_pct,wait_pct; docs/metrics.md); "
                 "a live top loads only the probes they need")
      ->delimiter(',');
  f->live.add_procfs(sub, opt.live, "sample /proc instead of loading BPF (fewer fields)");
  f->live.add_no_usdt(sub, "do not attach the runtime's USDT probes");
  f->live.add_no_io(sub);
  f->live.add_requests(sub);
  f->live.add_raw_tp(sub, opt.live);
  f->live.add_bpf_stats(sub);
  f->live.add_verbose(sub, opt.live);
  sub.footer("Examples:\n  platoon top --pid 1234\n  platoon top --comm platoon-server --batch --iterations 5\n"
             "  platoon top -- build/bin/platoon-server --port 8080 --backend 127.0.0.1:9090\n"
             "  platoon top --replay run.trace\nKeys: ? in the dashboard.");
  return [f](const std::vector<std::string>& command) {
    TopOptions& o = f->opt;
    std::string error;
    if (!o.replay.empty()) {
      if (f->live.names_target(command)) return usage_error("top", "--replay takes no --pid, --comm or -- CMD");
    } else if (!f->live.resolve(command, o.live, error, true)) {
      return usage_error("top", error);
    }
    if (!parse_seconds(f->interval, o.interval_s) || o.interval_s < 0.25 || o.interval_s > 3600)
      return usage_error("top", "bad --interval '" + f->interval + "' (0.25 s to 1 h)");
    if (o.iterations < 0) return usage_error("top", "--iterations must be positive");
    return run_top(o);
  };
}

}  // namespace platoon::cli
