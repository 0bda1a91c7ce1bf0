// platoon-mock end to end: the real binary (next to this test binary) as a subprocess, talked to
// over loopback with plain blocking sockets.
#include <gtest/gtest.h>

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "server/common/fruits.hpp"
#include "server/common/http_parser.hpp"
#include "tests/server/http_client.hpp"
#include "tests/server/subprocess.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using platoon::http::Message;
using platoon::http::Parser;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The mock as a child process (stdout and stderr on one pipe), waited for until it listens.
struct MockProcess : platoon::test::Child {
  explicit MockProcess(const std::vector<std::string>& args) : Child("platoon-mock", args, Stderr::merged) {
    wait_port();
  }
  // Sends `sig` and returns the exit code (128+signal when killed, -1 when it would not die in 5 s).
  int stop(int sig = SIGTERM) { return Child::stop(std::chrono::seconds(5), sig); }
};

// The mock suites' client: a Conn (5 s timeouts) whose request and response are separate,
// checkable steps.
class Client : public platoon::test::Conn {
 public:
  using Conn::Conn;
  bool get(const std::string& path, const std::string& extra_headers = "") {
    return send_all("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers + "\r\n");
  }
  // One response into `out` (its bytes into raw); false on EOF, timeout or a malformed response.
  bool read_response(Message& out, std::string* raw = nullptr) {
    out = Conn::read_response(5000, raw);
    return out.status != 0;
  }
  // Sends `request` on an open connection, then reads the first response: all must succeed.
  bool ask(const std::string& request, Message& out, std::string* raw = nullptr) {
    return ok() && send_all(request) && read_response(out, raw);
  }
  // get() then read_response(): both must succeed.
  bool fetch(Message& out, const std::string& path, const std::string& extra_headers = "") {
    return get(path, extra_headers) && read_response(out);
  }
};

// Starts the mock; ASSERTs it came up. Tests then stop it and check it exits 0.
#define START_MOCK(var, ...)                                                      \
  MockProcess var(std::vector<std::string>{"--port", "0", __VA_ARGS__});          \
  ASSERT_TRUE(var.started()) << "platoon-mock did not start: " << var.output()

// A mock with one thread that thinks think_ms per request, and a client connected to it.
#define START_MOCK_AND_CONNECT(mock, client, think_ms)                \
  START_MOCK(mock, "--threads", "1", "--think-time-ms", think_ms); \
  Client client(mock.port());                                       \
  ASSERT_TRUE(client.ok())

void expect_fruits(const Message& m) {
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.content_type, "application/json");
  EXPECT_EQ(m.body, platoon::fruits::backend_body());
}

TEST(MockBasic, FruitsBodyAndHeaders) {
  START_MOCK_AND_CONNECT(mock, c, "0");
  ASSERT_TRUE(c.get("/fruits"));
  Message m;
  std::string raw;
  ASSERT_TRUE(c.read_response(m, &raw));
  expect_fruits(m);
  EXPECT_TRUE(m.keep_alive);
  EXPECT_EQ(raw.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << raw;
  EXPECT_NE(raw.find("\r\nContent-Type: application/json\r\n"), std::string::npos) << raw;
  EXPECT_NE(raw.find("\r\nContent-Length: " + std::to_string(platoon::fruits::backend_body().size()) + "\r\n"),
            std::string::npos)
      << raw;
  EXPECT_NE(raw.find("\r\nConnection: keep-alive\r\n"), std::string::npos) << raw;
  // A query string does not change the route.
  ASSERT_TRUE(c.fetch(m, "/fruits?x=1"));
  expect_fruits(m);
  // Health.
  ASSERT_TRUE(c.fetch(m, "/health"));
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.body, "ok");
  EXPECT_EQ(mock.stop(), 0) << mock.output();
  EXPECT_NE(mock.output().find("listening on 127.0.0.1:" + std::to_string(mock.port())), std::string::npos);
}

TEST(MockBasic, ThinkTimeRespected) {
  START_MOCK_AND_CONNECT(mock, c, "20");
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    Message m;
    ASSERT_TRUE(c.fetch(m, "/fruits"));
    const double ms = ms_since(t0);
    expect_fruits(m);
    EXPECT_GE(ms, 20.0);
    EXPECT_LT(ms, 500.0);
  }
  // /health does not think: the fastest of 5 is well under the 20 ms think time (the fastest,
  // because one request on a busy machine can wait a scheduler slice or two).
  double best = 1e9;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    Message m;
    ASSERT_TRUE(c.fetch(m, "/health"));
    best = std::min(best, ms_since(t0));
  }
  EXPECT_LT(best, 15.0);
  EXPECT_EQ(mock.stop(), 0);
}

TEST(MockBasic, FractionalThinkTime) {
  START_MOCK_AND_CONNECT(mock, c, "0.5");
  double best = 1e9;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = Clock::now();
    Message m;
    ASSERT_TRUE(c.fetch(m, "/fruits"));
    const double ms = ms_since(t0);
    EXPECT_EQ(m.status, 200);
    EXPECT_GE(ms, 0.5);
    best = std::min(best, ms);
  }
  // Precise timers: 0.5 ms is not rounded up to libevent's coarse 4 ms clock (the fastest of 20
  // would then be >= 4 ms; the bound leaves room for a busy machine).
  EXPECT_LT(best, 3.0);
  EXPECT_EQ(mock.stop(), 0);
}

// 100 requests in flight on one loop thread with a 1 ms think time finish in about 1 ms, not
// 100 ms: the think time is a timer per response, never a sleep.
TEST(MockBasic, ConcurrentThinkTimesAreTimersNotSleeps) {
  START_MOCK(mock, "--threads", "1", "--think-time-ms", "1");
  std::vector<Client> clients;
  for (int i = 0; i < 100; ++i) {
    clients.emplace_back(mock.port());
    ASSERT_TRUE(clients.back().ok());
  }
  double best = 1e9;
  for (int attempt = 0; attempt < 3; ++attempt) {  // best of 3: the machine may be busy
    const auto t0 = Clock::now();
    for (auto& c : clients) ASSERT_TRUE(c.get("/fruits"));
    for (auto& c : clients) {
      Message m;
      ASSERT_TRUE(c.read_response(m));
      ASSERT_EQ(m.status, 200);
    }
    const double ms = ms_since(t0);
    EXPECT_GE(ms, 1.0);
    best = std::min(best, ms);
  }
  // Sleeps would take 100 ms; timers about 1 ms plus the I/O (the bound is for a busy machine).
  EXPECT_LT(best, 50.0) << "100 concurrent 1 ms think times took " << best << " ms";
  std::printf("100 concurrent requests, 1 ms think time, 1 loop: %.2f ms (best of 3)\n", best);
  EXPECT_EQ(mock.stop(), 0);
}

TEST(MockBasic, PipelinedRequestsAnsweredInOrder) {
  // The think time delays /fruits but not /health or 404s: order must still be request order.
  START_MOCK_AND_CONNECT(mock, c, "5");
  const std::string req = "GET /fruits HTTP/1.1\r\nHost: x\r\n\r\n"
                          "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
                          "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
                          "GET /fruits HTTP/1.1\r\nHost: x\r\n\r\n"
                          "POST /fruits HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
                          "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(c.send_all(req));
  Message m;
  ASSERT_TRUE(c.read_response(m));
  expect_fruits(m);
  ASSERT_TRUE(c.read_response(m));
  EXPECT_EQ(m.status, 404);
  ASSERT_TRUE(c.read_response(m));
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.body, "ok");
  ASSERT_TRUE(c.read_response(m));
  expect_fruits(m);
  ASSERT_TRUE(c.read_response(m));
  EXPECT_EQ(m.status, 405);
  ASSERT_TRUE(c.read_response(m));
  EXPECT_EQ(m.body, "ok");

  // Many pipelined in one write, think time 5 ms each but all concurrent.
  std::string many;
  for (int i = 0; i < 200; ++i) many += (i % 2 ? "GET /health HTTP/1.1\r\n\r\n" : "GET /fruits HTTP/1.1\r\n\r\n");
  const auto t0 = Clock::now();
  ASSERT_TRUE(c.send_all(many));
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(c.read_response(m)) << i;
    if (i % 2)
      ASSERT_EQ(m.body, "ok") << i;
    else
      ASSERT_EQ(m.body, platoon::fruits::backend_body()) << i;
  }
  EXPECT_LT(ms_since(t0), 1000.0);
  EXPECT_EQ(mock.stop(), 0);
}

TEST(MockBasic, RequestSplitAcrossWrites) {
  START_MOCK_AND_CONNECT(mock, c, "0");
  ASSERT_TRUE(c.send_all("GET /fru"));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(c.send_all("its HTTP/1.1\r\nHost: x\r"));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(c.send_all("\n\r\nGET /health HTTP/1.1\r\n\r\n"));
  Message m;
  ASSERT_TRUE(c.read_response(m));
  expect_fruits(m);
  ASSERT_TRUE(c.read_response(m));
  EXPECT_EQ(m.body, "ok");
  EXPECT_EQ(mock.stop(), 0);
}

TEST(MockBasic, NotFoundKeepsConnection) {
  START_MOCK_AND_CONNECT(mock, c, "0");
  Message m;
  ASSERT_TRUE(c.fetch(m, "/nothing/here"));
  EXPECT_EQ(m.status, 404);
  EXPECT_TRUE(m.keep_alive);
  ASSERT_TRUE(c.fetch(m, "/fruits"));
  expect_fruits(m);
  EXPECT_EQ(mock.stop(), 0);
}

TEST(MockBasic, MalformedGets400AndClose) {
  START_MOCK(mock, "--threads", "1", "--think-time-ms", "0");
  {
    Client c(mock.port());
    Message m;
    ASSERT_TRUE(c.ask("THIS IS NOT HTTP\r\n\r\n", m));
    EXPECT_EQ(m.status, 400);
    EXPECT_FALSE(m.keep_alive);
    EXPECT_TRUE(c.closed_by_peer());
  }
  {
    // Answers owed before the garbage still come first, in order.
    Client c(mock.port());
    Message m;
    ASSERT_TRUE(c.ask("GET /fruits HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nBad Header\r\n\r\n", m));
    expect_fruits(m);
    ASSERT_TRUE(c.read_response(m));
    EXPECT_EQ(m.status, 400);
    EXPECT_TRUE(c.closed_by_peer());
  }
  {
    Client c(mock.port());
    Message m;
    ASSERT_TRUE(c.ask("GET /fruits HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n", m));
    EXPECT_EQ(m.status, 431);
    EXPECT_TRUE(c.closed_by_peer());
  }
  EXPECT_EQ(mock.stop(), 0);
}

TEST(MockBasic, ConnectionCloseHonoured) {
  START_MOCK(mock, "--threads", "1", "--think-time-ms", "2");
  Client c(mock.port());
  // Requests after the one that asked to close are not answered.
  Message m;
  std::string raw;
  ASSERT_TRUE(c.ask("GET /fruits HTTP/1.1\r\nConnection: close\r\n\r\nGET /health HTTP/1.1\r\n\r\n", m, &raw));
  expect_fruits(m);
  EXPECT_FALSE(m.keep_alive);
  EXPECT_NE(raw.find("\r\nConnection: close\r\n"), std::string::npos) << raw;
  EXPECT_TRUE(c.closed_by_peer());

  // HTTP/1.0 without keep-alive closes too.
  Client c10(mock.port());
  ASSERT_TRUE(c10.ask("GET /fruits HTTP/1.0\r\n\r\n", m));
  expect_fruits(m);
  EXPECT_TRUE(c10.closed_by_peer());
  EXPECT_EQ(mock.stop(), 0);
}

TEST(MockBasic, HalfClosedClientStillAnswered) {
  START_MOCK_AND_CONNECT(mock, c, "3");
  ASSERT_TRUE(c.send_all("GET /fruits HTTP/1.1\r\n\r\nGET /fruits HTTP/1.1\r\n\r\n"));
  shutdown(c.fd(), SHUT_WR);
  Message m;
  ASSERT_TRUE(c.read_response(m));
  expect_fruits(m);
  ASSERT_TRUE(c.read_response(m));
  expect_fruits(m);
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(mock.stop(), 0);
}

TEST(MockBasic, KeepAliveManyRequestsOnOneConnection) {
  START_MOCK_AND_CONNECT(mock, c, "0");
  for (int i = 0; i < 2000; ++i) {
    Message m;
    ASSERT_TRUE(c.fetch(m, "/fruits")) << i;
    ASSERT_EQ(m.status, 200) << i;
    ASSERT_EQ(m.body.size(), platoon::fruits::backend_body().size()) << i;
  }
  EXPECT_EQ(mock.stop(), 0);
  EXPECT_NE(mock.output().find("1 connections, 2000 requests, 2000 responses"), std::string::npos) << mock.output();
}

TEST(MockBasic, AdminThinkChangesDelay) {
  START_MOCK(mock, "--threads", "2", "--think-time-ms", "0");
  Client c(mock.port());
  ASSERT_TRUE(c.ok());
  // Think times are compared by the fastest of 3: a single request may lose a scheduler slice
  // on a busy machine, and the lower bounds (>= think time) hold for every request anyway.
  auto fruits_ms = [&] {
    double best = 1e9;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Clock::now();
      Message m;
      EXPECT_TRUE(c.fetch(m, "/fruits"));
      EXPECT_EQ(m.status, 200);
      best = std::min(best, ms_since(t0));
    }
    return best;
  };
  EXPECT_LT(fruits_ms(), 15.0);
  Message m;
  // Set from another connection (possibly another loop): every loop sees it.
  {
    Client admin(mock.port());
    ASSERT_TRUE(admin.fetch(m, "/admin/think?ms=40"));
    EXPECT_EQ(m.status, 200);
    EXPECT_EQ(m.body, "think-time-ms 40\n");
  }
  EXPECT_GE(fruits_ms(), 40.0);
  ASSERT_TRUE(c.fetch(m, "/admin/think"));
  EXPECT_EQ(m.body, "think-time-ms 40\n");
  ASSERT_TRUE(c.fetch(m, "/admin/think?ms=bogus"));
  EXPECT_EQ(m.status, 400);
  EXPECT_TRUE(m.keep_alive);
  ASSERT_TRUE(c.fetch(m, "/admin/think?ms=0.25"));
  EXPECT_EQ(m.body, "think-time-ms 0.25\n");
  const double fast = fruits_ms();
  EXPECT_GE(fast, 0.25);
  EXPECT_LT(fast, 15.0);
  EXPECT_EQ(mock.stop(), 0);
}

std::vector<std::string> thread_names(pid_t pid) {
  std::vector<std::string> names;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(dir + "/" + e->d_name + "/comm");
    std::string name;
    if (std::getline(f, name)) names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

TEST(MockBasic, ThreadsFlagGivesThatManyLoops) {
  START_MOCK(mock, "--threads", "2", "--think-time-ms", "1");
  std::vector<std::string> loops;
  for (const auto& n : thread_names(mock.pid()))
    if (n.rfind("mock-loop-", 0) == 0) loops.push_back(n);
  EXPECT_EQ(loops, (std::vector<std::string>{"mock-loop-0", "mock-loop-1"}));
  // Both listeners serve: many connections, all answered.
  for (int i = 0; i < 20; ++i) {
    Client c(mock.port());
    Message m;
    ASSERT_TRUE(c.fetch(m, "/fruits"));
    EXPECT_EQ(m.status, 200);
  }
  EXPECT_EQ(mock.stop(), 0);
}

TEST(MockBasic, BadFlagsExitTwoWithOneLine) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--threads", "0"}, {"--bogus"}, {"--think-time-ms", "-1"}, {"--fail-rate", "1.5"}, {"--port", "x"}}) {
    MockProcess p(args);
    EXPECT_FALSE(p.started());
    EXPECT_EQ(p.wait_exit(), 2) << args[0];
    const std::string out = p.output();
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_EQ(out.rfind("platoon-mock: ", 0), 0u) << out;
  }
}

TEST(MockBasic, SigintStopsCleanly) {
  START_MOCK(mock, "--threads", "2", "--think-time-ms", "50");
  // A request in flight (its timer pending) does not hold up the stop.
  Client c(mock.port());
  ASSERT_TRUE(c.get("/fruits"));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(mock.stop(SIGINT), 0) << mock.output();
  EXPECT_NE(mock.output().find("SIGINT, stopped"), std::string::npos) << mock.output();
}

TEST(MockFaults, CloseAfterN) {
  START_MOCK(mock, "--threads", "1", "--think-time-ms", "0", "--close-after", "3");
  Client c(mock.port());
  Message m;
  std::string raw;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.get("/fruits"));
    ASSERT_TRUE(c.read_response(m, &raw));
    expect_fruits(m);
    EXPECT_EQ(m.keep_alive, i < 2) << i;
  }
  EXPECT_NE(raw.find("\r\nConnection: close\r\n"), std::string::npos) << raw;
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(mock.stop(), 0);
}

TEST(MockFaults, CloseAfterNSilently) {
  START_MOCK(mock, "--threads", "1", "--think-time-ms", "0", "--close-after", "2", "--close-silently");
  Client c(mock.port());
  Message m;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.fetch(m, "/fruits"));
    expect_fruits(m);
    EXPECT_TRUE(m.keep_alive) << i;  // announced as keep-alive...
  }
  EXPECT_TRUE(c.closed_by_peer());  // ...but closed
  EXPECT_EQ(mock.stop(), 0);
}

TEST(MockFaults, FailRate) {
  {
    START_MOCK(mock, "--threads", "1", "--think-time-ms", "0", "--fail-rate", "1");
    Client c(mock.port());
    Message m;
    ASSERT_TRUE(c.fetch(m, "/fruits"));
    EXPECT_EQ(m.status, 500);
    EXPECT_TRUE(m.keep_alive);
    ASSERT_TRUE(c.get("/health"));  // only /fruits fails
    ASSERT_TRUE(c.read_response(m));
    EXPECT_EQ(m.status, 200);
    EXPECT_EQ(mock.stop(), 0);
  }
  {
    START_MOCK(mock, "--threads", "1", "--think-time-ms", "0", "--fail-rate", "0.5");
    Client c(mock.port());
    int failed = 0;
    for (int i = 0; i < 400; ++i) {
      Message m;
      ASSERT_TRUE(c.fetch(m, "/fruits"));
      ASSERT_TRUE(m.status == 200 || m.status == 500) << m.status;
      failed += m.status == 500;
    }
    EXPECT_GT(failed, 120);  // binomial(400, 0.5): mean 200, sd 10
    EXPECT_LT(failed, 280);
    EXPECT_EQ(mock.stop(), 0);
  }
}

}  // namespace
