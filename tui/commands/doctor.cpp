// platoon doctor: findings from a trace file, from two with --vs, or from a live target watched
// for --duration with raw events kept so that the platoon effect can be measured too. Both go one
// path over a snapshot::SnapshotSource (a ReplaySource for a file, within the reader's memory caps):
// the batch statistics from the raw events, the window from the snapshots.
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

#include "bpf/collectors/runtime_detect.hpp"
#include "tui/commands/commands.hpp"
#include "tui/commands/doctor_run.hpp"
#include "tui/commands/live_flags.hpp"
#include "bpf/snapshot/clock.hpp"
#include "tui/commands/live_session.hpp"
#include "tui/analysis/doctor.hpp"
#include "tui/outputs/doctor_output.hpp"
#include "tui/trace/replay_source.hpp"

namespace platoon::cli {
namespace {

namespace doc = analysis::doctor;

using Run = DoctorRun;

// How a diagnosis paces its source: a file gives every recorded snapshot at once, a live target
// its first and last with --duration (or the command's end) in between.
class Pace {
 public:
  virtual ~Pace() = default;
  // Asked once per round: true when the next snapshot closes the watch.
  virtual bool over() = 0;
  virtual int wait_ms() const { return 0; }            // for raw events, in a round that goes on
  virtual bool snapshot_due() const { return true; }   // in a round that goes on
};

snapshot::SnapshotSource::EventSink to_tracker(Run& run) {
  return [&run](const void* rec, size_t size) {
    if (auto h = trace::event_as<platoon_event_header>(rec, size)) run.batches.add(*h, rec, size);
  };
}

// The one path for a file and a live target: each round hands the raw events to the tracker and
// the snapshots to the recording window, until the pace says the watch is over; then the closing
// snapshot and the events after it (a file's last interval).
void feed(snapshot::SnapshotSource& source, Pace& pace, Run& run, analysis::RecordingWindow& recording,
          const SnapshotTap& tap = {}) {
  const auto sink = to_tracker(run);
  for (bool last = false; !last;) {
    last = pace.over();
    source.events(last ? 0 : pace.wait_ms(), sink);
    if (!last && !pace.snapshot_due()) continue;
    snapshot::Snapshot s = source.snapshot();
    if (tap) tap(s);
    recording.add(std::move(s));
  }
  source.events(0, sink);
  run.batches.finish();
  run.window = recording.window();
  run.input.snapshots = recording.snapshots();
}

// The baseline: what happened before it counts for the tracker only.
void take_baseline(snapshot::SnapshotSource& source, Run& run, analysis::RecordingWindow& recording,
                   const SnapshotTap& tap = {}) {
  source.events(0, to_tracker(run));
  snapshot::Snapshot s = source.snapshot();
  if (tap) tap(s);
  recording.add(std::move(s));
}

class FilePace final : public Pace {
 public:
  explicit FilePace(const trace::ReplaySource& replay) : replay_(replay) {}
  bool over() override { return replay_.remaining() <= 1; }

 private:
  const trace::ReplaySource& replay_;
};

}  // namespace

bool load_doctor_file(const std::string& path, DoctorRun& run, std::string& error, const SnapshotTap& tap) {
  auto replay = trace::ReplaySource::open(path, error, {.rewind = false});
  if (!replay) return false;
  if (replay->count() < 2) {
    error = path + (replay->count() == 0 ? ": the recording holds no snapshot"
                                         : ": the recording holds one snapshot: no interval to diagnose");
    return false;
  }
  analysis::RecordingWindow recording;
  take_baseline(*replay, run, recording, tap);
  FilePace pace(*replay);
  feed(*replay, pace, run, recording, tap);
  const trace::TraceContents& c = replay->contents();
  run.has_batches = c.event_count > 0;
  doc::DoctorInput& in = run.input;
  in.label = path;
  in.ncpus = c.meta.ncpus;
  in.truncated = c.truncated;
  in.truncated_reason = c.truncated ? "at byte " + std::to_string(c.truncated_at) + ": " + c.truncated_reason : "";
  in.complete = c.complete;
  // What the recorder recognised; a recording that does not say: a runtime that drained is ours.
  in.runtime = snapshot::runtime_kind_from(c.meta.runtime);
  if (in.runtime == snapshot::RuntimeKind::other && c.meta.runtime.empty())
    for (const auto& t : run.window.threads)
      if (t.drain && t.drain->batches > 0) in.runtime = snapshot::RuntimeKind::platoon;
  if (!run.has_batches)
    in.no_events_reason = run.window.source == snapshot::Source::procfs
                              ? "a procfs recording has no raw events"
                              : "the recording has no raw events (recorded with --no-events, or by top's r key)";
  if (c.truncated)
    run.warnings.push_back(path + " is truncated (" + in.truncated_reason + "): diagnosing its " +
                           std::to_string(recording.snapshots()) + " complete snapshots");
  for (const std::string& note : {c.cap_note(), recording.cap_note()})
    if (!note.empty()) run.warnings.push_back(path + ": " + note);
  return true;
}

namespace {

// The first target that is a runtime platoon knows (a JVM among helpers is still a JVM).
snapshot::RuntimeKind runtime_of(const std::vector<pid_t>& pids) {
  for (pid_t p : pids)
    if (auto k = collectors::detect_runtime(p); k != snapshot::RuntimeKind::other) return k;
  return snapshot::RuntimeKind::other;
}

// CPUs each target process may run on, from its affinity mask (live only: a file has only where
// the threads did run).
std::map<uint32_t, uint32_t> affinity_of(const std::vector<pid_t>& pids) {
  std::map<uint32_t, uint32_t> out;
  for (pid_t p : pids) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(p, sizeof set, &set) == 0) out[static_cast<uint32_t>(p)] = static_cast<uint32_t>(CPU_COUNT(&set));
  }
  return out;
}

// Watches until --duration, a stop signal or the command's end, waiting for raw events up to
// 100 ms at a time; --comm picks up processes started since once a second.
class LivePace final : public Pace {
 public:
  LivePace(double duration_s, LiveSession& session, Run& run)
      : session_(session), run_(run), now_(snapshot::boottime_ns()),
        end_(now_ + static_cast<uint64_t>(duration_s * 1e9)), next_refresh_(now_ + 1'000'000'000ull) {}

  bool over() override {
    now_ = snapshot::boottime_ns();
    if (now_ >= next_refresh_) {
      session_.source().refresh();
      next_refresh_ += 1'000'000'000ull;
    }
    if (const std::string status = session_.command_status(); !status.empty()) {
      run_.warnings.push_back("the command ended (" + status + ") before --duration");
      return true;
    }
    return now_ >= end_ || stop_requested();
  }
  int wait_ms() const override { return static_cast<int>(std::min<uint64_t>((end_ - now_) / 1'000'000 + 1, 100)); }
  bool snapshot_due() const override { return false; }

 private:
  LiveSession& session_;
  Run& run_;
  uint64_t now_, end_, next_refresh_;
};

bool watch_live(const DoctorOptions& opt, Run& run, std::string& error) {
  // Raw events are kept (through the tracker, a few numbers per thread) unless the source is
  // procfs: the platoon effect needs them.
  auto session = LiveSession::open(opt.live, {.record_events = true, .drain_events = true}, error);
  if (!session) return false;
  if (!session->note().empty()) run.warnings.push_back(session->note());
  analysis::RecordingWindow recording;
  take_baseline(session->source(), run, recording);  // before the command runs: see record.cpp
  if (!session->release(error)) return false;
  LivePace pace(opt.duration_s, *session, run);
  feed(session->source(), pace, run, recording);
  if (stop_requested()) run.warnings.push_back("interrupted: diagnosing what was watched so far");
  session->end_command();  // ours: it ends with us
  run.has_batches = session->source().source() == snapshot::Source::bpf;
  doc::DoctorInput& in = run.input;
  in.label = opt.live.target.describe();
  in.ncpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN));
  in.allowed_cpus = affinity_of(session->pids());
  in.runtime = runtime_of(session->pids());
  if (!run.has_batches) in.no_events_reason = "the procfs source has no raw events";
  if (run.window.wall_s <= 0) {
    error = "watched for no time at all";
    return false;
  }
  return true;
}

int fail(const std::string& msg) { return command_failure("doctor", msg); }

}  // namespace

doc::Diagnosis diagnose(DoctorRun& run) {
  run.input.window = &run.window;
  run.input.batches = run.has_batches ? &run.batches : nullptr;
  return doc::diagnose(run.input);
}

int run_doctor(const DoctorOptions& opt) {
  std::string error;
  // Runs are large-ish (a tracker with a reorder heap): keep them off the stack.
  auto a = std::make_unique<Run>();
  if (!(opt.file.empty() ? watch_live(opt, *a, error) : load_doctor_file(opt.file, *a, error))) return fail(error);
  std::unique_ptr<Run> b;
  if (!opt.vs.empty()) {
    b = std::make_unique<Run>();
    if (!load_doctor_file(opt.vs, *b, error)) return fail(error);
  }
  for (const Run* r : {a.get(), b.get()})
    if (r)
      for (const auto& w : r->warnings) std::fprintf(stderr, "platoon doctor: %s\n", w.c_str());

  const doc::Diagnosis da = diagnose(*a);
  std::string out;
  if (b) {
    const doc::Diagnosis db = diagnose(*b);
    out = opt.format == "json" ? outputs::doctor::compare_json(da, db) : outputs::doctor::compare_text(da, db);
  } else {
    out = opt.format == "json" ? outputs::doctor::json(da) : outputs::doctor::text(da);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : kExitFailure;
}

CommandRun add_doctor(CLI::App& sub) {
  auto f = std::make_shared<CommandFlags<DoctorOptions>>();
  f->duration = "5";
  sub.add_option("file", f->opt.file, "trace file written by platoon record (or use --pid/--comm/-- CMD)");
  f->live.add_target(sub);
  sub.add_option("-d,--duration", f->duration, "live: how long to watch")->capture_default_str();
  sub.add_option("--vs", f->opt.vs, "a second trace: say which run is healthier and why");
  sub.add_option("-f,--format", f->opt.format, "text or json")->capture_default_str();
  f->live.add_procfs(sub, f->opt.live, "live: sample /proc instead of loading BPF (fewer findings)");
  f->live.add_no_usdt(sub, "live: do not attach the runtime's USDT probes");
  f->live.add_requests(sub);
  sub.footer("Examples:\n  platoon doctor run.trace\n  platoon doctor unpinned.trace --vs pinned.trace\n"
             "  platoon doctor --pid 1234 --duration 10 --format json");
  return [f](const std::vector<std::string>& command) {
    DoctorOptions& opt = f->opt;
    std::string error;
    if (!opt.file.empty()) {
      if (f->live.names_target(command))
        return usage_error("doctor", "give a trace file or --pid/--comm/-- CMD, not both");
    } else {
      if (!opt.vs.empty()) return usage_error("doctor", "--vs compares two trace files");
      if (!f->live.resolve(command, opt.live, error))
        return usage_error("doctor", "give a trace file or a live target: " + error);
      opt.live.bpf_stats = collectors::BpfStatsMode::off;  // doctor says nothing of platoon's own cost
    }
    if (!parse_seconds(f->duration, opt.duration_s) || opt.duration_s <= 0 || opt.duration_s > 86400)
      return usage_error("doctor", "bad --duration '" + f->duration + "'");
    if (opt.format != "text" && opt.format != "json")
      return usage_error("doctor", "--format must be text or json, not '" + opt.format + "'");
    return run_doctor(opt);
  };
}

}  // namespace platoon::cli
