// Typed reading of the raw ring-buffer records (layouts in bpf/platoon.h): the one place that
// turns a record's bytes into its struct, and the one reorder buffer that hands records over in
// time order. Exporters and doctor are visitors: they say what they do with a switch, a wakeup,
// an epoll return..., never how a record is laid out or which type id it carries.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <queue>
#include <vector>

#include "bpf/platoon.h"
#include "tui/trace/trace_format.hpp"  // event_record_size

namespace platoon::trace {

// A record as its struct (memcpy: records in a byte buffer need not be aligned for T).
template <class T>
std::optional<T> event_as(const void* record, size_t size) {
  if (size < sizeof(T)) return std::nullopt;
  T value;
  std::memcpy(&value, record, sizeof(T));
  return value;
}

// The three wake records share one layout; what differs is the moment (sched_waking: the wake
// starts; sched_wakeup: the task is queued; sched_wakeup_new: a new task is queued).
enum class WakeKind : uint8_t { waking, wakeup, wakeup_new };

// One callback per record type, each given the header (aligned, as every consumer needs its
// stamp, CPU and tid) and the whole typed record. Every callback ignores its record unless
// overridden, so a consumer names only what it uses.
class EventVisitor {
 public:
  virtual ~EventVisitor() = default;
  virtual void on_switch(const platoon_event_header&, const platoon_ev_switch&) {}
  virtual void on_wake(const platoon_event_header&, const platoon_ev_wake&, WakeKind) {}
  virtual void on_migrate(const platoon_event_header&, const platoon_ev_migrate&) {}
  virtual void on_exit(const platoon_event_header&, const platoon_ev_exit&) {}
  virtual void on_epoll(const platoon_event_header&, const platoon_ev_epoll&) {}
  virtual void on_drain(const platoon_event_header&, const platoon_ev_runtime&) {}  // a = depth, b = fibers run
  virtual void on_steal(const platoon_event_header&, const platoon_ev_runtime&) {}  // a = victim, b = count
  virtual void on_request(const platoon_event_header&, const platoon_ev_request&) {}  // stamped at its end

 protected:
  EventVisitor() = default;
  EventVisitor(const EventVisitor&) = default;
  EventVisitor& operator=(const EventVisitor&) = default;
};

// Decodes one record and calls the visitor's callback for its type. False, with nothing called,
// for an unknown type or a record shorter than its type's struct.
bool visit_event(const void* record, size_t size, EventVisitor& visitor);

// The ring buffer is one buffer for all CPUs. Each CPU stages its records and hands them over a
// batch at a time (bpf/stage.bpf.h): after at most PLATOON_STAGE_MAX_AGE_NS (10 ms) while the
// CPU is busy, at the recorder's next poll (every 25 ms at most) while it is quiet. So records
// reach the ring out of order by up to a few tens of ms; 200 ms also covers a recorder that was
// kept off its CPU for a while, and still bounds memory (200 ms of records).
inline constexpr uint64_t kReorderHorizonNs = 200'000'000;

struct EventReaderStats {
  uint64_t records = 0;      // handed to add()
  uint64_t skipped = 0;      // unknown type or short record: counted, never visited
  uint64_t late = 0;         // came more than the horizon out of order: visited late, out of order
  uint64_t max_pending = 0;  // most records held at once
};

// Records in, visitor callbacks out in time order. A record is held until one stamped a horizon
// later has arrived (or finish()), then visited in (stamp, arrival) order: equal stamps keep the
// order the kernel emitted them in. Memory: the horizon's worth of records.
//
// The visitor is passed to each call rather than kept, so an owner that is itself the visitor
// can be copied or moved without the reader pointing at the old object.
class EventReader {
 public:
  explicit EventReader(uint64_t horizon_ns = kReorderHorizonNs) : horizon_ns_(horizon_ns) {}

  // header: the record's own, already copied out (what for_each_event and ReadOptions::on_event
  // hand over). May call the visitor for records the horizon now lets go.
  void add(const platoon_event_header& header, const void* record, size_t size, EventVisitor& visitor);
  // Every record still held, in order.
  void finish(EventVisitor& visitor) { release(UINT64_MAX, visitor); }
  const EventReaderStats& stats() const { return stats_; }

 private:
  // The largest struct of any type id (ids are small: enum platoon_event_type).
  static constexpr size_t kLargestRecord = [] {
    size_t largest = 0;
    for (unsigned type = 0; type <= UINT8_MAX; ++type)
      largest = std::max(largest, event_record_size(static_cast<uint16_t>(type)));
    return largest;
  }();
  struct Held {
    uint64_t ts_ns;
    uint64_t seq;              // arrival order breaks ties
    uint16_t size;
    std::array<uint8_t, kLargestRecord> bytes;
    bool operator>(const Held& o) const { return ts_ns != o.ts_ns ? ts_ns > o.ts_ns : seq > o.seq; }
  };
  void release(uint64_t upto_ns, EventVisitor& visitor);

  uint64_t horizon_ns_;
  std::priority_queue<Held, std::vector<Held>, std::greater<Held>> pending_;
  uint64_t seq_ = 0;
  uint64_t newest_ns_ = 0;    // newest stamp added
  uint64_t released_ns_ = 0;  // newest stamp visited
  EventReaderStats stats_;
};

}  // namespace platoon::trace
