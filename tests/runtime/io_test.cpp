// Fiber-blocking I/O over loopback TCP: echo of many sizes (up to well past the socket buffers),
// EOF, read/write/accept timeouts, refused connects, and sleep_for precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "runtime/io.hpp"
#include "runtime/runtime.hpp"
#include "tests/runtime/support.hpp"

namespace {
using namespace platoon::test;  // rt, Clock, chrono literals, waits, Watchdog: support.hpp

// Aborts the whole run if a test outlives `limit`: a hang must be a failure, never a stuck run.

// Polls `pred` from an OS thread until it holds or `timeout` passes.

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::vector<char> pattern(size_t n, uint32_t seed) {
  std::vector<char> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    v[i] = static_cast<char>(x >> 24);
  }
  return v;
}

// Echo server: a listener fiber that accepts until `stop`, and one handler fiber per
// connection (alternating carriers) that echoes until EOF.
struct EchoServer {
  std::shared_ptr<rt::Socket> listener;
  uint16_t port = 0;
  std::atomic<bool> stop{false};
  std::atomic<int> accepted{0}, finished{0}, errors{0}, eofs{0};
  std::atomic<long long> echoed{0};
  std::mutex err_mu;
  std::string first_error;
  rt::JoinHandle listener_done;

  void note_error(const std::string& e) {
    errors.fetch_add(1);
    std::lock_guard lk(err_mu);
    if (first_error.empty()) first_error = e;
  }

  bool start(rt::Runtime& r, int listener_carrier) {
    int err = 0;
    listener = std::make_shared<rt::Socket>(rt::Socket::listen_tcp("127.0.0.1", 0, false, err));
    if (err != 0 || !listener->valid()) return false;
    port = listener->local_port();
    listener_done = r.spawn_joinable(
        [this] {
          int next = 0;
          while (!stop.load()) {
            int aerr = 0;
            rt::Socket s = listener->accept(20ms, aerr);
            if (aerr == ETIMEDOUT) continue;
            if (aerr != 0) {
              note_error("accept: " + rt::errno_message(aerr));
              continue;
            }
            accepted.fetch_add(1);
            auto conn = std::make_shared<rt::Socket>(std::move(s));
            rt::this_fiber::runtime()->spawn([this, conn] { handle(*conn); },
                                             rt::on_carrier(next++ % 2));
          }
        },
        rt::on_carrier(listener_carrier));
    return true;
  }

  void handle(rt::Socket& s) {
    std::vector<char> buf(64 * 1024);
    for (;;) {
      rt::IoResult r = s.read(buf.data(), buf.size(), 10s);
      if (!r.ok()) {
        note_error("server read: " + r.message());
        break;
      }
      if (r.n == 0) {
        eofs.fetch_add(1);
        break;
      }
      rt::IoResult w = s.write_all(buf.data(), static_cast<size_t>(r.n), 10s);
      if (!w.ok()) {
        note_error("server write: " + w.message());
        break;
      }
      echoed.fetch_add(r.n);
    }
    s.close();
    finished.fetch_add(1);
  }
};

// A Socket must not outlive the Runtime whose loop watches it (closing it frees its event in
// that loop's event_base): declared after the Runtime, this closes the socket first.
struct CloseBeforeRuntimeEnds {
  std::shared_ptr<rt::Socket>& s;
  ~CloseBeforeRuntimeEnds() {
    if (s) s->close();
  }
};

// Reads exactly `n` bytes (or fails).
bool read_exact(rt::Socket& s, char* p, size_t n, std::string& why) {
  size_t got = 0;
  while (got < n) {
    rt::IoResult r = s.read(p + got, n - got, 10s);
    if (!r.ok()) {
      why = "read: " + r.message();
      return false;
    }
    if (r.n == 0) {
      why = "unexpected EOF after " + std::to_string(got) + " of " + std::to_string(n);
      return false;
    }
    got += static_cast<size_t>(r.n);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------

TEST(IoTest, EchoManyClientsManySizesAcrossTwoCarriers) {
  Watchdog dog(60s);
  EchoServer server;
  std::atomic<int> clients_ok{0}, eof_seen{0};
  std::atomic<long long> client_bytes{0};
  std::mutex err_mu;
  std::vector<std::string> client_errors;
  std::atomic<int> carriers_used_mask{0};
  rt::Runtime r(carrier_mode());
  CloseBeforeRuntimeEnds close_listener{server.listener};
  ASSERT_TRUE(server.start(r, 0));

  const std::vector<size_t> sizes = {1, 7, 1000, 4096, 16384, 65536, 300000};
  constexpr size_t kBig = 4 * 1024 * 1024;  // well past loopback socket buffers: EAGAIN on write
  const int kClients = kSanitized ? 12 : 32;
  const int kBigClients = 2;
  long long expected = 0;
  for (size_t s : sizes) expected += static_cast<long long>(s);
  expected *= kClients;
  expected += static_cast<long long>(kBig) * kBigClients;

  auto fail = [&](const std::string& e) {
    std::lock_guard lk(err_mu);
    client_errors.push_back(e);
  };

  std::vector<rt::JoinHandle> hs;
  const auto t0 = Clock::now();
  for (int c = 0; c < kClients + kBigClients; ++c) {
    const bool big = c >= kClients;
    hs.push_back(r.spawn_joinable(
        [&, c, big] {
          carriers_used_mask.fetch_or(1 << rt::this_fiber::carrier_index());
          int err = 0;
          rt::Socket s = rt::Socket::connect_tcp("127.0.0.1", server.port, 5s, err);
          if (err != 0) {
            fail("connect: " + rt::errno_message(err));
            return;
          }
          std::vector<size_t> my_sizes = big ? std::vector<size_t>{kBig} : sizes;
          for (size_t n : my_sizes) {
            const std::vector<char> out = pattern(n, static_cast<uint32_t>(c * 1000 + n));
            std::vector<char> in(n);
            // A second fiber writes while this one reads: with a 4 MB message neither side
            // could finish if one fiber did both.
            std::atomic<int> werr{-1};
            rt::JoinHandle writer = rt::this_fiber::runtime()->spawn_joinable(
                [&] { werr.store(s.write_all(out.data(), out.size(), 10s).err); }, rt::here());
            std::string why;
            const bool ok = read_exact(s, in.data(), n, why);
            writer.join();
            if (werr.load() != 0) {
              fail("client write: " + rt::errno_message(werr.load()));
              return;
            }
            if (!ok) {
              fail("client " + std::to_string(c) + " size " + std::to_string(n) + ": " + why);
              return;
            }
            if (in != out) {
              fail("client " + std::to_string(c) + ": echoed data differs at size " + std::to_string(n));
              return;
            }
            client_bytes.fetch_add(static_cast<long long>(n));
          }
          // Half-close: the server sees EOF, echoes nothing more and closes; we see EOF too.
          if (::shutdown(s.fd(), SHUT_WR) != 0) {
            fail("shutdown failed");
            return;
          }
          char b;
          rt::IoResult e = s.read(&b, 1, 5s);
          if (!e.ok() || e.n != 0) {
            fail("expected EOF, got n=" + std::to_string(e.n) + " " + e.message());
            return;
          }
          eof_seen.fetch_add(1);
          clients_ok.fetch_add(1);
        },
        rt::on_carrier(c % 2)));
  }
  for (auto& h : hs) ASSERT_TRUE(join_within(h, 40s)) << "a client fiber did not finish";
  const double elapsed = ms_since(t0);
  // The server's handlers finish when they see EOF.
  EXPECT_TRUE(wait_until([&] { return server.finished.load() == kClients + kBigClients; }, 5s));
  server.stop.store(true);
  ASSERT_TRUE(join_within(server.listener_done, 5s));

  {
    std::lock_guard lk(err_mu);
    EXPECT_TRUE(client_errors.empty()) << client_errors.size() << " client errors, first: "
                                       << (client_errors.empty() ? "" : client_errors.front());
  }
  EXPECT_EQ(server.errors.load(), 0) << server.first_error;
  EXPECT_EQ(clients_ok.load(), kClients + kBigClients);
  EXPECT_EQ(eof_seen.load(), kClients + kBigClients);
  EXPECT_EQ(server.accepted.load(), kClients + kBigClients);
  EXPECT_EQ(server.eofs.load(), kClients + kBigClients);
  EXPECT_EQ(client_bytes.load(), expected);
  EXPECT_EQ(server.echoed.load(), expected);
  EXPECT_EQ(carriers_used_mask.load(), 3);
  std::printf("  echo: %d clients, %lld bytes each way in %.0f ms\n", kClients + kBigClients, expected, elapsed);
}

// One connection between two fibers of `r`: `server(socket, accept_error)` on carrier 1 with
// the accepted socket, `client(socket, connect_error)` on carrier 0 with the connected one.
// False when either is not done in time (the client 20 s, then the server 5 s).
template <class Server, class Client>
bool run_pair(rt::Runtime& r, rt::Socket& listener, uint16_t port, Server server, Client client) {
  auto srv = r.spawn_joinable(
      [&] {
        int e = 0;
        rt::Socket s = listener.accept(5s, e);
        server(s, e);
      },
      rt::on_carrier(1));
  auto cli = r.spawn_joinable(
      [&] {
        int e = 0;
        rt::Socket s = rt::Socket::connect_tcp("127.0.0.1", port, 5s, e);
        client(s, e);
      },
      rt::on_carrier(0));
  return join_within(cli, 20s) && join_within(srv, 5s);
}

TEST(IoTest, PeerCloseGivesEofAndWriteAfterResetFails) {
  Watchdog dog(30s);
  std::atomic<int> read_n{-2}, read_err{-1}, accepted{0};
  std::atomic<int> write_err{0};
  rt::Runtime r(carrier_mode());
  LISTEN_LOOPBACK(listener, port);
  // Server on carrier 1: accept, then close at once.
  ASSERT_TRUE(run_pair(
      r, *listener, port,
      [&](rt::Socket& s, int e) {
        if (e == 0) accepted.fetch_add(1);
        rt::this_fiber::sleep_for(20ms);  // let the client park in read first
        s.close();
      },
      [&](rt::Socket& s, int e) {
        if (e != 0) { read_err.store(e); return; }
        char buf[16];
        rt::IoResult res = s.read(buf, sizeof buf, 5s);  // parks until the peer's FIN
        read_n.store(static_cast<int>(res.n));
        read_err.store(res.err);
        // The peer is gone: writing eventually fails with EPIPE or ECONNRESET, never hangs.
        std::vector<char> big(1 << 20, 'x');
        rt::IoResult w{0, 0};
        for (int i = 0; i < 20 && w.ok(); ++i) w = s.write_all(big.data(), big.size(), 2s);
        write_err.store(w.err);
      }));
  EXPECT_EQ(accepted.load(), 1);
  EXPECT_EQ(read_err.load(), 0) << rt::errno_message(read_err.load());
  EXPECT_EQ(read_n.load(), 0) << "read after the peer closed must return 0 (EOF)";
  EXPECT_TRUE(write_err.load() == EPIPE || write_err.load() == ECONNRESET)
      << "write to a closed peer: " << rt::errno_message(write_err.load());
}

TEST(IoTest, ReadTimeoutReturnsEtimedoutAfterTheTimeout) {
  Watchdog dog(30s);
  // Several runs of a short timeout (their median says how precise the timer is: 5 ms is no
  // whole number of 4 ms ticks, so a coarse clock shows), then longer ones once (each must fire
  // on its own timer, not wait for a later one).
  std::vector<std::chrono::milliseconds> timeouts;
  for (int i = 0; i < kTimingRuns; ++i) timeouts.push_back(5ms);
  timeouts.insert(timeouts.end(), {20ms, 100ms, 250ms});
  std::vector<TimedCall> runs(timeouts.size());
  std::atomic<bool> late_data_ok{false};
  std::atomic<double> late_data_ms{-1};
  std::atomic<bool> release{false};
  rt::Runtime r(carrier_mode());
  LISTEN_LOOPBACK(listener, port);
  // Server: accepts, keeps quiet while the client times out, then sends one byte late.
  ASSERT_TRUE(run_pair(
      r, *listener, port,
      [&](rt::Socket& s, int e) {
        if (e != 0) return;
        while (!release.load()) rt::this_fiber::sleep_for(1ms);
        rt::this_fiber::sleep_for(30ms);
        s.write_all("z", 1, 1s);
        char b;
        s.read(&b, 1, 5s);  // wait for the client to hang up
      },
      [&](rt::Socket& s, int e) {
        if (e != 0) return;
        char b;
        for (size_t i = 0; i < timeouts.size(); ++i)
          runs[i] = time_call({}, [&] { return s.read(&b, 1, timeouts[i]).err; });
        // Data arriving before the timeout wins; the (disarmed) timer must not fire later.
        release.store(true);
        const auto t0 = Clock::now();
        rt::IoResult res = s.read(&b, 1, 2s);
        late_data_ms.store(ms_since(t0));
        late_data_ok.store(res.ok() && res.n == 1 && b == 'z');
        // A stale timer from an earlier read must not cut this sleep short.
        const auto t1 = Clock::now();
        rt::this_fiber::sleep_for(50ms);
        if (ms_since(t1) < 50.0) late_data_ok.store(false);
      }));
  for (size_t i = 0; i < timeouts.size();) {
    size_t j = i;
    while (j < timeouts.size() && timeouts[j] == timeouts[i]) ++j;
    check_timeouts("read", static_cast<double>(timeouts[i].count()),
                   std::vector<TimedCall>(runs.begin() + i, runs.begin() + j));
    i = j;
  }
  EXPECT_TRUE(late_data_ok.load());
  EXPECT_GE(late_data_ms.load(), 25.0);
  EXPECT_LT(late_data_ms.load(), 1000.0);
}

TEST(IoTest, IoResultTimedOutAndMessages) {
  rt::IoResult t{-1, ETIMEDOUT};
  EXPECT_TRUE(t.timed_out());
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "timed out");
  rt::IoResult ok{5, 0};
  EXPECT_TRUE(ok.ok());
  EXPECT_FALSE(ok.timed_out());
  EXPECT_EQ(ok.message(), "ok");
  EXPECT_EQ(rt::IoResult({-1, ECONNREFUSED}).message(), std::string(std::strerror(ECONNREFUSED)));
}

TEST(IoTest, WriteTimeoutWhenPeerDoesNotRead) {
  Watchdog dog(30s);
  std::atomic<int> werr{-1};
  std::atomic<long long> wn{-1};
  TimedCall fill;
  std::vector<TimedCall> short_runs;
  std::atomic<bool> done{false};
  rt::Runtime r(carrier_mode());
  LISTEN_LOOPBACK(listener, port);
  ASSERT_TRUE(run_pair(
      r, *listener, port,
      [&](rt::Socket&, int) {
        while (!done.load()) rt::this_fiber::sleep_for(2ms);  // never reads
      },
      [&](rt::Socket& s, int e) {
        if (e != 0) { werr.store(-e); done.store(true); return; }
        std::vector<char> big(64 << 20, 'y');  // far more than both socket buffers
        fill = time_call({}, [&] {
          rt::IoResult w = s.write_all(big.data(), big.size(), 100ms);
          wn.store(w.n);
          return w.err;
        });
        werr.store(fill.err);
        // More than the buffers can take again (the kernel frees some of them meanwhile): each
        // write waits out its whole timeout.
        for (int i = 0; i < kTimingRuns; ++i)
          short_runs.push_back(time_call({}, [&] { return s.write_all(big.data(), big.size(), 5ms).err; }));
        done.store(true);
      }));
  EXPECT_EQ(werr.load(), ETIMEDOUT) << rt::errno_message(werr.load());
  EXPECT_GT(wn.load(), 0) << "write_all reports the bytes it did write";
  EXPECT_LT(wn.load(), 64ll << 20);
  check_timeouts("write", 100.0, {fill});
  check_timeouts("write", 5.0, short_runs);
}

TEST(IoTest, ConnectToClosedPortIsRefused) {
  Watchdog dog(30s);
  // A bound socket that does not listen: the kernel answers SYNs with RST, and nobody else can
  // take the port meanwhile.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  const uint16_t port = ntohs(sa.sin_port);

  std::atomic<int> errs[2] = {-1, -1};
  std::atomic<bool> valid[2] = {true, true};
  std::atomic<double> ms[2] = {-1, -1};
  {
    rt::Runtime r(carrier_mode());
    std::vector<rt::JoinHandle> hs;
    for (int c = 0; c < 2; ++c)
      hs.push_back(r.spawn_joinable(
          [&, c] {
            const auto t0 = Clock::now();
            int e = 0;
            rt::Socket s = rt::Socket::connect_tcp("127.0.0.1", port, 2s, e);
            ms[c].store(ms_since(t0));
            errs[c].store(e);
            valid[c].store(s.valid());
          },
          rt::on_carrier(c)));
    for (auto& h : hs) ASSERT_TRUE(join_within(h, 10s));
  }
  ::close(holder);
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(errs[c].load(), ECONNREFUSED) << rt::errno_message(errs[c].load());
    EXPECT_FALSE(valid[c].load());
    EXPECT_LT(ms[c].load(), 1000.0) << "refusal must not wait for the connect timeout";
  }
}

TEST(IoTest, AcceptTimeout) {
  Watchdog dog(30s);
  std::vector<TimedCall> runs;
  std::atomic<int> avalid{0};
  std::atomic<int> later_err{-1};
  rt::Runtime r(carrier_mode());
  LISTEN_LOOPBACK(listener, port);
  auto h = r.spawn_joinable(
      [&] {
        int e = 0;
        for (int i = 0; i < kTimingRuns; ++i) {
          runs.push_back(time_call({}, [&] {
            rt::Socket s = listener->accept(5ms, e);
            avalid.fetch_add(s.valid());
            return e;
          }));
        }
        // The listener still works after a timeout: a client connecting now is accepted.
        auto client = rt::this_fiber::runtime()->spawn_joinable(
            [port] {
              int ce = 0;
              rt::Socket c = rt::Socket::connect_tcp("127.0.0.1", port, 2s, ce);
              rt::this_fiber::sleep_for(50ms);
            },
            rt::on_carrier(1));
        rt::Socket s2 = listener->accept(3s, e);
        later_err.store(s2.valid() ? e : -2);
        client.join();  // no fiber is left parked when the runtime shuts down
      },
      rt::on_carrier(0));
  ASSERT_TRUE(join_within(h, 10s));
  EXPECT_EQ(avalid.load(), 0);
  check_timeouts("accept", 5.0, runs);
  EXPECT_EQ(later_err.load(), 0);
}

TEST(IoTest, SleepForIsPrecise) {
  Watchdog dog(30s);
  constexpr int kSleeps = 300;
  const auto d = 200us;
  std::vector<double> us0, us1;
  rt::Runtime r(carrier_mode());
  auto sleeper = [&](std::vector<double>& out) {
    out.reserve(kSleeps);
    for (int i = 0; i < kSleeps; ++i) {
      const auto t0 = Clock::now();
      rt::this_fiber::sleep_for(d);
      out.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
  };
  auto h0 = r.spawn_joinable([&] { sleeper(us0); }, rt::on_carrier(0));
  auto h1 = r.spawn_joinable([&] { sleeper(us1); }, rt::on_carrier(1));
  ASSERT_TRUE(join_within(h0, 15s));
  ASSERT_TRUE(join_within(h1, 15s));
  for (auto* v : {&us0, &us1}) {
    ASSERT_EQ(v->size(), static_cast<size_t>(kSleeps));
    std::vector<double> s = *v;
    std::sort(s.begin(), s.end());
    const double median = s[s.size() / 2];
    std::printf("  sleep_for(200us): min %.1f us, median %.1f us, p90 %.1f us, max %.1f us\n", s.front(),
                median, s[s.size() * 9 / 10], s.back());
    EXPECT_GE(s.front(), 200.0) << "a sleep woke early";
    // libevent's coarse clock would give ~1-4 ms; the precise timer gives tens of us of lateness.
    EXPECT_LT(median, kSanitized ? 2000.0 : 1000.0);
  }
}

TEST(IoTest, ZeroAndNegativeSleepYield) {
  Watchdog dog(30s);
  std::atomic<int> turns{0};
  std::atomic<bool> interleaved{false};
  rt::Runtime r(carrier_mode());
  // Two fibers in one carrier's run queue: sleep_for(0) and sleep_for(<0) must yield to the
  // other (not block, not spin). `a` is spawned from `b` with here() so both are in the local
  // run queue (a fiber still in the inbox is only picked up at the next drain).
  auto b = r.spawn_joinable(
      [&] {
        auto a = rt::this_fiber::runtime()->spawn_joinable(
            [&] {
              for (int i = 0; i < 100; ++i) {
                turns.fetch_add(1);
                rt::this_fiber::sleep_for(0ns);
              }
            },
            rt::here());
        const int seen = turns.load();
        for (int i = 0; i < 100; ++i) rt::this_fiber::sleep_for(-1ms);
        if (turns.load() > seen) interleaved.store(true);
        a.join();
      },
      rt::on_carrier(0));
  ASSERT_TRUE(join_within(b, 5s));
  EXPECT_EQ(turns.load(), 100);
  EXPECT_TRUE(interleaved.load());
}

}  // namespace
