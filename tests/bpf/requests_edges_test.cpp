// The request programs on the edges of TCP: a connection closed mid-request gives no request, a
// local port reused by connection after connection gives each its own requests, and a target
// that serves nothing gives none and no error. Server and client are this process: its listening
// socket makes the accepted side the server side, its connect() the client side.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/bpf/fixture.hpp"
#include "tests/lib/namespaces.hpp"

namespace platoon::tests::testing {
namespace {

using namespace platoon::testing;

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A blocking echo-like server on a thread: each connection answers every read with one write of
// "ok\n", until the peer closes. Counts what it answered, the test's truth.
class Server {
 public:
  Server() : listener_(socket(AF_INET, SOCK_STREAM, 0)) {
    const int one = 1;
    setsockopt(listener_.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    if (bind(listener_.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(listener_.fd, 64) != 0 ||
        getsockname(listener_.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      std::abort();
    port_ = ntohs(a.sin_port);
  }
  // After the collector attached: its programs see the listen() through the /proc seed.
  void start() {
    thread_ = std::thread([this] {
      while (!stop_) {
        const int c = accept(listener_.fd, nullptr, nullptr);
        if (c < 0) return;
        Fd conn(c);
        char buf[256];
        for (ssize_t n; (n = read(c, buf, sizeof buf)) > 0;) {
          if (buf[0] == 'x') continue;  // a request whose client will close before the answer
          if (write(c, "ok\n", 3) != 3) break;
          answered_.fetch_add(1);
        }
      }
    });
  }
  ~Server() {
    stop_ = true;
    shutdown(listener_.fd, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return port_; }
  uint64_t answered() const { return answered_.load(); }

 private:
  Fd listener_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> answered_{0};
  std::thread thread_;
};

// One request and its answer on `fd`.
bool ask(int fd) {
  char buf[8];
  return write(fd, "get\n", 4) == 4 && read(fd, buf, sizeof buf) == 3;
}

struct Sides {
  uint64_t server = 0, client = 0, partial = 0, overlapped = 0;
};
Sides sides_on(const snapshot::Snapshot& s, uint16_t port) {
  Sides x;
  for (const auto& g : s.requests) {
    if (g.key.port != port) continue;
    (g.key.side == snapshot::RequestSide::server ? x.server : x.client) += g.count;
    x.partial += g.partial;
    x.overlapped += g.overlapped;
  }
  return x;
}

class RequestEdgesTest : public BpfTest {
 protected:
  std::unique_ptr<Collector> open_requests() {
    CollectorOptions o;
    o.requests = true;
    auto c = open(o);
    if (c && !(c->fields() & snapshot::kFieldRequests)) {
      for (const auto& n : c->notes()) std::printf("  note: %s\n", n.c_str());
      ADD_FAILURE() << "this kernel loads the socket programs (6.3+, tp_btf), but they did not";
    }
    return c;
  }
};

// A client that sends a request and closes before the answer: no request is invented for it,
// and the requests around it on other connections are all there.
TEST_F(RequestEdgesTest, ConnectionClosedMidRequestGivesNoRequest) {
  Server server;
  auto c = open_requests();
  ASSERT_TRUE(c);
  server.start();
  for (int i = 0; i < 3; ++i) {
    Fd fd(socket(AF_INET, SOCK_STREAM, 0));
    const sockaddr_in a = loopback(server.port());
    ASSERT_EQ(connect(fd.fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
    for (int k = 0; k < 5; ++k) ASSERT_TRUE(ask(fd.fd));
    ASSERT_EQ(write(fd.fd, "x\n", 2), 2);  // the server reads it and never answers
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const Sides x = sides_on(c->snapshot(), server.port());
  std::printf("  answered %llu; platoon: server %llu, client %llu, partial %llu\n",
              (unsigned long long)server.answered(), (unsigned long long)x.server, (unsigned long long)x.client,
              (unsigned long long)x.partial);
  EXPECT_EQ(server.answered(), 15u);
  EXPECT_EQ(x.server, 15u);
  EXPECT_EQ(x.client, 15u);
  EXPECT_EQ(x.partial, 0u);
}

// Twenty connections from the same local port, one after the other: each gets its own requests
// (socket storage dies with its socket), none partial, none overlapped.
TEST_F(RequestEdgesTest, ReusedLocalPortStartsClean) {
  Server server;
  auto c = open_requests();
  ASSERT_TRUE(c);
  server.start();
  uint16_t local = 0;
  for (int i = 0; i < 20; ++i) {
    Fd fd(socket(AF_INET, SOCK_STREAM, 0));
    const int one = 1;
    setsockopt(fd.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const linger hard{1, 0};  // RST on close: no TIME_WAIT, so the port is free at once
    setsockopt(fd.fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    sockaddr_in me = loopback(local);
    ASSERT_EQ(bind(fd.fd, reinterpret_cast<sockaddr*>(&me), sizeof me), 0) << i;
    socklen_t len = sizeof me;
    getsockname(fd.fd, reinterpret_cast<sockaddr*>(&me), &len);
    local = ntohs(me.sin_port);
    const sockaddr_in a = loopback(server.port());
    ASSERT_EQ(connect(fd.fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0) << i;
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(ask(fd.fd)) << i;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const Sides x = sides_on(c->snapshot(), server.port());
  std::printf("  local port %u reused 20 times; answered %llu; platoon: server %llu, client %llu\n", local,
              (unsigned long long)server.answered(), (unsigned long long)x.server, (unsigned long long)x.client);
  EXPECT_EQ(server.answered(), 60u);
  EXPECT_EQ(x.server, 60u);
  EXPECT_EQ(x.client, 60u);
  EXPECT_EQ(x.partial, 0u);
  EXPECT_EQ(x.overlapped, 0u);
}

// A target with no TCP connection at all: the programs load and find nothing, and say so
// without an error.
TEST_F(RequestEdgesTest, NotATcpServerHasNoRequests) {
  ForkedWorkload sleeper([] {  // a child that only sleeps
    for (;;) usleep(1000);
  });
  CollectorOptions o;
  o.pids = {sleeper.pid()};
  o.requests = true;
  auto c = open(o);
  ASSERT_TRUE(c);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const snapshot::Snapshot snap = c->snapshot();
  EXPECT_NE(snap.fields & snapshot::kFieldRequests, 0u);
  EXPECT_TRUE(snap.requests.empty());
  EXPECT_EQ(snap.lost_requests, 0u);
}

}  // namespace
}  // namespace platoon::tests::testing
