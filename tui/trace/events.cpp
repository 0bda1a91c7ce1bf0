#include "tui/trace/events.hpp"

namespace platoon::trace {
namespace {

// The record as T, handed to call; false when the record is too short for T.
template <class T, class Call>
bool deliver(const void* record, size_t size, Call call) {
  auto typed = event_as<T>(record, size);
  if (typed) call(*typed);
  return typed.has_value();
}

}  // namespace

bool visit_event(const void* record, size_t size, EventVisitor& v) {
  auto header = event_as<platoon_event_header>(record, size);
  if (!header) return false;
  const platoon_event_header& h = *header;
  auto wake = [&](WakeKind kind) {
    return deliver<platoon_ev_wake>(record, size, [&](const auto& e) { v.on_wake(h, e, kind); });
  };
  switch (h.type) {
    case PLATOON_EV_SWITCH: return deliver<platoon_ev_switch>(record, size, [&](const auto& e) { v.on_switch(h, e); });
    case PLATOON_EV_WAKING: return wake(WakeKind::waking);
    case PLATOON_EV_WAKEUP: return wake(WakeKind::wakeup);
    case PLATOON_EV_WAKEUP_NEW: return wake(WakeKind::wakeup_new);
    case PLATOON_EV_MIGRATE: return deliver<platoon_ev_migrate>(record, size, [&](const auto& e) { v.on_migrate(h, e); });
    case PLATOON_EV_EXIT: return deliver<platoon_ev_exit>(record, size, [&](const auto& e) { v.on_exit(h, e); });
    case PLATOON_EV_EPOLL: return deliver<platoon_ev_epoll>(record, size, [&](const auto& e) { v.on_epoll(h, e); });
    case PLATOON_EV_DRAIN: return deliver<platoon_ev_runtime>(record, size, [&](const auto& e) { v.on_drain(h, e); });
    case PLATOON_EV_STEAL: return deliver<platoon_ev_runtime>(record, size, [&](const auto& e) { v.on_steal(h, e); });
    case PLATOON_EV_REQUEST: return deliver<platoon_ev_request>(record, size, [&](const auto& e) { v.on_request(h, e); });
    default: return false;
  }
}

void EventReader::add(const platoon_event_header& h, const void* record, size_t size, EventVisitor& visitor) {
  ++stats_.records;
  // Checked here, not when visited: an invalid record holds no memory and moves no horizon.
  const size_t want = event_record_size(h.type);
  if (want == 0 || size < want) {
    ++stats_.skipped;
    return;
  }
  Held held;
  held.ts_ns = h.ts_ns;
  held.seq = seq_++;
  held.size = static_cast<uint16_t>(want);  // a longer record's tail is not part of its struct
  std::memcpy(held.bytes.data(), record, want);
  if (h.ts_ns < released_ns_) ++stats_.late;
  pending_.push(held);
  stats_.max_pending = std::max<uint64_t>(stats_.max_pending, pending_.size());
  newest_ns_ = std::max<uint64_t>(newest_ns_, h.ts_ns);
  if (newest_ns_ > horizon_ns_) release(newest_ns_ - horizon_ns_, visitor);
}

void EventReader::release(uint64_t upto_ns, EventVisitor& visitor) {
  while (!pending_.empty() && pending_.top().ts_ns <= upto_ns) {
    const Held& held = pending_.top();
    released_ns_ = std::max<uint64_t>(released_ns_, held.ts_ns);
    visit_event(held.bytes.data(), held.size, visitor);  // validated in add()
    pending_.pop();
  }
}

}  // namespace platoon::trace
