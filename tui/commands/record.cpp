// platoon record: snapshots every interval and raw events as they come, appended to a trace
// file chunk by chunk so a crash loses at most the chunk being written; Ctrl-C ends cleanly.
#include <signal.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <vector>

#include <CLI/CLI.hpp>

#include "tui/commands/commands.hpp"
#include "tui/commands/live_flags.hpp"
#include "bpf/snapshot/clock.hpp"
#include "tui/commands/live_session.hpp"
#include "tui/analysis/observer_cost.hpp"
#include "tui/trace/trace_writer.hpp"
#include "tui/commands/version.hpp"

namespace platoon::cli {
namespace {

// Raw records are batched into chunks of about this size (or every poll round, ≤ 100 ms).
constexpr size_t kEventChunkBytes = 64 * 1024;
// What platoon has cost so far goes into the trace this often (at an interval's end), so that a
// recording cut short by a crash or kill -9 still says it; and once more at the end.
constexpr uint64_t kCostNoteNs = 5'000'000'000ull;

class EventBatch {
 public:
  explicit EventBatch(trace::TraceWriter& writer) : writer_(writer) { bytes_.reserve(kEventChunkBytes * 2); }
  void add(const void* record, size_t size) {
    const auto* p = static_cast<const uint8_t*>(record);
    bytes_.insert(bytes_.end(), p, p + size);
    ++count_;
    ++total_;
  }
  bool full() const { return bytes_.size() >= kEventChunkBytes; }
  bool flush() {
    if (count_ == 0) return true;
    const bool ok = writer_.write_events(bytes_.data(), bytes_.size(), count_);
    bytes_.clear();
    count_ = 0;
    return ok;
  }
  uint64_t total() const { return total_; }

 private:
  trace::TraceWriter& writer_;
  std::vector<uint8_t> bytes_;
  uint64_t count_ = 0;
  uint64_t total_ = 0;
};

std::string fmt_seconds(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ns) / 1e9);
  return buf;
}

int fail(const std::string& msg) { return command_failure("record", msg); }

// The recording once it runs: raw events as they come, a snapshot per interval, until the
// duration, a stop signal, the command's end or a write error.
class RecordLoop {
 public:
  RecordLoop(const RecordOptions& opt, LiveSession& session, trace::TraceWriter& writer)
      : opt_(opt), session_(session), source_(session.source()), writer_(writer), batch_(writer) {
    t0_ = snapshot::clock_ns(CLOCK_BOOTTIME);
    interval_ns_ = static_cast<uint64_t>(opt.interval_s * 1e9);
    end_ns_ = opt.duration_s > 0 ? t0_ + static_cast<uint64_t>(opt.duration_s * 1e9) : UINT64_MAX;
    next_ns_ = t0_ + interval_ns_;
    cost0_ = analysis::take_cost_sample(source_);
    cost_note_ns_ = t0_;
  }

  // False when a write failed (the file holds what was written before).
  bool run() {
    while (stop_reason_.empty()) {
      const uint64_t now = snapshot::clock_ns(CLOCK_BOOTTIME);
      const uint64_t until = std::min(next_ns_, end_ns_);
      if (now < until) {
        const int timeout_ms = static_cast<int>(std::min<uint64_t>((until - now) / 1'000'000 + 1, 100));
        source_.events(timeout_ms, sink());
        if (!batch_.flush()) write_failed_ = true;
      }
      if (write_failed_) return false;
      if (stop_requested()) {
        stop_reason_ = "interrupted";
        break;
      }
      const uint64_t t = snapshot::clock_ns(CLOCK_BOOTTIME);
      if ((t >= next_ns_ || t >= end_ns_) && !interval(t)) return false;
    }
    return true;
  }

  // Drains what the ring buffer still holds, then the closing snapshot; false on a write error.
  bool finish() {
    source_.events(0, sink());
    batch_.flush();
    take_snapshot();
    writer_.write_snapshot(last_);
    cost_ = write_cost_note();
    for (const auto& n : source_.cost_notes()) writer_.write_note(snapshot::clock_ns(CLOCK_BOOTTIME), n);
    return writer_.finish(stop_reason_);
  }

  void print_summary() const {
    const uint64_t dur = snapshot::clock_ns(CLOCK_BOOTTIME) - t0_;
    if (!opt_.quiet)
      std::fprintf(stderr,
                   "platoon record: %s after %s: %zu threads, %" PRIu64 " events, %" PRIu64
                   " lost, %" PRIu64 " bytes in %s\n",
                   stop_reason_.c_str(), fmt_seconds(dur).c_str(), threads_seen_, batch_.total(),
                   last_.lost_events(), writer_.bytes_written(), opt_.output.c_str());
    if (!opt_.quiet) std::fprintf(stderr, "platoon cost: %s\n", analysis::cost_summary(cost_).c_str());
    if (last_.lost_events() > 0)
      std::fprintf(stderr, "platoon record: %" PRIu64 " events were lost (ring buffer full): try --ringbuf-mb\n",
                   last_.lost_events());
  }

 private:
  snapshot::SnapshotSource::EventSink sink() {
    return [this](const void* rec, size_t size) {
      batch_.add(rec, size);
      if (batch_.full() && !batch_.flush()) write_failed_ = true;
    };
  }

  // What platoon cost since the loop began, written as a note (report reads the last one).
  analysis::ObserverCost write_cost_note() {
    const analysis::CostSample now = analysis::take_cost_sample(source_);
    analysis::ObserverCost c = analysis::observer_cost(cost0_, now);
    writer_.write_note(now.wall_ns, analysis::cost_note(c));
    cost_note_ns_ = now.wall_ns;
    return c;
  }

  void take_snapshot() {
    last_ = source_.snapshot();
    threads_seen_ = std::max(threads_seen_, last_.threads.size());
  }

  // One interval's snapshot and what ended since; false on a write error.
  bool interval(uint64_t t) {
    source_.refresh();
    take_snapshot();
    if (!writer_.write_snapshot(last_)) {
      write_failed_ = true;
      return false;
    }
    next_ns_ += interval_ns_ * ((t - next_ns_) / interval_ns_ + 1);
    if (t - cost_note_ns_ >= kCostNoteNs) write_cost_note();
    // Targets that went away: say so once, keep recording (--comm may match new ones).
    for (pid_t p : session_.newly_gone()) {
      const std::string msg = "target " + std::to_string(p) + " exited at +" + fmt_seconds(t - t0_) +
                              (opt_.live.target.comm.empty() ? "; still recording (Ctrl-C to stop)" : "");
      writer_.write_note(t, msg);
      std::fprintf(stderr, "platoon record: %s\n", msg.c_str());
    }
    if (const std::string status = session_.command_status(); !status.empty()) stop_reason_ = "command " + status;
    if (t >= end_ns_) stop_reason_ = "duration reached";
    return true;
  }

  const RecordOptions& opt_;
  LiveSession& session_;
  snapshot::SnapshotSource& source_;
  trace::TraceWriter& writer_;
  EventBatch batch_;
  uint64_t t0_ = 0, interval_ns_ = 0, end_ns_ = 0, next_ns_ = 0;
  size_t threads_seen_ = 0;
  snapshot::Snapshot last_;
  analysis::CostSample cost0_;         // the cost counters when the loop began
  uint64_t cost_note_ns_ = 0;          // when the last cost note was written
  analysis::ObserverCost cost_;        // from start to finish
  std::string stop_reason_;
  bool write_failed_ = false;
};

}  // namespace

int run_record(const RecordOptions& opt) {
  std::string error;
  // The output is checked and created first: a bad -o fails before anything is attached or run.
  auto output = outputs::OutputFile::create(opt.output, outputs::OutputFile::Existing::replace, &error);
  if (!output) return fail(error);
  auto session = LiveSession::open(opt.live, {.record_events = opt.events, .drain_events = opt.drain_events}, error);
  if (!session) return fail(error);
  const std::string& note = session->note();
  if (!note.empty()) std::fprintf(stderr, "platoon record: %s\n", note.c_str());

  const trace::TraceMeta meta = session->trace_meta(opt.interval_s);
  auto writer = trace::TraceWriter::create(std::move(*output), meta, {}, &error);
  if (!writer) return fail(error);
  if (writer->replaced_earlier_file())
    std::fprintf(stderr, "platoon record: replaced the earlier %s\n", opt.output.c_str());
  for (const auto& n : session->source().notes()) writer->write_note(snapshot::clock_ns(CLOCK_BOOTTIME), n);
  if (!note.empty()) writer->write_note(snapshot::clock_ns(CLOCK_BOOTTIME), note);
  signal(SIGXFSZ, SIG_IGN);  // a file size limit is a write error (EFBIG) to report, not a death

  // The first snapshot is the baseline every window of the recording starts from. It is taken
  // before a -- CMD is let go, so that the windows hold everything the command does (on a busy
  // machine the command can run for a while before a later baseline).
  if (!writer->write_snapshot(session->source().snapshot())) return fail(writer->error());
  if (!session->release(error)) {
    writer->finish("command failed to start");
    return fail(error);
  }
  RecordLoop loop(opt, *session, *writer);
  if (!opt.quiet)
    std::fprintf(stderr, "platoon record: recording %s (source %s, %s) to %s; Ctrl-C to stop\n",
                 meta.target.c_str(), snapshot::to_string(meta.source), meta.attach_mode.c_str(),
                 opt.output.c_str());
  if (!loop.run()) {
    std::fprintf(stderr, "platoon record: writing %s failed: %s; the file holds what was written before\n",
                 opt.output.c_str(), writer->error().c_str());
    return kExitFailure;
  }
  if (!loop.finish()) return fail(writer->error());
  loop.print_summary();
  return 0;
}


CommandRun add_record(CLI::App& sub) {
  struct Flags : CommandFlags<RecordOptions> {
    bool no_events = false;
  };
  auto f = std::make_shared<Flags>();
  f->interval = "1";
  RecordOptions& opt = f->opt;
  f->live.add_target(sub);
  sub.add_option("-d,--duration", f->duration, "stop after this long (10, 10s, 500ms, 2m); default: until Ctrl-C");
  sub.add_option("-i,--interval", f->interval, "one aggregate snapshot per interval")->capture_default_str();
  sub.add_option("-o,--output", opt.output, "trace file to write (mode 0600)")->required();
  f->live.add_procfs(sub, opt.live, "sample /proc instead of loading BPF (fewer fields)");
  sub.add_flag("--no-events", f->no_events, "aggregates only, no raw scheduler events");
  f->live.add_no_io(sub);
  f->live.add_requests(sub);
  sub.add_flag("--drain-events", opt.drain_events,
               "also each drain and steal of platoon-runtime targets as a raw event (a uprobe trap per drain)");
  sub.add_option("--ringbuf-mb", opt.live.ringbuf_mb, "ring buffer size for raw events")->capture_default_str();
  f->live.add_no_usdt(sub, "do not attach the runtime's USDT probes (platoon-server targets)");
  f->live.add_raw_tp(sub, opt.live);
  f->live.add_bpf_stats(sub);
  sub.add_flag("-q,--quiet", opt.quiet, "no progress lines");
  f->live.add_verbose(sub, opt.live);
  sub.footer("Examples:\n  platoon record --pid 1234 --duration 10 -o run.trace\n"
             "  platoon record --comm nginx -o nginx.trace\n"
             "  platoon record -o server.trace -- build/bin/platoon-server --port 8080 --backend 127.0.0.1:9090");
  return [f](const std::vector<std::string>& command) {
    RecordOptions& o = f->opt;
    std::string error;
    if (!f->live.resolve(command, o.live, error, true)) return usage_error("record", error);
    if (!f->duration.empty() && (!parse_seconds(f->duration, o.duration_s) || o.duration_s <= 0))
      return usage_error("record", "bad --duration '" + f->duration + "'");
    if (!parse_seconds(f->interval, o.interval_s) || o.interval_s < 0.01 || o.interval_s > 3600)
      return usage_error("record", "bad --interval '" + f->interval + "' (10ms to 1h)");
    if (o.live.ringbuf_mb < 1 || o.live.ringbuf_mb > 1024) return usage_error("record", "--ringbuf-mb must be 1..1024");
    o.events = !f->no_events;
    return run_record(o);
  };
}

}  // namespace platoon::cli
