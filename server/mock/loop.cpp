#include "server/mock/loop.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <event2/event.h>
#include <latch>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <random>
#include <stdexcept>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/mock/connection.hpp"

namespace platoon::mock {

namespace {
constexpr size_t kReadBufBytes = 64 * 1024;
constexpr int kAcceptBatch = 64;              // accepts per readiness event
constexpr timeval kAcceptPause{0, 100000};    // after EMFILE/ENFILE
}  // namespace

Loop::Loop(int index, int listen_fd, Shared& shared)
    : index_(index), shared_(shared), listen_fd_(listen_fd), read_buf_(kReadBufBytes) {
  std::random_device rd;
  rng_ = (static_cast<uint64_t>(rd()) << 32 | rd()) | 1;

  // Precise timers: without the flag libevent rounds waits to its 4 ms-coarse clock, and a
  // 1 ms think time would become 1-5 ms. No locks: only this loop's thread touches the base;
  // stop() talks to it through an eventfd.
  event_config* conf = event_config_new();
  event_config_set_flag(conf, EVENT_BASE_FLAG_PRECISE_TIMER);
  event_config_set_flag(conf, EVENT_BASE_FLAG_NOLOCK);
  base_ = event_base_new_with_config(conf);
  event_config_free(conf);
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (!base_ || stop_fd_ < 0) {
    if (base_) event_base_free(base_);
    if (stop_fd_ >= 0) close(stop_fd_);
    close(listen_fd_);
    throw std::runtime_error("cannot create an event loop");
  }
  accept_ev_ = event_new(base_, listen_fd_, EV_READ | EV_PERSIST, on_accept, this);
  accept_resume_ev_ = evtimer_new(base_, on_accept_resume, this);
  stop_ev_ = event_new(base_, stop_fd_, EV_READ, on_stop, this);
  event_add(accept_ev_, nullptr);
  event_add(stop_ev_, nullptr);
}

Loop::~Loop() {
  if (thread_.joinable()) {
    stop();
    join();
  }
  while (conns_) {
    Connection* c = conns_;
    unlink(c);
    delete c;
  }
  for (Slot* s : free_slots_) {
    event_free(s->timer);
    delete s;
  }
  event_free(accept_ev_);
  event_free(accept_resume_ev_);
  event_free(stop_ev_);
  event_base_free(base_);
  close(listen_fd_);
  close(stop_fd_);
}

void Loop::start() {
  std::latch running(1);
  thread_ = std::thread([this, &running] {
    const std::string n = name();
    pthread_setname_np(pthread_self(), n.c_str());
    tid_ = gettid();
    running.count_down();
    run();
  });
  running.wait();
}

void Loop::stop() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(stop_fd_, &one, sizeof one);
}

void Loop::join() {
  if (thread_.joinable()) thread_.join();
}

void Loop::run() {
  event_base_dispatch(base_);
  // Close the connections on the loop's own thread, as they were opened.
  while (conns_) {
    Connection* c = conns_;
    unlink(c);
    delete c;
  }
}

void Loop::on_stop(int, short, void* arg) { event_base_loopbreak(static_cast<Loop*>(arg)->base_); }

void Loop::on_accept(int fd, short, void* arg) {
  Loop* self = static_cast<Loop*>(arg);
  for (int i = 0; i < kAcceptBatch; ++i) {
    const int c = accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: the listener would stay readable and spin the loop. Pause.
        std::fprintf(stderr, "platoon-mock: accept: %s; pausing accepts for 100 ms\n", std::strerror(errno));
        event_del(self->accept_ev_);
        event_add(self->accept_resume_ev_, &kAcceptPause);
      }
      return;  // EAGAIN: backlog empty
    }
    const int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Connection* conn = new Connection(*self, c);
    conn->next = self->conns_;
    if (self->conns_) self->conns_->prev = conn;
    self->conns_ = conn;
    ++self->stats_.accepted;
  }
}

void Loop::on_accept_resume(int, short, void* arg) {
  Loop* self = static_cast<Loop*>(arg);
  event_add(self->accept_ev_, nullptr);
}

void Loop::unlink(Connection* c) {
  if (c->prev) c->prev->next = c->next;
  else conns_ = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = nullptr;
}

Slot* Loop::take_slot(Connection* owner) {
  Slot* s;
  if (free_slots_.empty()) {
    s = new Slot;
    s->timer = evtimer_new(base_, Connection::on_think_done, s);
  } else {
    s = free_slots_.back();
    free_slots_.pop_back();
  }
  s->conn = owner;
  s->ready = false;
  s->canned = nullptr;
  s->dynamic.clear();
  return s;
}

void Loop::give_slot(Slot* s) {
  event_del(s->timer);
  s->conn = nullptr;
  if (s->dynamic.capacity() > 4096) std::string().swap(s->dynamic);
  free_slots_.push_back(s);
}

// All think timers of a loop have the same duration (until /admin/think changes it), so they
// go in a libevent "common timeout" queue: O(1) add and expiry instead of heap operations.
// libevent allows 256 distinct durations per base; past that, plain (heap) timeouts.
const timeval* Loop::think_timeout(int64_t ns) {
  if (ns != cached_think_ns_) {
    timeval& plain = plain_think_tv_;
    plain.tv_sec = static_cast<time_t>(ns / 1000000000);
    plain.tv_usec = static_cast<suseconds_t>(ns % 1000000000 / 1000);
    const timeval* common = event_base_init_common_timeout(base_, &plain);
    cached_think_tv_ = common ? common : &plain;
    cached_think_ns_ = ns;
  }
  return cached_think_tv_;
}

bool Loop::roll_failure() {
  const double p = shared_.cfg.fail_rate;
  if (p <= 0) return false;
  if (p >= 1) return true;
  // xorshift64*: a loop-local generator, no locks
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  const uint64_t r = rng_ * 0x2545F4914F6CDD1DULL;
  return static_cast<double>(r >> 11) * 0x1.0p-53 < p;
}

}  // namespace platoon::mock
