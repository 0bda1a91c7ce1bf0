// platoon doctor: findings from a trace file (streamed: each thread's last sample and the batch
// statistics, never the whole recording in memory), from two with --vs, or from a live target
// watched for --duration with raw events kept so that the platoon effect can be measured too.
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "tui/commands/commands.hpp"
#include "bpf/snapshot/clock.hpp"
#include "tui/commands/live_source.hpp"
#include "tui/analysis/doctor.hpp"
#include "tui/trace/trace_reader.hpp"

namespace platoon::cli {
namespace {

namespace doc = model::doctor;

volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

// Everything one diagnosis needs; the tracker and the window outlive the DoctorInput that
// points at them.
struct Run {
  model::Window window;
  doc::BatchTracker batches;
  bool has_batches = false;
  doc::DoctorInput input;
  std::vector<std::string> warnings;  // printed to stderr (text) before the findings
};

bool load_file(const std::string& path, Run& run, std::string& error) {
  model::RecordingWindow recording;
  model::ReadOptions ro;
  ro.on_event = [&run](const platoon_event_header& h, const void* rec, size_t size) { run.batches.add(h, rec, size); };
  ro.on_snapshot = [&recording](model::Snapshot&& s) { recording.add(std::move(s)); };
  auto c = model::read_trace(path, &error, ro);
  if (!c) return false;
  if (recording.snapshots() < 2) {
    error = path + (recording.snapshots() == 0 ? ": the recording holds no snapshot"
                                               : ": the recording holds one snapshot: no interval to diagnose");
    return false;
  }
  run.batches.finish();
  run.window = recording.window();
  run.has_batches = c->event_count > 0;
  doc::DoctorInput& in = run.input;
  in.label = path;
  in.ncpus = c->meta.ncpus;
  in.truncated = c->truncated;
  in.truncated_reason = c->truncated ? "at byte " + std::to_string(c->truncated_at) + ": " + c->truncated_reason : "";
  in.complete = c->complete;
  in.snapshots = recording.snapshots();
  if (!run.has_batches)
    in.no_events_reason = run.window.source == model::Source::procfs
                              ? "a procfs recording has no raw events"
                              : "the recording has no raw events (recorded with --no-events, or by top's r key)";
  if (c->truncated)
    run.warnings.push_back(path + " is truncated (" + in.truncated_reason + "): diagnosing its " +
                           std::to_string(recording.snapshots()) + " complete snapshots");
  for (const std::string& note : {c->cap_note(), recording.cap_note()})
    if (!note.empty()) run.warnings.push_back(path + ": " + note);
  return true;
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

bool watch_live(const DoctorOptions& opt, Run& run, std::string& error) {
  LiveTarget target;
  if (!start_live_target(opt.live.target, {opt.live.kill_after_s, opt.live.keep_running}, target, error)) return false;
  std::string note;
  // Raw events are kept (through the tracker, a few numbers per thread) unless the source is
  // procfs: the platoon effect needs them.
  auto source = LiveSource::open(opt.live, target.pids, /*record_events=*/true, error, note);
  if (!source) return false;
  if (!note.empty()) run.warnings.push_back(note);

  struct sigaction sa{};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);

  model::Snapshot first = source->snapshot();  // before the command runs: see record.cpp
  if (target.child && !target.child->release(error)) return false;
  auto sink = [&run](const void* rec, size_t size) {
    if (auto h = model::event_as<platoon_event_header>(rec, size)) run.batches.add(*h, rec, size);
  };
  const uint64_t t0 = model::boottime_ns();
  const uint64_t end = t0 + static_cast<uint64_t>(opt.duration_s * 1e9);
  uint64_t next_refresh = t0 + 1'000'000'000ull;
  std::string status;
  while (!g_stop) {
    const uint64_t now = model::boottime_ns();
    if (now >= end) break;
    source->poll_events(static_cast<int>(std::min<uint64_t>((end - now) / 1'000'000 + 1, 100)), sink);
    if (model::boottime_ns() >= next_refresh) {
      source->refresh();  // --comm: processes started since
      next_refresh += 1'000'000'000ull;
    }
    if (target.child && target.child->poll_exit(status)) {
      run.warnings.push_back("the command ended (" + status + ") before --duration");
      break;
    }
  }
  if (g_stop) run.warnings.push_back("interrupted: diagnosing what was watched so far");
  source->poll_events(0, sink);
  model::Snapshot last = source->snapshot();
  if (target.child && !target.child->poll_exit(status)) target.child->end_command();  // ours: it ends with us
  run.batches.finish();
  run.window = model::make_window(first, last);
  run.has_batches = source->source() == model::Source::bpf;
  doc::DoctorInput& in = run.input;
  in.label = opt.live.target.describe();
  in.ncpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN));
  in.allowed_cpus = affinity_of(target.pids);
  in.snapshots = 2;
  if (!run.has_batches) in.no_events_reason = "the procfs source has no raw events";
  if (run.window.wall_s <= 0) {
    error = "watched for no time at all";
    return false;
  }
  return true;
}

doc::Diagnosis diagnose(Run& run) {
  run.input.window = &run.window;
  run.input.batches = run.has_batches ? &run.batches : nullptr;
  return doc::diagnose(run.input);
}

int fail(const std::string& msg) {
  std::fprintf(stderr, "platoon doctor: %s\n", msg.c_str());
  return kExitFailure;
}

}  // namespace

int run_doctor(const DoctorOptions& opt) {
  std::string error;
  // Runs are large-ish (a tracker with a reorder heap): keep them off the stack.
  auto a = std::make_unique<Run>();
  if (!(opt.file.empty() ? watch_live(opt, *a, error) : load_file(opt.file, *a, error))) return fail(error);
  std::unique_ptr<Run> b;
  if (!opt.vs.empty()) {
    b = std::make_unique<Run>();
    if (!load_file(opt.vs, *b, error)) return fail(error);
  }
  for (const Run* r : {a.get(), b.get()})
    if (r)
      for (const auto& w : r->warnings) std::fprintf(stderr, "platoon doctor: %s\n", w.c_str());

  const doc::Diagnosis da = diagnose(*a);
  std::string out;
  if (b) {
    const doc::Diagnosis db = diagnose(*b);
    out = opt.format == "json" ? doc::compare_json(da, db) : doc::compare_text(da, db);
  } else {
    out = opt.format == "json" ? doc::json(da) : doc::text(da);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : kExitFailure;
}

}  // namespace platoon::cli
