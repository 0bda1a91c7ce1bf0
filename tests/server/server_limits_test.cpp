// platoon-server under pressure: slow clients are cut off at the request timeout, connections
// past --max-connections are shed, and fibers that cannot get a stack cost their connection, not
// the server. Bounds on time are generous (noisy 2-core machines): they only separate "at the
// request timeout" from "at the idle timeout".
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "server/common/fruits.hpp"
#include "tests/server/fake_backend.hpp"
#include "tests/server/http_client.hpp"
#include "tests/server/handoff_args.hpp"
#include "tests/server/subprocess.hpp"

using namespace platoon;
using platoon::test::Child;
using platoon::test::Conn;
using platoon::test::FakeBackend;
using Clock = std::chrono::steady_clock;

namespace {
using platoon::test::expected_body;
using platoon::test::server_args;

using platoon::test::metric;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// True while the child process has not exited (it is not reaped here, so Child::stop still works).
bool alive(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0;
}

// Retries GET /fruits until it answers the fruits (a slot frees once the server has seen closes).
bool fruits_answered_within(int port, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    Conn c(port);
    const auto m = c.get("/fruits");
    if (m.status == 200 && m.body == expected_body()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The test opens hundreds of sockets at once.
void raise_own_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

// Sets an environment variable for the children started while it lives (Child passes environ).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

const std::vector<std::string> kSlowClientFlags{"--idle-timeout-ms", "5000", "--request-timeout-ms", "300"};
// Opens 1.5 x CAP connections to PORT into HELD and counts those the server closes: polled until
// the excess is closed (the server may be slow to accept on a busy machine; a sanitized one
// accepts a few hundred a second) or 10 s pass, then a while longer to see that no kept
// connection goes too. -1 when a connection could not be made.
int closed_past_the_cap(int port, int cap, std::vector<std::unique_ptr<Conn>>& held) {
  for (int i = 0; i < cap * 3 / 2; ++i) {
    held.push_back(std::make_unique<Conn>(port));
    if (!held.back()->ok()) return -1;
  }
  std::vector<bool> closed(held.size(), false);
  auto count_closed = [&] {
    int n = 0;
    for (size_t i = 0; i < held.size(); ++i) {
      if (!closed[i]) closed[i] = held[i]->closed_within(0);
      n += closed[i] ? 1 : 0;
    }
    return n;
  };
  const auto t0 = Clock::now();
  while (count_closed() < cap * 3 / 2 - cap && seconds_since(t0) < 10) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::printf("  %d connections past the cap of %d closed in %.2f s\n", count_closed(), cap, seconds_since(t0));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return count_closed();
}

}  // namespace

// The case: "GET /fr" and silence. The parser has consumed the bytes, yet the request
// has started, so the request timeout (0.3 s), not the idle one (5 s), closes it.
TEST(ServerLimits, PartialHeadIsClosedAtTheRequestTimeout) {
  FakeBackend backend;
  START_SERVER(srv, port, server_args(backend.port(), kSlowClientFlags));
  Conn c(port);
  ASSERT_TRUE(c.ok());
  const auto t0 = Clock::now();
  ASSERT_TRUE(c.send_all("GET /fr"));
  EXPECT_TRUE(c.closed_within(8000));
  const double took = seconds_since(t0);
  EXPECT_GE(took, 0.25) << "closed before the request timeout";
  EXPECT_LE(took, 2.5) << "closed after " << took << " s: the idle timeout (5 s), not the request timeout, applied";
  EXPECT_GE(metric(port, "platoon_request_timeouts_total"), 1);
}

// A client trickling a byte every 150 ms never lets a read time out; the deadline runs from the
// request's first byte all the same.
TEST(ServerLimits, TricklingClientIsClosedAtTheRequestTimeout) {
  FakeBackend backend;
  START_SERVER(srv, port, server_args(backend.port(), kSlowClientFlags));
  Conn c(port);
  ASSERT_TRUE(c.ok());
  const std::string request = "GET /fruits HTTP/1.1\r\nHost: test\r\nUser-Agent: trickle\r\n\r\n";
  const auto t0 = Clock::now();
  bool closed = false;
  for (size_t i = 0; i < request.size() && !closed; ++i) {
    if (!c.send_all(request.substr(i, 1))) { closed = true; break; }
    closed = c.closed_within(150);  // waits the 150 ms unless the server closes first
  }
  const double took = seconds_since(t0);
  ASSERT_TRUE(closed) << "the whole request trickled in over " << took << " s without the server closing";
  EXPECT_GE(took, 0.25);
  EXPECT_LE(took, 2.5) << "closed after " << took << " s";
}

// The request timeout covers a request in progress only: a keep-alive connection idle for longer
// than it between requests is still served, and a prompt request after it too.
TEST(ServerLimits, IdleKeepAliveOutlivesTheRequestTimeout) {
  FakeBackend backend;
  START_SERVER(srv, port, server_args(backend.port(), kSlowClientFlags));
  Conn c(port);
  auto m = c.get("/fruits");
  EXPECT_EQ(m.status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  m = c.get("/fruits");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.body, expected_body());
}

// The default cap is derived and printed at start.
TEST(ServerLimits, DefaultConnectionCapIsPrinted) {
  FakeBackend backend;
  Child srv("platoon-server", server_args(backend.port()));
  ASSERT_GT(srv.wait_port(), 0) << srv.output();
  const auto at = srv.output().find("max connections ");
  ASSERT_NE(at, std::string::npos) << srv.output();
  EXPECT_GT(std::stol(srv.output().substr(at + 16)), 0);
  EXPECT_NE(srv.output().find("fd limit"), std::string::npos);
  EXPECT_NE(srv.output().find("vm.max_map_count"), std::string::npos);
}

// 1.5x --max-connections held open: the excess is closed at once and counted, the server lives,
// and once clients leave it answers /fruits again.
TEST(ServerLimits, ConnectionsPastTheCapAreShed) {
  raise_own_fd_limit();
  FakeBackend backend;
  constexpr int kCap = 40;
  START_SERVER(srv, port, server_args(backend.port(), {"--max-connections", std::to_string(kCap)}));
  EXPECT_NE(srv.output().find("max connections 40 "), std::string::npos) << srv.output();
  std::vector<std::unique_ptr<Conn>> held;
  EXPECT_EQ(closed_past_the_cap(port, kCap, held), kCap / 2) << "connections beyond the cap are closed at once, the others kept";
  EXPECT_TRUE(alive(srv.pid()));
  held.clear();
  EXPECT_TRUE(fruits_answered_within(port, std::chrono::milliseconds(5000)));
  EXPECT_GE(metric(port, "platoon_connections_rejected_total"), kCap / 2);
  EXPECT_EQ(srv.stop(), 0);
}

// No --max-connections: the cap comes from the fd limit (here lowered with prlimit(1) to 400,
// less the 128 held back and 3 x 8 backend connections: 248). 1.5x that many clients: the excess
// is closed at once rather than left in the backlog behind EMFILE, and /fruits is still answered.
TEST(ServerLimits, DerivedCapFollowsTheFdLimit) {
  const std::filesystem::path prlimit = "/usr/bin/prlimit";
  if (!std::filesystem::exists(prlimit)) GTEST_SKIP() << "needs prlimit(1)";
  raise_own_fd_limit();
  FakeBackend backend;
  const std::string via = prlimit.string();
  std::vector<std::string> args{"--nofile=400", test::bin_dir() + "/platoon-server"};
  for (auto& a : server_args(backend.port(), {"--backend-connections", "8", "--carriers", "2"})) args.push_back(a);
  Child srv(via, args);
  const int port = srv.wait_port();
  ASSERT_GT(port, 0) << srv.output();
  const auto at = srv.output().find("max connections ");
  ASSERT_NE(at, std::string::npos) << srv.output();
  const int cap = std::stoi(srv.output().substr(at + 16));
  // The server raises its own fd limit where it may (root with CAP_SYS_RESOURCE lifts the hard one).
  if (srv.output().find("(fd limit 400,") == std::string::npos) GTEST_SKIP() << "the server raised the fd limit: " << srv.output();
  const auto maps_at = srv.output().find("vm.max_map_count ");
  const long maps = maps_at == std::string::npos ? 0 : std::atol(srv.output().c_str() + maps_at + 17);
  EXPECT_EQ(cap, maps > 2048 ? std::min(248L, (maps - 2048) / 4) : 248L) << srv.output();
  std::vector<std::unique_ptr<Conn>> held;
  EXPECT_EQ(closed_past_the_cap(port, cap, held), cap * 3 / 2 - cap) << "the connections past the derived cap are closed at once, the others kept";
  ASSERT_TRUE(alive(srv.pid()));
  held.clear();
  EXPECT_TRUE(fruits_answered_within(port, std::chrono::milliseconds(5000)));
  EXPECT_GE(metric(port, "platoon_connections_rejected_total"), cap / 2);
  EXPECT_EQ(srv.stop(), 0);
}

// The crash: connection fibers that cannot get a stack. vm.max_map_count is system-wide
// (lowering it would fail other processes on a shared machine), so these tests cap the server's
// address space instead (RLIMIT_AS, through prlimit(1)): its idle size, measured on a probe run,
// plus room for about kStacks fiber stacks. Then 3x that many clients.
namespace {
constexpr long kStacks = 120;
constexpr long kStackKb = 64 + 4;  // the default fiber stack plus its guard page
const std::filesystem::path kPrlimit = "/usr/bin/prlimit";

// glibc reserves 64 MB of address space per malloc arena and makes arenas on contention, so two
// runs of the server differ by whole arenas, far more than the room left for stacks: with one
// arena the probe's idle size is the capped server's. Set while the servers start.
struct OneMallocArena {
  ScopedEnv arena{"MALLOC_ARENA_MAX", "1"};
};

// The sanitizer runtime mapped into a process ("libtsan", "libasan"), or "" (its /proc maps).
std::string sanitizer_runtime(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);)
    for (const char* lib : {"libtsan", "libasan"})
      if (line.find(lib) != std::string::npos) return lib;
  return "";
}

std::string skip_reason(const std::string& sanitizer) {
  return "platoon-server runs under a sanitizer (" + sanitizer +
         " in its maps): an address-space cap cannot shrink the shadow memory it reserves";
}

// Null when the server does not start, or when it runs under a sanitizer (`*sanitizer` says
// which): ThreadSanitizer and AddressSanitizer reserve terabytes of shadow address space
// (VmSize about 124 TiB for an idle TSan server), and a cap near the idle size stops the
// sanitizer itself ("Program is run with limited virtual address space, which wouldn't work
// with ThreadSanitizer"), never reaching the server's stacks and mallocs.
std::unique_ptr<Child> start_address_capped(int backend_port, std::string* sanitizer) {
  long idle_kb = 0;
  {
    Child probe("platoon-server", server_args(backend_port));
    const int port = probe.wait_port();
    if (port <= 0 || !fruits_answered_within(port, std::chrono::milliseconds(3000))) return nullptr;
    *sanitizer = sanitizer_runtime(probe.pid());
    if (!sanitizer->empty()) return nullptr;
    std::ifstream status("/proc/" + std::to_string(probe.pid()) + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmSize:", 0) == 0) idle_kb = std::stol(line.substr(7));
  }
  if (idle_kb <= 0) return nullptr;
  const long limit_bytes = (idle_kb + kStacks * kStackKb) * 1024;
  // prlimit sets the limit and execs the server, which keeps the pid.
  const std::string via = kPrlimit.string();
  std::vector<std::string> args{"--as=" + std::to_string(limit_bytes), test::bin_dir() + "/platoon-server"};
  for (auto& a : server_args(backend_port)) args.push_back(a);
  return std::make_unique<Child>(via, args);
}

// A platoon-server under an address-space cap beside a fake backend, or the reason a test must
// skip (`skip`): no prlimit(1), or a sanitizer's shadow memory. `heap_pad` (MALLOC_TOP_PAD_, or
// null) is set while the server starts.
struct CappedServer {
  FakeBackend backend;
  std::unique_ptr<Child> srv;
  std::string skip;
  int port = 0;

  explicit CappedServer(const char* heap_pad) {
    if (!std::filesystem::exists(kPrlimit)) {
      skip = "needs prlimit(1)";
      return;
    }
    raise_own_fd_limit();
    std::string sanitizer;
    {
      OneMallocArena one;
      std::optional<ScopedEnv> pad;
      if (heap_pad) pad.emplace("MALLOC_TOP_PAD_", heap_pad);
      srv = start_address_capped(backend.port(), &sanitizer);
    }
    if (!sanitizer.empty()) skip = skip_reason(sanitizer);
    if (srv && skip.empty()) port = srv->wait_port();
  }
  std::string output() const { return srv ? srv->output() : "the server did not start"; }
};

// Opens 3x kStacks connections and holds them a second; returns how many the server dropped.
int hold_three_times_the_room(int port) {
  std::vector<std::unique_ptr<Conn>> held;
  for (long i = 0; i < kStacks * 3; ++i) {
    held.push_back(std::make_unique<Conn>(port));
    if (!held.back()->ok()) break;
  }
  // Let the server accept them all; give it every chance to die.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  int dropped = 0;
  for (auto& c : held) dropped += c->closed_within(20) ? 1 : 0;
  return dropped;
}
}  // namespace

TEST(ServerLimits, FibersWithoutStacksCostTheirConnectionNotTheServer) {
  // The heap keeps 4 MB in hand from its first growth on, as under vm.max_map_count, where the
  // heap grows in place while new mappings fail: the cap starves stacks, not malloc.
  CappedServer capped("4194304");
  if (!capped.skip.empty()) GTEST_SKIP() << capped.skip;
  ASSERT_GT(capped.port, 0) << capped.output();
  const auto& srv = capped.srv;
  const int port = capped.port;
  const int dropped = hold_three_times_the_room(port);
  ASSERT_TRUE(alive(srv->pid())) << "the server died under stack pressure";
  EXPECT_GT(dropped, 0) << "no connection lacked a stack: the address-space cap did not bite";
  EXPECT_TRUE(fruits_answered_within(port, std::chrono::milliseconds(5000)));
  EXPECT_GT(metric(port, "platoon_connection_failures_total"), 0);
  EXPECT_TRUE(alive(srv->pid()));
  EXPECT_EQ(srv->stop(), 0);
}

// Without heap in hand the stacks take the last of the address space and malloc fails too, in
// the request's own work (parsing the backend's JSON once wrote through RapidJSON's unchecked
// null: SIGSEGV). Requests may fail then; the server must not.
TEST(ServerLimits, MallocFailingCostsRequestsNotTheServer) {
  CappedServer capped(nullptr);
  if (!capped.skip.empty()) GTEST_SKIP() << capped.skip;
  ASSERT_GT(capped.port, 0) << capped.output();
  const auto& srv = capped.srv;
  const int port = capped.port;
  EXPECT_GT(hold_three_times_the_room(port), 0) << "the address-space cap did not bite";
  ASSERT_TRUE(alive(srv->pid())) << "the server died under stack pressure";
  int answered = 0;
  for (int i = 0; i < 20; ++i) {
    Conn c(port);
    const auto m = c.get("/fruits");
    answered += m.status == 200 && m.body == expected_body() ? 1 : 0;
  }
  EXPECT_TRUE(alive(srv->pid())) << "the server died when malloc failed (" << answered << " of 20 answered)";
  EXPECT_EQ(srv->stop(), 0);
}
