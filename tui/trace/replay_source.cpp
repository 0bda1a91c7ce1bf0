#include "tui/trace/replay_source.hpp"

#include <span>

namespace platoon::trace {
namespace {

// What a replay keeps: the reader's caps applied to what its callbacks deliver (the reader
// bounds only what it keeps itself). Snapshots are kept as a prefix, as the reader does: a gap
// in the middle would fake one long interval; events recorded after the last kept snapshot
// are dropped with it.
struct Budget {
  bool keep_events = true;
  uint64_t kept_snapshot_bytes = 0;
  uint64_t kept_event_bytes = 0;

  bool take_snapshot(const snapshot::Snapshot& s, TraceContents& c) {
    const uint64_t bytes = snapshot_bytes(s);
    if (c.cut_snapshots || bytes > kKeepSnapshotBytes - kept_snapshot_bytes) {
      ++c.cut_snapshots;
      return false;
    }
    kept_snapshot_bytes += bytes;
    return true;
  }
  bool take_event(size_t size, TraceContents& c) {
    if (!keep_events) return false;
    if (c.cut_snapshots || size > kKeepEventBytes - kept_event_bytes) {
      ++c.cut_events;
      return false;
    }
    kept_event_bytes += size;
    return true;
  }
};

}  // namespace

std::unique_ptr<ReplaySource> ReplaySource::open(const std::string& path, std::string& error, Options options) {
  if (!options.rewind) return open_streaming(path, error, options.keep_events);
  std::unique_ptr<ReplaySource> r(new ReplaySource());
  TraceContents cuts;             // the callbacks' own cut_* counts, added to the reader's below
  Budget budget{.keep_events = options.keep_events};
  std::vector<uint8_t> pending;   // events since the last snapshot read
  ReadOptions ro;
  ro.on_event = [&](const platoon_event_header&, const void* rec, size_t size) {
    if (!budget.take_event(size, cuts)) return;
    const auto* p = static_cast<const uint8_t*>(rec);
    pending.insert(pending.end(), p, p + size);
  };
  ro.on_snapshot = [&](snapshot::Snapshot&& s) {
    if (!budget.take_snapshot(s, cuts)) return;
    r->steps_.push_back(Step{std::move(pending), std::move(s)});
    pending.clear();
  };
  auto contents = read_trace(path, &error, ro);
  if (!contents) return nullptr;
  r->contents_ = std::move(*contents);
  r->contents_.cut_snapshots += cuts.cut_snapshots;
  r->contents_.cut_events += cuts.cut_events;
  r->tail_ = std::move(pending);
  r->rewind_ = options.rewind;
  return r;
}

// Streaming: the cursor's callbacks fill steps_ and pending_ as next() reads chunks.
std::unique_ptr<ReplaySource> ReplaySource::open_streaming(const std::string& path, std::string& error,
                                                           bool keep_events) {
  std::unique_ptr<ReplaySource> r(new ReplaySource());
  ReplaySource* self = r.get();
  ReadOptions ro;
  ro.on_event = [self](const platoon_event_header&, const void* rec, size_t size) {
    if (!self->keep_events_) return;
    const auto* p = static_cast<const uint8_t*>(rec);
    self->pending_.insert(self->pending_.end(), p, p + size);
  };
  ro.on_snapshot = [self](snapshot::Snapshot&& s) {
    self->steps_.push_back(Step{std::move(self->pending_), std::move(s)});
    self->pending_.clear();
  };
  r->cursor_ = TraceCursor::open(path, &error, ro);
  if (!r->cursor_) return nullptr;
  r->keep_events_ = keep_events;
  r->rewind_ = false;
  r->read_ahead();
  return r;
}

void ReplaySource::read_ahead() {
  if (!cursor_) return;
  while (steps_.size() < next_ + 2 && cursor_->next()) {
  }
  if (steps_.size() < next_ + 2) {   // the end: the events after the last snapshot
    tail_.insert(tail_.end(), pending_.begin(), pending_.end());
    pending_.clear();
  }
}

snapshot::Snapshot ReplaySource::snapshot() {
  read_ahead();
  if (steps_.empty()) return {};
  if (next_ >= steps_.size()) return steps_.back().snapshot;
  snapshot::Snapshot& s = steps_[next_++].snapshot;
  if (rewind_) return s;
  snapshot::Snapshot out = next_ < steps_.size() ? std::move(s) : s;  // the last stays: it repeats
  read_ahead();
  return out;
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

}  // namespace platoon::trace
