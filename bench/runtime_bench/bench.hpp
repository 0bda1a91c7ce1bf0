// runtime_bench's shared parts: the options, a measured figure, what the groups collect, and
// one entry point per benchmark group (each group in its own file, listed in main.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/runtime.hpp"

namespace platoon::bench {

namespace rt = platoon::rt;

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

double median(std::vector<double> v);
double percentile(std::vector<double> v, double p);  // nearest rank

// ---- a small JSON writer ----
std::string jstr(const std::string& s);
std::string jnum(double v);
std::string jarr(const std::vector<double>& v);
std::string jarr_int(const std::vector<int>& v);

// A measured figure: its repetitions and their summary.
struct Figure {
  std::string unit;
  std::vector<double> reps;
  std::string note;
  double med() const { return median(reps); }
  double lo() const { return reps.empty() ? NAN : *std::min_element(reps.begin(), reps.end()); }
  double hi() const { return reps.empty() ? NAN : *std::max_element(reps.begin(), reps.end()); }
  std::string json() const;
};

struct Config {
  std::string json_path;
  int reps = 7;
  uint64_t yields = 10'000'000;           // per repetition
  uint64_t spawns = 1'000'000;            // per repetition
  uint32_t spawn_batch = 128;
  uint32_t spawn_big_batch = 4096;
  int unpark_samples = 3000;
  int unpark_reps = 3;
  int pingpong_ms = 1000;
  bool pin = true;
  int budget_us = 0;                      // 0: the runtime's default
  std::set<std::string> only;
  double usdt_demo_s = -1;
  bool want(const std::string& s) const { return only.empty() || only.count(s); }
};

rt::Options make_options(const Config& cfg, int carriers = 2);

// Pins the calling (non-carrier) thread to one CPU; returns the CPU or -1.
int pin_self_to(int cpu);

struct UnparkResult {
  std::vector<double> lat_us;
  uint64_t not_idle = 0;  // samples where the carrier was found not sleeping at the last check
  std::set<long> syscalls;  // syscalls the carrier sat in when sampled
};

// Everything a run measured, and the context it ran in: what the JSON report is made of.
struct Results {
  std::map<std::string, Figure> figs;
  UnparkResult unpark_all;
  std::vector<double> os_wake;  // the OS floor of the unpark latency
  std::string loadavg_start;    // the machine is shared
  std::vector<int> allowed;     // the process's CPUs
  std::vector<rt::ThreadInfo> threads;
  std::vector<std::string> warnings;
  int bench_cpu = -1;
  rt::Options used_opts;
};

// The benchmark groups (--only names them). `runtime` is null for the one that runs without it.
void run_boost(const Config& cfg, rt::Runtime* runtime, Results& res);
void run_yield(const Config& cfg, rt::Runtime* runtime, Results& res);
void run_spawn(const Config& cfg, rt::Runtime* runtime, Results& res);
void run_unpark(const Config& cfg, rt::Runtime* runtime, Results& res);
void run_pingpong(const Config& cfg, rt::Runtime* runtime, Results& res);

// --usdt-demo: light, varied activity on two carriers for a tracer to watch.
int usdt_demo(const Config& cfg);

// The first line of a file (/proc/loadavg and the like), empty if it cannot be read.
std::string read_first_line(const char* path);

// Writes the run as JSON to cfg.json_path; false (with a message) when the file cannot be written.
bool write_report(const Config& cfg, const Results& res);

}  // namespace platoon::bench
