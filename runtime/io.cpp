#include "runtime/io.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <event2/event.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/carrier.hpp"
#include "runtime/fiber.hpp"
#include "runtime/runtime_impl.hpp"

namespace platoon::rt {

namespace {
// Readiness edge from the loop watching the fd: bump the sequence, wake the waiter if any.
// The waiter stores itself then re-reads the sequence, so either it sees the bump or we see it.
void on_ready(evutil_socket_t, short what, void* arg) {
  auto* st = static_cast<IoWaitState*>(arg);
  if (Carrier* c = current_carrier()) c->note_io_event();
  if (what & EV_READ) {
    st->read_seq.fetch_add(1, std::memory_order_seq_cst);
    if (Fiber* f = st->read_waiter.exchange(nullptr)) unpark(f);
  }
  if (what & EV_WRITE) {
    st->write_seq.fetch_add(1, std::memory_order_seq_cst);
    if (Fiber* f = st->write_waiter.exchange(nullptr)) unpark(f);
  }
}

uint64_t deadline_after(Timeout t) {
  if (t == kNoTimeout) return 0;
  return now_ns() + static_cast<uint64_t>(t.count() > 0 ? t.count() : 0);
}

bool resolve_ipv4(const std::string& host, uint16_t port, sockaddr_in& sa) {
  std::memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  const std::string h = host.empty() || host == "localhost" ? "127.0.0.1" : host;
  if (inet_pton(AF_INET, h.c_str(), &sa.sin_addr) == 1) return true;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(h.c_str(), nullptr, &hints, &res) != 0 || !res) return false;
  sa.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return true;
}
}  // namespace

std::string errno_message(int err) {
  if (err == ETIMEDOUT) return "timed out";
  return std::strerror(err);
}

bool IoResult::timed_out() const { return err == ETIMEDOUT; }
std::string IoResult::message() const { return err ? errno_message(err) : "ok"; }

Socket::Socket(int fd) : fd_(fd), st_(std::make_unique<IoWaitState>()) {
  if (fd_ >= 0) fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

Socket::~Socket() { close(); }

Socket::Socket(Socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)), st_(std::move(o.st_)) {}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = std::exchange(o.fd_, -1);
    st_ = std::move(o.st_);
  }
  return *this;
}

void Socket::close() {
  if (st_) {
    if (event* ev = st_->ev.exchange(nullptr)) event_free(ev);  // waits for a callback running elsewhere
    st_->base.store(nullptr);
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

uint16_t Socket::local_port() const {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return 0;
  return ntohs(sa.sin_port);
}

void Socket::ensure_registered() {
  if (st_->ev.load(std::memory_order_acquire)) return;
  Fiber* me = this_fiber::self();
  event_base* base = me->runtime->io_base_for_current();
  event* mine = event_new(base, fd_, EV_READ | EV_WRITE | EV_ET | EV_PERSIST, on_ready, st_.get());
  if (!mine) throw std::runtime_error("cannot watch a socket (event_new)");
  event* expected = nullptr;
  if (!st_->ev.compare_exchange_strong(expected, mine, std::memory_order_acq_rel)) {
    event_free(mine);  // another fiber registered it first
    return;
  }
  st_->base.store(base);
  // The edge of readiness present at add time is reported (epoll ET), so a waiter that lost
  // the race above still sees its sequence move.
  if (event_add(mine, nullptr) != 0) throw std::runtime_error("cannot watch a socket (event_add)");
}

bool Socket::wait(Dir dir, uint64_t seen, uint64_t deadline_ns) {
  Fiber* me = this_fiber::self();
  ensure_registered();
  auto& seq = dir == Dir::read ? st_->read_seq : st_->write_seq;
  auto& waiter = dir == Dir::read ? st_->read_waiter : st_->write_waiter;
  waiter.store(me, std::memory_order_seq_cst);
  if (seq.load(std::memory_order_seq_cst) != seen) {
    waiter.store(nullptr);
    return true;
  }
  if (deadline_ns) arm_timer(me, me->runtime->io_base_for_current(), deadline_ns);
  bool ready = false;
  for (;;) {
    if (seq.load(std::memory_order_seq_cst) != seen) { ready = true; break; }
    if (deadline_ns && me->timer_fired.load(std::memory_order_seq_cst)) break;
    this_fiber::park();
  }
  waiter.store(nullptr);
  if (deadline_ns) disarm_timer(me);
  return ready;
}

IoResult Socket::read(void* buf, size_t len, Timeout timeout) {
  const uint64_t deadline = deadline_after(timeout);
  for (;;) {
    const uint64_t seen = st_->read_seq.load(std::memory_order_seq_cst);
    const ssize_t n = ::read(fd_, buf, len);
    if (n >= 0) return {n, 0};
    const int e = errno;
    if (e == EINTR) continue;
    if (e != EAGAIN && e != EWOULDBLOCK) return {-1, e};
    if (!wait(Dir::read, seen, deadline)) return {-1, ETIMEDOUT};
  }
}

IoResult Socket::write_all(const void* buf, size_t len, Timeout timeout) {
  const uint64_t deadline = deadline_after(timeout);
  const char* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < len) {
    const uint64_t seen = st_->write_seq.load(std::memory_order_seq_cst);
    const ssize_t n = ::send(fd_, p + done, len - done, MSG_NOSIGNAL);
    if (n >= 0) { done += static_cast<size_t>(n); continue; }
    const int e = errno;
    if (e == EINTR) continue;
    if (e != EAGAIN && e != EWOULDBLOCK) return {static_cast<ssize_t>(done), e};
    if (!wait(Dir::write, seen, deadline)) return {static_cast<ssize_t>(done), ETIMEDOUT};
  }
  return {static_cast<ssize_t>(done), 0};
}

Socket Socket::accept(Timeout timeout, int& err) {
  const uint64_t deadline = deadline_after(timeout);
  for (;;) {
    const uint64_t seen = st_->read_seq.load(std::memory_order_seq_cst);
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      err = 0;
      return Socket(fd);
    }
    const int e = errno;
    if (e == EINTR || e == ECONNABORTED) continue;
    if (e != EAGAIN && e != EWOULDBLOCK) { err = e; return {}; }
    if (!wait(Dir::read, seen, deadline)) { err = ETIMEDOUT; return {}; }
  }
}

// The first steps of listen_tcp and connect_tcp: the address, and a non-blocking TCP socket.
// -1 with err set on failure.
static int open_tcp(const std::string& host, uint16_t port, sockaddr_in& sa, int& err) {
  if (!resolve_ipv4(host, port, sa)) { err = EADDRNOTAVAIL; return -1; }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) err = errno;
  return fd;
}

Socket Socket::listen_tcp(const std::string& host, uint16_t port, bool reuse_port, int& err, int backlog) {
  sockaddr_in sa;
  const int fd = open_tcp(host, port, sa, err);
  if (fd < 0) return {};
  Socket s(fd);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuse_port) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, backlog) != 0) {
    err = errno;
    return {};
  }
  err = 0;
  return s;
}

Socket Socket::connect_tcp(const std::string& host, uint16_t port, Timeout timeout, int& err) {
  sockaddr_in sa;
  const int fd = open_tcp(host, port, sa, err);
  if (fd < 0) return {};
  Socket s(fd);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const uint64_t deadline = deadline_after(timeout);
  const uint64_t seen = s.st_->write_seq.load();
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) { err = 0; return s; }
  if (errno != EINPROGRESS) { err = errno; return {}; }
  if (!s.wait(Dir::write, seen, deadline)) { err = ETIMEDOUT; return {}; }
  int so_error = 0;
  socklen_t len = sizeof so_error;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
  if (so_error != 0) { err = so_error; return {}; }
  err = 0;
  return s;
}

}  // namespace platoon::rt
