#include "server/load/connection.hpp"

#include <cerrno>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/load/clock.hpp"

namespace platoon::load {

namespace {
constexpr int64_t kConnectBackoffNs = 10'000'000;  // closed loop: retry a refused connect after 10 ms
constexpr size_t kMaxHeaderBytes = 64 * 1024;
constexpr size_t kMaxBodyBytes = 64 * 1024 * 1024;
}  // namespace

Connection::Connection(LoopContext& ctx, int64_t offset_ns) : ctx_(ctx), offset_ns_(offset_ns) {
  ev_timer_ = event_new(ctx_.base, -1, 0, &Connection::on_timer, this);
}

Connection::~Connection() {
  close_socket();
  if (ev_timer_) event_free(ev_timer_);
}

void Connection::begin(int64_t t0_ns) {
  start_ns_ = t0_ns + offset_ns_;
  open_socket();
  schedule();
}

// ---- pacing ----

void Connection::schedule() {
  const int64_t now = now_ns();
  if (!ctx_.cfg->fixed_rate()) {  // closed loop: right away (but not before the run starts)
    if (now < start_ns_) return arm(Timer::send, start_ns_);
    intended_ns_ = now;
    return start_request();
  }
  const int64_t intended = start_ns_ + static_cast<int64_t>(static_cast<long double>(n_) * ctx_.period_ns);
  if (intended > now) {  // on pace
    caught_up_ = true;
    return arm(Timer::send, intended);
  }
  if (caught_up_) {  // first fall-behind since we were last on pace
    caught_up_ = false;
    catch_up_start_ns_ = now;
    catch_up_start_n_ = n_;
  }
  const int64_t catch_up_next =
      catch_up_start_ns_ + static_cast<int64_t>(static_cast<long double>(n_ - catch_up_start_n_) * ctx_.period_ns / 2);
  if (catch_up_next > now) return arm(Timer::send, catch_up_next);
  intended_ns_ = intended;
  start_request();
}

void Connection::start_request() {
  active_ = true;
  written_ = 0;
  sent_ns_ = 0;
  arm(Timer::deadline, now_ns() + ctx_.timeout_ns);
  if (socket_ == Socket::closed)
    open_socket();  // writes once connected
  else if (socket_ == Socket::open)
    write_request();
}

void Connection::arm(Timer role, int64_t at_ns) {
  int64_t delay = at_ns - now_ns();
  if (delay < 0) delay = 0;
  const int64_t us = (delay + 999) / 1000;  // libevent takes microseconds; never fire early
  timeval tv{static_cast<time_t>(us / 1'000'000), static_cast<suseconds_t>(us % 1'000'000)};
  timer_ = role;
  event_add(ev_timer_, &tv);
}

void Connection::disarm() {
  timer_ = Timer::idle;
  event_del(ev_timer_);
}

void Connection::on_timer(int, short, void* self) {
  auto* c = static_cast<Connection*>(self);
  const Timer role = c->timer_;
  c->timer_ = Timer::idle;
  switch (role) {
    case Timer::send:
    case Timer::backoff:
      if (!c->active_) c->schedule();
      break;
    case Timer::deadline:
      if (c->active_) c->fail(c->socket_ == Socket::connecting ? ErrorKind::connect : ErrorKind::timeout);
      break;
    case Timer::idle:
      break;
  }
}

// ---- socket ----

void Connection::open_socket() {
  const Endpoint& ep = ctx_.cfg->endpoint;
  fd_ = ::socket(ep.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return fail(ErrorKind::connect);
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ev_write_ = event_new(ctx_.base, fd_, EV_WRITE, &Connection::on_writable, this);
  socket_ = Socket::connecting;
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&ep.addr), ep.len) == 0) return on_open();
  if (errno != EINPROGRESS) return fail(ErrorKind::connect);
  event_add(ev_write_, nullptr);
}

void Connection::on_open() {
  socket_ = Socket::open;
  parser_ = std::make_unique<http::Parser>(http::Parser::Kind::response, kMaxHeaderBytes, kMaxBodyBytes);
  ev_read_ = event_new(ctx_.base, fd_, EV_READ | EV_PERSIST, &Connection::on_readable, this);
  event_add(ev_read_, nullptr);
  if (active_) write_request();
}

void Connection::close_socket() {
  if (ev_read_) event_free(ev_read_);
  if (ev_write_) event_free(ev_write_);
  ev_read_ = ev_write_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  socket_ = Socket::closed;
  parser_.reset();
  written_ = 0;
}

void Connection::on_writable(int, short, void* self) {
  auto* c = static_cast<Connection*>(self);
  if (c->socket_ == Socket::connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) return c->fail(ErrorKind::connect);
    return c->on_open();
  }
  if (c->socket_ == Socket::open && c->active_) c->write_request();
}

void Connection::write_request() {
  const std::string& req = ctx_.request;
  if (written_ == 0) {
    sent_ns_ = now_ns();
    ctx_.stats->send_lag.record(sent_ns_ - intended_ns_);
  }
  while (written_ < req.size()) {
    const ssize_t k = ::send(fd_, req.data() + written_, req.size() - written_, MSG_NOSIGNAL);
    if (k > 0) {
      written_ += static_cast<size_t>(k);
    } else if (k < 0 && errno == EINTR) {
      continue;
    } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      event_add(ev_write_, nullptr);
      return;
    } else {
      return fail(ErrorKind::write);
    }
  }
}

void Connection::on_readable(int, short, void* self) { static_cast<Connection*>(self)->read_ready(); }

void Connection::read_ready() {
  std::vector<char>& buf = ctx_.rbuf;
  for (;;) {
    const ssize_t k = ::recv(fd_, buf.data(), buf.size(), 0);
    if (k == 0) return on_eof();
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (active_) return fail(ErrorKind::read);
      return close_socket();  // an idle keep-alive connection reset: reconnect when next due
    }
    ctx_.stats->bytes += static_cast<uint64_t>(k);
    if (!active_ || written_ < ctx_.request.size()) return fail(ErrorKind::read);  // unsolicited bytes
    size_t used = 0;
    const http::Parser::Status st = parser_->parse(buf.data(), static_cast<size_t>(k), used);
    if (st == http::Parser::Status::error) return fail(ErrorKind::read);
    if (st == http::Parser::Status::message) {
      const bool extra = used < static_cast<size_t>(k);  // bytes beyond the one response we asked for
      if (extra) ctx_.stats->errors.count(ErrorKind::read);
      return complete(extra);
    }
    if (static_cast<size_t>(k) < buf.size()) return;  // drained (level-triggered: we get called again)
  }
}

void Connection::on_eof() {
  if (active_ && parser_ && written_ == ctx_.request.size()) {
    if (parser_->finish() == http::Parser::Status::message) return complete(true);  // framed by close
    return fail(ErrorKind::read);
  }
  if (active_) return fail(ErrorKind::read);
  close_socket();  // the server closed an idle keep-alive connection
  if (ctx_.cfg->fixed_rate()) open_socket();
}

// ---- outcomes ----

void Connection::complete(bool close_after) {
  const int64_t now = now_ns();
  disarm();
  active_ = false;
  const http::Message& m = parser_->message();
  if (now <= ctx_.end_ns) {
    ThreadStats& s = *ctx_.stats;
    ++s.requests;
    ++ctx_.window_requests;
    if (m.status < 200 || m.status > 299) s.errors.count(ErrorKind::status);
    s.corrected.record(now - intended_ns_);
    s.uncorrected.record(now - sent_ns_);
  }
  written_ = 0;
  if (close_after || !m.keep_alive) {
    close_socket();
    if (ctx_.cfg->fixed_rate()) open_socket();  // reconnect before the next slot is due
  }
  ++n_;
  schedule();
}

void Connection::fail(ErrorKind kind) {
  if (now_ns() <= ctx_.end_ns) ctx_.stats->errors.count(kind);
  close_socket();
  if (!active_) return;  // an idle (re)connect failed: the next slot will retry
  active_ = false;
  ++n_;
  // Through the loop, never recursively: a refused connect fails synchronously.
  if (kind == ErrorKind::connect && !ctx_.cfg->fixed_rate())
    arm(Timer::backoff, now_ns() + kConnectBackoffNs);
  else
    arm(Timer::send, now_ns());
}

}  // namespace platoon::load
