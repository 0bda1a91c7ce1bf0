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
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <map>
#include <memory>

#include <CLI/CLI.hpp>

#include "tui/commands/commands.hpp"
#include "tui/commands/live_flags.hpp"
#include "tui/commands/privileges.hpp"
#include "tui/web/listener.hpp"
#include "tui/web/web_config.hpp"
#include "tui/commands/live_session.hpp"
#include "tui/analysis/observer_cost.hpp"
#include "tui/outputs/html/page.hpp"
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

constexpr const char* kIndexPage =
    "<html><head><title>platoon exporter</title></head><body>\n"
    "<h1>platoon exporter</h1>\n"
    "<p>Per-thread scheduling metrics of %s (source %s): <a href=\"/metrics\">/metrics</a></p>\n"
    "</body></html>\n";

class Exporter {
 public:
  Exporter(const ExporterOptions& opt, std::unique_ptr<LiveSession> session)
      : opt_(opt), session_(std::move(session)), source_(session_->source()), model_(opt.max_threads),
        notes_said_(source_.notes().size()) {}

  web::HttpResponse handle(std::string_view path) {
    if (path == "/metrics") {
      const uint64_t now = monotonic_ns();
      if (cached_.empty() || now - taken_ns_ >= kReuseSnapshotNs) {
        take_snapshot();
        outputs::PromScrapeInfo info;
        info.attach_mode = source_.attach_mode();
        info.snapshot_seconds = snapshot_seconds_;
        info.snapshots = snapshots_;
        info.bpf_cost = source_.cost();
        info.self_cpu_seconds = static_cast<double>(analysis::self_cpu_ns()) / 1e9;
        cached_ = model_.render(info);
      }
      return web::HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", cached_};
    }
    if (path == "/") {
      char page[1024];
      std::snprintf(page, sizeof page, kIndexPage, outputs::html::escape_text(opt_.live.target.describe()).c_str(),
                    snapshot::to_string(source_.source()));
      return web::HttpResponse{200, "text/html; charset=utf-8", page};
    }
    return web::HttpResponse{404, "text/plain; charset=utf-8", "not found: try /metrics\n"};
  }

  // Once a second; false ends the exporter (the launched command ended).
  bool tick() {
    source_.refresh();
    if (const std::string status = session_->command_status(); !status.empty()) {
      ended_ = "command " + status;
      return false;
    }
    for (pid_t p : session_->newly_gone())
      std::fprintf(stderr, "platoon exporter: target %d exited; still serving (its thread series are gone)\n", p);
    // What the source learnt since (a --comm process found, probes it could not attach).
    const std::vector<std::string> notes = source_.notes();
    for (size_t i = notes_said_; i < notes.size(); ++i) std::fprintf(stderr, "platoon exporter: %s\n", notes[i].c_str());
    notes_said_ = std::max(notes_said_, notes.size());
    if (monotonic_ns() - taken_ns_ >= kHousekeepingNs) {
      take_snapshot();
      cached_.clear();  // the model moved on: the next scrape renders afresh
    }
    return true;
  }

  int finish(int signal_number) {
    if (!ended_.empty()) std::fprintf(stderr, "platoon exporter: %s\n", ended_.c_str());
    else if (signal_number) std::fprintf(stderr, "platoon exporter: stopped (%s)\n", strsignal(signal_number));
    session_->end_command();  // we started it: it ends with us
    return 0;
  }

 private:
  void take_snapshot() {
    const uint64_t t0 = monotonic_ns();
    snapshot::Snapshot snap = source_.snapshot();
    std::map<uint32_t, std::string> names;
    for (const auto& t : snap.threads)
      if (!names.count(t.pid)) names[t.pid] = read_comm(t.pid);  // empty once gone: the model keeps the old name
    model_.observe(std::move(snap), names);
    taken_ns_ = monotonic_ns();
    snapshot_seconds_ = static_cast<double>(taken_ns_ - t0) / 1e9;
    ++snapshots_;
  }

  const ExporterOptions& opt_;
  std::unique_ptr<LiveSession> session_;
  snapshot::SnapshotSource& source_;
  outputs::PromExposition model_;
  std::string cached_;
  uint64_t taken_ns_ = 0;
  double snapshot_seconds_ = 0;
  uint64_t snapshots_ = 0;
  std::string ended_;
  size_t notes_said_;
};

}  // namespace

namespace {

// The web configuration as the listener takes it: TLS and basic auth set up (certificates and
// keys read now, while still root), or a one-line error.
bool security_from(const std::string& file, web::ListenerSecurity& out, std::string& error) {
  if (file.empty()) return true;
  auto config = web::load_web_config(file, error);
  if (!config) return false;
  if (config->tls) {
    std::string warning;
    out.tls = web::TlsContext::create(*config->tls, error, warning);
    if (!out.tls) {
      error = file + ": " + error;
      return false;
    }
    if (!warning.empty()) std::fprintf(stderr, "platoon exporter: warning: %s\n", warning.c_str());
  }
  if (!config->users.empty()) out.auth = std::make_unique<web::BasicAuth>(config->users);
  out.headers = config->headers;
  return true;
}

bool loopback(const std::string& bound) { return bound.rfind("127.", 0) == 0 || bound.rfind("[::1]", 0) == 0; }

}  // namespace

int run_exporter(const ExporterOptions& given) {
  ExporterOptions opt = given;
  std::string error;
  web::ListenerSecurity security;
  if (!security_from(opt.web_config, security, error)) return usage_error("exporter", error);
  const bool tls = security.tls != nullptr, auth = security.auth != nullptr;
  // Only root can turn the kernel's BPF run-time stats on and off: an exporter that drops root
  // holds them on for its whole life instead (one descriptor, taken before the drop).
  // A command the exporter launched is root's: once unprivileged it could no longer stop it, so
  // it stays root then, and says so.
  const bool launches = !opt.live.target.command.empty();
  const bool drop = geteuid() == 0 && opt.user != "root" && !launches;
  if (geteuid() == 0 && opt.user != "root" && launches)
    std::fprintf(stderr, "platoon exporter: warning: staying root: it launched the command and must be able to stop it "
                 "(start it yourself and attach with --pid or --comm to run as %s)\n", opt.user.c_str());
  if (drop) {  // a bad --user is a usage error now, not after BPF is loaded
    uid_t uid = 0;
    gid_t gid = 0;
    if (!find_user(opt.user, uid, gid, error)) return usage_error("exporter", error);
  }
  if (drop && opt.live.bpf_stats == collectors::BpfStatsMode::sampled) opt.live.bpf_stats = collectors::BpfStatsMode::always;
  // The address first: a typo or a taken port fails before BPF is loaded or a command started.
  bool bad_address = false;
  auto listener = web::HttpListener::open(opt.listen, error, bad_address, std::move(security));
  if (!listener) return bad_address ? usage_error("exporter", error) : command_failure("exporter", error);
  if (!loopback(listener->bound_address()) && !tls && !auth)
    std::fprintf(stderr, "platoon exporter: warning: listening on %s without --web.config.file: anyone who can reach it "
                 "reads every thread name, process id and cgroup path it exports, in plain HTTP\n",
                 listener->bound_address().c_str());

  // Without raw events: the exporter reads the in-kernel aggregates at scrape time only. The
  // listener's event loop takes the stop signals.
  auto session = LiveSession::open(opt.live, {.record_events = false, .stop_signals = false}, error);
  if (!session) return command_failure("exporter", error);
  if (!session->note().empty()) std::fprintf(stderr, "platoon exporter: %s\n", session->note().c_str());
  if (!session->release(error)) return command_failure("exporter", error);
  if (drop && !(limit_future_privileges(error) && drop_privileges(opt.user, error)))
    return command_failure("exporter", error);
  // Not root but given capabilities (a service manager's ambient set): none are needed any more.
  if (geteuid() != 0 && !clear_capabilities(error)) return command_failure("exporter", error);
  if (opt.user == "root" && geteuid() == 0)
    std::fprintf(stderr, "platoon exporter: warning: --user root: staying root for the exporter's whole life\n");

  std::fprintf(stderr, "platoon exporter: %s, source %s, listening on %s (GET /metrics%s%s), %s\n",
               opt.live.target.describe().c_str(), session->source_line().c_str(), listener->bound_address().c_str(),
               tls ? ", TLS" : "", auth ? ", basic auth" : "", privilege_line().c_str());

  Exporter exporter(opt, std::move(session));
  const int sig = listener->run([&](std::string_view path) { return exporter.handle(path); }, kTickMs,
                                [&] { return exporter.tick(); });
  return exporter.finish(sig);
}

CommandRun add_exporter(CLI::App& sub) {
  auto f = std::make_shared<CommandFlags<ExporterOptions>>();
  f->live.add_target(sub);
  sub.add_option("-l,--listen", f->opt.listen, "HOST:PORT or :PORT to listen on")->capture_default_str();
  sub.add_option("--max-threads", f->opt.max_threads, "export at most this many threads (busiest first)")
      ->capture_default_str();
  f->live.add_procfs(sub, f->opt.live, "sample /proc instead of loading BPF (fewer metrics)");
  f->live.add_no_usdt(sub, "do not attach the runtime's USDT probes");
  f->live.add_no_io(sub);
  f->live.add_requests(sub);
  f->live.add_bpf_stats(sub);
  sub.add_option("--web.config.file", f->opt.web_config,
                 "exporter-toolkit web configuration: TLS, client certificates, basic auth users (bcrypt), headers");
  sub.add_option("--user", f->opt.user, "started as root: become this user once set up (root: stay root)")
      ->capture_default_str();
  sub.footer("Examples:\n  platoon exporter --comm platoon-server --listen :9464 --web.config.file web.yml\n"
             "  platoon exporter --pid 1234 --listen 127.0.0.1:9464");
  return [f](const std::vector<std::string>& command) {
    std::string error;
    if (!f->live.resolve(command, f->opt.live, error)) return usage_error("exporter", error);
    if (f->opt.max_threads < 1 || f->opt.max_threads > 100000)
      return usage_error("exporter", "--max-threads must be 1..100000");
    return run_exporter(f->opt);
  };
}

}  // namespace platoon::cli
