#include "server/load/worker.hpp"

#include <event2/event.h>
#include <sys/prctl.h>

#include <algorithm>

#include "server/load/clock.hpp"

namespace platoon::load {

namespace {
constexpr int kTickMs = 10;
constexpr int kTicksPerRateSample = 10;  // Req/Sec over 100 ms windows, as wrk

timeval after(int64_t at_ns) {
  int64_t d = at_ns - now_ns();
  if (d < 0) d = 0;
  const int64_t us = (d + 999) / 1000;
  return timeval{static_cast<time_t>(us / 1'000'000), static_cast<suseconds_t>(us % 1'000'000)};
}
}  // namespace

Worker::Worker(const Config& cfg, int index) : cfg_(cfg), index_(index) {}

Worker::~Worker() {
  conns_.clear();  // before the base they live in
  if (ctx_.base) event_base_free(ctx_.base);
}

bool Worker::setup(std::string& error) {
  event_config* ec = event_config_new();
  // Without PRECISE_TIMER libevent's timers are 4 ms coarse; without NO_CACHE_TIME a timer
  // added late in a busy loop iteration would be measured from a stale "now".
  event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
  event_config_set_flag(ec, EVENT_BASE_FLAG_NO_CACHE_TIME);
  ctx_.base = event_base_new_with_config(ec);
  event_config_free(ec);
  if (!ctx_.base) {
    error = "cannot create an event loop";
    return false;
  }
  ctx_.cfg = &cfg_;
  ctx_.stats = &stats_;
  ctx_.request = "GET " + cfg_.url.target + " HTTP/1.1\r\nHost: " + cfg_.url.host_header + "\r\n\r\n";
  ctx_.rbuf.resize(64 * 1024);
  ctx_.timeout_ns = static_cast<int64_t>(cfg_.timeout_s * 1e9);
  if (cfg_.fixed_rate()) ctx_.period_ns = static_cast<long double>(cfg_.connections) * 1e9L / cfg_.rate;
  for (int g = index_; g < cfg_.connections; g += cfg_.threads) {
    // Connection g starts g/R after t0: the connections' sends interleave evenly over a period.
    const int64_t offset = cfg_.fixed_rate() ? static_cast<int64_t>(g * 1e9L / cfg_.rate) : 0;
    conns_.push_back(std::make_unique<Connection>(ctx_, offset));
  }
  return true;
}

void Worker::run(const RunClock& clock, const std::atomic<bool>& stop) {
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // wake-ups to the microsecond, not 50 µs late
  stop_ = &stop;
  ctx_.end_ns = clock.end;
  stats_.reset(clock.t0);
  window_start_ns_ = clock.t0;

  event* tick = event_new(ctx_.base, -1, EV_PERSIST, &Worker::on_tick, this);
  const timeval tick_tv{0, kTickMs * 1000};
  event_add(tick, &tick_tv);
  event* warm = nullptr;
  if (clock.warmup_end > clock.t0) {
    warm = event_new(ctx_.base, -1, 0, &Worker::on_warmup_end, this);
    const timeval tv = after(clock.warmup_end);
    event_add(warm, &tv);
  }
  event* end = event_new(ctx_.base, -1, 0, &Worker::on_end, this);
  const timeval end_tv = after(clock.end);
  event_add(end, &end_tv);

  for (auto& c : conns_) c->begin(clock.t0);
  if (!stop.load(std::memory_order_relaxed)) event_base_dispatch(ctx_.base);
  stats_.measure_end_ns = std::min(now_ns(), clock.end);

  conns_.clear();  // closes the sockets
  event_free(tick);
  if (warm) event_free(warm);
  event_free(end);
}

void Worker::on_tick(int, short, void* self) {
  auto* w = static_cast<Worker*>(self);
  if (w->stop_->load(std::memory_order_relaxed)) {
    event_base_loopbreak(w->ctx_.base);
    return;
  }
  if (++w->ticks_ % kTicksPerRateSample != 0) return;
  const int64_t now = now_ns();
  if (now > w->window_start_ns_) {
    w->stats_.rate_samples.push_back(double(w->ctx_.window_requests) * 1e9 / double(now - w->window_start_ns_));
    w->ctx_.window_requests = 0;
    w->window_start_ns_ = now;
  }
}

void Worker::on_warmup_end(int, short, void* self) {
  auto* w = static_cast<Worker*>(self);
  const int64_t now = now_ns();
  w->stats_.reset(now);
  w->ctx_.window_requests = 0;
  w->window_start_ns_ = now;
  w->ticks_ = 0;
}

void Worker::on_end(int, short, void* self) { event_base_loopbreak(static_cast<Worker*>(self)->ctx_.base); }

}  // namespace platoon::load
