#include "tui/trace/replay_source.hpp"

#include <span>

namespace platoon::model {

std::unique_ptr<ReplaySource> ReplaySource::open(const std::string& path, std::string& error) {
  std::unique_ptr<ReplaySource> r(new ReplaySource());
  std::vector<uint8_t> pending;   // events since the last snapshot read
  ReadOptions ro;
  ro.on_event = [&pending](const platoon_event_header&, const void* rec, size_t size) {
    const auto* p = static_cast<const uint8_t*>(rec);
    pending.insert(pending.end(), p, p + size);
  };
  ro.on_snapshot = [&](Snapshot&& s) {
    r->steps_.push_back(Step{std::move(pending), std::move(s)});
    pending.clear();
  };
  auto contents = read_trace(path, &error, ro);
  if (!contents) return nullptr;
  r->contents_ = std::move(*contents);
  r->tail_ = std::move(pending);
  return r;
}

Snapshot ReplaySource::snapshot() {
  if (steps_.empty()) return {};
  if (next_ >= steps_.size()) return steps_.back().snapshot;
  return steps_[next_++].snapshot;
}

int ReplaySource::events(int, const EventSink& sink) {
  std::vector<uint8_t>& bytes = next_ < steps_.size() ? steps_[next_].events : tail_;
  int n = 0;
  for_each_event(std::span<const uint8_t>(bytes), [&](const platoon_event_header&, const void* rec, size_t size) {
    sink(rec, size);
    ++n;
  });
  bytes.clear();   // handed over once
  return n;
}

std::vector<std::string> ReplaySource::notes() const {
  std::vector<std::string> out;
  for (const auto& n : contents_.notes) out.push_back(n.text);
  return out;
}

}  // namespace platoon::model
