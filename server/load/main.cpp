// platoon-load: a fixed-rate (wrk2-style, coordinated-omission corrected) HTTP/1.1 load
// generator. See connection.hpp for the pacing algorithm, report.hpp for the output.
#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <latch>
#include <sys/resource.h>
#include <thread>

#include "server/common/process.hpp"
#include "server/load/clock.hpp"
#include "server/load/config.hpp"
#include "server/load/report.hpp"
#include "server/load/worker.hpp"

namespace {
using namespace platoon::load;

constexpr int kExitUsage = 2;
constexpr int64_t kStartDelayNs = 10'000'000;  // between the last worker's setup and t0

// "10", "10s", "250ms", "1.5m", "1h" → seconds.
bool parse_seconds(const std::string& text, double& out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno != 0 || !std::isfinite(v)) return false;
  const std::string unit = end;
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "ms") scale = 1e-3;
  else if (unit == "us") scale = 1e-6;
  else if (unit == "m") scale = 60;
  else if (unit == "h") scale = 3600;
  else return false;
  out = v * scale;
  return true;
}

// "20000", "20k", "1.5M" → requests per second.
bool parse_rate(const std::string& text, double& out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno != 0 || !std::isfinite(v)) return false;
  const std::string unit = end;
  double scale = 0;
  if (unit.empty()) scale = 1;
  else if (unit == "k" || unit == "K") scale = 1e3;
  else if (unit == "M") scale = 1e6;
  else return false;
  out = v * scale;
  return true;
}

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "platoon-load: %s\n", msg.c_str());
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  std::string url, rate_text, duration_text = "10s", warmup_text = "0", timeout_text = "2s";
  CLI::App app{
      "platoon-load: fixed-rate HTTP/1.1 load generator (wrk2's algorithm, nanosecond pacing).\n"
      "With --rate R each of the C connections sends request n at its start + n*C/R (catching up at\n"
      "twice that rate when late) and latency is measured from that intended time (coordinated\n"
      "omission corrected); without --rate it runs closed loop at maximum throughput.\n"
      "Durations take s (default), ms, m or h; the rate takes k or M."};
  app.add_option("--url", url, "http://host[:port]/path to GET (keep-alive HTTP/1.1)")->required();
  app.add_option("-R,--rate", rate_text, "total requests/second over all connections (omit: closed loop)");
  app.add_option("-c,--connections", cfg.connections, "connections, spread over the threads")->capture_default_str();
  app.add_option("-t,--threads", cfg.threads, "threads, each with its own event loop")->capture_default_str();
  app.add_option("-d,--duration", duration_text, "measured duration, after the warm-up")->capture_default_str();
  app.add_option("--warmup", warmup_text,
                 "warm-up before measuring; histograms and counters are reset at its end "
                 "(wrk2 uses ~10s; 0 here so short tests stay short)")
      ->capture_default_str();
  app.add_option("--timeout", timeout_text, "a request without a response by then is a timeout (connection is reopened)")
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

  std::string error;
  if (!parse_url(url, cfg.url, error)) return usage_error(error);
  if (!rate_text.empty()) {
    if (!parse_rate(rate_text, cfg.rate)) return usage_error("--rate: not a number: '" + rate_text + "'");
    if (!(cfg.rate > 0)) return usage_error("--rate must be > 0 (omit it for a closed-loop run)");
  }
  if (!parse_seconds(duration_text, cfg.duration_s) || !(cfg.duration_s > 0))
    return usage_error("--duration must be a positive time, got '" + duration_text + "'");
  if (!parse_seconds(warmup_text, cfg.warmup_s) || cfg.warmup_s < 0)
    return usage_error("--warmup must be a time >= 0, got '" + warmup_text + "'");
  if (!parse_seconds(timeout_text, cfg.timeout_s) || !(cfg.timeout_s > 0))
    return usage_error("--timeout must be a positive time, got '" + timeout_text + "'");
  if (cfg.duration_s + cfg.warmup_s > 1e7) return usage_error("--duration plus --warmup is too long");
  if (cfg.threads < 1 || cfg.threads > 1024) return usage_error("--threads must be in 1..1024");
  if (cfg.connections < 1) return usage_error("--connections must be >= 1");
  if (cfg.connections < cfg.threads)
    return usage_error("--connections (" + std::to_string(cfg.connections) + ") must be >= --threads (" +
                       std::to_string(cfg.threads) + ")");
  const rlim_t fds = platoon::process::raise_fd_limit();
  if (static_cast<rlim_t>(cfg.connections) + 64 > fds)
    return usage_error("--connections " + std::to_string(cfg.connections) + " needs more file descriptors than " +
                       "RLIMIT_NOFILE allows (" + std::to_string(fds) + ")");
  if (!resolve(cfg.url, cfg.endpoint, error)) return usage_error(error);

  // SIGINT/SIGTERM reach this thread only, through sigtimedwait; the workers inherit the mask.
  sigset_t stop_signals = platoon::process::block_stop_signals();

  print_header(stdout, cfg);

  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < cfg.threads; ++i) workers.push_back(std::make_unique<Worker>(cfg, i));
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

  bool interrupted = false;
  while (!setup_failed) {
    const int64_t left = clock.end - now_ns();
    if (left <= 0) break;
    const int64_t wait = std::min<int64_t>(left, 100'000'000);
    const timespec ts{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
    const int sig = sigtimedwait(&stop_signals, nullptr, &ts);
    if (sig == SIGINT || sig == SIGTERM) {
      interrupted = true;
      break;
    }
  }
  stop = true;
  for (auto& t : threads) t.join();
  if (setup_failed) return 1;

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
  if (!cfg.json_path.empty() && !write_json(cfg.json_path, cfg, total, duration_s, error)) {
    std::fprintf(stderr, "platoon-load: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
