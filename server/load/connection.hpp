// One keep-alive HTTP/1.1 connection of a worker, paced by wrk2's algorithm:
//
//   request n is intended at start + n / r        (r = rate / connections, nanoseconds)
//   intended time in the future  → wait for it on a precise timer
//   intended time already passed → send now, but no faster than 2r from the moment this
//                                   connection fell behind (wrk2's catch-up rate)
//   corrected latency   = completion − intended send time   (coordinated omission corrected)
//   uncorrected latency = completion − actual send time
//
// One request in flight, no pipelining. Every slot n ends exactly once: with a response (any
// status; non-2xx also counts a status error) or with an error (connect, read, write, timeout),
// after which the socket is closed and the next slot reconnects. Without a rate (closed loop)
// the next request goes out as soon as the previous one ends.
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/common/http_parser.hpp"
#include "server/load/config.hpp"
#include "server/load/stats.hpp"

struct event;
struct event_base;

namespace platoon::load {

// What the connections of one worker thread share.
struct LoopContext {
  event_base* base = nullptr;
  const Config* cfg = nullptr;
  ThreadStats* stats = nullptr;
  std::string request;        // the bytes of one GET
  std::vector<char> rbuf;     // receive buffer
  long double period_ns = 0;  // per-connection interval between intended sends (fixed rate)
  int64_t timeout_ns = 0;
  int64_t end_ns = INT64_MAX;  // outcomes after the end of the run are not counted
  uint64_t window_requests = 0;  // responses since the last Req/Sec sample
};

class Connection {
 public:
  // `offset_ns`: this connection's phase within one period, so that the connections' sends
  // interleave evenly instead of bunching up.
  Connection(LoopContext& ctx, int64_t offset_ns);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects and schedules the first request at t0 + offset.
  void begin(int64_t t0_ns);

 private:
  enum class Socket { closed, connecting, open };
  enum class Timer { idle, send, deadline, backoff };

  static void on_timer(int fd, short what, void* self);
  static void on_readable(int fd, short what, void* self);
  static void on_writable(int fd, short what, void* self);

  void schedule();       // the slot n_ is next: wait for its send time or start it
  void start_request();  // slot n_ is due: connect if needed, write
  void open_socket();
  void on_open();
  void write_request();
  void read_ready();
  void on_eof();
  void complete(bool close_after);  // a response to slot n_ arrived
  void fail(ErrorKind kind);        // slot n_ (or an idle reconnect) failed
  void close_socket();
  void arm(Timer role, int64_t at_ns);
  void disarm();

  LoopContext& ctx_;
  int64_t offset_ns_;
  int64_t start_ns_ = 0;
  int fd_ = -1;
  Socket socket_ = Socket::closed;
  event* ev_timer_ = nullptr;
  event* ev_read_ = nullptr;
  event* ev_write_ = nullptr;
  Timer timer_ = Timer::idle;
  std::unique_ptr<http::Parser> parser_;

  uint64_t n_ = 0;             // slots finished
  bool active_ = false;        // slot n_ is due or in flight
  size_t written_ = 0;         // bytes of the request written
  int64_t intended_ns_ = 0;    // slot n_'s intended send time
  int64_t sent_ns_ = 0;        // when its first byte was written
  bool caught_up_ = true;      // wrk2's catch-up state
  int64_t catch_up_start_ns_ = 0;
  uint64_t catch_up_start_n_ = 0;
};

}  // namespace platoon::load
