// poller=master: one master-poller thread owns the epoll that watches every fiber socket; the
// carriers' epolls hold only their own eventfd/timerfd. Checked from the kernel's side:
// /proc/self/fdinfo/<epfd> lists the fds each epoll watches, and /proc/self/task/<tid>/syscall
// tells which epoll fd a thread is blocked in.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "runtime/io.hpp"
#include "runtime/runtime.hpp"
#include "tests/runtime/epoll_inspect.hpp"
#include "tests/runtime/support.hpp"

namespace {
using namespace platoon::test;  // rt, Clock, chrono literals, waits, Watchdog: support.hpp

// ---- /proc helpers ----

std::vector<int> open_fds() {
  std::vector<int> out;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return out;
  const int self = dirfd(d);
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::atoi(e->d_name);
    if (fd != self) out.push_back(fd);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> fds_of_kind(const std::string& prefix) {
  std::vector<int> out;
  for (int fd : open_fds())
    if (fd_target(fd).rfind(prefix, 0) == 0) out.push_back(fd);
  return out;
}

std::string set_str(const std::set<int>& s) {
  std::string out = "{";
  for (int x : s) out += (out.size() > 1 ? "," : "") + std::to_string(x) + "=" + fd_target(x);
  return out + "}";
}

const rt::ThreadInfo* thread_named(const std::vector<rt::ThreadInfo>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}

rt::Options master_mode(int carriers = 2) {
  rt::Options o;
  o.carriers = carriers;
  o.poller = rt::PollerMode::master;
  return o;
}

// ---- a small request/response workload whose sockets all park at least once, then stay open
// until `release` so the epolls can be inspected ----

struct Workload {
  static constexpr int kPairs = 4;
  std::atomic<bool> release{false};
  std::atomic<int> holding{0}, errors{0}, not_home{0}, reads{0};
  std::mutex mu;
  std::set<int> socket_fds;
  std::set<const void*> bases;
  std::set<pid_t> tids_after_read;
  std::vector<rt::JoinHandle> hs;

  // Records a socket. Nothing more will arrive on it, so a short read parks and times out: the
  // fd is then certainly registered, even if no earlier call had to wait.
  void note(rt::Socket& s) {
    char c;
    if (s.read(&c, 1, 1ms).err != ETIMEDOUT) errors.fetch_add(1);
    std::lock_guard lk(mu);
    socket_fds.insert(s.fd());
    bases.insert(s.watched_by());
  }
  // Reads exactly n bytes; checks that readiness brought this fiber back to its home carrier.
  bool read_n(rt::Socket& s, char* p, size_t n) {
    size_t got = 0;
    while (got < n) {
      rt::IoResult r = s.read(p + got, n - got, 5s);
      if (!r.ok() || r.n == 0) return false;
      got += static_cast<size_t>(r.n);
      reads.fetch_add(1);
      if (rt::this_fiber::carrier_index() != rt::this_fiber::home_index()) not_home.fetch_add(1);
      std::lock_guard lk(mu);
      tids_after_read.insert(static_cast<pid_t>(gettid()));
    }
    return true;
  }
  void hold() {
    holding.fetch_add(1);
    while (!release.load()) rt::this_fiber::sleep_for(2ms);
  }

  // Listener on carrier 0; per connection a server fiber on carrier (i%2); clients on (i+1)%2.
  // pool: every fiber in the worker pool instead.
  void start(rt::Runtime& r, bool pool) {
    int err = 0;
    auto listener = std::make_shared<rt::Socket>(rt::Socket::listen_tcp("127.0.0.1", 0, false, err));
    if (err) { errors.fetch_add(1); return; }
    const uint16_t port = listener->local_port();
    auto where = [pool](int c) { return pool ? rt::Placement{} : rt::on_carrier(c); };
    hs.push_back(r.spawn_joinable(
        [this, listener, where] {
          for (int i = 0; i < kPairs; ++i) {
            int e = 0;
            rt::Socket s = listener->accept(5s, e);  // parks: clients connect 10 ms later
            if (e) { errors.fetch_add(1); return; }
            auto conn = std::make_shared<rt::Socket>(std::move(s));
            hs_server.push_back(rt::this_fiber::runtime()->spawn_joinable(
                [this, conn] {
                  char buf[8];
                  if (!read_n(*conn, buf, 4)) { errors.fetch_add(1); return; }
                  rt::this_fiber::sleep_for(5ms);  // the client parks in its read meanwhile
                  if (!conn->write_all("pong", 4, 5s).ok()) { errors.fetch_add(1); return; }
                  note(*conn);
                  hold();
                },
                where(i % 2)));
          }
          int e = 0;
          listener->accept(1ms, e);  // parks and times out: the listener is registered
          if (e != ETIMEDOUT) errors.fetch_add(1);
          {
            std::lock_guard lk(mu);
            socket_fds.insert(listener->fd());
            bases.insert(listener->watched_by());
          }
          hold();
        },
        where(0)));
    for (int i = 0; i < kPairs; ++i)
      hs.push_back(r.spawn_joinable(
          [this, port] {
            rt::this_fiber::sleep_for(10ms);
            int e = 0;
            rt::Socket s = rt::Socket::connect_tcp("127.0.0.1", port, 5s, e);
            if (e) { errors.fetch_add(1); return; }
            rt::this_fiber::sleep_for(5ms);  // the server parks in its read meanwhile
            if (!s.write_all("ping", 4, 5s).ok()) { errors.fetch_add(1); return; }
            char buf[8];
            if (!read_n(s, buf, 4) || std::string(buf, 4) != "pong") { errors.fetch_add(1); return; }
            note(s);
            hold();
          },
          where((i + 1) % 2)));
  }
  static constexpr int kHolders = 1 + 2 * kPairs;
  std::vector<rt::JoinHandle> hs_server;  // touched only by the listener fiber until release
};

// ---------------------------------------------------------------------------------------------

TEST(MasterPollerTest, MasterPollerThreadExistsOnlyInMasterMode) {
  Watchdog dog(30s);
  {
    rt::Runtime r(master_mode());
    const auto ts = r.threads();
    const rt::ThreadInfo* m = thread_named(ts, "master-poller");
    ASSERT_NE(m, nullptr);
    EXPECT_GT(m->tid, 0);
    EXPECT_EQ(m->cpu, -1);
    std::ifstream f("/proc/self/task/" + std::to_string(m->tid) + "/comm");
    std::string comm;
    std::getline(f, comm);
    EXPECT_EQ(comm, "master-poller");
    const auto comms = all_task_comms();
    EXPECT_EQ(std::count(comms.begin(), comms.end(), "master-poller"), 1);
    EXPECT_EQ(std::count(comms.begin(), comms.end(), "carrier-0"), 1);
    EXPECT_EQ(std::count(comms.begin(), comms.end(), "carrier-1"), 1);
    EXPECT_EQ(r.options().poller, rt::PollerMode::master);
  }
  {
    rt::Runtime r(carrier_mode());
    EXPECT_EQ(thread_named(r.threads(), "master-poller"), nullptr);
    const auto comms = all_task_comms();
    EXPECT_EQ(std::count(comms.begin(), comms.end(), "master-poller"), 0);
  }
  // Shut down: the thread is gone.
  const auto comms = all_task_comms();
  EXPECT_EQ(std::count(comms.begin(), comms.end(), "master-poller"), 0);
}

// The heart of master mode: fiber sockets (listener, accepted, connected) are in the master
// poller's epoll and in no carrier's.
TEST(MasterPollerTest, FiberSocketsAreWatchedOnlyByTheMasterEpoll) {
  Watchdog dog(30s);
  Workload w;
  const size_t epolls_before = fds_of_kind("anon_inode:[eventpoll]").size();
  rt::Runtime r(master_mode());
  w.start(r, false);
  ASSERT_TRUE(wait_until([&] { return w.holding.load() == Workload::kHolders || w.errors.load(); }, 10s));
  ASSERT_EQ(w.errors.load(), 0);

  const auto ts = r.threads();
  const rt::ThreadInfo* m = thread_named(ts, "master-poller");
  ASSERT_NE(m, nullptr);
  const int master_ep = epoll_fd_of_thread(m->tid, 3s);
  ASSERT_GE(master_ep, 0) << "master-poller never seen in epoll_wait";
  std::map<int, int> carrier_ep;  // carrier index -> its epoll fd
  for (int i = 0; i < r.carrier_count(); ++i) {
    const rt::ThreadInfo* c = thread_named(ts, "carrier-" + std::to_string(i));
    ASSERT_NE(c, nullptr);
    const int ep = epoll_fd_of_thread(c->tid, 3s);
    ASSERT_GE(ep, 0) << "carrier-" << i << " never seen in epoll_wait";
    EXPECT_NE(ep, master_ep);
    carrier_ep[i] = ep;
  }
  EXPECT_NE(carrier_ep[0], carrier_ep[1]);
  // Exactly those epolls exist: one per carrier plus the master's.
  EXPECT_EQ(fds_of_kind("anon_inode:[eventpoll]").size() - epolls_before,
            static_cast<size_t>(r.carrier_count() + 1));

  std::set<int> fiber_fds;
  {
    std::lock_guard lk(w.mu);
    fiber_fds = w.socket_fds;
    EXPECT_EQ(w.bases.size(), 1u) << "every fiber socket is watched by the same loop";
    EXPECT_EQ(w.bases.count(nullptr), 0u) << "every socket parked, so every socket is registered";
  }
  EXPECT_EQ(fiber_fds.size(), static_cast<size_t>(1 + 2 * Workload::kPairs));
  const std::set<int> in_master = epoll_targets(master_ep);
  for (int fd : fiber_fds) {
    EXPECT_EQ(fd_target(fd).rfind("socket:", 0), 0u) << fd;
    EXPECT_EQ(in_master.count(fd), 1u) << "socket fd " << fd << " not in the master epoll "
                                       << set_str(in_master);
  }
  // Every socket of the process that any epoll watches is watched by the master's only.
  for (int fd : fds_of_kind("socket:"))
    for (auto [i, ep] : carrier_ep) EXPECT_EQ(epoll_targets(ep).count(fd), 0u) << "carrier-" << i << " watches socket " << fd;
  for (auto [i, ep] : carrier_ep) {
    const std::set<int> watched = epoll_targets(ep);
    EXPECT_FALSE(watched.empty());
    for (int fd : watched) {
      const std::string kind = fd_target(fd);
      EXPECT_TRUE(kind == "anon_inode:[eventfd]" || kind == "anon_inode:[timerfd]")
          << "carrier-" << i << "'s epoll watches " << fd << " = " << kind;
    }
  }
  // Readiness came from the master, but each reader resumed on its home carrier's thread.
  EXPECT_EQ(w.not_home.load(), 0);
  EXPECT_GE(w.reads.load(), 2 * Workload::kPairs);
  std::set<pid_t> carrier_tids;
  for (const auto& t : ts)
    if (t.name.rfind("carrier-", 0) == 0) carrier_tids.insert(t.tid);
  for (pid_t tid : w.tids_after_read) EXPECT_EQ(carrier_tids.count(tid), 1u) << tid;
  // No callback ran on a carrier's own loop (wakeups are not counted as I/O events).
  for (const auto& s : r.stats()) EXPECT_EQ(s.io_events, 0u) << s.name;

  w.release.store(true);
  for (auto& h : w.hs) ASSERT_TRUE(join_within(h, 5s));
  for (auto& h : w.hs_server) ASSERT_TRUE(join_within(h, 5s));
}

// The control experiment: with poller=carrier the same /proc reading finds the sockets in the
// carriers' epolls, so the check above can tell the two apart.
TEST(MasterPollerTest, ControlCarrierPollerWatchesSocketsInTheFibersCarrier) {
  Watchdog dog(30s);
  Workload w;
  rt::Options o;
  o.carriers = 2;
  const size_t epolls_before = fds_of_kind("anon_inode:[eventpoll]").size();
  rt::Runtime r(o);
  w.start(r, false);
  ASSERT_TRUE(wait_until([&] { return w.holding.load() == Workload::kHolders || w.errors.load(); }, 10s));
  ASSERT_EQ(w.errors.load(), 0);
  const auto ts = r.threads();
  std::set<int> union_watched;
  for (int i = 0; i < 2; ++i) {
    const rt::ThreadInfo* c = thread_named(ts, "carrier-" + std::to_string(i));
    ASSERT_NE(c, nullptr);
    const int ep = epoll_fd_of_thread(c->tid, 3s);
    ASSERT_GE(ep, 0);
    const std::set<int> watched = epoll_targets(ep);
    int sockets = 0;
    for (int fd : watched) sockets += fd_target(fd).rfind("socket:", 0) == 0;
    EXPECT_GT(sockets, 0) << "carrier-" << i << " watches its fibers' sockets";
    union_watched.insert(watched.begin(), watched.end());
  }
  std::lock_guard lk(w.mu);
  for (int fd : w.socket_fds) EXPECT_EQ(union_watched.count(fd), 1u) << fd;
  EXPECT_EQ(w.bases.size(), 2u) << "two carriers, two loops";
  EXPECT_EQ(fds_of_kind("anon_inode:[eventpoll]").size() - epolls_before, 2u) << "no master epoll";
  w.release.store(true);
  for (auto& h : w.hs) ASSERT_TRUE(join_within(h, 5s));
  for (auto& h : w.hs_server) ASSERT_TRUE(join_within(h, 5s));
}

// End to end in master mode: echo of sizes up to several socket buffers, on both carriers; every
// resumption after a read happens on the reader's home carrier.
TEST(MasterPollerTest, EchoWorksAndReadinessIsDeliveredToTheHomeCarrier) {
  Watchdog dog(60s);
  std::atomic<int> errors{0}, not_home{0}, wrong_thread{0}, done_clients{0}, handlers_started{0}, handlers_done{0};
  std::atomic<long long> bytes{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::string first_error;
  auto fail = [&](const std::string& e) {
    errors.fetch_add(1);
    std::lock_guard lk(mu);
    if (first_error.empty()) first_error = e;
  };
  rt::Runtime r(master_mode());
  std::vector<pid_t> carrier_tid;
  for (const auto& t : r.threads())
    if (t.name.rfind("carrier-", 0) == 0) carrier_tid.push_back(t.tid);
  ASSERT_EQ(carrier_tid.size(), 2u);
  auto check_home = [&] {
    const int home = rt::this_fiber::home_index();
    if (rt::this_fiber::carrier_index() != home) not_home.fetch_add(1);
    if (home < 0 || static_cast<pid_t>(gettid()) != carrier_tid[static_cast<size_t>(home)]) wrong_thread.fetch_add(1);
  };
  LISTEN_LOOPBACK(listener, port);
  auto acceptor = r.spawn_joinable(
      [&, listener] {
        int next = 0;
        while (!stop.load()) {
          int e = 0;
          rt::Socket s = listener->accept(20ms, e);
          if (e == ETIMEDOUT) continue;
          if (e) { fail("accept " + rt::errno_message(e)); continue; }
          check_home();
          auto conn = std::make_shared<rt::Socket>(std::move(s));
          rt::this_fiber::runtime()->spawn(
              [&, conn] {
                handlers_started.fetch_add(1);
                struct Done {
                  std::atomic<int>& n;
                  ~Done() { n.fetch_add(1); }
                } done{handlers_done};
                std::vector<char> buf(32 * 1024);
                for (;;) {
                  rt::IoResult rr = conn->read(buf.data(), buf.size(), 10s);
                  check_home();
                  if (!rr.ok()) { fail("server read " + rr.message()); return; }
                  if (rr.n == 0) return;
                  if (!conn->write_all(buf.data(), static_cast<size_t>(rr.n), 10s).ok()) { fail("server write"); return; }
                  check_home();
                }
              },
              rt::on_carrier(next++ % 2));
        }
      },
      rt::on_carrier(0));
  const std::vector<size_t> sizes = {1, 100, 5000, 70000, kSanitized ? 500000u : 2000000u};
  const int kClients = 8;
  std::vector<rt::JoinHandle> hs;
  for (int c = 0; c < kClients; ++c)
    hs.push_back(r.spawn_joinable(
        [&, c] {
          int e = 0;
          rt::Socket s = rt::Socket::connect_tcp("127.0.0.1", port, 5s, e);
          check_home();
          if (e) { fail("connect " + rt::errno_message(e)); return; }
          for (size_t n : sizes) {
            std::vector<char> out(n), in(n);
            for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>((i * 31 + static_cast<size_t>(c)) & 0xff);
            std::atomic<bool> wok{false};
            auto writer = rt::this_fiber::runtime()->spawn_joinable(
                [&] {
                  wok.store(s.write_all(out.data(), n, 10s).ok());
                  check_home();
                },
                rt::here());
            size_t got = 0;
            while (got < n) {
              rt::IoResult rr = s.read(in.data() + got, n - got, 10s);
              check_home();
              if (!rr.ok() || rr.n == 0) { fail("client read " + rr.message()); break; }
              got += static_cast<size_t>(rr.n);
            }
            writer.join();
            if (!wok.load()) fail("client write");
            if (got != n || in != out) { fail("mismatch at size " + std::to_string(n)); return; }
            bytes.fetch_add(static_cast<long long>(n));
          }
          done_clients.fetch_add(1);
        },
        rt::on_carrier(c % 2)));
  for (auto& h : hs) ASSERT_TRUE(join_within(h, 40s));
  stop.store(true);
  ASSERT_TRUE(join_within(acceptor, 5s));
  // Clients closed their sockets: every handler sees EOF and ends (none is left parked).
  EXPECT_TRUE(wait_until([&] { return handlers_done.load() == handlers_started.load(); }, 5s));
  EXPECT_EQ(handlers_started.load(), kClients);
  long long per_client = 0;
  for (size_t n : sizes) per_client += static_cast<long long>(n);
  EXPECT_EQ(errors.load(), 0) << first_error;
  EXPECT_EQ(done_clients.load(), kClients);
  EXPECT_EQ(bytes.load(), per_client * kClients);
  EXPECT_EQ(not_home.load(), 0);
  EXPECT_EQ(wrong_thread.load(), 0);
  for (const auto& s : r.stats()) EXPECT_EQ(s.io_events, 0u) << s.name << ": a carrier loop ran I/O callbacks";
}

TEST(MasterPollerTest, TimersLiveInTheMasterAndStayPrecise) {
  Watchdog dog(30s);
  std::vector<double> us;
  std::atomic<int> not_home{0};
  std::vector<TimedCall> timeouts;
  rt::Runtime r(master_mode());
  const auto ts = r.threads();
  const rt::ThreadInfo* master = thread_named(ts, "master-poller");
  ASSERT_NE(master, nullptr);
  const pid_t master_tid = master->tid;
  auto h = r.spawn_joinable(
      [&] {
        for (int i = 0; i < 200; ++i) {
          const auto t0 = Clock::now();
          rt::this_fiber::sleep_for(200us);
          us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
          if (rt::this_fiber::carrier_index() != 1) not_home.fetch_add(1);
        }
        // Read timeouts in master mode.
        int fds[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return;
        rt::Socket a(fds[0]), b(fds[1]);
        char c;
        // The master's timer fires in its thread, which then wakes the carrier: both may wait
        // for a CPU.
        for (int i = 0; i < kTimingRuns; ++i)
          timeouts.push_back(time_call({master_tid}, [&] { return a.read(&c, 1, 5ms).err; }));
      },
      rt::on_carrier(1));
  ASSERT_TRUE(join_within(h, 15s));
  ASSERT_EQ(us.size(), 200u);
  std::sort(us.begin(), us.end());
  std::printf("  master-mode sleep_for(200us): min %.1f us, median %.1f us, max %.1f us\n", us.front(),
              us[us.size() / 2], us.back());
  EXPECT_GE(us.front(), 200.0);
  EXPECT_LT(us[us.size() / 2], kSanitized ? 2000.0 : 1000.0);
  EXPECT_EQ(not_home.load(), 0);
  ASSERT_EQ(timeouts.size(), static_cast<size_t>(kTimingRuns));
  check_timeouts("master-mode read", 5.0, timeouts);
  for (const auto& s : r.stats()) EXPECT_EQ(s.io_events, 0u) << s.name << ": timer callbacks belong to the master";
}

}  // namespace
