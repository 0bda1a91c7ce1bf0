// The calling fiber's operations: yield, park, sleep, identity.
#include <event2/event.h>
#include <stdexcept>

#include "runtime/carrier.hpp"
#include "runtime/fiber.hpp"
#include "runtime/probes.hpp"
#include "runtime/runtime_impl.hpp"

namespace platoon::rt::this_fiber {

namespace {
Fiber* require_fiber(const char* what) {
  Carrier* c = current_carrier();
  Fiber* f = c ? c->running() : nullptr;
  if (!f) throw std::logic_error(std::string(what) + ": not called from a fiber");
  return f;
}

void on_timer(evutil_socket_t, short, void* arg) {
  auto* f = static_cast<Fiber*>(arg);
  if (Carrier* c = current_carrier()) c->note_io_event();
  f->timer_fired.store(true, std::memory_order_seq_cst);
  unpark(f);
}
}  // namespace
}  // namespace platoon::rt::this_fiber

namespace platoon::rt {
void arm_timer(Fiber* f, event_base* base, uint64_t deadline_ns) {
  f->timer_fired.store(false);
  const uint64_t now = now_ns();
  const uint64_t d = deadline_ns > now ? deadline_ns - now : 0;
  evtimer_assign(&f->timer, base, this_fiber::on_timer, f);
  const timeval tv{static_cast<time_t>(d / 1000000000), static_cast<suseconds_t>((d % 1000000000) / 1000)};
  evtimer_add(&f->timer, &tv);
}

void disarm_timer(Fiber* f) { evtimer_del(&f->timer); }
}  // namespace platoon::rt

namespace platoon::rt::this_fiber {

bool in_fiber() {
  Carrier* c = current_carrier();
  return c && c->running();
}

Fiber* self() { return require_fiber("this_fiber::self"); }

void yield() { require_fiber("this_fiber::yield")->switch_out(SwitchAction::yield); }

void park() {
  Fiber* f = require_fiber("this_fiber::park");
  if (f->permit) {
    f->permit = false;
    return;
  }
  if (PLATOON_PROBE_ENABLED(park)) {
    Carrier* c = current_carrier();
    STAP_PROBE2(platoon, park, c->index, f->id);
  }
  f->switch_out(SwitchAction::park);
}

void sleep_for(std::chrono::nanoseconds d) {
  Fiber* f = require_fiber("this_fiber::sleep_for");
  if (d.count() <= 0) {
    yield();
    return;
  }
  arm_timer(f, f->runtime->io_base_for_current(), now_ns() + static_cast<uint64_t>(d.count()));
  while (!f->timer_fired.load(std::memory_order_seq_cst)) park();
  disarm_timer(f);
}

int carrier_index() {
  Carrier* c = current_carrier();
  return c && c->kind != Carrier::Kind::worker ? c->index : -1;
}

int home_index() {
  Fiber* f = require_fiber("this_fiber::home_index");
  return f->home ? f->home->index : -1;
}

Runtime* runtime() {
  Carrier* c = current_carrier();
  Fiber* f = c ? c->running() : nullptr;
  return f ? &f->runtime->owner : nullptr;
}

uint64_t id() { return require_fiber("this_fiber::id")->id; }

}  // namespace platoon::rt::this_fiber
