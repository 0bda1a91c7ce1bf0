// The collector's small /proc and /sys readers: kernel cpu lists (where flush_stages runs), and
// whether a thread is running now (a snapshot counts an open run only then), live on threads of
// this process whose state the test controls.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "bpf/collectors/system.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests {
namespace {

TEST(SystemReaders, CpuListsAsTheKernelWritesThem) {
  EXPECT_EQ(parse_cpu_list("0"), (std::vector<int>{0}));
  EXPECT_EQ(parse_cpu_list("0-3"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_cpu_list("0-1,4,6-7"), (std::vector<int>{0, 1, 4, 6, 7}));
  for (const char* bad : {"", "-1", "3-1", "0,", "a", "0-", "0-1x"})
    EXPECT_TRUE(parse_cpu_list(bad).empty()) << "'" << bad << "'";
  const std::vector<int> online = read_online_cpus();
  ASSERT_FALSE(online.empty());
  EXPECT_EQ(online.size(), static_cast<size_t>(sysconf(_SC_NPROCESSORS_ONLN)));
}

TEST(SystemReaders, ThreadRunningFollowsTheThreadsState) {
  std::atomic<pid_t> spinner{0}, sleeper{0};
  std::atomic<bool> stop{false};
  std::thread a([&] {
    spinner = static_cast<pid_t>(syscall(SYS_gettid));
    while (!stop) {
    }
  });
  std::thread b([&] {
    sleeper = static_cast<pid_t>(syscall(SYS_gettid));
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  while (!spinner || !sleeper) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // A spinner is R (running, or runnable behind another task); a thread that sleeps 5 ms at a
  // time is S at almost every look: most of 20 looks say so. The looks are 3 ms apart, so that
  // one wakeup that had to wait for a CPU (a busy machine) is not seen by all of them at once.
  int spinner_running = 0, sleeper_running = 0;
  for (int i = 0; i < 20; ++i) {
    spinner_running += thread_running(getpid(), spinner);
    sleeper_running += thread_running(getpid(), sleeper);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  stop = true;
  a.join();
  b.join();
  EXPECT_EQ(spinner_running, 20);
  EXPECT_LE(sleeper_running, 5);
  // Gone or never there: the benefit of the doubt.
  EXPECT_TRUE(thread_running(getpid(), 0x3fffff));
}

}  // namespace
}  // namespace platoon::tests
