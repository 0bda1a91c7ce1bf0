#include "tui/commands/http_listener.hpp"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace platoon::cli {
namespace {

// A scrape is one small request; anything bigger or slower is not Prometheus.
constexpr ev_ssize_t kMaxHeaderBytes = 8 * 1024;
constexpr ev_ssize_t kMaxBodyBytes = 1024;
constexpr int kConnectionTimeoutS = 10;

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

}  // namespace

struct HttpListener::Impl {
  std::unique_ptr<event_base, EventBaseFree> base;
  std::unique_ptr<evhttp, EvhttpFree> http;   // declared after base: freed before it
  std::string bound;
  HttpHandler handler;
  std::function<bool()> tick;
  int stop_signal = 0;
};

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

std::unique_ptr<HttpListener> HttpListener::open(const std::string& address, std::string& error, bool& bad_address) {
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
  if (!evhttp_accept_socket_with_handle(impl->http.get(), fd.get())) {
    error = "cannot listen on " + address + ": " + std::strerror(errno);
    return nullptr;
  }
  fd.release();  // evhttp owns it now and closes it in evhttp_free
  return std::unique_ptr<HttpListener>(new HttpListener(std::move(impl)));
}

std::string HttpListener::bound_address() const { return impl_->bound; }

namespace {

// C callbacks: nothing may throw through libevent, so each body catches everything.
void on_request(evhttp_request* req, void* arg) {
  auto* impl = static_cast<HttpListener::Impl*>(arg);
  HttpResponse resp;
  try {
    const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
    const char* path = uri ? evhttp_uri_get_path(uri) : nullptr;
    resp = impl->handler(path && *path ? path : "/");
  } catch (...) {
    resp = HttpResponse{500, "text/plain; charset=utf-8", "internal error\n"};
  }
  evbuffer* body = evbuffer_new();
  if (!body) {
    evhttp_send_error(req, 500, nullptr);
    return;
  }
  evbuffer_add(body, resp.body.data(), resp.body.size());
  evkeyvalq* headers = evhttp_request_get_output_headers(req);
  evhttp_add_header(headers, "Content-Type", resp.content_type.c_str());
  const char* reason = resp.status == 200 ? "OK" : resp.status == 404 ? "Not Found" : "Error";
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

}  // namespace platoon::cli
