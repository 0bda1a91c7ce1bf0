// platoon-mock: the experiment's backend (the seed's MockHttpServer). GET /fruits answers the
// fruit catalogue after a think time kept by event-loop timers, never by a sleeping thread;
// plain libevent with N loops, each with its own SO_REUSEPORT listener.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <memory>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

#include "server/mock/config.hpp"
#include "server/mock/listener.hpp"
#include "server/common/process.hpp"
#include "server/mock/loop.hpp"

namespace {

constexpr const char* kFooter = R"(
Endpoints:
  GET /fruits            200 application/json, the fruit catalogue, after the think time
  GET /health            200 "ok", at once
  GET /admin/think?ms=X  set the think time of every loop to X ms (fractional allowed) at run time;
                         without ms= it reports the current value ("think-time-ms X")
  anything else          404; a non-GET method on the paths above: 405
  malformed request      400 (431/413 for oversized heads/bodies), then the connection closes
HTTP/1.1 keep-alive, pipelined requests answered in order, "Connection: close" honoured.

Fault knobs (for testing platoon-server against a misbehaving backend):
  --close-after N      close each connection after its N-th response; that response carries
                       "Connection: close" unless --close-silently is given too (then the client
                       only finds out from the FIN: a stale pooled connection)
  --fail-rate P        GET /fruits answers 500 with probability P (still after the think time)

Prints "listening on HOST:PORT" (flushed) once it serves; SIGINT/SIGTERM stop it (exit 0).)";
using namespace platoon::mock;

// -1 to go on; otherwise the exit code (--help, or a parse error already reported).
int parse_args(int argc, char** argv, Config& cfg) {
  int port = cfg.port;
  int64_t close_after = 0;
  CLI::App app{"platoon-mock: the backend of the platoon experiment (libevent, timer-based think time)."};
  app.footer(kFooter);
  app.add_option("--host", cfg.host, "address to bind")->capture_default_str();
  app.add_option("--port", port, "port to listen on (0: any free port)")->check(CLI::Range(0, 65535))->capture_default_str();
  app.add_option("--think-time-ms", cfg.think_time_ms, "delay before each /fruits answer, ms (fractional allowed; 0: at once)")
      ->check(CLI::Range(0.0, 3600000.0))
      ->capture_default_str();
  app.add_option("--threads", cfg.threads, "event-loop threads (mock-loop-N), each with its own SO_REUSEPORT listener")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--close-after", close_after, "close each connection after N responses (0: never)")
      ->check(CLI::Range(int64_t{0}, INT64_MAX))
      ->capture_default_str();
  app.add_flag("--close-silently", cfg.close_silently, "with --close-after: no Connection: close header on the last response");
  app.add_option("--fail-rate", cfg.fail_rate, "probability that GET /fruits answers 500")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "platoon-mock: %s\n", e.what());
    return 2;
  }
  cfg.port = static_cast<uint16_t>(port);
  cfg.close_after = static_cast<uint64_t>(close_after);
  return -1;
}

// One loop per listener, started; false (reported) if one cannot be built.
bool start_loops(const Config& cfg, const Listeners& listeners, Shared& shared,
                 std::vector<std::unique_ptr<Loop>>& loops) {
  try {
    for (int i = 0; i < cfg.threads; ++i) loops.push_back(std::make_unique<Loop>(i, listeners.fds[i], shared));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "platoon-mock: %s\n", e.what());
    return false;
  }
  for (auto& l : loops) l->start();
  return true;
}

// What the tests and scripts read from stdout: the settings, each loop thread, the address.
void print_banner(const Config& cfg, const std::vector<std::unique_ptr<Loop>>& loops, const Listeners& listeners) {
  std::printf("platoon-mock pid %d threads %d think-time-ms %g close-after %llu%s fail-rate %g\n", getpid(),
              cfg.threads, cfg.think_time_ms, static_cast<unsigned long long>(cfg.close_after),
              cfg.close_silently ? " (silently)" : "", cfg.fail_rate);
  for (auto& l : loops) std::printf("THREAD name=%s tid=%d\n", l->name().c_str(), l->tid());
  const bool v6 = cfg.host.find(':') != std::string::npos;
  std::printf("listening on %s%s%s:%u\n", v6 ? "[" : "", cfg.host.c_str(), v6 ? "]" : "", listeners.port);
  std::fflush(stdout);
}

// Stops and joins every loop, then prints their summed counters.
void stop_and_report(std::vector<std::unique_ptr<Loop>>& loops, int sig) {
  for (auto& l : loops) l->stop();
  LoopStats total;
  for (auto& l : loops) {
    l->join();
    total.accepted += l->stats().accepted;
    total.requests += l->stats().requests;
    total.responses += l->stats().responses;
    total.bad_requests += l->stats().bad_requests;
    total.failures += l->stats().failures;
  }
  loops.clear();
  std::printf("platoon-mock: %s, stopped: %llu connections, %llu requests, %llu responses, %llu malformed, %llu injected 500s\n",
              sig == SIGINT ? "SIGINT" : "SIGTERM", static_cast<unsigned long long>(total.accepted),
              static_cast<unsigned long long>(total.requests), static_cast<unsigned long long>(total.responses),
              static_cast<unsigned long long>(total.bad_requests), static_cast<unsigned long long>(total.failures));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  if (const int rc = parse_args(argc, argv, cfg); rc >= 0) return rc;
  platoon::process::raise_fd_limit();

  // Signals go to this thread only, through sigwait; the loop threads inherit the mask.
  sigset_t stop_signals = platoon::process::block_stop_signals();

  Listeners listeners;
  std::string error;
  if (!open_listeners(cfg.host, cfg.port, cfg.threads, listeners, error)) {
    std::fprintf(stderr, "platoon-mock: %s\n", error.c_str());
    return 1;
  }
  Shared shared(cfg);
  std::vector<std::unique_ptr<Loop>> loops;
  if (!start_loops(cfg, listeners, shared, loops)) return 1;
  print_banner(cfg, loops, listeners);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  stop_and_report(loops, sig);
  return 0;
}
