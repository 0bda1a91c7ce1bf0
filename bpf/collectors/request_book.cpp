#include "bpf/collectors/request_book.hpp"

#include <cerrno>
#include <cstring>
#include <string>

namespace platoon::collectors {

RequestBook::RequestBook(int ring_fd, bool keep_records) : keep_(keep_records) {
  ring_.reset(ring_buffer__new(ring_fd, on_record, this, nullptr));
  if (!ring_) error_ = std::string("cannot open the request ring: ") + std::strerror(errno);
}

int RequestBook::on_record(void* ctx, void* data, size_t size) {
  auto* self = static_cast<RequestBook*>(ctx);
  if (size < sizeof(platoon_ev_request)) return 0;
  platoon_ev_request r;
  std::memcpy(&r, data, sizeof r);
  if (r.h.type != PLATOON_EV_REQUEST) return 0;
  snapshot::add_request(self->groups_, r, kMaxGroups, &self->lost_);
  if (!self->keep_) return 0;
  if (self->pending_.size() + sizeof r > kMaxPendingBytes) {
    ++self->lost_;
    return 0;
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(&r);
  self->pending_.insert(self->pending_.end(), bytes, bytes + sizeof r);
  return 0;
}

void RequestBook::drain() {
  if (ring_) ring_buffer__consume(ring_.get());
}

size_t RequestBook::hand_over(const std::function<void(const void*, size_t)>& sink) {
  const size_t n = pending_.size() / sizeof(platoon_ev_request);
  for (size_t i = 0; i < n; ++i) sink(pending_.data() + i * sizeof(platoon_ev_request), sizeof(platoon_ev_request));
  pending_.clear();
  return n;
}

void RequestBook::fill(snapshot::Snapshot& snap) const {
  snap.requests = groups_;
  snap.lost_requests += lost_;
}

}  // namespace platoon::collectors
