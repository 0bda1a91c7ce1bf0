// The JSON report (build/bench/runtime.json via scripts/run-micro-benchmarks.sh): the headline figures at
// the top, every figure with its repetitions, the unpark detail, and the context of the run (the
// machine is shared: load, pinning and options are recorded beside the numbers).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench/runtime_bench/bench.hpp"
#include "runtime/probes.hpp"

namespace platoon::bench {
namespace {

std::string iso_date() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto p = line.find(':');
      return p == std::string::npos ? line : line.substr(p + 2);
    }
  return "";
}

// The medians a reader looks for first, then the goals and whether they are met.
std::string headline(const Results& res) {
  std::string o;
  auto top = [&](const std::string& k, double v) { o += "  " + jstr(k) + ": " + jnum(v) + ",\n"; };
  auto has = [&](const char* k) { return res.figs.count(k) != 0; };
  auto med = [&](const char* k) { return res.figs.at(k).med(); };
  const std::vector<double>& lat = res.unpark_all.lat_us;
  if (has("fiber_switch_ns")) top("fiber_switch_ns", med("fiber_switch_ns"));
  if (has("yield_roundtrip_ns")) top("yield_roundtrip_ns", med("yield_roundtrip_ns"));
  if (has("spawn_finish_ns")) top("spawn_finish_ns", med("spawn_finish_ns"));
  if (!lat.empty()) {
    top("unpark_p50_us", percentile(lat, 50));
    top("unpark_p99_us", percentile(lat, 99));
  }
  if (has("pingpong_per_s")) top("pingpong_per_s", med("pingpong_per_s"));
  if (has("boost_switch_ns")) top("boost_switch_ns", med("boost_switch_ns"));
  if (has("boost_create_finish_ns")) top("boost_create_finish_ns", med("boost_create_finish_ns"));
  if (has("clock_gettime_ns")) top("clock_gettime_ns", med("clock_gettime_ns"));
  o += "  \"goals\": {\"fiber_switch_ns\": 15, \"spawn_finish_ns\": 100},\n";
  o += "  \"meets_goals\": {";
  std::string sep;
  if (has("fiber_switch_ns")) {
    o += "\"fiber_switch_ns\": " + std::string(med("fiber_switch_ns") <= 15 ? "true" : "false");
    sep = ", ";
  }
  if (has("spawn_finish_ns"))
    o += sep + "\"spawn_finish_ns\": " + (med("spawn_finish_ns") <= 100 ? "true" : "false");
  o += "},\n";
  return o;
}

std::string figures(const Results& res) {
  std::string o = "  \"figures\": {\n";
  size_t k = 0;
  for (auto& [name, f] : res.figs) o += "    " + jstr(name) + ": " + f.json() + (++k < res.figs.size() ? ",\n" : "\n");
  return o + "  },\n";
}

std::string unpark_detail(const Results& res) {
  const std::vector<double>& lat = res.unpark_all.lat_us;
  const std::vector<double>& os_wake = res.os_wake;
  if (lat.empty()) return "";
  std::string o = "  \"unpark\": {\"samples\": " + std::to_string(lat.size()) +
       ", \"p50_us\": " + jnum(percentile(lat, 50)) +
       ", \"p90_us\": " + jnum(percentile(lat, 90)) +
       ", \"p99_us\": " + jnum(percentile(lat, 99)) +
       ", \"p999_us\": " + jnum(percentile(lat, 99.9)) +
       ", \"min_us\": " + jnum(percentile(lat, 0)) +
       ", \"max_us\": " + jnum(percentile(lat, 100)) +
       ", \"target_carrier\": 1, \"samples_with_carrier_not_asleep\": " + std::to_string(res.unpark_all.not_idle) +
       ", \"carrier_blocked_in_syscalls\": [";
  size_t k = 0;
  for (long s : res.unpark_all.syscalls) o += (k++ ? ", " : "") + std::to_string(s);
  o += "]";
  o += ", \"os_floor\": {\"samples\": " + std::to_string(os_wake.size()) +
       ", \"p50_us\": " + jnum(percentile(os_wake, 50)) + ", \"p99_us\": " + jnum(percentile(os_wake, 99)) +
       ", \"what\": \"a plain thread on carrier 1's CPU blocked in epoll_wait, woken by an eventfd write from the bench thread\"}";
  o += ", \"note\": \"syscall numbers from /proc/self/task/TID/syscall (x86-64: 232 epoll_wait, 281 epoll_pwait, 441 epoll_pwait2)\"},\n";
  return o;
}

std::string pinning(const Config& cfg, const Results& res) {
  const char* launcher = std::getenv("PLATOON_BENCH_LAUNCHER");
  std::string o = "    \"pinning\": {\"method\": " +
       jstr(cfg.pin ? "Options::pin (carrier i -> i-th allowed CPU) + sched_setaffinity of the bench thread"
                    : "none (threads float)") +
       ", \"process_affinity\": " + jarr_int(res.allowed) +
       ", \"launcher\": " + jstr(launcher ? launcher : "") +
       ", \"bench_thread_cpu\": " + std::to_string(res.bench_cpu) + ", \"threads\": [";
  for (size_t i = 0; i < res.threads.size(); ++i)
    o += std::string(i ? ", " : "") + "{\"name\": " + jstr(res.threads[i].name) + ", \"cpu\": " + std::to_string(res.threads[i].cpu) + "}";
  return o + "]},\n";
}

std::string settings(const Config& cfg, const Results& res) {
  const rt::Options& used = res.used_opts;
  std::string o = "    \"warnings\": [";
  for (size_t i = 0; i < res.warnings.size(); ++i) o += (i ? ", " : "") + jstr(res.warnings[i]);
  o += "],\n";
  o += "    \"options\": {\"carriers\": " + std::to_string(used.carriers) +
       ", \"scheduler\": " + jstr(rt::to_string(used.scheduler)) +
       ", \"poller\": " + jstr(rt::to_string(used.poller)) +
       ", \"work_stealing\": " + (used.work_stealing ? "true" : "false") +
       ", \"budget_us\": " + std::to_string(used.budget.count()) +
       ", \"stack_size\": " + std::to_string(used.stack_size) + "},\n";
  o += "    \"params\": {\"reps\": " + std::to_string(cfg.reps) + ", \"yields_per_rep\": " + std::to_string(cfg.yields) +
       ", \"spawns_per_rep\": " + std::to_string(cfg.spawns) + ", \"spawn_batch\": " + std::to_string(cfg.spawn_batch) +
       ", \"unpark_samples_per_rep\": " + std::to_string(cfg.unpark_samples) +
       ", \"unpark_reps\": " + std::to_string(cfg.unpark_reps) +
       ", \"pingpong_ms\": " + std::to_string(cfg.pingpong_ms) + "},\n";
  o += "    \"usdt_semaphores_raised\": " +
       std::string(platoon_poll_semaphore || platoon_drain_start_semaphore || platoon_drain_end_semaphore ||
                           platoon_park_semaphore || platoon_unpark_semaphore
                       ? "true"
                       : "false") +
       "\n";
  return o;
}

std::string context(const Config& cfg, const Results& res) {
  utsname un{};
  uname(&un);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::string o = "  \"context\": {\n";
  o += "    \"date\": " + jstr(iso_date()) + ",\n";
  o += "    \"host\": " + jstr(host) + ",\n";
  o += "    \"kernel\": " + jstr(std::string(un.sysname) + " " + un.release + " " + un.machine) + ",\n";
  o += "    \"cpu_model\": " + jstr(cpu_model()) + ",\n";
  o += "    \"online_cpus\": " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + ",\n";
  o += "    \"allowed_cpus\": " + jarr_int(res.allowed) + ",\n";
  o += "    \"loadavg_at_start\": " + jstr(res.loadavg_start) + ",\n";
  o += "    \"loadavg_at_end\": " + jstr(read_first_line("/proc/loadavg")) + ",\n";
  o += "    \"clocksource\": " + jstr(read_first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource")) + ",\n";
  o += "    \"compiler\": " + jstr(__VERSION__) + ",\n";
  o += pinning(cfg, res);
  o += settings(cfg, res);
  return o + "  }\n";
}

}  // namespace

std::string read_first_line(const char* path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

bool write_report(const Config& cfg, const Results& res) {
  const std::string o = "{\n  \"benchmark\": \"runtime_bench\",\n" + headline(res) + figures(res) +
                        unpark_detail(res) + context(cfg, res) + "}\n";
  std::ofstream out(cfg.json_path);
  if (!out) {
    std::fprintf(stderr, "runtime_bench: cannot write %s: %s\n", cfg.json_path.c_str(), std::strerror(errno));
    return false;
  }
  out << o;
  std::printf("wrote %s\n", cfg.json_path.c_str());
  return true;
}

}  // namespace platoon::bench
