// Fiber-blocking sockets: non-blocking fds whose accept/connect/read/write park the calling
// fiber on EAGAIN and resume it when the fd is ready. Each fd has one edge-triggered
// registration (EV_READ|EV_WRITE|EV_ET|EV_PERSIST), made once, in the loop of the fiber's
// carrier (poller=carrier) or of the master poller (poller=master, and pool workers).
//
// One reading fiber and one writing fiber at a time per socket.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>

struct event;
struct event_base;

namespace platoon::rt {

class Fiber;

using Timeout = std::chrono::nanoseconds;
inline constexpr Timeout kNoTimeout = Timeout::max();

// Outcome of an I/O call: bytes (or 0 at EOF) or an errno value (ETIMEDOUT on timeout).
struct IoResult {
  ssize_t n = 0;
  int err = 0;
  bool ok() const { return err == 0; }
  bool timed_out() const;
  std::string message() const;  // "timed out", "Connection refused", ...
};

// Readiness state shared by the fd's event callback and the fibers waiting on it.
struct IoWaitState {
  std::atomic<uint64_t> read_seq{0}, write_seq{0};  // bumped by each readiness edge
  std::atomic<Fiber*> read_waiter{nullptr}, write_waiter{nullptr};
  // The fd's one registration, made by the first fiber that waits on it. A reader and a
  // writer may race to make it: the first to publish wins, the other frees its own.
  std::atomic<event*> ev{nullptr};
  std::atomic<event_base*> base{nullptr};
};

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd);  // takes ownership; sets O_NONBLOCK; registers lazily on first wait
  ~Socket();
  Socket(Socket&& o) noexcept;
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // A TCP listener on host:port (port 0: any); reuse_port for one listener per carrier.
  static Socket listen_tcp(const std::string& host, uint16_t port, bool reuse_port, int& err, int backlog = 4096);
  // Connects from a fiber, parking until connected, refused or timed out.
  static Socket connect_tcp(const std::string& host, uint16_t port, Timeout timeout, int& err);

  Socket accept(Timeout timeout, int& err);
  IoResult read(void* buf, size_t len, Timeout timeout = kNoTimeout);  // some bytes, or 0 at EOF
  IoResult write_all(const void* buf, size_t len, Timeout timeout = kNoTimeout);

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  uint16_t local_port() const;
  void close();
  // Which loop watches this fd (null until the first wait).
  event_base* watched_by() const { return st_ ? st_->base.load() : nullptr; }

 private:
  enum class Dir { read, write };
  // Parks until the fd reports readiness in `dir` after `seen`, or the deadline passes.
  bool wait(Dir dir, uint64_t seen, uint64_t deadline_ns);
  void ensure_registered();

  int fd_ = -1;
  std::unique_ptr<IoWaitState> st_;  // owns the registration: freed in close()
};

std::string errno_message(int err);

}  // namespace platoon::rt
