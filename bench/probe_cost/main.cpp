// probe_cost: what a tracer adds to the two events a carrier makes most, measured by the
// traced program's own clock (so interrupts, the tracepoint machinery and everything the kernel
// does for the probes are in it, unlike kernel.bpf_stats_enabled's run time of the programs):
//
//   epoll_ns   one epoll_wait(timeout 0) that returns one ready event (a busy loop's poll)
//   syscall_ns one getppid(): any other syscall, which pays for a tracer only through the
//              kernel's traced syscall path (taken by every task while any syscall tracepoint
//              is attached, whichever syscalls it is for)
//   switch_ns  one context switch: two threads pinned to one CPU hand a token back and forth
//              over futexes; each hand-off is a wakeup plus a switch (what perf bench sched
//              pipe measures, without the pipe's copies)
//
// Run it untraced and under a tracer and subtract (scripts/bench-probe-cost.sh does, in
// alternating rounds). Prints one JSON object.
//
// usage: probe_cost [--epoll-calls N] [--switches N] [--cpu C] [--delay S] [--out FILE]
//   --delay: sleep first, so that a tracer attaching by pid is in place
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

double epoll_ns(long calls) {
  const int ep = epoll_create1(0), efd = eventfd(1, 0);  // always readable
  epoll_event ev{};
  ev.events = EPOLLIN;
  epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
  epoll_event out[4];
  for (int i = 0; i < 1000; ++i) epoll_wait(ep, out, 4, 0);  // warm
  const uint64_t t0 = now_ns();
  for (long i = 0; i < calls; ++i) epoll_wait(ep, out, 4, 0);
  const uint64_t t1 = now_ns();
  close(efd);
  close(ep);
  return static_cast<double>(t1 - t0) / static_cast<double>(calls);
}

double syscall_ns(long calls) {
  for (int i = 0; i < 1000; ++i) syscall(SYS_getppid);  // warm
  const uint64_t t0 = now_ns();
  for (long i = 0; i < calls; ++i) syscall(SYS_getppid);
  return static_cast<double>(now_ns() - t0) / static_cast<double>(calls);
}

void futex_wait(std::atomic<uint32_t>* w, uint32_t v) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), FUTEX_WAIT_PRIVATE, v, nullptr, nullptr, 0);
}
void futex_wake(std::atomic<uint32_t>* w) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// The token: even = the main thread's turn, odd = the partner's.
double switch_ns(long switches, int cpu) {
  std::atomic<uint32_t> turn{0};
  const long rounds = switches / 2;
  std::thread partner([&] {
    pin(cpu);
    for (long i = 0; i < rounds; ++i) {
      uint32_t t;
      while (((t = turn.load()) & 1) == 0) futex_wait(&turn, t);
      turn.store(t + 1);
      futex_wake(&turn);
    }
  });
  pin(cpu);
  const uint64_t t0 = now_ns();
  for (long i = 0; i < rounds; ++i) {
    const uint32_t mine = turn.load() + 1;
    turn.store(mine);
    futex_wake(&turn);
    uint32_t t;
    while (((t = turn.load()) & 1) == 1) futex_wait(&turn, t);
  }
  const uint64_t t1 = now_ns();
  partner.join();
  return static_cast<double>(t1 - t0) / static_cast<double>(2 * rounds);
}

}  // namespace

int main(int argc, char** argv) {
  long calls = 2000000, switches = 400000;
  int cpu = 1;
  std::string out;
  double delay = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--epoll-calls" && i + 1 < argc) calls = std::atol(argv[++i]);
    else if (a == "--switches" && i + 1 < argc) switches = std::atol(argv[++i]);
    else if (a == "--cpu" && i + 1 < argc) cpu = std::atoi(argv[++i]);
    else if (a == "--out" && i + 1 < argc) out = argv[++i];
    else if (a == "--delay" && i + 1 < argc) delay = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: probe_cost [--epoll-calls N] [--switches N] [--cpu C] [--delay S] [--out FILE]\n");
      return 2;
    }
  }
  if (calls < 1000 || switches < 1000) {
    std::fprintf(stderr, "probe_cost: --epoll-calls and --switches need at least 1000\n");
    return 2;
  }
  if (delay > 0) std::this_thread::sleep_for(std::chrono::duration<double>(delay));
  pin(cpu);
  const double e = epoll_ns(calls);
  const double g = syscall_ns(calls);  // as many as the epoll calls
  const double s = switch_ns(switches, cpu);
  FILE* f = out.empty() ? stdout : std::fopen(out.c_str(), "w");
  if (!f) return std::fprintf(stderr, "probe_cost: cannot write %s\n", out.c_str()), 1;
  std::fprintf(f, "{\"epoll_ns\": %.1f, \"syscall_ns\": %.1f, \"switch_ns\": %.1f, \"epoll_calls\": %ld, \"switches\": %ld, \"cpu\": %d}\n",
               e, g, s, calls, switches, cpu);
  return f == stdout || std::fclose(f) == 0 ? 0 : 1;
}
