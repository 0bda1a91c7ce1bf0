// platoon-server: the handoff HTTP server of the experiment, on the carrier runtime.
#include <CLI/CLI.hpp>

#include "server/common/process.hpp"
#include <csignal>
#include <cstdio>
#include <optional>
#include <pthread.h>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

#include "server/handoff/server.hpp"

namespace {
bool split_host_port(const std::string& s, std::string& host, uint16_t& port) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  host = s.substr(0, colon);
  try {
    const int p = std::stoi(s.substr(colon + 1));
    if (p <= 0 || p > 65535) return false;
    port = static_cast<uint16_t>(p);
  } catch (...) {
    return false;
  }
  return !host.empty();
}

// The flags whose spelling differs from the Config field they set (units, names, HOST:PORT).
struct Flags {
  explicit Flags(const platoon::server::Config& cfg)
      : port(cfg.port),
        backend_timeout_ms(static_cast<int>(cfg.backend_timeout.count())),
        idle_timeout_ms(static_cast<int>(cfg.idle_timeout.count())),
        request_timeout_ms(static_cast<int>(cfg.request_timeout.count())) {}
  std::string backend = "127.0.0.1:8081";
  std::string scheduler = "carrier";
  std::string poller = "carrier";
  int port;
  int budget_us = 50;
  int idle_spin_us = 0;
  int backend_timeout_ms;
  int idle_timeout_ms;
  int request_timeout_ms;
  std::optional<int> carrier_nice, poller_nice;
};

void add_options(CLI::App& app, platoon::server::Config& cfg, Flags& f) {
  app.add_option("--host", cfg.host, "address to bind")->capture_default_str();
  app.add_option("--port", f.port, "port to listen on (0: any free port)")->check(CLI::Range(0, 65535))->capture_default_str();
  app.add_option("--backend", f.backend, "backend HOST:PORT (platoon-mock)")->capture_default_str();
  app.add_option("--carriers", cfg.runtime.carriers, "carriers (pool mode: I/O event loops)")->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--scheduler", f.scheduler, "carrier | pool")->check(CLI::IsMember({"carrier", "pool"}))->capture_default_str();
  app.add_option("--workers", cfg.runtime.workers, "pool mode: worker threads (0: as many as carriers)")->check(CLI::Range(0, 1024));
  app.add_flag("--work-stealing", cfg.runtime.work_stealing, "carriers steal runnable fibers from busy siblings");
  app.add_flag("--pin", cfg.runtime.pin, "pin carrier i to the i-th allowed CPU");
  app.add_option("--poller", f.poller, "carrier | master: who watches fibers' sockets")->check(CLI::IsMember({"carrier", "master"}))->capture_default_str();
  app.add_option("--budget-us", f.budget_us, "time budget of a carrier's drain, in microseconds")->check(CLI::Range(1, 1000000))->capture_default_str();
  app.add_option("--idle-spin-us", f.idle_spin_us, "an idle carrier polls this long before sleeping (0: sleep at once)")->check(CLI::Range(0, 1000000))->capture_default_str();
  app.add_flag("--passthrough", cfg.passthrough, "return the backend's body unchanged (no JSON work)");
  app.add_option("--backend-timeout-ms", f.backend_timeout_ms, "backend call timeout (then 504)")->check(CLI::Range(1, 3600000))->capture_default_str();
  app.add_option("--idle-timeout-ms", f.idle_timeout_ms, "close keep-alive connections idle this long")->check(CLI::Range(1, 86400000))->capture_default_str();
  app.add_option("--request-timeout-ms", f.request_timeout_ms, "a started request must arrive within this")->check(CLI::Range(1, 86400000))->capture_default_str();
  app.add_option("--backend-connections", cfg.max_backend_connections, "backend connections per carrier (pool mode: in all)")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--max-connections", cfg.max_connections,
                 "client connections held at once; more are accepted and closed (0: derived from the fd limit and vm.max_map_count)")
      ->check(CLI::Range(0, 100000000))->capture_default_str();
  app.add_option("--max-header-bytes", cfg.max_header_bytes, "larger request heads get 431")->check(CLI::Range(256, 1 << 20))->capture_default_str();
  app.add_option("--carrier-nice", f.carrier_nice, "nice value of carriers and workers")->check(CLI::Range(-20, 19));
  app.add_option("--poller-nice", f.poller_nice, "nice value of the master poller")->check(CLI::Range(-20, 19));
}

// Sets the Config fields the flags spell differently; false (with a message) on a bad --backend.
bool apply(const Flags& f, platoon::server::Config& cfg) {
  using namespace platoon;
  if (!split_host_port(f.backend, cfg.backend_host, cfg.backend_port)) {
    std::fprintf(stderr, "platoon-server: --backend must be HOST:PORT, got '%s'\n", f.backend.c_str());
    return false;
  }
  cfg.port = static_cast<uint16_t>(f.port);
  cfg.runtime.scheduler = *rt::parse_scheduler(f.scheduler);
  cfg.runtime.poller = *rt::parse_poller(f.poller);
  cfg.runtime.budget = std::chrono::microseconds(f.budget_us);
  cfg.runtime.idle_spin = std::chrono::microseconds(f.idle_spin_us);
  cfg.runtime.carrier_nice = f.carrier_nice;
  cfg.runtime.poller_nice = f.poller_nice;
  cfg.backend_timeout = std::chrono::milliseconds(f.backend_timeout_ms);
  cfg.idle_timeout = std::chrono::milliseconds(f.idle_timeout_ms);
  cfg.request_timeout = std::chrono::milliseconds(f.request_timeout_ms);
  return true;
}

// The exit code when the process should end here (--help, a bad flag), else nothing.
std::optional<int> parse(int argc, char** argv, platoon::server::Config& cfg, Flags& f) {
  CLI::App app{"platoon-server: HTTP handoff server on the platoon carrier runtime.\n"
               "GET /fruits calls the backend from a handed-off fiber and answers compact JSON;\n"
               "GET /metrics serves the runtime's per-carrier counters (Prometheus text)."};
  add_options(app, cfg, f);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "platoon-server: %s\n", e.what());
    return 2;
  }
  if (!apply(f, cfg)) return 2;
  return std::nullopt;
}

bool start(platoon::server::Server& srv) {
  std::string error;
  try {
    if (srv.start(error)) return true;
    std::fprintf(stderr, "platoon-server: %s\n", error.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "platoon-server: %s\n", e.what());
  }
  return false;
}

// The startup lines the scripts and tests read (pid, THREAD lines, the port).
void announce(const platoon::server::Config& cfg, const Flags& f, platoon::server::Server& srv) {
  std::printf("platoon-server pid %d scheduler %s poller %s carriers %d workers %d stealing %s pin %s budget %dus%s\n",
              getpid(), f.scheduler.c_str(), f.poller.c_str(), srv.runtime().carrier_count(), srv.runtime().worker_count(),
              cfg.runtime.work_stealing ? "on" : "off", cfg.runtime.pin ? "on" : "off", f.budget_us,
              cfg.passthrough ? " passthrough" : "");
  for (const auto& t : srv.runtime().threads())
    std::printf("THREAD name=%s tid=%d cpu=%d\n", t.name.c_str(), t.tid, t.cpu);
  std::printf("%s\n", srv.connection_limit().describe().c_str());
  std::printf("listening on %s:%u backend %s:%u\n", cfg.host.c_str(), srv.port(), cfg.backend_host.c_str(),
              cfg.backend_port);
  std::fflush(stdout);
}

// Runs until SIGINT or SIGTERM, then stops the server.
int serve(platoon::server::Server& srv, const sigset_t& stop_signals) {
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::printf("platoon-server: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);
  srv.stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace platoon;
  server::Config cfg;
  Flags flags(cfg);
  if (const std::optional<int> exit_code = parse(argc, argv, cfg, flags)) return *exit_code;
  process::raise_fd_limit();

  // Signals go to this thread only, through sigwait; runtime threads inherit the mask.
  const sigset_t stop_signals = process::block_stop_signals();

  server::Server srv(cfg);
  if (!start(srv)) return 1;
  announce(cfg, flags, srv);
  return serve(srv, stop_signals);
}
