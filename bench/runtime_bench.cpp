// runtime_bench: micro-benchmarks of the fiber runtime, printed and optionally written as JSON.
//
//   fiber_switch_ns     one fiber context switch = (this_fiber::yield() round trip of a lone fiber
//                       on an otherwise idle carrier) / 2; also yield_roundtrip_ns
//   spawn_finish_ns     spawn (here()) + run + finish of a trivial fiber, spawned in batches from a
//                       fiber on the same carrier, total time / fibers
//   unpark_p50_us/p99   rt::unpark() from an outside OS thread until the parked fiber runs again,
//                       the target carrier asleep in epoll_wait before every sample
//   pingpong_per_s      round trips of two fibers on carriers 0 and 1 unparking each other
//   os_floor            (in "unpark") a plain thread in epoll_wait woken by an eventfd write
//   boost_switch_ns     floors without the runtime: one raw boost::context::fiber switch,
//   boost_create_finish_ns  creating + running + finishing a raw fiber, one clock_gettime
//   clock_gettime_ns
//
// Every figure is the median of several repetitions; the JSON keeps every repetition.
//
// usage: runtime_bench [--json FILE] [--reps N] [--yields N] [--spawns N] [--unpark-samples N]
//                      [--pingpong-ms MS] [--no-pin] [--only a,b,...] [--budget-us N]
//        runtime_bench --usdt-demo SECONDS   (runs fibers that yield, sleep, park and unpark on
//                                             two carriers for that long; for tracer tests)
// --only takes any of: boost, yield, spawn, unpark, pingpong.
#include <algorithm>
#include <atomic>
#include <boost/context/fiber.hpp>
#include <boost/context/preallocated.hpp>
#include <boost/context/stack_context.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sched.h>
#include <set>
#include <sstream>
#include <string>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "runtime/probes.hpp"
#include "runtime/runtime.hpp"
#include "runtime/topology.hpp"

namespace rt = platoon::rt;
namespace tf = platoon::rt::this_fiber;

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double percentile(std::vector<double> v, double p) {  // nearest rank
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  if (rank < 1) rank = 1;
  return v[std::min(rank, v.size()) - 1];
}

// ---- a small JSON writer ----
std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}
std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}
std::string jarr(const std::vector<double>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + jnum(v[i]);
  return o + "]";
}
std::string jarr_int(const std::vector<int>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + std::to_string(v[i]);
  return o + "]";
}

// A measured figure: its repetitions and their summary.
struct Figure {
  std::string unit;
  std::vector<double> reps;
  std::string note;
  double med() const { return median(reps); }
  double lo() const { return reps.empty() ? NAN : *std::min_element(reps.begin(), reps.end()); }
  double hi() const { return reps.empty() ? NAN : *std::max_element(reps.begin(), reps.end()); }
  std::string json() const {
    const double m = med();
    return "{\"median\": " + jnum(m) + ", \"min\": " + jnum(lo()) + ", \"max\": " + jnum(hi()) +
           ", \"spread_pct\": " + jnum(m != 0 ? 100.0 * (hi() - lo()) / m : NAN) +
           ", \"unit\": " + jstr(unit) + ", \"reps\": " + jarr(reps) +
           (note.empty() ? "" : ", \"note\": " + jstr(note)) + "}";
  }
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

rt::Options make_options(const Config& cfg, int carriers = 2) {
  rt::Options o;
  o.carriers = carriers;
  o.pin = cfg.pin;
  o.work_stealing = false;
  if (cfg.budget_us > 0) o.budget = std::chrono::microseconds(cfg.budget_us);
  return o;
}

// Pins the calling (non-carrier) thread to one CPU; returns the CPU or -1.
int pin_self_to(int cpu) {
  if (cpu < 0) return -1;
  return rt::pin_current_thread(cpu) ? cpu : -1;
}

// ---- raw Boost.Context: the floor of a switch ----
double bench_boost_switch(uint64_t n) {
  namespace ctx = boost::context;
  uint64_t left = n;
  ctx::fiber f{[&left](ctx::fiber&& main) {
    while (left) main = std::move(main).resume();
    return std::move(main);
  }};
  f = std::move(f).resume();  // warm up
  const uint64_t t0 = now_ns();
  while (left) {
    --left;
    f = std::move(f).resume();
  }
  const uint64_t t1 = now_ns();
  if (f) f = std::move(f).resume();
  return static_cast<double>(t1 - t0) / static_cast<double>(n) / 2.0;  // two switches per resume
}

// Creating a boost::context::fiber on a preallocated stack, running it and letting it finish:
// the Boost.Context part of spawn_finish_ns (creation itself jumps onto the new stack and back).
double bench_boost_create_finish(uint64_t n) {
  namespace ctx = boost::context;
  struct Borrowed {
    ctx::stack_context allocate() { return {}; }
    void deallocate(ctx::stack_context&) noexcept {}
  };
  static constexpr std::size_t kStack = 64 * 1024;
  std::vector<char> mem(kStack);
  uint64_t ran = 0;
  const uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < n; ++i) {
    ctx::stack_context sc;
    sc.sp = mem.data() + kStack;
    sc.size = kStack;
    ctx::fiber f{std::allocator_arg, ctx::preallocated(sc.sp, sc.size, sc), Borrowed{},
                 [&ran](ctx::fiber&& back) {
                   ++ran;
                   return std::move(back);
                 }};
    f = std::move(f).resume();
  }
  const uint64_t t1 = now_ns();
  if (ran != n) std::abort();
  return static_cast<double>(t1 - t0) / static_cast<double>(n);
}

// ---- what one clock read costs: the runtime reads CLOCK_MONOTONIC after every fiber run ----
double bench_clock_gettime(uint64_t n) {
  uint64_t sink = 0;
  const uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < n; ++i) sink += now_ns();
  const uint64_t t1 = now_ns();
  asm volatile("" : : "r"(sink));
  return static_cast<double>(t1 - t0) / static_cast<double>(n);
}

double bench_rdtsc(uint64_t n) {
#if defined(__x86_64__)
  uint64_t sink = 0;
  const uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < n; ++i) sink += __builtin_ia32_rdtsc();
  const uint64_t t1 = now_ns();
  asm volatile("" : : "r"(sink));
  return static_cast<double>(t1 - t0) / static_cast<double>(n);
#else
  (void)n;
  return NAN;
#endif
}

// ---- yield round trip of a lone fiber on carrier 0 ----
double yield_roundtrip(rt::Runtime& runtime, uint64_t n) {
  double result = 0;
  runtime
      .spawn_joinable(
          [&] {
            for (int i = 0; i < 10000; ++i) tf::yield();  // warm up
            const uint64_t t0 = now_ns();
            for (uint64_t i = 0; i < n; ++i) tf::yield();
            const uint64_t t1 = now_ns();
            result = static_cast<double>(t1 - t0) / static_cast<double>(n);
          },
          rt::on_carrier(0))
      .join();
  return result;
}

// ---- spawn + finish of trivial fibers, spawned in batches from a fiber on the same carrier ----
double spawn_finish(rt::Runtime& runtime, uint64_t total, uint32_t batch) {
  double result = 0;
  runtime
      .spawn_joinable(
          [&] {
            rt::Runtime* r = tf::runtime();
            uint64_t done = 0;
            auto one_batch = [&](uint32_t k) {
              const uint64_t target = done + k;
              for (uint32_t i = 0; i < k; ++i) r->spawn([d = &done] { ++*d; }, rt::here());
              while (done < target) tf::yield();  // FIFO: all k ran before we are back
            };
            for (int w = 0; w < 4; ++w) one_batch(batch);  // warm the record cache and stacks
            const uint64_t batches = std::max<uint64_t>(1, total / batch);
            const uint64_t t0 = now_ns();
            for (uint64_t b = 0; b < batches; ++b) one_batch(batch);
            const uint64_t t1 = now_ns();
            result = static_cast<double>(t1 - t0) / static_cast<double>(batches * batch);
          },
          rt::on_carrier(0))
      .join();
  return result;
}

// ---- unpark latency from an outside thread to a sleeping carrier ----
char thread_state(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  std::ifstream f(path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto p = s.rfind(')');
  if (p == std::string::npos || p + 2 >= s.size()) return '?';
  return s[p + 2];
}

// The syscall a thread is blocked in (/proc/.../syscall), -1 if running or unknown.
long thread_syscall(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", static_cast<int>(tid));
  std::ifstream f(path);
  std::string first;
  if (!(f >> first)) return -1;
  char* end = nullptr;
  const long n = std::strtol(first.c_str(), &end, 10);
  return end && *end == '\0' ? n : -1;
}

bool is_epoll_wait(long sc) {
#if defined(__x86_64__)
  return sc == 232 || sc == 281 || sc == 441;  // epoll_wait, epoll_pwait, epoll_pwait2
#else
  (void)sc;
  return true;
#endif
}

struct UnparkResult {
  std::vector<double> lat_us;
  uint64_t not_idle = 0;  // samples where the carrier was found not sleeping at the last check
  std::set<long> syscalls;  // syscalls the carrier sat in when sampled
};

UnparkResult unpark_latency(rt::Runtime& runtime, int samples, int target) {
  UnparkResult res;
  std::atomic<rt::Fiber*> fiber{nullptr};
  std::atomic<int> parked_seq{-1};   // the fiber is about to park waiting for sample i
  std::atomic<int> go{-1};           // sample i may run
  std::atomic<int> ack{-1};
  std::vector<uint64_t> woke(static_cast<size_t>(samples), 0);
  auto h = runtime.spawn_joinable(
      [&] {
        fiber.store(tf::self());
        for (int i = 0; i < samples; ++i) {
          parked_seq.store(i, std::memory_order_seq_cst);
          while (go.load(std::memory_order_seq_cst) < i) tf::park();
          woke[static_cast<size_t>(i)] = now_ns();
          ack.store(i, std::memory_order_seq_cst);
        }
      },
      rt::on_carrier(target));
  pid_t tid = 0;
  for (auto& t : runtime.threads())
    if (t.name.rfind("carrier-" + std::to_string(target), 0) == 0 ||
        t.name.rfind("c" + std::to_string(target) + "@", 0) == 0)
      tid = t.tid;
  while (!fiber.load()) std::this_thread::yield();
  rt::Fiber* f = fiber.load();
  res.lat_us.reserve(static_cast<size_t>(samples));
  for (int i = 0; i < samples; ++i) {
    while (parked_seq.load() < i) std::this_thread::yield();
    // Idle: the carrier thread is blocked in epoll_wait and has not woken (its sleep count is
    // unchanged) over a whole 100-250 us interval.
    uint64_t prev_sleeps = runtime.stats()[static_cast<size_t>(target)].sleeps;
    bool idle = false;
    for (int tries = 0; tries < 200 && !idle; ++tries) {
      std::this_thread::sleep_for(std::chrono::microseconds(100 + (i * 37 + tries * 11) % 150));
      const uint64_t sl = runtime.stats()[static_cast<size_t>(target)].sleeps;
      if (tid == 0) { idle = sl != prev_sleeps || tries > 0; break; }
      const char st = thread_state(tid);
      const long sc = thread_syscall(tid);
      idle = sl == prev_sleeps && st == 'S' && (sc == -1 || is_epoll_wait(sc));
      if (idle && i % 64 == 0) res.syscalls.insert(sc);
      prev_sleeps = sl;
    }
    if (!idle) ++res.not_idle;
    const uint64_t t0 = now_ns();
    go.store(i, std::memory_order_seq_cst);
    rt::unpark(f);
    while (ack.load(std::memory_order_acquire) < i) {
    }
    res.lat_us.push_back(static_cast<double>(woke[static_cast<size_t>(i)] - t0) / 1000.0);
  }
  h.join();
  return res;
}

// ---- the floor of unpark latency: a plain thread blocked in epoll_wait on an eventfd, woken
// by a write from the bench thread; no runtime involved ----
std::vector<double> os_wake_latency(int samples, int cpu) {
  std::vector<double> lat;
  const int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (efd < 0 || ep < 0) return lat;
  epoll_event ev{};
  ev.events = EPOLLIN;
  epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
  std::atomic<pid_t> tid{0};
  std::atomic<int> waiting{-1}, ack{-1};
  std::vector<uint64_t> woke(static_cast<size_t>(samples), 0);
  std::thread t([&] {
    if (cpu >= 0) pin_self_to(cpu);
    tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
    for (int i = 0; i < samples; ++i) {
      waiting.store(i);
      epoll_event out{};
      while (epoll_wait(ep, &out, 1, -1) != 1) {
      }
      woke[static_cast<size_t>(i)] = now_ns();
      uint64_t v;
      while (read(efd, &v, sizeof v) == sizeof v) {
      }
      ack.store(i);
    }
  });
  while (tid.load() == 0) std::this_thread::yield();
  for (int i = 0; i < samples; ++i) {
    while (waiting.load() < i) std::this_thread::yield();
    for (int tries = 0; tries < 200; ++tries) {
      std::this_thread::sleep_for(std::chrono::microseconds(100 + (i * 37 + tries * 11) % 150));
      const long sc = thread_syscall(tid.load());
      if (thread_state(tid.load()) == 'S' && (sc == -1 || is_epoll_wait(sc))) break;
    }
    const uint64_t t0 = now_ns();
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = write(efd, &one, sizeof one);
    while (ack.load(std::memory_order_acquire) < i) {
    }
    lat.push_back(static_cast<double>(woke[static_cast<size_t>(i)] - t0) / 1000.0);
  }
  t.join();
  close(ep);
  close(efd);
  return lat;
}

// ---- cross-carrier ping-pong ----
double pingpong(rt::Runtime& runtime, int ms) {
  std::atomic<rt::Fiber*> fa{nullptr}, fb{nullptr};
  std::atomic<int> turn{0};
  std::atomic<bool> stop{false};
  double rate = 0;
  auto hb = runtime.spawn_joinable(
      [&] {
        fb.store(tf::self());
        while (!fa.load()) tf::yield();
        rt::Fiber* a = fa.load();
        for (;;) {
          while (turn.load(std::memory_order_acquire) != 1) tf::park();
          if (stop.load(std::memory_order_acquire)) break;
          turn.store(0, std::memory_order_release);
          rt::unpark(a);
        }
      },
      rt::on_carrier(1));
  auto ha = runtime.spawn_joinable(
      [&] {
        fa.store(tf::self());
        while (!fb.load()) tf::yield();
        rt::Fiber* b = fb.load();
        const uint64_t t0 = now_ns();
        const uint64_t end = t0 + static_cast<uint64_t>(ms) * 1000000ull;
        uint64_t i = 0;
        for (;; ++i) {
          while (turn.load(std::memory_order_acquire) != 0) tf::park();
          if ((i & 255) == 0 && now_ns() >= end) break;
          turn.store(1, std::memory_order_release);
          rt::unpark(b);
        }
        const uint64_t t1 = now_ns();
        stop.store(true, std::memory_order_release);
        turn.store(1, std::memory_order_release);
        rt::unpark(b);
        rate = static_cast<double>(i) / (static_cast<double>(t1 - t0) / 1e9);
      },
      rt::on_carrier(0));
  ha.join();
  hb.join();
  return rate;
}

// ---- --usdt-demo: light, varied activity on two carriers for a tracer to watch ----
int usdt_demo(const Config& cfg) {
  rt::Options o = make_options(cfg);
  o.work_stealing = true;  // so that steal can fire too
  rt::Runtime runtime(o);
  const uint64_t end = now_ns() + static_cast<uint64_t>(cfg.usdt_demo_s * 1e9);
  std::printf("usdt-demo: pid %d, %.1f s\n", static_cast<int>(getpid()), cfg.usdt_demo_s);
  std::fflush(stdout);
  std::vector<rt::JoinHandle> hs;
  std::atomic<rt::Fiber*> peer[2] = {nullptr, nullptr};
  std::atomic<int> turn{0};
  std::atomic<bool> stop{false};
  for (int c = 0; c < 2; ++c) {
    // Yield a little, then sleep: drains, polls, sleeps and wakes on every carrier.
    hs.push_back(runtime.spawn_joinable(
        [end] {
          while (now_ns() < end) {
            for (int i = 0; i < 50; ++i) tf::yield();
            tf::sleep_for(std::chrono::microseconds(500));
          }
        },
        rt::on_carrier(c)));
    // Ping-pong across carriers every millisecond: park and unpark.
    hs.push_back(runtime.spawn_joinable(
        [c, end, &peer, &turn, &stop] {
          peer[c].store(tf::self());
          while (!peer[1 - c].load()) tf::sleep_for(std::chrono::microseconds(100));
          rt::Fiber* other = peer[1 - c].load();
          for (;;) {
            while (turn.load() != c && !stop.load()) tf::park();
            if (stop.load()) break;
            tf::sleep_for(std::chrono::milliseconds(1));
            if (now_ns() >= end) stop.store(true);
            turn.store(1 - c);
            rt::unpark(other);
          }
        },
        rt::on_carrier(c)));
  }
  // Bursts of short fibers on carrier 0 for carrier 1 to steal.
  hs.push_back(runtime.spawn_joinable(
      [end] {
        rt::Runtime* r = tf::runtime();
        while (now_ns() < end) {
          for (int i = 0; i < 32; ++i)
            r->spawn([] {
              for (int k = 0; k < 3; ++k) tf::yield();
            }, rt::here());
          tf::sleep_for(std::chrono::milliseconds(5));
        }
      },
      rt::on_carrier(0)));
  for (auto& h : hs) h.join();
  uint64_t drains = 0, sleeps = 0, steals = 0;
  for (auto& s : runtime.stats()) {
    drains += s.cycles;
    sleeps += s.sleeps;
    steals += s.steals;
  }
  std::printf("usdt-demo: done, %llu loop cycles, %llu sleeps, %llu steals\n",
              static_cast<unsigned long long>(drains), static_cast<unsigned long long>(sleeps),
              static_cast<unsigned long long>(steals));
  return 0;
}

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

std::string read_first_line(const char* path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--json FILE] [--reps N] [--yields N] [--spawns N] [--spawn-batch N]\n"
               "          [--unpark-samples N] [--pingpong-ms MS] [--budget-us N] [--no-pin]\n"
               "          [--only boost,yield,spawn,unpark,pingpong]\n"
               "       %s --usdt-demo SECONDS\n",
               argv0, argv0);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage(argv[0]);
      return argv[++i];
    };
    if (a == "--json") cfg.json_path = val();
    else if (a == "--reps") cfg.reps = std::max(1, std::atoi(val().c_str()));
    else if (a == "--yields") cfg.yields = std::strtoull(val().c_str(), nullptr, 10);
    else if (a == "--spawns") cfg.spawns = std::strtoull(val().c_str(), nullptr, 10);
    else if (a == "--spawn-batch") cfg.spawn_batch = static_cast<uint32_t>(std::max(1, std::atoi(val().c_str())));
    else if (a == "--unpark-samples") cfg.unpark_samples = std::max(1, std::atoi(val().c_str()));
    else if (a == "--pingpong-ms") cfg.pingpong_ms = std::max(1, std::atoi(val().c_str()));
    else if (a == "--budget-us") cfg.budget_us = std::atoi(val().c_str());
    else if (a == "--no-pin") cfg.pin = false;
    else if (a == "--pin") cfg.pin = true;
    else if (a == "--usdt-demo") cfg.usdt_demo_s = std::atof(val().c_str());
    else if (a == "--only") {
      std::stringstream ss(val());
      std::string item;
      while (std::getline(ss, item, ',')) cfg.only.insert(item);
    } else usage(argv[0]);
  }
  if (cfg.usdt_demo_s >= 0) return usdt_demo(cfg);

  const std::string loadavg_start = read_first_line("/proc/loadavg");  // the machine is shared
  const std::vector<int> allowed = rt::allowed_cpus();
  // The bench thread sits on the CPU of carrier 0 (idle while carrier 1 is measured) and the
  // unpark measurements target carrier 1, so the waker and the wakee never share a CPU.
  std::map<std::string, Figure> figs;
  std::vector<rt::ThreadInfo> threads;
  std::vector<std::string> warnings;
  int bench_cpu = -1;
  UnparkResult unpark_all;
  std::vector<double> os_wake;  // the OS floor of the unpark latency
  std::vector<double> unpark_p50s, unpark_p99s;
  rt::Options used_opts = make_options(cfg);
  const int yield_reps = cfg.reps;

  if (cfg.want("boost")) {
    Figure f{"ns", {}, "raw boost::context::fiber resume, no runtime: the floor of fiber_switch_ns"};
    Figure clk{"ns", {}, "clock_gettime(CLOCK_MONOTONIC) (vDSO); Carrier::drain reads it after every fiber run"};
    Figure tsc{"ns", {}, "rdtsc, for comparison"};
    Figure bcf{"ns", {}, "raw boost::context::fiber created on a preallocated stack, resumed once, finished: the floor of spawn_finish_ns"};
    // On a thread of its own: pinning the main thread now would narrow the CPUs the runtime
    // created below sees as allowed.
    std::thread([&] {
      if (cfg.pin && !allowed.empty()) pin_self_to(allowed.front());
      for (int r = 0; r < yield_reps; ++r) f.reps.push_back(bench_boost_switch(cfg.yields));
      for (int r = 0; r < yield_reps; ++r) bcf.reps.push_back(bench_boost_create_finish(cfg.spawns));
      for (int r = 0; r < yield_reps; ++r) clk.reps.push_back(bench_clock_gettime(cfg.yields / 2));
      for (int r = 0; r < yield_reps; ++r) tsc.reps.push_back(bench_rdtsc(cfg.yields / 2));
    }).join();
    figs["clock_gettime_ns"] = clk;
    figs["boost_create_finish_ns"] = bcf;
    figs["rdtsc_ns"] = tsc;
    figs["boost_switch_ns"] = f;
    std::printf("boost_switch_ns        %8.2f  (median of %d x %llu resumes)\n", f.med(), yield_reps,
                static_cast<unsigned long long>(cfg.yields));
    std::printf("boost_create_finish_ns %8.2f\n", bcf.med());
    std::printf("clock_gettime_ns       %8.2f  (rdtsc %.2f)\n", clk.med(), tsc.med());
    std::fflush(stdout);
  }

  {
    rt::Runtime runtime(make_options(cfg));
    threads = runtime.threads();
    warnings = runtime.warnings();
    used_opts = runtime.options();
    if (cfg.pin && !allowed.empty()) bench_cpu = pin_self_to(allowed.front());

    if (cfg.want("yield")) {
      Figure rtt{"ns", {}, "this_fiber::yield() round trip, lone fiber on carrier 0, carrier 1 idle"};
      Figure sw{"ns", {}, "yield_roundtrip_ns / 2"};
      for (int r = 0; r < yield_reps; ++r) {
        const double v = yield_roundtrip(runtime, cfg.yields);
        rtt.reps.push_back(v);
        sw.reps.push_back(v / 2);
      }
      figs["yield_roundtrip_ns"] = rtt;
      figs["fiber_switch_ns"] = sw;
      std::printf("yield_roundtrip_ns     %8.2f  (median of %d x %llu yields, min %.2f max %.2f)\n",
                  rtt.med(), yield_reps, static_cast<unsigned long long>(cfg.yields), rtt.lo(), rtt.hi());
      std::printf("fiber_switch_ns        %8.2f  (goal <= 15)\n", sw.med());
      std::fflush(stdout);
    }

    if (cfg.want("spawn")) {
      Figure sf{"ns", {}, "spawn(here()) of a trivial fiber from a fiber on carrier 0 + run + finish, batches of " +
                              std::to_string(cfg.spawn_batch)};
      Figure sb{"ns", {}, "same, batches of " + std::to_string(cfg.spawn_big_batch) +
                              " (run-queue ring of 256 overflows, record cache spills)"};
      for (int r = 0; r < cfg.reps; ++r) sf.reps.push_back(spawn_finish(runtime, cfg.spawns, cfg.spawn_batch));
      for (int r = 0; r < std::max(3, cfg.reps / 2); ++r)
        sb.reps.push_back(spawn_finish(runtime, cfg.spawns / 2, cfg.spawn_big_batch));
      figs["spawn_finish_ns"] = sf;
      figs["spawn_finish_batch" + std::to_string(cfg.spawn_big_batch) + "_ns"] = sb;
      std::printf("spawn_finish_ns        %8.2f  (median of %d x %llu fibers in batches of %u, min %.2f max %.2f; goal <= 100)\n",
                  sf.med(), cfg.reps, static_cast<unsigned long long>(cfg.spawns), cfg.spawn_batch, sf.lo(), sf.hi());
      std::printf("spawn_finish_batch%u_ns %7.2f\n", cfg.spawn_big_batch, sb.med());
      std::fflush(stdout);
    }

    if (cfg.want("unpark") && runtime.carrier_count() >= 2) {
      Figure p50{"us", {}, "per repetition of " + std::to_string(cfg.unpark_samples) + " samples"};
      Figure p99{"us", {}, "per repetition of " + std::to_string(cfg.unpark_samples) + " samples"};
      for (int r = 0; r < cfg.unpark_reps; ++r) {
        UnparkResult u = unpark_latency(runtime, cfg.unpark_samples, 1);
        p50.reps.push_back(percentile(u.lat_us, 50));
        p99.reps.push_back(percentile(u.lat_us, 99));
        unpark_all.lat_us.insert(unpark_all.lat_us.end(), u.lat_us.begin(), u.lat_us.end());
        unpark_all.not_idle += u.not_idle;
        unpark_all.syscalls.insert(u.syscalls.begin(), u.syscalls.end());
      }
      {
        // The same wake-up without the runtime, on carrier 1's CPU (carrier 1 sleeps meanwhile).
        int cpu1 = -1;
        for (auto& t : threads) if (t.name.rfind("carrier-1", 0) == 0) cpu1 = t.cpu;
        std::vector<double> os = os_wake_latency(cfg.unpark_samples, cpu1);
        os_wake = os;
      }
      figs["unpark_p50_us_by_rep"] = p50;
      figs["unpark_p99_us_by_rep"] = p99;
      std::printf("unpark_p50_us          %8.2f  (%zu samples; per-rep p50 %.2f..%.2f)\n",
                  percentile(unpark_all.lat_us, 50), unpark_all.lat_us.size(), p50.lo(), p50.hi());
      std::printf("unpark_p99_us          %8.2f  (per-rep p99 %.2f..%.2f; max %.2f; carrier not asleep in %llu samples)\n",
                  percentile(unpark_all.lat_us, 99), p99.lo(), p99.hi(), percentile(unpark_all.lat_us, 100),
                  static_cast<unsigned long long>(unpark_all.not_idle));
      if (!os_wake.empty())
        std::printf("os_wake_p50_us         %8.2f  (p99 %.2f; the floor: plain thread in epoll_wait woken by an eventfd write, %zu samples)\n",
                    percentile(os_wake, 50), percentile(os_wake, 99), os_wake.size());
      std::fflush(stdout);
    }

    if (cfg.want("pingpong") && runtime.carrier_count() >= 2) {
      Figure pp{"round trips/s", {}, "fibers on carrier 0 and 1 unparking each other, " +
                                         std::to_string(cfg.pingpong_ms) + " ms per repetition"};
      pingpong(runtime, 100);  // warm up
      for (int r = 0; r < std::max(3, cfg.reps - 2); ++r) pp.reps.push_back(pingpong(runtime, cfg.pingpong_ms));
      figs["pingpong_per_s"] = pp;
      std::printf("pingpong_per_s         %8.0f  (median of %zu x %d ms, min %.0f max %.0f; %.2f us per round trip)\n",
                  pp.med(), pp.reps.size(), cfg.pingpong_ms, pp.lo(), pp.hi(), 1e6 / pp.med());
      std::fflush(stdout);
    }
  }

  if (cfg.json_path.empty()) return 0;

  utsname un{};
  uname(&un);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::string o = "{\n";
  o += "  \"benchmark\": \"runtime_bench\",\n";
  auto top = [&](const std::string& k, double v) { o += "  " + jstr(k) + ": " + jnum(v) + ",\n"; };
  auto has = [&](const char* k) { return figs.count(k) != 0; };
  if (has("fiber_switch_ns")) top("fiber_switch_ns", figs["fiber_switch_ns"].med());
  if (has("yield_roundtrip_ns")) top("yield_roundtrip_ns", figs["yield_roundtrip_ns"].med());
  if (has("spawn_finish_ns")) top("spawn_finish_ns", figs["spawn_finish_ns"].med());
  if (!unpark_all.lat_us.empty()) {
    top("unpark_p50_us", percentile(unpark_all.lat_us, 50));
    top("unpark_p99_us", percentile(unpark_all.lat_us, 99));
  }
  if (has("pingpong_per_s")) top("pingpong_per_s", figs["pingpong_per_s"].med());
  if (has("boost_switch_ns")) top("boost_switch_ns", figs["boost_switch_ns"].med());
  if (has("boost_create_finish_ns")) top("boost_create_finish_ns", figs["boost_create_finish_ns"].med());
  if (has("clock_gettime_ns")) top("clock_gettime_ns", figs["clock_gettime_ns"].med());
  o += "  \"goals\": {\"fiber_switch_ns\": 15, \"spawn_finish_ns\": 100},\n";
  o += "  \"meets_goals\": {";
  {
    std::string sep;
    if (has("fiber_switch_ns")) {
      o += "\"fiber_switch_ns\": " + std::string(figs["fiber_switch_ns"].med() <= 15 ? "true" : "false");
      sep = ", ";
    }
    if (has("spawn_finish_ns"))
      o += sep + "\"spawn_finish_ns\": " + (figs["spawn_finish_ns"].med() <= 100 ? "true" : "false");
  }
  o += "},\n";
  o += "  \"figures\": {\n";
  {
    size_t k = 0;
    for (auto& [name, f] : figs) o += "    " + jstr(name) + ": " + f.json() + (++k < figs.size() ? ",\n" : "\n");
  }
  o += "  },\n";
  if (!unpark_all.lat_us.empty()) {
    o += "  \"unpark\": {\"samples\": " + std::to_string(unpark_all.lat_us.size()) +
         ", \"p50_us\": " + jnum(percentile(unpark_all.lat_us, 50)) +
         ", \"p90_us\": " + jnum(percentile(unpark_all.lat_us, 90)) +
         ", \"p99_us\": " + jnum(percentile(unpark_all.lat_us, 99)) +
         ", \"p999_us\": " + jnum(percentile(unpark_all.lat_us, 99.9)) +
         ", \"min_us\": " + jnum(percentile(unpark_all.lat_us, 0)) +
         ", \"max_us\": " + jnum(percentile(unpark_all.lat_us, 100)) +
         ", \"target_carrier\": 1, \"samples_with_carrier_not_asleep\": " + std::to_string(unpark_all.not_idle) +
         ", \"carrier_blocked_in_syscalls\": [";
    size_t k = 0;
    for (long s : unpark_all.syscalls) o += (k++ ? ", " : "") + std::to_string(s);
    o += "]";
    o += ", \"os_floor\": {\"samples\": " + std::to_string(os_wake.size()) +
         ", \"p50_us\": " + jnum(percentile(os_wake, 50)) + ", \"p99_us\": " + jnum(percentile(os_wake, 99)) +
         ", \"what\": \"a plain thread on carrier 1's CPU blocked in epoll_wait, woken by an eventfd write from the bench thread\"}";
    o += ", \"note\": \"syscall numbers from /proc/self/task/TID/syscall (x86-64: 232 epoll_wait, 281 epoll_pwait, 441 epoll_pwait2)\"},\n";
  }
  o += "  \"context\": {\n";
  o += "    \"date\": " + jstr(iso_date()) + ",\n";
  o += "    \"host\": " + jstr(host) + ",\n";
  o += "    \"kernel\": " + jstr(std::string(un.sysname) + " " + un.release + " " + un.machine) + ",\n";
  o += "    \"cpu_model\": " + jstr(cpu_model()) + ",\n";
  o += "    \"online_cpus\": " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + ",\n";
  o += "    \"allowed_cpus\": " + jarr_int(allowed) + ",\n";
  o += "    \"loadavg_at_start\": " + jstr(loadavg_start) + ",\n";
  o += "    \"loadavg_at_end\": " + jstr(read_first_line("/proc/loadavg")) + ",\n";
  o += "    \"clocksource\": " + jstr(read_first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource")) + ",\n";
  o += "    \"compiler\": " + jstr(__VERSION__) + ",\n";
  o += "    \"pinning\": {\"method\": " +
       jstr(cfg.pin ? "Options::pin (carrier i -> i-th allowed CPU) + sched_setaffinity of the bench thread"
                    : "none (threads float)") +
       ", \"process_affinity\": " + jarr_int(allowed) +
       ", \"launcher\": " + jstr(std::getenv("PLATOON_BENCH_LAUNCHER") ? std::getenv("PLATOON_BENCH_LAUNCHER") : "") +
       ", \"bench_thread_cpu\": " + std::to_string(bench_cpu) + ", \"threads\": [";
  for (size_t i = 0; i < threads.size(); ++i)
    o += std::string(i ? ", " : "") + "{\"name\": " + jstr(threads[i].name) + ", \"cpu\": " + std::to_string(threads[i].cpu) + "}";
  o += "]},\n";
  o += "    \"warnings\": [";
  for (size_t i = 0; i < warnings.size(); ++i) o += (i ? ", " : "") + jstr(warnings[i]);
  o += "],\n";
  o += "    \"options\": {\"carriers\": " + std::to_string(used_opts.carriers) +
       ", \"scheduler\": " + jstr(rt::to_string(used_opts.scheduler)) +
       ", \"poller\": " + jstr(rt::to_string(used_opts.poller)) +
       ", \"work_stealing\": " + (used_opts.work_stealing ? "true" : "false") +
       ", \"budget_us\": " + std::to_string(used_opts.budget.count()) +
       ", \"stack_size\": " + std::to_string(used_opts.stack_size) + "},\n";
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
  o += "  }\n}\n";
  std::ofstream out(cfg.json_path);
  if (!out) {
    std::fprintf(stderr, "runtime_bench: cannot write %s: %s\n", cfg.json_path.c_str(), std::strerror(errno));
    return 1;
  }
  out << o;
  std::printf("wrote %s\n", cfg.json_path.c_str());
  return 0;
}
