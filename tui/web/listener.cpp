#include "tui/web/listener.hpp"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <utility>
#include <vector>

namespace platoon::web {
namespace {

// A scrape is one small request; anything bigger or slower is not Prometheus.
constexpr ev_ssize_t kMaxHeaderBytes = 8 * 1024;
constexpr ev_ssize_t kMaxBodyBytes = 1024;
constexpr int kConnectionTimeoutS = 10;
// evhttp's timeout is per read and restarts with every byte, so a client trickling a byte a
// second would hold its connection for ever: each request must also arrive in full (head and
// body) within this, counted from the accept or from the previous reply.
constexpr timeval kRequestDeadline{5, 0};
// Scrapers are a handful; past this many open connections new ones are closed at once.
constexpr size_t kMaxConnections = 64;
// Out of descriptors, accept() fails with the connection still pending, and the listener's
// level-triggered event would fire again at once: the listener pauses this long instead.
constexpr timeval kAcceptPause{0, 100 * 1000};

struct EventBaseFree { void operator()(event_base* b) const { event_base_free(b); } };
struct EvhttpFree { void operator()(evhttp* h) const { evhttp_free(h); } };
struct EventFree { void operator()(event* e) const { event_free(e); } };
using EventPtr = std::unique_ptr<event, EventFree>;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { if (fd_ >= 0) close(fd_); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { const int f = fd_; fd_ = -1; return f; }

 private:
  int fd_;
};


// One accepted connection, tracked to enforce kMaxConnections and kRequestDeadline. evhttp offers
// no accept hook in libevent 2.1, only one that makes the connection's bufferevent: the tracker
// starts there, holding a reference on the bufferevent, and one turn of the loop later, when evhttp
// has made the connection (its callback argument), adopts it with a close callback.
struct TrackedConnection {
  HttpListener::Impl* impl = nullptr;
  bufferevent* bev = nullptr;             // referenced until adopted
  evhttp_connection* evcon = nullptr;     // once adopted
  EventPtr timer;                         // adoption first, then the request deadline
  bool shed = false;                      // over kMaxConnections: close once adopted

  TrackedConnection() = default;
  TrackedConnection(const TrackedConnection&) = delete;
  TrackedConnection& operator=(const TrackedConnection&) = delete;
  ~TrackedConnection() { if (bev) bufferevent_decref(bev); }  // torn down before adoption
};

// At most one line per `every_s` seconds for each kind of condition that may repeat per
// connection (a kind: "wrong password", one TLS failure reason), so one kind never hides another.
class RateLimitedNote {
 public:
  explicit RateLimitedNote(std::time_t every_s) : every_s_(every_s) {}
  void note(const char* text, const std::string& kind = {}) {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    std::time_t& next = next_[kind];
    if (ts.tv_sec < next) return;
    next = ts.tv_sec + every_s_;
    if (next_.size() > 64) next_.clear();  // kinds come from a short list; bound it anyway
    std::fprintf(stderr, "platoon exporter: %s\n", text);
  }

 private:
  std::time_t every_s_;
  std::map<std::string, std::time_t> next_;
};

// A client's text for a log line: printable ASCII only, at most 64 characters.
std::string printable(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

}  // namespace

struct HttpListener::Impl {
  std::unique_ptr<event_base, EventBaseFree> base;
  // Declared between base and http: evhttp_free closes connections (their close callbacks find
  // the trackers still here), the trackers' events go next, the base last.
  std::vector<std::unique_ptr<TrackedConnection>> connections;
  std::unique_ptr<evhttp, EvhttpFree> http;
  ListenerSecurity security;
  RateLimitedNote shed_note{10};
  RateLimitedNote tls_note{10};
  RateLimitedNote auth_note{10};
  std::string bound;
  HttpHandler handler;
  std::function<bool()> tick;
  int stop_signal = 0;

  void drop(TrackedConnection* c) {
    auto it = std::find_if(connections.begin(), connections.end(), [c](const auto& p) { return p.get() == c; });
    if (it == connections.end()) return;
    std::swap(*it, connections.back());
    connections.pop_back();
  }
  TrackedConnection* find(const evhttp_connection* evcon) {
    for (auto& c : connections)
      if (c->evcon == evcon) return c.get();
    return nullptr;
  }
};

namespace {
void close_tracked(TrackedConnection* c) {
  HttpListener::Impl* impl = c->impl;
  evhttp_connection* evcon = c->evcon;
  // The tracker goes first and by our hand, so the close callback must not run for it.
  evhttp_connection_set_closecb(evcon, nullptr, nullptr);
  impl->drop(c);
  evhttp_connection_free(evcon);
}

// "127.0.0.1:40312", the client of a connection.
std::string peer_of(evhttp_connection* evcon) {
  char* host = nullptr;
  ev_uint16_t port = 0;
  evhttp_connection_get_peer(evcon, &host, &port);
  return std::string(host ? host : "?") + ":" + std::to_string(port);
}

// A TLS connection that ends before its handshake did, or on a TLS error: say so (rate-limited),
// since the client (a scraper with a wrong CA, no certificate, plain HTTP) sees only a failure.
void note_tls_failure(HttpListener::Impl* impl, evhttp_connection* evcon) {
  if (!impl->security.tls) return;
  bufferevent* bev = evhttp_connection_get_bufferevent(evcon);
  SSL* ssl = bev ? bufferevent_openssl_get_ssl(bev) : nullptr;
  const unsigned long err = bev ? bufferevent_get_openssl_error(bev) : 0;
  if (!err && ssl && SSL_is_init_finished(ssl)) return;
  const std::string why = err ? tls_error_text(err) : "the client closed the connection during the handshake";
  impl->tls_note.note(("TLS handshake with " + peer_of(evcon) + " failed: " + why).c_str(), why);
}

void on_connection_closed(evhttp_connection* evcon, void* arg) {
  auto* c = static_cast<TrackedConnection*>(arg);
  note_tls_failure(c->impl, evcon);
  c->impl->drop(c);
}

void on_connection_timer(evutil_socket_t, short, void* arg) {
  auto* c = static_cast<TrackedConnection*>(arg);
  if (c->evcon) {  // the request deadline passed
    close_tracked(c);
    return;
  }
  // Adoption: evhttp's callback argument on the bufferevent is the connection, or null when
  // evhttp has already freed (or reset) it, and then our reference is the last one.
  bufferevent_data_cb r = nullptr, w = nullptr;
  bufferevent_event_cb e = nullptr;
  void* cbarg = nullptr;
  bufferevent_getcb(c->bev, &r, &w, &e, &cbarg);
  bufferevent* bev = std::exchange(c->bev, nullptr);
  bufferevent_decref(bev);
  if (!cbarg) {
    c->impl->drop(c);
    return;
  }
  c->evcon = static_cast<evhttp_connection*>(cbarg);
  evhttp_connection_set_closecb(c->evcon, on_connection_closed, c);
  if (c->shed) {
    close_tracked(c);
    return;
  }
  event_add(c->timer.get(), &kRequestDeadline);
}

// evhttp's per-connection bufferevent factory: the one point where each accepted connection shows.
bufferevent* on_new_connection(event_base* base, void* arg) {
  auto* impl = static_cast<HttpListener::Impl*>(arg);
  bufferevent* bev = nullptr;
  if (impl->security.tls) {
    // The SSL object belongs to the bufferevent from here (BEV_OPT_CLOSE_ON_FREE frees both).
    SSL* ssl = impl->security.tls->new_ssl();
    if (!ssl) return nullptr;
    bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) SSL_free(ssl);
  } else {
    bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
  }
  if (!bev) return nullptr;  // evhttp tries its own, untracked (with TLS: it fails, it cannot speak TLS)
  auto c = std::make_unique<TrackedConnection>();
  c->impl = impl;
  c->timer.reset(event_new(base, -1, 0, on_connection_timer, c.get()));
  if (!c->timer) return bev;
  c->shed = impl->connections.size() >= kMaxConnections;
  if (c->shed)
    impl->shed_note.note(("at the connection cap (" + std::to_string(kMaxConnections) + " open): closing new connections").c_str());
  bufferevent_incref(bev);
  c->bev = bev;
  event_active(c->timer.get(), EV_TIMEOUT, 1);
  impl->connections.push_back(std::move(c));
  return bev;
}

void on_resume_accept(evutil_socket_t, short, void* arg) { evconnlistener_enable(static_cast<evconnlistener*>(arg)); }

// The listener's error callback gets the listener's own argument, which evhttp owns (it is the
// evhttp): everything here goes through `lev`, and the note is a single process-wide one.
void on_accept_error(evconnlistener* lev, void*) {
  static RateLimitedNote note(10);
  const int err = EVUTIL_SOCKET_ERROR();
  const std::string text = std::string("accept: ") + std::strerror(err) + "; pausing new connections for 100 ms";
  note.note(text.c_str());
  evconnlistener_disable(lev);
  // A one-shot timer that libevent frees itself once run (or with the base).
  event_base_once(evconnlistener_get_base(lev), -1, EV_TIMEOUT, on_resume_accept, lev, &kAcceptPause);
}
}  // namespace

bool parse_listen_address(const std::string& text, std::string& host, int& port, std::string& error) {
  error = "bad --listen '" + text + "' (HOST:PORT or :PORT)";
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  host = text.substr(0, colon);
  const std::string p = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  else if (host.find(':') != std::string::npos) return false;  // a bare IPv6 address needs brackets
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) return false;
  port = std::stoi(p);
  if (port > 65535) return false;
  if (host.find_first_of(" \t/") != std::string::npos) return false;
  error.clear();
  return true;
}

HttpListener::HttpListener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpListener::~HttpListener() = default;

std::unique_ptr<HttpListener> HttpListener::open(const std::string& address, std::string& error, bool& bad_address,
                                                 ListenerSecurity security) {
  bad_address = false;
  std::string host;
  int port = 0;
  if (!parse_listen_address(address, host, port, error)) {
    bad_address = true;
    return nullptr;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(port);
  // No host: every interface, IPv6 first (dual-stack below) as other exporters do for ":PORT".
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &found); rc != 0) {
    error = "bad --listen '" + address + "': " + gai_strerror(rc);
    bad_address = true;
    return nullptr;
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
  const addrinfo* pick = found;
  if (host.empty())
    for (const addrinfo* a = found; a; a = a->ai_next)
      if (a->ai_family == AF_INET6) pick = a;

  // Bound here rather than by evhttp_bind_socket so that the error names the cause (EADDRINUSE,
  // EADDRNOTAVAIL, EACCES) and port 0 can be read back.
  Fd fd(socket(pick->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) {
    error = "cannot listen on " + address + ": " + std::strerror(errno);
    return nullptr;
  }
  const int one = 1, zero = 0;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (pick->ai_family == AF_INET6 && host.empty()) setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  if (bind(fd.get(), pick->ai_addr, pick->ai_addrlen) != 0 || listen(fd.get(), 128) != 0) {
    error = "cannot listen on " + address + ": " + std::strerror(errno);
    return nullptr;
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  char ip[INET6_ADDRSTRLEN] = "?";
  int bound_port = port;
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    bound_port = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
    bound_port = ntohs(in6->sin6_port);
  }

  auto impl = std::make_unique<Impl>();
  impl->security = std::move(security);
  impl->bound = (ss.ss_family == AF_INET6 ? "[" + std::string(ip) + "]" : std::string(ip)) + ":" +
                std::to_string(bound_port);
  impl->base.reset(event_base_new());
  if (impl->base) impl->http.reset(evhttp_new(impl->base.get()));
  if (!impl->http) {
    error = "cannot set up the HTTP server (libevent)";
    return nullptr;
  }
  evhttp_set_timeout(impl->http.get(), kConnectionTimeoutS);
  evhttp_set_max_headers_size(impl->http.get(), kMaxHeaderBytes);
  evhttp_set_max_body_size(impl->http.get(), kMaxBodyBytes);
  evhttp_set_allowed_methods(impl->http.get(), EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
  evhttp_set_bevcb(impl->http.get(), on_new_connection, impl.get());
  evhttp_bound_socket* bound = evhttp_accept_socket_with_handle(impl->http.get(), fd.get());
  if (!bound) {
    error = "cannot listen on " + address + ": " + std::strerror(errno);
    return nullptr;
  }
  fd.release();  // evhttp owns it now and closes it in evhttp_free
  evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(bound), on_accept_error);
  return std::unique_ptr<HttpListener>(new HttpListener(std::move(impl)));
}

std::string HttpListener::bound_address() const { return impl_->bound; }

namespace {

// C callbacks: nothing may throw through libevent, so each body catches everything.
void on_request(evhttp_request* req, void* arg) {
  auto* impl = static_cast<HttpListener::Impl*>(arg);
  HttpResponse resp;
  bool challenge = false;
  try {
    BasicAuth::Result who;
    if (impl->security.auth)
      who = impl->security.auth->check(evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization"));
    if (impl->security.auth && who.verdict != BasicAuth::Verdict::allowed) {
      resp = HttpResponse{401, "text/plain; charset=utf-8", "Unauthorized\n"};
      challenge = true;
      std::string line = "refused a request from " + peer_of(evhttp_request_get_connection(req)) + ": " + to_string(who.verdict);
      if (!who.user.empty()) line += " (user '" + printable(who.user) + "')";
      impl->auth_note.note(line.c_str(), to_string(who.verdict));
    } else {
      const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
      const char* path = uri ? evhttp_uri_get_path(uri) : nullptr;
      resp = impl->handler(path && *path ? path : "/");
    }
  } catch (...) {
    resp = HttpResponse{500, "text/plain; charset=utf-8", "internal error\n"};
  }
  // The request is in: the next one's deadline starts now (before the reply, which may end the
  // connection and its tracker).
  if (TrackedConnection* c = impl->find(evhttp_request_get_connection(req))) event_add(c->timer.get(), &kRequestDeadline);
  evbuffer* body = evbuffer_new();
  if (!body) {
    evhttp_send_error(req, 500, nullptr);
    return;
  }
  evbuffer_add(body, resp.body.data(), resp.body.size());
  evkeyvalq* headers = evhttp_request_get_output_headers(req);
  evhttp_add_header(headers, "Content-Type", resp.content_type.c_str());
  if (challenge) evhttp_add_header(headers, "WWW-Authenticate", "Basic");
  for (const auto& [name, value] : impl->security.headers) evhttp_add_header(headers, name.c_str(), value.c_str());
  const char* reason = resp.status == 200   ? "OK"
                       : resp.status == 401 ? "Unauthorized"
                       : resp.status == 404 ? "Not Found"
                                            : "Error";
  evhttp_send_reply(req, resp.status, reason, body);
  evbuffer_free(body);
}

void on_signal(evutil_socket_t sig, short, void* arg) {
  auto* impl = static_cast<HttpListener::Impl*>(arg);
  impl->stop_signal = static_cast<int>(sig);
  event_base_loopbreak(impl->base.get());
}

void on_tick(evutil_socket_t, short, void* arg) {
  auto* impl = static_cast<HttpListener::Impl*>(arg);
  bool go_on = false;
  try {
    go_on = impl->tick();
  } catch (...) {
    go_on = false;
  }
  if (!go_on) event_base_loopbreak(impl->base.get());
}

}  // namespace

void HttpListener::serve(HttpHandler handler) {
  impl_->handler = std::move(handler);
  evhttp_set_gencb(impl_->http.get(), on_request, impl_.get());
}

void HttpListener::turn() { event_base_loop(impl_->base.get(), EVLOOP_NONBLOCK); }

int HttpListener::run(HttpHandler handler, int tick_ms, std::function<bool()> tick) {
  Impl& im = *impl_;
  im.handler = std::move(handler);
  im.tick = std::move(tick);
  im.stop_signal = 0;
  signal(SIGPIPE, SIG_IGN);  // a scraper that hangs up mid-reply must not kill the exporter
  event_base* base = im.base.get();
  EventPtr sigint(evsignal_new(base, SIGINT, on_signal, &im));
  EventPtr sigterm(evsignal_new(base, SIGTERM, on_signal, &im));
  EventPtr sighup(evsignal_new(base, SIGHUP, on_signal, &im));  // a closed terminal stops it cleanly too
  EventPtr ticker(event_new(base, -1, EV_PERSIST, on_tick, &im));
  if (!sigint || !sigterm || !sighup || !ticker) return 0;
  const timeval every{tick_ms / 1000, (tick_ms % 1000) * 1000};
  event_add(sigint.get(), nullptr);
  event_add(sigterm.get(), nullptr);
  event_add(sighup.get(), nullptr);
  event_add(ticker.get(), &every);
  evhttp_set_gencb(im.http.get(), on_request, &im);
  event_base_dispatch(base);
  return im.stop_signal;
}

}  // namespace platoon::web
