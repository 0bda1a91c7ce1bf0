// platoon record: snapshots every interval and raw events as they come, appended to a trace
// file chunk by chunk so a crash loses at most the chunk being written; Ctrl-C ends cleanly.
#include <signal.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <optional>
#include <set>
#include <vector>

#include "tui/commands/commands.hpp"
#include "bpf/snapshot/clock.hpp"
#include "tui/commands/live_source.hpp"
#include "tui/trace/trace_writer.hpp"
#include "tui/version.hpp"

namespace platoon::cli {
namespace {

volatile sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }

// Raw records are batched into chunks of about this size (or every poll round, ≤ 100 ms).
constexpr size_t kEventChunkBytes = 64 * 1024;

class EventBatch {
 public:
  explicit EventBatch(model::TraceWriter& writer) : writer_(writer) { bytes_.reserve(kEventChunkBytes * 2); }
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
  model::TraceWriter& writer_;
  std::vector<uint8_t> bytes_;
  uint64_t count_ = 0;
  uint64_t total_ = 0;
};

std::string fmt_seconds(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ns) / 1e9);
  return buf;
}

}  // namespace

int run_record(const RecordOptions& opt) {
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr, "platoon record: %s\n", msg.c_str());
    return kExitFailure;
  };
  std::string error, note;

  // The output is checked and created first: a bad -o fails before anything is attached or run.
  auto output = model::OutputFile::create(opt.output, model::OutputFile::Existing::replace, &error);
  if (!output) return fail(error);

  LiveTarget target;
  if (!start_live_target(opt.live.target, {opt.live.kill_after_s, opt.live.keep_running}, target, error)) return fail(error);
  auto& child = target.child;
  const std::vector<pid_t>& pids = target.pids;

  auto source = LiveSource::open(opt.live, pids, opt.events, error, note);
  if (!source) return fail(error);
  if (!note.empty()) std::fprintf(stderr, "platoon record: %s\n", note.c_str());

  model::TraceMeta meta;
  meta.tool_version = kVersion;
  meta.source = source->source();
  meta.attach_mode = source->attach_mode();
  meta.interval_ns = static_cast<uint64_t>(opt.interval_s * 1e9);
  meta.start_boottime_ns = model::clock_ns(CLOCK_BOOTTIME);
  meta.start_realtime_ns = model::clock_ns(CLOCK_REALTIME);
  meta.ncpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  meta.hostname = host;
  utsname uts{};
  if (uname(&uts) == 0) meta.kernel = uts.release;
  meta.target = opt.live.target.describe();
  for (pid_t p : pids) meta.pids.push_back(static_cast<uint32_t>(p));
  meta.comm = opt.live.target.comm;
  meta.command = opt.live.target.command;

  auto writer = model::TraceWriter::create(std::move(*output), meta, {}, &error);
  if (!writer) return fail(error);
  if (writer->replaced_earlier_file())
    std::fprintf(stderr, "platoon record: replaced the earlier %s\n", opt.output.c_str());
  for (const auto& n : source->notes()) writer->write_note(model::clock_ns(CLOCK_BOOTTIME), n);
  if (!note.empty()) writer->write_note(model::clock_ns(CLOCK_BOOTTIME), note);

  struct sigaction sa{};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGXFSZ, SIG_IGN);  // a file size limit is a write error (EFBIG) to report, not a death

  // The first snapshot is the baseline every window of the recording starts from. It is taken
  // before a -- CMD is let go, so that the windows hold everything the command does (on a busy
  // machine the command can run for a while before a later baseline).
  if (!writer->write_snapshot(source->snapshot())) return fail(writer->error());
  if (child && !child->release(error)) {
    writer->finish("command failed to start");
    return fail(error);
  }

  EventBatch batch(*writer);
  const uint64_t t0 = model::clock_ns(CLOCK_BOOTTIME);
  const uint64_t interval_ns = meta.interval_ns;
  const uint64_t end_ns = opt.duration_s > 0 ? t0 + static_cast<uint64_t>(opt.duration_s * 1e9) : UINT64_MAX;
  std::set<pid_t> gone;
  std::string stop_reason;
  bool write_failed = false;
  uint64_t next_ns = t0 + interval_ns;
  size_t threads_seen = 0;
  model::Snapshot last;

  if (!opt.quiet)
    std::fprintf(stderr, "platoon record: recording %s (source %s, %s) to %s; Ctrl-C to stop\n",
                 meta.target.c_str(), model::to_string(meta.source), meta.attach_mode.c_str(),
                 opt.output.c_str());

  auto sink = [&](const void* rec, size_t size) {
    batch.add(rec, size);
    if (batch.full() && !batch.flush()) write_failed = true;
  };

  while (stop_reason.empty()) {
    const uint64_t now = model::clock_ns(CLOCK_BOOTTIME);
    const uint64_t until = std::min(next_ns, end_ns);
    if (now < until) {
      const int timeout_ms = static_cast<int>(std::min<uint64_t>((until - now) / 1'000'000 + 1, 100));
      source->poll_events(timeout_ms, sink);
      if (!batch.flush()) write_failed = true;
    }
    if (write_failed) break;
    if (g_stop_signal) {
      stop_reason = "interrupted";
      break;
    }
    const uint64_t t = model::clock_ns(CLOCK_BOOTTIME);
    if (t >= next_ns || t >= end_ns) {
      source->refresh();
      last = source->snapshot();
      threads_seen = std::max(threads_seen, last.threads.size());
      if (!writer->write_snapshot(last)) { write_failed = true; break; }
      next_ns += interval_ns * ((t - next_ns) / interval_ns + 1);
      // Targets that went away: say so once, keep recording (--comm may match new ones).
      for (pid_t p : pids) {
        if (gone.count(p) || process_alive(p)) continue;
        if (child && p == child->pid()) continue;
        gone.insert(p);
        const std::string msg = "target " + std::to_string(p) + " exited at +" + fmt_seconds(t - t0) +
                                (opt.live.target.comm.empty() ? "; still recording (Ctrl-C to stop)" : "");
        writer->write_note(t, msg);
        std::fprintf(stderr, "platoon record: %s\n", msg.c_str());
      }
      std::string status;
      if (child && child->poll_exit(status)) stop_reason = "command " + status;
      if (t >= end_ns) stop_reason = "duration reached";
    }
  }
  if (write_failed) {
    std::fprintf(stderr, "platoon record: writing %s failed: %s; the file holds what was written before\n",
                 opt.output.c_str(), writer->error().c_str());
    return kExitFailure;
  }
  // Drain what the ring buffer still holds, then the closing snapshot.
  source->poll_events(0, sink);
  batch.flush();
  last = source->snapshot();
  threads_seen = std::max(threads_seen, last.threads.size());
  writer->write_snapshot(last);
  for (const auto& n : source->cost_notes()) writer->write_note(model::clock_ns(CLOCK_BOOTTIME), n);
  if (!writer->finish(stop_reason)) return fail(writer->error());

  const uint64_t dur = model::clock_ns(CLOCK_BOOTTIME) - t0;
  if (!opt.quiet)
    std::fprintf(stderr,
                 "platoon record: %s after %s: %zu threads, %" PRIu64 " events, %" PRIu64
                 " lost, %" PRIu64 " bytes in %s\n",
                 stop_reason.c_str(), fmt_seconds(dur).c_str(), threads_seen, batch.total(),
                 last.lost_events(), writer->bytes_written(), opt.output.c_str());
  if (last.lost_events() > 0)
    std::fprintf(stderr, "platoon record: %" PRIu64 " events were lost (ring buffer full): try --ringbuf-mb\n",
                 last.lost_events());
  return 0;
}

}  // namespace platoon::cli
