// Ground truth for the BPF collector: real kernel, real threads built to behave in a known
// way, and the kernel's own accounting in /proc as the independent reference. The test
// process is the target (pids = {getpid()}); workload threads are found by tid. Needs root.
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/sdt.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <vector>

#include "bpf/collectors/collector.hpp"
#include "bpf/platoon.h"
#include "tests/bpf/fixture.hpp"
#include "tests/bpf/stats_sysctl.hpp"
#include "tests/bpf/workloads.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

using namespace platoon::testing;

int cpu_count() { return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)); }

// Root and BTF or skip, open(), lost() and find(): tests/bpf/fixture.hpp.
using CollectorTest = testing::BpfTest;
using testing::find;
using testing::header_of;
using testing::lost;

// ---- 1 and 6: two spinners sharing one CPU: wait ~ 50%, and = schedstat run_delay ----

struct ShareResult {
  SchedStat proc[2];
  long long vol[2], invol[2];
  snapshot::ThreadSample bpf[2];
  uint64_t window_ns[2];
};

ShareResult run_two_spinners_on_one_cpu(Collector& c, int cpu, uint64_t spin_ns) {
  ShareResult r{};
  SpinStart start;
  std::atomic<uint64_t> deadline{0};
  auto body = [&] {
    pin_to_cpu(cpu);
    start.arrive_and_wait();
    uint64_t expected = 0;
    deadline.compare_exchange_strong(expected, platoon::tests::boottime_ns() + spin_ns);
    spin_until(deadline.load());
  };
  pin_to_cpu(cpu == 0 ? 1 : 0);  // the gtest thread stays off the contended CPU
  Worker a(body), b(body);
  a.wait_parked();
  b.wait_parked();
  const snapshot::Snapshot snap = c.snapshot();
  Worker* w[2] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    r.proc[i] = read_schedstat(w[i]->tid());
    r.vol[i] = read_voluntary(w[i]->tid());
    r.invol[i] = read_nonvoluntary(w[i]->tid());
    const snapshot::ThreadSample* t = find(snap, w[i]->tid());
    EXPECT_TRUE(t) << "no sample for tid " << w[i]->tid();
    if (t) r.bpf[i] = *t;
    r.window_ns[i] = w[i]->end_ns() - w[i]->start_ns();
  }
  unpin();
  return r;
}

void check_share(const ShareResult& r) {
  uint64_t run_sum = 0, window = std::max(r.window_ns[0], r.window_ns[1]);
  for (int i = 0; i < 2; ++i) run_sum += r.bpf[i].run_ns;
  // Both spinners are always runnable: whatever the CPU did not give them was wait. On an
  // otherwise idle CPU each gets half; other load on that CPU (a build running alongside)
  // takes its share from both, so 50% is asserted only when others took under 3%.
  const double others_pct = 100.0 * (double(window) - double(run_sum)) / double(window);
  for (int i = 0; i < 2; ++i) {
    const auto& t = r.bpf[i];
    const double wait_pct = 100.0 * double(t.wait_ns) / double(r.window_ns[i]);
    const double run_pct = 100.0 * double(t.run_ns) / double(r.window_ns[i]);
    std::printf("  tid %u: window %.3f s, run %.1f%%, wait %.1f%% (others used %.1f%% of the CPU); "
                "wait bpf %llu ns vs schedstat %llu ns (%+.3f%%); run bpf %llu vs schedstat %llu (%+.3f%%)\n",
                t.tid, double(r.window_ns[i]) / 1e9, run_pct, wait_pct, others_pct,
                (unsigned long long)t.wait_ns, (unsigned long long)r.proc[i].wait_ns,
                100.0 * (double(t.wait_ns) - double(r.proc[i].wait_ns)) / double(r.proc[i].wait_ns),
                (unsigned long long)t.run_ns, (unsigned long long)r.proc[i].run_ns,
                100.0 * (double(t.run_ns) - double(r.proc[i].run_ns)) / double(r.proc[i].run_ns));
    std::printf("  tid %u: run+wait bpf %.3f ms, schedstat %.3f ms, window %.3f ms\n", t.tid,
                (t.run_ns + t.wait_ns) / 1e6, (r.proc[i].run_ns + r.proc[i].wait_ns) / 1e6, r.window_ns[i] / 1e6);
    EXPECT_NEAR(wait_pct + run_pct, 100.0, 3.0) << "a spinner is always running or waiting";
    if (others_pct < 3.0)
      EXPECT_NEAR(wait_pct, 50.0, 3.0);
    else
      std::printf("  (CPU shared with other load: 50%% not asserted)\n");
    // The same quantity, measured by the kernel (run_delay uses the run-queue clock): within
    // 2% (in practice ~0.1%).
    EXPECT_NEAR(double(t.wait_ns), double(r.proc[i].wait_ns), 0.02 * double(r.proc[i].wait_ns));
    // schedstat's run time is sum_exec_runtime, on the run-queue *task* clock, which leaves out
    // steal time (PARAVIRT_TIME_ACCOUNTING) and IRQ time (IRQ_TIME_ACCOUNTING): on a busy VM
    // it differs from the tracepoint interval by a few percent either way, so run alone is
    // printed, and run + wait (both sides' share of the same wall time) is asserted.
    const double bpf_sum = double(t.run_ns + t.wait_ns), proc_sum = double(r.proc[i].run_ns + r.proc[i].wait_ns);
    EXPECT_NEAR(bpf_sum, proc_sum, 0.02 * proc_sum);
    EXPECT_EQ(t.switches_voluntary, static_cast<uint64_t>(r.vol[i]));
    EXPECT_EQ(t.switches_involuntary, static_cast<uint64_t>(r.invol[i]));
    EXPECT_GT(t.switches_involuntary, 10u) << "spinners sharing a CPU are preempted";
  }
}

TEST_F(CollectorTest, TwoSpinnersOnOneCpuWaitHalfTheTimeLikeSchedstat) {
  if (cpu_count() < 2) GTEST_SKIP() << "needs 2 CPUs";
  auto c = open();
  ASSERT_TRUE(c);
  EXPECT_STREQ(c->attach_mode(), "tp_btf");
  check_share(run_two_spinners_on_one_cpu(*c, 1, 2'000'000'000ull));
}

TEST_F(CollectorTest, RawTpFallbackGivesTheSameNumbers) {
  if (cpu_count() < 2) GTEST_SKIP() << "needs 2 CPUs";
  CollectorOptions o;
  o.force_raw_tp = true;
  auto c = open(o);
  ASSERT_TRUE(c);
  EXPECT_STREQ(c->attach_mode(), "raw_tp");
  check_share(run_two_spinners_on_one_cpu(*c, 1, 1'000'000'000ull));
}

// ---- 2: migrations = se.nr_migrations ----
TEST_F(CollectorTest, MigrationsMatchNrMigrations) {
  if (cpu_count() < 2) GTEST_SKIP() << "needs 2 CPUs";
  auto c = open();
  ASSERT_TRUE(c);
  constexpr int kMoves = 40;
  Worker w([] {
    for (int i = 0; i < kMoves; ++i) {
      pin_to_cpu(i % 2);
      spin_until(platoon::tests::boottime_ns() + 1'000'000);
    }
    // Parks pinned, so no wakeup can move it after the body.
  });
  w.wait_parked();
  const snapshot::Snapshot snap = c->snapshot();
  const long long truth = read_nr_migrations(w.tid());
  const snapshot::ThreadSample* t = find(snap, w.tid());
  ASSERT_TRUE(t);
  std::printf("  migrations: bpf %llu, se.nr_migrations %lld (%d affinity moves)\n",
              (unsigned long long)t->migrations, truth, kMoves);
  EXPECT_EQ(t->migrations, static_cast<uint64_t>(truth));
  EXPECT_GE(t->migrations, static_cast<uint64_t>(kMoves - 1));
  // Both CPUs saw switch-ins.
  ASSERT_GE(t->cpu_switch_ins.size(), 2u);
  EXPECT_GT(t->cpu_switch_ins[0], 0u);
  EXPECT_GT(t->cpu_switch_ins[1], 0u);
}

// ---- 3: epoll batches ----
TEST_F(CollectorTest, EpollBatchHistogramIsExact) {
  auto c = open();
  ASSERT_TRUE(c);
  constexpr int kCycles = 500;
  struct Case {
    int k;
    EpollCall call;
    const char* name;
  };
  const Case cases[] = {{1, EpollCall::wait, "epoll_wait"},   {3, EpollCall::wait, "epoll_wait"},
                        {7, EpollCall::wait, "epoll_wait"},   {5, EpollCall::pwait, "epoll_pwait"},
                        {2, EpollCall::pwait2, "epoll_pwait2"}};
  std::vector<std::unique_ptr<Worker>> workers;
  for (const Case& cs : cases)
    workers.push_back(std::make_unique<Worker>([cs] { epoll_cycles(cs.k, kCycles, cs.call); }));
  for (auto& w : workers) w->wait_parked();
  const snapshot::Snapshot snap = c->snapshot();
  for (size_t i = 0; i < workers.size(); ++i) {
    const Case& cs = cases[i];
    const snapshot::ThreadSample* t = find(snap, workers[i]->tid());
    ASSERT_TRUE(t) << cs.name;
    std::printf("  %s K=%d: io_cycles %llu, hist[%d] = %llu, io_events %llu\n", cs.name, cs.k,
                (unsigned long long)t->io_cycles, cs.k, (unsigned long long)t->io_events_hist[cs.k],
                (unsigned long long)t->io_events);
    EXPECT_EQ(t->io_cycles, uint64_t{kCycles}) << cs.name;
    EXPECT_EQ(t->io_events, uint64_t(kCycles) * cs.k) << cs.name;
    for (int s = 0; s < snapshot::kBatchSlots; ++s)
      EXPECT_EQ(t->io_events_hist[s], s == cs.k ? uint64_t{kCycles} : 0u) << cs.name << " slot " << s;
  }
}

// ---- 4: voluntary and involuntary switches = /proc status ----
TEST_F(CollectorTest, SwitchCountsMatchProcStatus) {
  auto c = open();
  ASSERT_TRUE(c);
  Worker sleeper([] {
    for (int i = 0; i < 300; ++i) usleep(1000);
  });
  sleeper.wait_parked();
  const snapshot::Snapshot snap = c->snapshot();
  const snapshot::ThreadSample* t = find(snap, sleeper.tid());
  ASSERT_TRUE(t);
  const long long vol = read_voluntary(sleeper.tid()), invol = read_nonvoluntary(sleeper.tid());
  std::printf("  sleeper: voluntary bpf %llu / proc %lld, involuntary bpf %llu / proc %lld, "
              "switch-ins %llu, wakeups %llu\n",
              (unsigned long long)t->switches_voluntary, vol, (unsigned long long)t->switches_involuntary, invol,
              (unsigned long long)t->switch_ins, (unsigned long long)t->wakeups);
  EXPECT_EQ(t->switches_voluntary, static_cast<uint64_t>(vol));
  EXPECT_EQ(t->switches_involuntary, static_cast<uint64_t>(invol));
  EXPECT_GE(t->switches_voluntary, 300u);
  // Every switch-out but the last (the park) was followed by a switch-in, and the first
  // switch-in had no switch-out before it: equal counts. Not exactly: on this kernel a switch
  // away from some tasks (seen: the VM agent's threads) occasionally never reaches the
  // sched_switch tracepoint (perf record shows the same gap), so a switch-in (and sometimes
  // its wakeup) can be missing: up to 2% tolerated. Switch-outs match /proc exactly above.
  const uint64_t outs = t->switches_voluntary + t->switches_involuntary;
  EXPECT_LE(t->switch_ins, outs);
  EXPECT_GE(double(t->switch_ins), 0.98 * double(outs));
  // The involuntary side (spinners sharing a CPU) is checked in the share tests above.
}

// ---- 5: the ring buffer carries one switch record per switch ----
TEST_F(CollectorTest, RingBufferSwitchRecordsMatchStats) {
  CollectorOptions o;
  o.record_events = true;
  auto c = open(o);
  ASSERT_TRUE(c);
  Worker sleeper([] {
    for (int i = 0; i < 100; ++i) usleep(500);
  });
  sleeper.wait_parked();
  const snapshot::Snapshot snap = c->snapshot();
  const uint32_t tid = static_cast<uint32_t>(sleeper.tid());
  uint64_t outs = 0, ins = 0, wakeups = 0, wakeup_news = 0, wakings = 0, other = 0;
  std::vector<std::pair<uint64_t, bool>> stamps;  // the thread's switch records: stamp, is a switch-out
  auto sink = [&](const void* data, size_t size) {
    const std::optional<platoon_event_header> h = header_of(data, size);
    if (!h) return;
    if (h->type == PLATOON_EV_SWITCH && size >= sizeof(platoon_ev_switch)) {
      platoon_ev_switch e;
      std::memcpy(&e, data, sizeof e);
      if (e.h.tid == tid) ++outs;
      if (e.next_tid == tid) ++ins;
      if (e.h.tid == tid) stamps.emplace_back(e.h.ts_ns, true);
      if (e.next_tid == tid) stamps.emplace_back(e.h.ts_ns, false);
    } else if ((h->type == PLATOON_EV_WAKEUP || h->type == PLATOON_EV_WAKEUP_NEW) && h->tid == tid) {
      ++wakeups;
      if (h->type == PLATOON_EV_WAKEUP_NEW) ++wakeup_news;
    } else if (h->type == PLATOON_EV_WAKING && h->tid == tid) {
      ++wakings;
    } else {
      ++other;
    }
  };
  // Everything written before the snapshot is in the buffer: drain it.
  while (c->poll_events(0, sink) > 0) {
  }
  const snapshot::ThreadSample* t = find(snap, sleeper.tid());
  ASSERT_TRUE(t);
  std::printf("  records for tid %u: %llu switch-outs (stats %llu), %llu switch-ins (stats %llu), "
              "%llu wakeups (stats %llu), %llu wakings; lost %llu\n",
              tid, (unsigned long long)outs, (unsigned long long)(t->switches_voluntary + t->switches_involuntary),
              (unsigned long long)ins, (unsigned long long)t->switch_ins, (unsigned long long)wakeups,
              (unsigned long long)t->wakeups, (unsigned long long)wakings, (unsigned long long)lost(snap));
  EXPECT_EQ(outs, t->switches_voluntary + t->switches_involuntary);
  EXPECT_EQ(ins, t->switch_ins);
  EXPECT_EQ(wakeups, t->wakeups);
  // Every wakeup of a sleeping thread is preceded by its waking; the thread's start is a
  // wakeup_new, which has none. A usleep whose timer fired before the thread blocked wakes
  // nothing, so the count can fall a little short of the 100 sleeps.
  EXPECT_EQ(wakings, wakeups - wakeup_news);
  EXPECT_GE(wakings, 90u);
  // Each CPU hands its records over in batches, so the ring does not deliver one thread's
  // records in order across CPUs; sorted by stamp (what the readers do) they tell its story:
  // switch-ins and switch-outs alternate, but where a switch-in never reached the tracepoint
  // (this kernel loses one now and then: the stats miss it too, see sched.bpf.h).
  std::stable_sort(stamps.begin(), stamps.end(), [](auto& a, auto& b) { return a.first < b.first; });
  size_t breaks = 0;
  for (size_t i = 1; i < stamps.size(); ++i) breaks += stamps[i].second == stamps[i - 1].second;
  const uint64_t missing = outs > ins ? outs - ins : ins - outs;
  EXPECT_LE(breaks, missing) << "of " << stamps.size() << " switch records";
  EXPECT_EQ(lost(c->snapshot()), 0u);
}

// ---- wakers: a futex handoff is booked as WOKEN_BY the waking thread ----
TEST_F(CollectorTest, WokenByNamesTheWakingThread) {
  auto c = open();
  ASSERT_TRUE(c);
  std::mutex mu;
  std::condition_variable cv;
  int turn = 0;
  constexpr int kRounds = 200;
  pid_t ping_tid = 0, pong_tid = 0;
  // Takes the turns of one parity (ping the even ones, pong the odd), handing each to the other.
  auto player = [&](pid_t* tid, int parity) {
    return [&, tid, parity] {
      *tid = this_tid();
      for (int i = 0; i < kRounds; ++i) {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return turn % 2 == parity; });
        ++turn;
        cv.notify_all();
      }
    };
  };
  {
    Worker ping(player(&ping_tid, 0));
    Worker pong(player(&pong_tid, 1));
    ping.wait_parked();
    pong.wait_parked();
    const snapshot::Snapshot snap = c->snapshot();
    uint64_t pong_by_ping = 0, pong_by_irq = 0;
    for (const auto& p : snap.pairs) {
      if (p.tid != static_cast<uint32_t>(pong_tid) || p.kind != snapshot::PairKind::woken_by) continue;
      if (p.other_tid == static_cast<uint32_t>(ping_tid)) pong_by_ping += p.count;
      if (p.other_tid == 0) pong_by_irq += p.count;
    }
    const snapshot::ThreadSample* t = find(snap, pong_tid);
    ASSERT_TRUE(t);
    // The kernel's count of pong's sleeps: every one but the last (into the park, where pong
    // still sleeps) was ended by a wakeup. How many there were is the kernel's business (on a
    // busy machine the two can hand over without sleeping); that each is counted and named is
    // the collector's.
    const long long vol = read_voluntary(pong_tid);
    ASSERT_GE(vol, 1) << "no /proc status for pong";
    const uint64_t woken = static_cast<uint64_t>(vol - 1);
    std::printf("  pong woken by ping %llu times, by interrupts %llu, wakeups %llu; %lld voluntary switches "
                "(proc)\n",
                (unsigned long long)pong_by_ping, (unsigned long long)pong_by_irq, (unsigned long long)t->wakeups, vol);
    // Its start (wakeup_new) counts too; a wakeup that finds pong not yet asleep counts without
    // a sleep, so a few more are fine.
    EXPECT_GE(t->wakeups, woken + 1);
    EXPECT_LE(t->wakeups, woken + 6);
    // All but the few around pong's start (the Worker's start-up lock, woken by this thread)
    // name ping.
    EXPECT_GE(pong_by_ping + 3, woken);
    EXPECT_LE(pong_by_ping, t->wakeups);
    EXPECT_LE(pong_by_irq, 2u);
  }
}

// ---- USDT: the runtime's probe names, fired from this binary ----
// The same provider and probe names as runtime/probes.hpp (without semaphores here).
__attribute__((noinline)) void fire_runtime_probes(long depth, long ran, long ns) {
  STAP_PROBE4(platoon, drain, 0, depth, ran, ns);
  STAP_PROBE3(platoon, steal, 0, 1, 2);
}

TEST_F(CollectorTest, UsdtProbesAreBookedOnTheFiringThread) {
  auto c = open();
  ASSERT_TRUE(c);
  bool attached = false;
  for (const auto& n : c->notes()) {
    std::printf("  note: %s\n", n.c_str());
    if (n.find("usdt: attached 2 probes") != std::string::npos) attached = true;
  }
  ASSERT_TRUE(attached);
  Worker w([] {
    for (int i = 0; i < 100; ++i) fire_runtime_probes(i % 10, 3, 1000);
    fire_runtime_probes(200, 3, 1000);
  });
  w.wait_parked();
  const snapshot::Snapshot snap = c->snapshot();
  const snapshot::ThreadSample* t = find(snap, w.tid());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->drains, 101u);
  EXPECT_EQ(t->drain_depth_sum, 10u * 45u + 200u);
  for (int d = 0; d < 10; ++d) EXPECT_EQ(t->drain_depth_hist[d], 10u) << d;
  EXPECT_EQ(t->drain_depth_hist[64], 1u);
  EXPECT_EQ(t->drain_fibers_run, 303u);
  EXPECT_EQ(t->drain_ns, 101'000u);
  EXPECT_EQ(t->steals, 101u);
  EXPECT_EQ(t->stolen_fibers, 202u);
  EXPECT_EQ(t->polls, 0u);  // the poll probe is not attached (cost)
}

// ---- in-flight time, seeding, exit ----
TEST_F(CollectorTest, ThreadRunningAtAttachShowsItsTimeWithoutSwitching) {
  if (cpu_count() < 2) GTEST_SKIP() << "needs 2 CPUs";
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> spinning_since{0};
  Worker w([&] {
    pin_to_cpu(1);
    spinning_since = platoon::tests::boottime_ns();
    spin_until(UINT64_MAX, &stop);
  });
  // A failed ASSERT returns early: the spinner must still stop before ~Worker joins it.
  struct StopOnExit {
    std::atomic<bool>& flag;
    ~StopOnExit() { flag = true; }
  } stop_on_exit{stop};
  while (!spinning_since) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  pin_to_cpu(0);
  auto c = open();
  ASSERT_TRUE(c);
  const uint64_t t0 = platoon::tests::boottime_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const snapshot::Snapshot snap = c->snapshot();
  stop = true;
  const snapshot::ThreadSample* t = find(snap, w.tid());
  ASSERT_TRUE(t) << "the task walk should have seeded the running thread";
  const double elapsed = double(snap.ts_ns - t0);
  std::printf("  seeded spinner: run %.1f ms + wait %.1f ms over %.1f ms since open, %llu switches\n",
              t->run_ns / 1e6, t->wait_ns / 1e6, elapsed / 1e6,
              (unsigned long long)(t->switches_voluntary + t->switches_involuntary));
  // Counted from the attach instant (a little before t0): run + wait cover the window.
  // Not all of it: an interval whose switch-in the kernel did not trace is dropped (see
  // SwitchCountsMatchProcStatus), and this CPU is shared with whatever else runs here.
  EXPECT_GE(double(t->run_ns + t->wait_ns), 0.85 * elapsed);
  EXPECT_LE(double(t->run_ns + t->wait_ns), elapsed + 200e6);
  w.wait_parked();
}

TEST_F(CollectorTest, ExitedThreadIsReportedOnceThenDropped) {
  auto c = open();
  ASSERT_TRUE(c);
  pid_t tid = 0;
  std::thread([&] {
    tid = this_tid();
    usleep(2000);
  }).join();
  const snapshot::Snapshot first = c->snapshot();
  const snapshot::ThreadSample* t = find(first, tid);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->exited);
  EXPECT_GE(t->switches_voluntary, 1u);
  EXPECT_EQ(find(c->snapshot(), tid), nullptr);
}

// ---- --comm: a process found in /proc at open and one started later (exec hook) ----
TEST_F(CollectorTest, CommMatchesExistingAndNewProcesses) {
  const std::string name = "plt_comm_" + std::to_string(getpid() % 100000);
  const std::string bin = "/tmp/" + name;
  std::filesystem::copy_file("/bin/sleep", bin, std::filesystem::copy_options::overwrite_existing);
  chmod(bin.c_str(), 0755);
  auto spawn = [&](const char* secs) {
    const pid_t pid = fork();
    if (pid == 0) {
      execl(bin.c_str(), name.c_str(), secs, static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  };
  // Alive until killed below: a process gone before the open is not "found in /proc at open",
  // and under ThreadSanitizer, late in the suite, a one-second sleep did not outlast the open.
  const pid_t before = spawn("30");
  // Wait until the child has exec'd (its comm is the new name).
  for (int i = 0; i < 400; ++i) {
    std::ifstream in("/proc/" + std::to_string(before) + "/comm");
    std::string comm;
    std::getline(in, comm);
    if (comm == name) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CollectorOptions o;
  o.comm = name;
  auto c = open(o);
  ASSERT_TRUE(c);
  const pid_t after = spawn("0.3");
  int status = 0;
  waitpid(after, &status, 0);
  const snapshot::Snapshot snap = c->snapshot();
  bool saw_before = false, saw_after = false;
  for (const auto& t : snap.threads) {
    if (t.pid == static_cast<uint32_t>(before)) saw_before = true;
    if (t.pid == static_cast<uint32_t>(after)) {
      saw_after = true;
      EXPECT_EQ(t.comm, name);
      EXPECT_GE(t.switches_voluntary, 1u);
    }
  }
  EXPECT_TRUE(saw_before) << "found in /proc at open";
  EXPECT_TRUE(saw_after) << "added by the exec hook";
  kill(before, SIGKILL);
  waitpid(before, &status, 0);
  std::filesystem::remove(bin);
}

TEST_F(CollectorTest, OpenErrorsAreOneLine) {
  CollectorOptions o;
  o.pids = {999'999'9};
  OpenError kind = OpenError::none;
  std::string message;
  EXPECT_FALSE(Collector::open(o, &kind, &message));
  EXPECT_EQ(kind, OpenError::no_such_process);
  EXPECT_EQ(message, "no such process: 9999999");
}

// ---- overhead figure: mean ns per sched_switch program run (needs bpf_stats_enabled) ----
TEST_F(CollectorTest, ReportsProgramRunTimes) {
  const testing::StatsSysctl on(1);
  ASSERT_TRUE(on.written()) << "cannot write kernel.bpf_stats_enabled";
  {
    auto c = open();
    ASSERT_TRUE(c);
    if (cpu_count() >= 2) run_two_spinners_on_one_cpu(*c, 1, 500'000'000ull);
    Worker sleeper([] {
      for (int i = 0; i < 500; ++i) usleep(200);
    });
    sleeper.wait_parked();
    for (const auto& p : c->program_stats()) {
      if (p.run_cnt == 0) continue;
      std::printf("  %-20s %10llu runs, mean %.0f ns, %llu recursion misses\n", p.name.c_str(),
                  (unsigned long long)p.run_cnt, double(p.run_time_ns) / double(p.run_cnt),
                  (unsigned long long)p.recursion_misses);
      if (p.name == "switch_btf") {
        EXPECT_GT(p.run_cnt, 1000u);
      }
    }
  }
}

}  // namespace
}  // namespace platoon::tests
