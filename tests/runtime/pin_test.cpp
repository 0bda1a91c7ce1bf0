// Pinning and nice: what the kernel says about each runtime thread (affinity from
// sched_getaffinity(tid), name from /proc/self/task/<tid>/comm, nice from getpriority and
// /proc/self/task/<tid>/stat), compared with Options and Runtime::threads()/warnings().
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <algorithm>
#include <mutex>
#include <sched.h>
#include <set>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "runtime/runtime.hpp"
#include "tests/runtime/support.hpp"
#include "runtime/topology.hpp"

namespace {
using namespace platoon::test;  // rt, Clock, chrono literals, waits, Watchdog: support.hpp

std::vector<int> cpus_of(const cpu_set_t& set) {
  std::vector<int> v;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) v.push_back(i);
  return v;
}

// Affinity of any thread of this process, by tid.
std::vector<int> affinity_of(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(tid, sizeof set, &set) != 0) return {};
  return cpus_of(set);
}

std::vector<int> my_affinity() { return affinity_of(0); }

// Field 19 (nice) of /proc/self/task/<tid>/stat; the name in field 2 may hold spaces.
int stat_nice_of(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos) return 1000;
  std::istringstream rest(line.substr(close + 2));  // starts at field 3 (state)
  std::string tok;
  for (int field = 3; rest >> tok; ++field)
    if (field == 19) return std::stoi(tok);
  return 1000;
}

int getpriority_of(pid_t tid) {
  errno = 0;
  const int p = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  return errno ? 1000 : p;
}

std::string cpus_str(const std::vector<int>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

const rt::ThreadInfo* find_thread(const std::vector<rt::ThreadInfo>& ts, const std::string& prefix) {
  for (const auto& t : ts)
    if (t.name.rfind(prefix, 0) == 0) return &t;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------

TEST(PinTest, AllowedCpusMatchesTheProcessAffinity) {
  const std::vector<int> allowed = my_affinity();
  ASSERT_FALSE(allowed.empty());
  EXPECT_EQ(rt::allowed_cpus(), allowed);
  EXPECT_EQ(rt::current_thread_affinity(), allowed);
}

TEST(PinTest, PinnedCarrierIGetsTheIthAllowedCpuAndSaysSoInItsName) {
  Watchdog dog(30s);
  const std::vector<int> allowed = my_affinity();
  ASSERT_FALSE(allowed.empty());
  rt::Options o;
  o.carriers = static_cast<int>(allowed.size());
  o.pin = true;
  rt::Runtime r(o);
  const auto threads = r.threads();
  ASSERT_EQ(threads.size(), allowed.size());
  EXPECT_TRUE(r.warnings().empty()) << r.warnings().front();
  for (size_t i = 0; i < threads.size(); ++i) {
    const auto& t = threads[i];
    SCOPED_TRACE(t.name);
    const std::string expect_name = "carrier-" + std::to_string(i) + "@cpu" + std::to_string(allowed[i]);
    EXPECT_EQ(t.name, expect_name);
    EXPECT_EQ(t.cpu, allowed[i]);
    ASSERT_GT(t.tid, 0);
    EXPECT_EQ(affinity_of(t.tid), std::vector<int>{allowed[i]})
        << "kernel affinity of " << t.name << " is " << cpus_str(affinity_of(t.tid));
    EXPECT_EQ(comm_of(t.tid), expect_name);
  }
  // And fibers on carrier i really execute on that CPU.
  std::vector<std::atomic<int>> wrong(allowed.size());
  std::vector<rt::JoinHandle> hs;
  for (size_t i = 0; i < allowed.size(); ++i)
    hs.push_back(r.spawn_joinable(
        [&, i] {
          for (int k = 0; k < 50; ++k) {
            if (sched_getcpu() != allowed[i]) wrong[i].fetch_add(1);
            rt::this_fiber::yield();
          }
        },
        rt::on_carrier(static_cast<int>(i))));
  for (auto& h : hs) {
    ASSERT_TRUE(wait_until([&] { return h.done(); }, 10s));
    h.join();
  }
  for (size_t i = 0; i < allowed.size(); ++i) EXPECT_EQ(wrong[i].load(), 0) << "carrier " << i;
}

TEST(PinTest, CarriersBeyondTheAllowedCpusFloatAndAreWarnedAbout) {
  Watchdog dog(30s);
  const std::vector<int> allowed = my_affinity();
  const int n = static_cast<int>(allowed.size()) + 1;
  rt::Options o;
  o.carriers = n;
  o.pin = true;
  rt::Runtime r(o);
  const auto threads = r.threads();
  ASSERT_EQ(static_cast<int>(threads.size()), n);
  for (int i = 0; i < n; ++i) {
    const auto& t = threads[static_cast<size_t>(i)];
    SCOPED_TRACE(t.name);
    if (i < static_cast<int>(allowed.size())) {
      EXPECT_EQ(t.cpu, allowed[static_cast<size_t>(i)]);
      EXPECT_EQ(affinity_of(t.tid), std::vector<int>{allowed[static_cast<size_t>(i)]});
    } else {
      EXPECT_EQ(t.cpu, -1);
      EXPECT_EQ(t.name, "carrier-" + std::to_string(i));
      EXPECT_EQ(comm_of(t.tid), "carrier-" + std::to_string(i));
      EXPECT_EQ(affinity_of(t.tid), allowed) << "a floating carrier may run on every allowed CPU";
    }
  }
  const auto w = r.warnings();
  ASSERT_EQ(w.size(), 1u);
  const std::string last = "carrier-" + std::to_string(n - 1);
  EXPECT_NE(w[0].find(last), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("float"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find(std::to_string(allowed.size()) + " CPU"), std::string::npos) << w[0];
}

// The allowed set is the process's affinity, not the creating thread's: a runtime built on a
// thread restricted to one CPU still pins its carriers to the process's CPUs.
TEST(PinTest, PinUsesTheProcessSetNotTheCreatingThreads) {
  Watchdog dog(30s);
  const std::vector<int> allowed = my_affinity();
  const int only = allowed.back();
  struct Seen {
    bool restricted = false;
    std::vector<rt::ThreadInfo> threads;
    std::vector<std::vector<int>> affinity;
    std::vector<std::string> comm, warnings;
    int cpu_mismatch = -1;
  } seen;
  std::thread child([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(only, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) return;
    seen.restricted = true;
    rt::Options o;
    o.carriers = 2;
    o.pin = true;
    rt::Runtime r(o);
    seen.threads = r.threads();
    for (const auto& t : seen.threads) {
      seen.affinity.push_back(affinity_of(t.tid));
      seen.comm.push_back(comm_of(t.tid));
    }
    seen.warnings = r.warnings();
    std::atomic<int> mismatch{0};
    auto h = r.spawn_joinable(
        [&] {
          for (int k = 0; k < 20; ++k) {
            if (sched_getcpu() != only) mismatch.fetch_add(1);
            rt::this_fiber::yield();
          }
        },
        rt::on_carrier(1));
    if (wait_until([&] { return h.done(); }, 10s)) seen.cpu_mismatch = mismatch.load();
    (void)only;
  });
  child.join();
  ASSERT_TRUE(seen.restricted);
  ASSERT_EQ(seen.threads.size(), 2u);
  // Pinning hands out the process's CPUs (what taskset gave it), whatever the creating thread's
  // own mask: carrier i gets allowed[i].
  for (size_t i = 0; i < 2; ++i) {
    if (i < allowed.size()) {
      EXPECT_EQ(seen.threads[i].cpu, allowed[i]);
      EXPECT_EQ(seen.comm[i], seen.threads[i].name);
      EXPECT_EQ(seen.affinity[i], std::vector<int>{allowed[i]});
    }
  }
  if (allowed.size() >= 2) {
    EXPECT_TRUE(seen.warnings.empty());
  }
  // The test thread itself was not restricted.
  EXPECT_EQ(my_affinity(), allowed);
}

TEST(PinTest, WithoutPinEveryThreadFloatsOverTheWholeSet) {
  Watchdog dog(30s);
  const std::vector<int> allowed = my_affinity();
  for (auto sched : {rt::Scheduler::carrier, rt::Scheduler::pool}) {
    rt::Options o;
    o.scheduler = sched;
    o.carriers = static_cast<int>(allowed.size()) + 1;  // more than CPUs, yet no warning
    rt::Runtime r(o);
    EXPECT_TRUE(r.warnings().empty());
    for (const auto& t : r.threads()) {
      SCOPED_TRACE(t.name);
      EXPECT_EQ(t.cpu, -1);
      EXPECT_EQ(t.name.find('@'), std::string::npos);
      EXPECT_EQ(comm_of(t.tid), t.name);
      EXPECT_EQ(affinity_of(t.tid), allowed);
    }
  }
}

TEST(PinTest, PoolModePinsEventLoopsAndWorkersAndNamesFitComm) {
  Watchdog dog(30s);
  const std::vector<int> allowed = my_affinity();
  rt::Options o;
  o.scheduler = rt::Scheduler::pool;
  o.carriers = static_cast<int>(allowed.size());
  o.workers = static_cast<int>(allowed.size());
  o.pin = true;
  rt::Runtime r(o);
  const auto threads = r.threads();
  ASSERT_EQ(threads.size(), 2 * allowed.size() + 1);
  int pinned = 0;
  for (const auto& t : threads) {
    SCOPED_TRACE(t.name);
    EXPECT_LE(t.name.size(), 15u) << "longer names cannot be a thread name";
    EXPECT_EQ(comm_of(t.tid), t.name);
    if (t.name == "master-poller") {
      EXPECT_EQ(t.cpu, -1);
      EXPECT_EQ(affinity_of(t.tid), allowed);
      continue;
    }
    ASSERT_GE(t.cpu, 0);
    ++pinned;
    EXPECT_NE(t.name.find("@cpu" + std::to_string(t.cpu)), std::string::npos);
    EXPECT_EQ(affinity_of(t.tid), std::vector<int>{t.cpu});
  }
  EXPECT_EQ(pinned, static_cast<int>(2 * allowed.size()));
  EXPECT_TRUE(r.warnings().empty());
  // Event loop i took the i-th allowed CPU (like carrier i); workers are pinned to allowed CPUs.
  for (size_t i = 0; i < allowed.size(); ++i) {
    EXPECT_EQ(threads[i].cpu, allowed[i]) << threads[i].name;
    const auto& w = threads[allowed.size() + i];
    EXPECT_EQ(w.name.rfind("worker-" + std::to_string(i) + "@cpu", 0), 0u) << w.name;
    EXPECT_NE(std::find(allowed.begin(), allowed.end(), w.cpu), allowed.end()) << w.name;
  }
}

TEST(PinTest, NiceKnobsApplyToCarriersWorkersAndThePoller) {
  Watchdog dog(30s);
  const int base = getpriority_of(static_cast<pid_t>(gettid()));
  ASSERT_NE(base, 1000);
  // Raising nice needs no privilege; stay within 19.
  const int carrier_nice = std::min(base + 3, 19);
  const int poller_nice = std::min(base + 6, 19);
  for (auto sched : {rt::Scheduler::carrier, rt::Scheduler::pool}) {
    SCOPED_TRACE(rt::to_string(sched));
    rt::Options o;
    o.scheduler = sched;
    o.carriers = 2;
    o.poller = rt::PollerMode::master;
    o.carrier_nice = carrier_nice;
    o.poller_nice = poller_nice;
    rt::Runtime r(o);
    int checked = 0;
    bool saw_master = false;
    for (const auto& t : r.threads()) {
      SCOPED_TRACE(t.name);
      const int want = t.name == "master-poller" ? poller_nice : carrier_nice;
      saw_master |= t.name == "master-poller";
      EXPECT_EQ(getpriority_of(t.tid), want);
      EXPECT_EQ(stat_nice_of(t.tid), want);
      ++checked;
    }
    EXPECT_TRUE(saw_master);
    EXPECT_EQ(checked, sched == rt::Scheduler::pool ? 5 : 3);
  }
  // The knobs only touch the runtime's threads.
  EXPECT_EQ(getpriority_of(static_cast<pid_t>(gettid())), base);
  // Without the knobs, threads keep the creator's nice.
  rt::Options o;
  o.poller = rt::PollerMode::master;
  rt::Runtime r(o);
  for (const auto& t : r.threads()) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(getpriority_of(t.tid), base);
    EXPECT_EQ(stat_nice_of(t.tid), base);
  }
  const rt::ThreadInfo* m = find_thread(r.threads(), "master-poller");
  EXPECT_NE(m, nullptr);
}

}  // namespace
