// platoon exporter: serves the per-thread scheduling metrics of a live target in Prometheus's
// text format. A snapshot is taken when a scrape arrives (one under 100 ms old is reused, so a
// burst of scrapes costs one walk of the maps); between scrapes the exporter only wakes once a
// second, to pick up new --comm processes, to notice its targets ending, and, when nobody has
// scraped for 5 s, to take a housekeeping snapshot so that exited threads are folded and their
// in-kernel entries freed (the collector deletes an exited thread's entry once reported).
//
// Targets ending: with -- CMD the exporter exits when the command does. With --pid it says so
// once on stderr and keeps serving: the target's thread series are gone (folded into the exited
// counters, then dropped with the process), platoon_exporter_processes reads 0, and Prometheus
// keeps seeing a healthy exporter rather than a scrape error. With --comm new matches appear.
#include <signal.h>
#include <time.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "tui/commands/commands.hpp"
#include "tui/commands/http_listener.hpp"
#include "tui/commands/live_source.hpp"
#include "tui/outputs/prom_metrics.hpp"

namespace platoon::cli {
namespace {

constexpr uint64_t kReuseSnapshotNs = 100'000'000;     // scrapes closer than this share a snapshot
constexpr uint64_t kHousekeepingNs = 5'000'000'000;    // snapshot anyway when unscraped this long
constexpr int kTickMs = 1000;

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::string read_comm(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// The target description holds what the user typed (a comm, a command line): escaped, so the
// page shows it rather than interprets it.
std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

constexpr const char* kIndexPage =
    "<html><head><title>platoon exporter</title></head><body>\n"
    "<h1>platoon exporter</h1>\n"
    "<p>Per-thread scheduling metrics of %s (source %s): <a href=\"/metrics\">/metrics</a></p>\n"
    "</body></html>\n";

class Exporter {
 public:
  Exporter(const ExporterOptions& opt, std::unique_ptr<LiveSource> source, std::vector<pid_t> pids,
           std::optional<LaunchedCommand> child)
      : opt_(opt), source_(std::move(source)), pids_(std::move(pids)), child_(std::move(child)),
        model_(opt.max_threads) {}

  HttpResponse handle(std::string_view path) {
    if (path == "/metrics") {
      const uint64_t now = monotonic_ns();
      if (cached_.empty() || now - taken_ns_ >= kReuseSnapshotNs) {
        take_snapshot();
        model::PromScrapeInfo info;
        info.attach_mode = source_->attach_mode();
        info.snapshot_seconds = snapshot_seconds_;
        info.snapshots = snapshots_;
        cached_ = model_.render(info);
      }
      return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", cached_};
    }
    if (path == "/") {
      char page[1024];
      std::snprintf(page, sizeof page, kIndexPage, html_escape(opt_.live.target.describe()).c_str(),
                    model::to_string(source_->source()));
      return HttpResponse{200, "text/html; charset=utf-8", page};
    }
    return HttpResponse{404, "text/plain; charset=utf-8", "not found: try /metrics\n"};
  }

  // Once a second; false ends the exporter (the launched command ended).
  bool tick() {
    source_->refresh();
    std::string status;
    if (child_ && child_->poll_exit(status)) {
      ended_ = "command " + status;
      return false;
    }
    for (pid_t p : pids_) {
      if (gone_.count(p) || (child_ && p == child_->pid()) || process_alive(p)) continue;
      gone_.insert(p);
      std::fprintf(stderr, "platoon exporter: target %d exited; still serving (its thread series are gone)\n", p);
    }
    if (monotonic_ns() - taken_ns_ >= kHousekeepingNs) {
      take_snapshot();
      cached_.clear();  // the model moved on: the next scrape renders afresh
    }
    return true;
  }

  int finish(int signal_number) {
    if (!ended_.empty()) std::fprintf(stderr, "platoon exporter: %s\n", ended_.c_str());
    else if (signal_number) std::fprintf(stderr, "platoon exporter: stopped (%s)\n", strsignal(signal_number));
    std::string status;
    if (child_ && !child_->poll_exit(status)) kill(child_->pid(), SIGTERM);  // we started it: it ends with us
    return 0;
  }

 private:
  void take_snapshot() {
    const uint64_t t0 = monotonic_ns();
    model::Snapshot snap = source_->snapshot();
    std::map<uint32_t, std::string> names;
    for (const auto& t : snap.threads)
      if (!names.count(t.pid)) names[t.pid] = read_comm(t.pid);  // empty once gone: the model keeps the old name
    model_.observe(std::move(snap), names);
    taken_ns_ = monotonic_ns();
    snapshot_seconds_ = static_cast<double>(taken_ns_ - t0) / 1e9;
    ++snapshots_;
  }

  const ExporterOptions& opt_;
  std::unique_ptr<LiveSource> source_;
  std::vector<pid_t> pids_;
  std::optional<LaunchedCommand> child_;
  model::PromExposition model_;
  std::string cached_;
  uint64_t taken_ns_ = 0;
  double snapshot_seconds_ = 0;
  uint64_t snapshots_ = 0;
  std::set<pid_t> gone_;
  std::string ended_;
};

}  // namespace

int run_exporter(const ExporterOptions& opt) {
  auto fail = [](int code, const std::string& msg) {
    std::fprintf(stderr, "platoon exporter: %s\n", msg.c_str());
    return code;
  };
  std::string error, note;
  // The address first: a typo or a taken port fails before BPF is loaded or a command started.
  bool bad_address = false;
  auto listener = HttpListener::open(opt.listen, error, bad_address);
  if (!listener) return fail(bad_address ? kExitUsage : kExitFailure, error);

  LiveTarget target;
  if (!start_live_target(opt.live.target, {opt.live.kill_after_s, opt.live.keep_running}, target, error)) return fail(kExitFailure, error);
  // Without raw events: the exporter reads the in-kernel aggregates at scrape time only.
  auto source = LiveSource::open(opt.live, target.pids, /*record_events=*/false, error, note);
  if (!source) return fail(kExitFailure, error);
  if (!note.empty()) std::fprintf(stderr, "platoon exporter: %s\n", note.c_str());
  if (target.child && !target.child->release(error)) return fail(kExitFailure, error);

  const std::string src = model::to_string(source->source());
  const std::string mode = source->attach_mode() == src ? src : src + " (" + source->attach_mode() + ")";
  std::fprintf(stderr, "platoon exporter: %s, source %s, listening on %s (GET /metrics)\n",
               opt.live.target.describe().c_str(), mode.c_str(), listener->bound_address().c_str());

  Exporter exporter(opt, std::move(source), std::move(target.pids), std::move(target.child));
  const int sig = listener->run([&](std::string_view path) { return exporter.handle(path); }, kTickMs,
                                [&] { return exporter.tick(); });
  return exporter.finish(sig);
}

}  // namespace platoon::cli
