#include "server/mock/connection.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/mock/loop.hpp"
#include "server/mock/responses.hpp"

namespace platoon::mock {

namespace {
// How long a closing connection waits for the client's FIN after ours, discarding what it
// sends, before closing anyway. Closing with unread input would send RST, which can destroy
// the last response before the client reads it.
constexpr timeval kLinger{2, 0};
}  // namespace

Connection::Connection(Loop& loop, int fd) : loop_(loop), fd_(fd) {
  read_ev_ = event_new(loop_.base_, fd_, EV_READ | EV_PERSIST, on_readable, this);
  write_ev_ = event_new(loop_.base_, fd_, EV_WRITE | EV_PERSIST, on_writable, this);
  set_reading(true);
}

Connection::~Connection() {
  for (Slot* s : slots_) loop_.give_slot(s);  // give_slot cancels the timer
  event_free(read_ev_);
  event_free(write_ev_);
  if (linger_ev_) event_free(linger_ev_);
  close(fd_);
}

void Connection::destroy() {
  loop_.unlink(this);
  delete this;
}

void Connection::set_reading(bool on) {
  if (on == reading_) return;
  reading_ = on;
  if (on)
    event_add(read_ev_, nullptr);
  else
    event_del(read_ev_);
}

void Connection::on_readable(int, short, void* arg) { static_cast<Connection*>(arg)->read_requests(); }
void Connection::on_writable(int, short, void* arg) { static_cast<Connection*>(arg)->pump(); }
void Connection::on_linger_timeout(int, short, void* arg) { static_cast<Connection*>(arg)->destroy(); }

void Connection::on_think_done(int, short, void* arg) {
  Slot* s = static_cast<Slot*>(arg);
  s->ready = true;
  s->conn->pump();
}

void Connection::read_requests() {
  std::vector<char>& buf = loop_.read_buf_;
  const ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    destroy();  // ECONNRESET and friends: nobody to answer
    return;
  }
  if (n == 0) {
    peer_eof_ = true;
    set_reading(false);  // EOF stays readable; stop listening for it
    if (lingering_ || (slots_.empty() && out_off_ == out_.size())) {
      destroy();
      return;
    }
    closing_ = true;  // a half-closed client still gets the answers it asked for
    pump();
    return;
  }
  if (closing_) return;  // past the last request: discard

  size_t off = 0;
  const size_t len = static_cast<size_t>(n);
  while (off < len && !closing_) {
    size_t used = 0;
    const http::Parser::Status st = parser_.parse(buf.data() + off, len - off, used);
    off += used;
    if (st == http::Parser::Status::message) {
      handle(parser_.message());
    } else if (st == http::Parser::Status::error) {
      bad_request(parser_.error_status());
    } else {
      break;  // need more: the parser keeps the partial request
    }
  }
  pump();
}

void Connection::handle(const http::Message& m) {
  const Config& cfg = loop_.shared_.cfg;
  ++requests_;
  ++loop_.stats_.requests;
  const bool limit = cfg.close_after != 0 && requests_ >= cfg.close_after;
  if (!m.keep_alive || limit) closing_ = true;
  // --close-silently: the client learns about the close only from the FIN (a stale keep-alive
  // connection, the case a client's pool must survive).
  const bool announce = !m.keep_alive || (limit && !cfg.close_silently);
  const Responses& r = Responses::get();

  Slot* s = loop_.take_slot(this);
  const std::string_view url(m.url);
  const size_t q = url.find('?');
  const std::string_view path = url.substr(0, q);
  const bool get = m.method == "GET";

  if (path == "/fruits") {
    if (!get) {
      s->canned = &r.not_allowed.pick(announce);
    } else if (loop_.roll_failure()) {
      ++loop_.stats_.failures;
      s->canned = &r.failure.pick(announce);
    } else {
      s->canned = &r.fruits.pick(announce);
    }
    const int64_t think = loop_.shared_.think_ns.load(std::memory_order_relaxed);
    if (get && think > 0)
      event_add(s->timer, loop_.think_timeout(think));
    else
      s->ready = true;
  } else if (path == "/health") {
    s->canned = get ? &r.health.pick(announce) : &r.not_allowed.pick(announce);
    s->ready = true;
  } else if (path == "/admin/think") {
    if (get)
      answer_admin_think(q == std::string_view::npos ? std::string() : std::string(url.substr(q + 1)), s, announce);
    else
      s->canned = &r.not_allowed.pick(announce);
    s->ready = true;
  } else {
    s->canned = &r.not_found.pick(announce);
    s->ready = true;
  }
  slots_.push_back(s);
}

// GET /admin/think?ms=X sets the think time of every loop (X may be fractional); without ms= it
// only reports. Answers "think-time-ms X".
void Connection::answer_admin_think(const std::string& query, Slot* s, bool closing) {
  std::atomic<int64_t>& think = loop_.shared_.think_ns;
  std::string value;
  for (size_t pos = 0; pos <= query.size();) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    const std::string_view kv(query.data() + pos, amp - pos);
    if (kv.substr(0, 3) == "ms=") value = std::string(kv.substr(3));
    pos = amp + 1;
  }
  if (!value.empty()) {
    char* end = nullptr;
    const double ms = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0' || !std::isfinite(ms) || ms < 0 || ms > 3600000) {
      s->dynamic = make_response(400, "text/plain",
                                 "ms must be a number of milliseconds in [0, 3600000], got '" + value + "'\n",
                                 closing);
      return;
    }
    think.store(Shared::ms_to_ns(ms), std::memory_order_relaxed);
  }
  char text[64];
  std::snprintf(text, sizeof text, "think-time-ms %g\n", static_cast<double>(think.load(std::memory_order_relaxed)) / 1e6);
  s->dynamic = make_response(200, "text/plain", text, closing);
}

void Connection::bad_request(int status) {
  ++loop_.stats_.bad_requests;
  closing_ = true;
  Slot* s = loop_.take_slot(this);
  s->dynamic = make_response(status, "text/plain", std::string(reason_phrase(status)) + "\n", true);
  s->ready = true;
  slots_.push_back(s);
}

void Connection::pump() {
  while (!slots_.empty() && slots_.front()->ready) {
    Slot* s = slots_.front();
    slots_.pop_front();
    out_.append(s->bytes());
    loop_.give_slot(s);
    ++loop_.stats_.responses;
  }
  if (out_off_ < out_.size()) {
    const ssize_t n = send(fd_, out_.data() + out_off_, out_.size() - out_off_, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      destroy();
      return;
    }
    if (n > 0) out_off_ += static_cast<size_t>(n);
    if (out_off_ == out_.size()) {
      out_.clear();
      out_off_ = 0;
    } else if (out_off_ > out_.size() / 2) {
      out_.erase(0, out_off_);  // keep the buffer from growing without bound
      out_off_ = 0;
    }
  }
  const bool flushed = out_off_ == out_.size();
  if (!flushed && !writing_) {  // the socket pushed back: wait until it drains
    writing_ = true;
    event_add(write_ev_, nullptr);
  } else if (flushed && writing_) {
    writing_ = false;
    event_del(write_ev_);
  }
  if (closing_) {
    if (slots_.empty() && flushed) finish_close();
    return;
  }
  // Back-pressure against a client that pipelines without reading.
  const Config& cfg = loop_.shared_.cfg;
  set_reading(slots_.size() < cfg.max_queued_responses && out_.size() - out_off_ < cfg.max_output_bytes);
}

void Connection::finish_close() {
  if (peer_eof_) {
    destroy();
    return;
  }
  if (lingering_) return;
  lingering_ = true;
  shutdown(fd_, SHUT_WR);
  set_reading(true);  // read (and drop) until the client's FIN
  linger_ev_ = evtimer_new(loop_.base_, on_linger_timeout, this);
  event_add(linger_ev_, &kLinger);
}

}  // namespace platoon::mock
