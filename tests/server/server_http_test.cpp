// platoon-server on loopback: correct bodies in every scheduler mode, and each fault producing
// its status while the server keeps serving.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
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

namespace {
using platoon::test::expected_body;
using platoon::test::server_args;

int open_fds(pid_t pid) {
  int n = 0;
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (!d) return -1;
  while (dirent* e = readdir(d)) if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

using platoon::test::metric;
}  // namespace

class ServerModes : public ::testing::TestWithParam<std::vector<std::string>> {};

// Many concurrent keep-alive clients; every answer is the compact JSON of the ten fruits.
TEST_P(ServerModes, EveryRequestGetsTheCompactFruits) {
  FakeBackend backend;
  START_SERVER(srv, port, server_args(backend.port(), GetParam()));
  std::atomic<int> good{0}, bad{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t)
    clients.emplace_back([&] {
      Conn c(port);
      for (int i = 0; i < 50; ++i) {
        const auto m = c.get("/fruits");
        (m.status == 200 && m.body == expected_body() && m.content_type == "application/json" ? good : bad)++;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(good.load(), 400);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(srv.stop(), 0) << "the server exits cleanly on SIGINT";
}

INSTANTIATE_TEST_SUITE_P(Server, ServerModes,
                         ::testing::Values(std::vector<std::string>{"--scheduler", "carrier"},
                                           std::vector<std::string>{"--scheduler", "pool"},
                                           std::vector<std::string>{"--poller", "master"},
                                           std::vector<std::string>{"--work-stealing", "--pin"},
                                           std::vector<std::string>{"--scheduler", "pool", "--workers", "3"}));

TEST(Server, PassthroughReturnsTheBackendBody) {
  FakeBackend backend;
  START_SERVER(srv, port, server_args(backend.port(), {"--passthrough"}));
  Conn c(port);
  const auto m = c.get("/fruits");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.body, fruits::backend_body());
}

TEST(Server, PipelinedRequestsAnsweredInOrder) {
  FakeBackend backend;
  START_SERVER(srv, port, server_args(backend.port()));
  Conn c(port);
  ASSERT_TRUE(c.send_all("GET /fruits HTTP/1.1\r\nHost: a\r\n\r\nGET /nope HTTP/1.1\r\nHost: a\r\n\r\n"
                         "GET /fruits HTTP/1.1\r\nHost: a\r\n\r\n"));
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_EQ(c.read_response().status, 404);
  EXPECT_EQ(c.read_response().body, expected_body());
}

TEST(Server, MalformedRequestGets400AndClose) {
  FakeBackend backend;
  START_SERVER(srv, port, server_args(backend.port()));
  Conn c(port);
  ASSERT_TRUE(c.send_all("THIS IS NOT HTTP\r\n\r\n"));
  EXPECT_EQ(c.read_response().status, 400);
  EXPECT_TRUE(c.closed_within(2000));
  EXPECT_EQ(Conn(port).get("/fruits").status, 200) << "the server keeps serving";
}

TEST(Server, OversizedHeadersGet431) {
  FakeBackend backend;
  START_SERVER(srv, port, server_args(backend.port(), {"--max-header-bytes", "1024"}));
  Conn c(port);
  ASSERT_TRUE(c.send_all("GET /fruits HTTP/1.1\r\nX-Big: " + std::string(4000, 'x') + "\r\n\r\n"));
  EXPECT_EQ(c.read_response().status, 431);
  EXPECT_TRUE(c.closed_within(2000));
  EXPECT_EQ(Conn(port).get("/fruits").status, 200);
}

TEST(Server, IdleAndSlowClientsTimeOut) {
  FakeBackend backend;
  START_SERVER(srv, port, server_args(backend.port(), {"--idle-timeout-ms", "300", "--request-timeout-ms", "300"}));
  Conn idle(port), slow(port);
  ASSERT_TRUE(slow.send_all("GET /fruits HTTP/1.1\r\nHo"));  // and never the rest
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(idle.closed_within(3000));
  EXPECT_TRUE(slow.closed_within(3000));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, std::chrono::milliseconds(250));
  EXPECT_LT(waited, std::chrono::milliseconds(2500));
  EXPECT_EQ(Conn(port).get("/fruits").status, 200);
}

TEST(Server, RefusedBackendGives502AndServerKeepsServing) {
  int dead_port;
  { FakeBackend gone; dead_port = gone.port(); }  // bound once, now closed: connections are refused
  START_SERVER(srv, port, server_args(dead_port));
  Conn c(port);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(c.get("/fruits").status, 502);
  EXPECT_EQ(c.get("/metrics").status, 200);
}

TEST(Server, BackendClosingOrGarbledGives502ThenRecovers) {
  FakeBackend backend;
  START_SERVER(srv, port, server_args(backend.port()));
  Conn c(port);
  EXPECT_EQ(c.get("/fruits").status, 200);
  backend.set(FakeBackend::Mode::close);
  EXPECT_EQ(c.get("/fruits").status, 502);
  backend.set(FakeBackend::Mode::garbage);
  EXPECT_EQ(c.get("/fruits").status, 502);
  backend.set(FakeBackend::Mode::status500);
  EXPECT_EQ(c.get("/fruits").status, 502);
  backend.set(FakeBackend::Mode::ok);
  const auto m = c.get("/fruits");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.body, expected_body());
}

TEST(Server, SlowBackendGives504ThenRecovers) {
  FakeBackend backend;
  START_SERVER(srv, port, server_args(backend.port(), {"--backend-timeout-ms", "200"}));
  Conn c(port);
  backend.set(FakeBackend::Mode::slow, 1000);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(c.get("/fruits").status, 504);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, std::chrono::milliseconds(180));
  EXPECT_LT(waited, std::chrono::milliseconds(900));
  backend.set(FakeBackend::Mode::ok);
  EXPECT_EQ(c.get("/fruits").status, 200);
}

// Thousands of connections come and go; afterwards the server holds as many fds and live
// fibers as before (two per idle carrier: the accept loops).
TEST(Server, NoFdOrFiberLeaksAfterManyConnections) {
  FakeBackend backend;
  START_SERVER(srv, port, server_args(backend.port(), {"--idle-timeout-ms", "60000"}));
  ASSERT_EQ(Conn(port).get("/fruits").status, 200);  // warm the backend pool
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Backend connections stay pooled (bounded); count the fds besides them.
  const int fds_before = open_fds(srv.pid()) - static_cast<int>(metric(port, "platoon_backend_connections_open"));
  const long fibers_before = metric(port, "platoon_fibers_live");
  for (int wave = 0; wave < 4; ++wave) {
    std::vector<std::thread> clients;
    for (int t = 0; t < 4; ++t)
      clients.emplace_back([&] {
        for (int i = 0; i < 150; ++i) {
          Conn c(port);
          ASSERT_EQ(c.get(i % 3 == 0 ? "/metrics" : "/fruits").status, 200);
          if (i % 5 == 0) c.send_all("GET /fruits HTTP/1.1\r\nHos");  // a half request, then close
        }
      });
    for (auto& t : clients) t.join();
  }
  long fibers_after = -1;
  int fds_after = -1;
  for (int i = 0; i < 100; ++i) {  // the server notices the closes asynchronously
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fds_after = open_fds(srv.pid()) - static_cast<int>(metric(port, "platoon_backend_connections_open"));
    fibers_after = metric(port, "platoon_fibers_live");
    if (fds_after <= fds_before && fibers_after <= fibers_before) break;
  }
  EXPECT_LE(fds_after, fds_before);
  EXPECT_LE(fibers_after, fibers_before);
  EXPECT_GE(metric(port, "platoon_connections_accepted_total"), 2400);
}
