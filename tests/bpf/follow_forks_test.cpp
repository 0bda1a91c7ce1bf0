// Following forks: a shell target that starts a multi-threaded program.
// With follow_forks the grandchild's threads are in the snapshot with the switch counts the
// kernel keeps in /proc/<pid>/task/<tid>/status; without it they are not there at all.
#include <sys/wait.h>

#include <csignal>
#include <filesystem>

#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "bpf/collectors/system.hpp"
#include "tests/bpf/fixture.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::testing {
namespace {

using namespace platoon::testing;

// Four threads that sleep 100 times and spin a little (so both switch kinds occur), then park
// on an Event; the main thread writes the pid once they are parked and blocks on stdin.
constexpr const char* kScript = R"(
import os, sys, threading, time
parked = threading.Barrier(5)
done = threading.Event()
def work(i):
    for _ in range(100):
        time.sleep(0.001)
        t = time.time() + 0.0005
        while time.time() < t: pass
    parked.wait()
    done.wait()
ts = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(4)]
for t in ts: t.start()
parked.wait()
time.sleep(0.1)
with open(sys.argv[1] + '.tmp', 'w') as f: f.write(str(os.getpid()))
os.rename(sys.argv[1] + '.tmp', sys.argv[1])
sys.stdin.read()
)";

struct Launched {
  pid_t sh = -1;
  int go_fd = -1, stdin_fd = -1;
};

// sh -c 'python3 SCRIPT OUT; true' (the `; true` keeps sh from exec'ing python: it forks),
// held before exec until go() so the collector is attached first.
Launched launch(const std::string& script, const std::string& out) {
  int go[2], in[2];
  if (pipe(go) != 0 || pipe(in) != 0) std::abort();
  Launched l;
  l.sh = fork();
  if (l.sh == 0) {
    close(go[1]);
    close(in[1]);
    dup2(in[0], 0);
    char c;
    if (read(go[0], &c, 1) != 1) _exit(126);
    const std::string cmd = "python3 " + script + " " + out + "; true";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(go[0]);
  close(in[0]);
  l.go_fd = go[1];
  l.stdin_fd = in[1];
  return l;
}

class FollowForksTest : public BpfTest {
 public:
  using BpfTest::open;
};

void run(FollowForksTest& test, bool follow) {
  const std::string dir = "/tmp/plt-follow-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string script = dir + "/mt.py", out = dir + "/pid";
  std::filesystem::remove(out);
  std::ofstream(script) << kScript;
  Launched l = launch(script, out);
  CollectorOptions o;
  o.pids = {l.sh};
  o.follow_forks = follow;
  auto c = test.open(o);
  ASSERT_TRUE(c);
  ASSERT_EQ(write(l.go_fd, "g", 1), 1);
  pid_t py = 0;
  for (int i = 0; i < 1000 && !py; ++i) {
    std::ifstream in(out);
    if (!(in >> py)) py = 0;
    if (!py) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(py, 0) << "the python grandchild never got ready";
  c->refresh();
  const snapshot::Snapshot snap = c->snapshot();
  // The independent truth, read at the same quiet moment (every python thread is blocked).
  std::map<pid_t, std::pair<long long, long long>> truth;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(py) + "/task")) {
    const pid_t tid = std::stoi(e.path().filename());
    const std::string status = e.path().string() + "/status";
    truth[tid] = {read_keyed(status, "voluntary_ctxt_switches"), read_keyed(status, "nonvoluntary_ctxt_switches")};
  }
  close(l.stdin_fd);
  close(l.go_fd);
  int st = 0;
  waitpid(l.sh, &st, 0);
  std::filesystem::remove_all(dir);

  size_t found = 0;
  for (const auto& [tid, vi] : truth) {
    const snapshot::ThreadSample* t = find(snap, tid);
    if (!t) continue;
    ++found;
    std::printf("  python tid %d (%s): voluntary bpf %llu / proc %lld, involuntary bpf %llu / proc %lld\n", tid,
                t->comm.c_str(), (unsigned long long)t->switches_voluntary, vi.first,
                (unsigned long long)t->switches_involuntary, vi.second);
    EXPECT_EQ(t->pid, static_cast<uint32_t>(py));
    EXPECT_EQ(t->switches_voluntary, static_cast<uint64_t>(vi.first)) << tid;
    EXPECT_EQ(t->switches_involuntary, static_cast<uint64_t>(vi.second)) << tid;
  }
  if (follow) {
    EXPECT_EQ(found, truth.size()) << "every thread of the grandchild is followed";
    EXPECT_GE(found, 5u);
  } else {
    EXPECT_EQ(found, 0u) << "without follow_forks the grandchild is not a target";
  }
}

TEST_F(FollowForksTest, ThreadsOfAProgramAShellStartsAreFollowedWithProcSwitchCounts) { run(*this, true); }

TEST_F(FollowForksTest, WithoutFollowForksOnlyTheShellIsWatched) { run(*this, false); }

// The targets' existing descendants are added at open, as well as what they fork later.
TEST_F(FollowForksTest, ExistingChildrenAreAddedAtOpen) {
  const pid_t sh = fork();
  if (sh == 0) {
    execl("/bin/sh", "sh", "-c", "sleep 30 & sleep 30; true", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::vector<pid_t> kids;
  for (int i = 0; i < 200 && kids.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    kids = descendants_of({sh});
  }
  ASSERT_EQ(kids.size(), 2u);
  CollectorOptions o;
  o.pids = {sh};
  o.follow_forks = true;
  auto c = open(o);
  ASSERT_TRUE(c);
  const snapshot::Snapshot snap = c->snapshot();
  for (pid_t k : kids) EXPECT_TRUE(find(snap, k)) << "child " << k << " seeded at open";
  kill(sh, SIGKILL);
  for (pid_t k : kids) kill(k, SIGKILL);
  int st;
  waitpid(sh, &st, 0);
}

}  // namespace
}  // namespace platoon::tests::testing
