#include "tui/commands/live_session.hpp"
#include "bpf/collectors/runtime_detect.hpp"

#include <signal.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bpf/collectors/sources.hpp"
#include "bpf/snapshot/clock.hpp"
#include "tui/commands/version.hpp"

namespace platoon::cli {

namespace {
volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

collectors::SourceOptions source_options(const LiveOptions& opt, const std::vector<pid_t>& pids,
                                  const LiveSession::Setup& setup) {
  collectors::SourceOptions so;
  so.pids = pids;
  so.comm = opt.target.comm;
  so.all = opt.target.all;
  so.cgroup_dir = opt.target.cgroup_dir;
  so.follow_forks = opt.follows_forks();
  so.procfs = opt.procfs;
  so.record_events = setup.record_events;
  so.drain_events = setup.drain_events;
  so.bpf_stats = opt.bpf_stats;
  so.ringbuf_bytes = opt.ringbuf_mb << 20;
  so.force_raw_tp = opt.raw_tp;
  so.verbose = opt.verbose;
  so.attach_usdt = opt.usdt;
  so.fields = opt.fields;
  so.requests = (opt.fields & snapshot::kFieldRequests) != 0;
  // 0: the collector's defaults (bpf/collectors/collector.hpp).
  if (opt.threads_max) so.threads_max = opt.threads_max;
  if (opt.pairs_max) so.pairs_max = opt.pairs_max;
  if (opt.pair_idle_s > 0) so.pair_idle_s = opt.pair_idle_s;
  return so;
}
}  // namespace

void install_stop_signals() {
  struct sigaction sa{};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

bool stop_requested() { return g_stop != 0; }

std::unique_ptr<LiveSession> LiveSession::open(const LiveOptions& opt, Setup setup, std::string& error) {
  std::unique_ptr<LiveSession> s(new LiveSession(opt));
  LiveTarget target;
  if (!start_live_target(opt.target, {opt.kill_after_s, opt.keep_running}, target, error)) return nullptr;
  if (target.child) s->child_.emplace(std::move(*target.child));
  s->pids_ = std::move(target.pids);
  s->source_ = collectors::open_source(source_options(opt, s->pids_, setup), error, s->note_);
  if (!s->source_) return nullptr;   // the held command is ended unrun (LaunchedCommand)
  if (setup.stop_signals) install_stop_signals();
  return s;
}

LiveSession::~LiveSession() { end_command(); }

trace::TraceMeta LiveSession::trace_meta(double interval_s) const {
  trace::TraceMeta meta;
  meta.tool_version = kVersion;
  meta.source = source().source();
  meta.attach_mode = source().attach_mode();
  meta.interval_ns = static_cast<uint64_t>(interval_s * 1e9);
  meta.start_boottime_ns = snapshot::clock_ns(CLOCK_BOOTTIME);
  meta.start_realtime_ns = snapshot::clock_ns(CLOCK_REALTIME);
  meta.ncpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  meta.hostname = host;
  utsname uts{};
  if (uname(&uts) == 0) meta.kernel = uts.release;
  meta.target = opt_.target.describe();
  for (pid_t p : pids_) meta.pids.push_back(static_cast<uint32_t>(p));
  meta.comm = opt_.target.comm;
  meta.command = opt_.target.command;
  // What the target is, for doctor's remedies on this file: the first pid that is a runtime
  // platoon knows, else "other".
  snapshot::RuntimeKind kind = snapshot::RuntimeKind::other;
  for (pid_t p : pids_)
    if (kind == snapshot::RuntimeKind::other) kind = collectors::detect_runtime(p);
  meta.runtime = snapshot::to_string(kind);
  return meta;
}

std::string LiveSession::source_line() const {
  const std::string s = snapshot::to_string(source_->source());
  return source_->attach_mode() == s ? s : s + " (" + source_->attach_mode() + ")";
}

bool LiveSession::release(std::string& error) { return !child_ || child_->release(error); }

std::string LiveSession::command_status() {
  if (child_ && command_status_.empty()) {
    std::string status;
    if (child_->poll_exit(status)) command_status_ = status.empty() ? "ended" : status;
  }
  return command_status_;
}

std::vector<pid_t> LiveSession::newly_gone() {
  std::vector<pid_t> out;
  if (!opt_.target.cgroup.empty()) return out;   // members come and go: the source follows them
  for (pid_t p : pids_) {
    if (gone_.count(p) || (child_ && p == child_->pid()) || process_alive(p)) continue;
    gone_.insert(p);
    out.push_back(p);
  }
  return out;
}

std::string LiveSession::targets_gone() {
  // A launched command's end is its exit status, never the /proc check below: the command may
  // exit between the two, and "target exited" would lose the status.
  if (child_) {
    const std::string status = command_status();
    return status.empty() ? std::string() : "command " + status;
  }
  if (!opt_.target.comm.empty() || opt_.target.all || !opt_.target.cgroup.empty()) return {};
  for (pid_t p : pids_)
    if (process_alive(p)) return {};
  return pids_.size() == 1 ? "target exited" : "all targets exited";
}

void LiveSession::end_command() {
  command_status();   // reaps it if it has exited, so that ending it is a no-op
  child_.reset();     // ~LaunchedCommand: SIGTERM, grace, SIGKILL; or the --keep-running note
}

}  // namespace platoon::cli
