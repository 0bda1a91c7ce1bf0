// platoon-load: a fixed-rate (wrk2-style, coordinated-omission corrected) HTTP/1.1 load
// generator. See connection.hpp for the pacing algorithm, report.hpp for the output.
#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <latch>
#include <sys/resource.h>
#include <thread>
#include <utility>
#include <vector>

#include "server/common/process.hpp"
#include "server/load/clock.hpp"
#include "server/load/config.hpp"
#include "server/load/report.hpp"
#include "server/load/worker.hpp"

namespace {
using namespace platoon::load;

constexpr int kExitUsage = 2;
constexpr int64_t kStartDelayNs = 10'000'000;  // between the last worker's setup and t0

struct Unit {
  const char* suffix;
  double scale;
};

// A number followed by one of `units` (the empty suffix when plain numbers are allowed).
bool parse_scaled(const std::string& text, std::initializer_list<Unit> units, double& out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno != 0 || !std::isfinite(v)) return false;
  for (const Unit& u : units) {
    if (std::strcmp(end, u.suffix) == 0) {
      out = v * u.scale;
      return true;
    }
  }
  return false;
}

// "10", "10s", "250ms", "1.5m", "1h" → seconds.
bool parse_seconds(const std::string& text, double& out) {
  return parse_scaled(text, {{"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"m", 60}, {"h", 3600}}, out);
}

// "20000", "20k", "1.5M" → requests per second.
bool parse_rate(const std::string& text, double& out) {
  return parse_scaled(text, {{"", 1}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}}, out);
}

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "platoon-load: %s\n", msg.c_str());
  return kExitUsage;
}

// The options as typed, before they are checked and converted into the Config.
struct Args {
  std::string url, rate_text, duration_text = "10s", warmup_text = "0", timeout_text = "2s";
};

// -1 to go on; otherwise the exit code (--help, or a parse error already reported).
int parse_args(int argc, char** argv, Config& cfg, Args& args) {
  CLI::App app{
      "platoon-load: fixed-rate HTTP/1.1 load generator (wrk2's algorithm, nanosecond pacing).\n"
      "With --rate R each of the C connections sends request n at its start + n*C/R (catching up at\n"
      "twice that rate when late) and latency is measured from that intended time (coordinated\n"
      "omission corrected); without --rate it runs closed loop at maximum throughput.\n"
      "Durations take s (default), ms, m or h; the rate takes k or M."};
  app.add_option("--url", args.url, "http://host[:port]/path to GET (keep-alive HTTP/1.1)")->required();
  app.add_option("-R,--rate", args.rate_text, "total requests/second over all connections (omit: closed loop)");
  app.add_option("-c,--connections", cfg.connections, "connections, spread over the threads")->capture_default_str();
  app.add_option("-t,--threads", cfg.threads, "threads, each with its own event loop")->capture_default_str();
  app.add_option("-d,--duration", args.duration_text, "measured duration, after the warm-up")->capture_default_str();
  app.add_option("--warmup", args.warmup_text,
                 "warm-up before measuring; histograms and counters are reset at its end "
                 "(wrk2 uses ~10s; 0 here so short tests stay short)")
      ->capture_default_str();
  app.add_option("--timeout", args.timeout_text, "a request without a response by then is a timeout (connection is reopened)")
      ->capture_default_str();
  app.add_flag("-L,--latency", cfg.latency, "print the latency distributions (corrected and uncorrected)");
  app.add_option("--json", cfg.json_path, "also write the results as JSON to this file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  return -1;
}

// Converts and checks the options in the order a user reads them, the address last (it may
// need DNS); false with the first problem in `error`.
bool configure(const Args& args, Config& cfg, std::string& error) {
  auto fail = [&error](std::string msg) {
    error = std::move(msg);
    return false;
  };
  if (!parse_url(args.url, cfg.url, error)) return false;
  if (!args.rate_text.empty()) {
    if (!parse_rate(args.rate_text, cfg.rate)) return fail("--rate: not a number: '" + args.rate_text + "'");
    if (!(cfg.rate > 0)) return fail("--rate must be > 0 (omit it for a closed-loop run)");
  }
  if (!parse_seconds(args.duration_text, cfg.duration_s) || !(cfg.duration_s > 0))
    return fail("--duration must be a positive time, got '" + args.duration_text + "'");
  if (!parse_seconds(args.warmup_text, cfg.warmup_s) || cfg.warmup_s < 0)
    return fail("--warmup must be a time >= 0, got '" + args.warmup_text + "'");
  if (!parse_seconds(args.timeout_text, cfg.timeout_s) || !(cfg.timeout_s > 0))
    return fail("--timeout must be a positive time, got '" + args.timeout_text + "'");
  if (cfg.duration_s + cfg.warmup_s > 1e7) return fail("--duration plus --warmup is too long");
  if (cfg.threads < 1 || cfg.threads > 1024) return fail("--threads must be in 1..1024");
  if (cfg.connections < 1) return fail("--connections must be >= 1");
  if (cfg.connections < cfg.threads)
    return fail("--connections (" + std::to_string(cfg.connections) + ") must be >= --threads (" +
                std::to_string(cfg.threads) + ")");
  const rlim_t fds = platoon::process::raise_fd_limit();
  if (static_cast<rlim_t>(cfg.connections) + 64 > fds)
    return fail("--connections " + std::to_string(cfg.connections) + " needs more file descriptors than " +
                "RLIMIT_NOFILE allows (" + std::to_string(fds) + ")");
  return resolve(cfg.url, cfg.endpoint, error);
}

struct RunOutcome {
  bool setup_failed = false;
  bool interrupted = false;  // by SIGINT or SIGTERM
};

// Sleeps in sigtimedwait until the run's end, a stop signal, or a worker's failed setup.
bool wait_for_end(const RunClock& clock, const sigset_t& stop_signals, const std::atomic<bool>& setup_failed) {
  while (!setup_failed) {
    const int64_t left = clock.end - now_ns();
    if (left <= 0) break;
    const int64_t wait = std::min<int64_t>(left, 100'000'000);
    const timespec ts{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
    const int sig = sigtimedwait(&stop_signals, nullptr, &ts);
    if (sig == SIGINT || sig == SIGTERM) return true;
  }
  return false;
}

// One thread per worker: every worker sets up, then all start from the same t0.
RunOutcome run_workers(const Config& cfg, const std::vector<std::unique_ptr<Worker>>& workers,
                       const sigset_t& stop_signals) {
  std::atomic<bool> stop{false}, setup_failed{false};
  RunClock clock;
  std::latch ready(cfg.threads), go(1);
  std::vector<std::thread> threads;
  for (auto& w : workers) {
    threads.emplace_back([&, wp = w.get()] {
      std::string err;
      if (!wp->setup(err)) {
        std::fprintf(stderr, "platoon-load: %s\n", err.c_str());
        setup_failed = true;
      }
      ready.count_down();
      go.wait();
      if (!setup_failed) wp->run(clock, stop);
    });
  }
  ready.wait();
  clock.t0 = now_ns() + kStartDelayNs;
  clock.warmup_end = clock.t0 + static_cast<int64_t>(cfg.warmup_s * 1e9);
  clock.end = clock.warmup_end + static_cast<int64_t>(cfg.duration_s * 1e9);
  go.count_down();

  RunOutcome outcome;
  outcome.interrupted = wait_for_end(clock, stop_signals, setup_failed);
  stop = true;
  for (auto& t : threads) t.join();
  outcome.setup_failed = setup_failed;
  return outcome;
}

// The workers' stats merged, over the span every worker was measuring; printed and written.
int report(const Config& cfg, const std::vector<std::unique_ptr<Worker>>& workers, bool interrupted) {
  ThreadStats total;
  int64_t measure_start = 0, measure_end = 0;
  for (auto& w : workers) {
    total.merge(w->stats());
    measure_start = std::max(measure_start, w->stats().measure_start_ns);
    measure_end = std::max(measure_end, w->stats().measure_end_ns);
  }
  const double duration_s = measure_end > measure_start ? double(measure_end - measure_start) / 1e9 : 0;
  if (interrupted) std::printf("  Interrupted: results of the %.2fs measured so far\n", duration_s);
  print_results(stdout, cfg, total, duration_s);
  std::string error;
  if (!cfg.json_path.empty() && !write_json(cfg.json_path, cfg, total, duration_s, error)) {
    std::fprintf(stderr, "platoon-load: %s\n", error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  Args args;
  if (const int rc = parse_args(argc, argv, cfg, args); rc >= 0) return rc;
  std::string error;
  if (!configure(args, cfg, error)) return usage_error(error);

  // SIGINT/SIGTERM reach this thread only, through sigtimedwait; the workers inherit the mask.
  const sigset_t stop_signals = platoon::process::block_stop_signals();

  print_header(stdout, cfg);

  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < cfg.threads; ++i) workers.push_back(std::make_unique<Worker>(cfg, i));
  const RunOutcome outcome = run_workers(cfg, workers, stop_signals);
  if (outcome.setup_failed) return 1;
  return report(cfg, workers, outcome.interrupted);
}
