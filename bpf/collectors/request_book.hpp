// The requests the socket programs completed (bpf/requests.bpf.h), drained from their own ring
// buffer: summed per group for the snapshots, and, while recording, kept as records until
// poll_events hands them to its sink (the trace's events).
#pragma once

#include <bpf/libbpf.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "bpf/snapshot/snapshot.hpp"

namespace platoon::collectors {

class RequestBook {
 public:
  // Groups beyond this many (distinct process, thread, endpoint) are counted as lost.
  static constexpr size_t kMaxGroups = 4096;
  // Records kept for the sink at most (about 9 s at 50,000 requests/s); beyond, lost.
  static constexpr size_t kMaxPendingBytes = 64u << 20;

  // Reads the ring map `ring_fd`; keep_records: hand each record to poll_events' sink too.
  RequestBook(int ring_fd, bool keep_records);
  bool ok() const { return ring_ != nullptr; }
  std::string error() const { return error_; }

  // Everything the ring holds now into the groups (and the pending records).
  void drain();
  // The pending records to `sink`, in ring order, one record per call; returns how many.
  size_t hand_over(const std::function<void(const void*, size_t)>& sink);
  // The groups so far, and what this side lost added to snap.lost_requests (which holds what
  // the programs could not write).
  void fill(snapshot::Snapshot& snap) const;

 private:
  struct RingDeleter {
    void operator()(ring_buffer* r) const { ring_buffer__free(r); }
  };
  static int on_record(void* ctx, void* data, size_t size);

  std::unique_ptr<ring_buffer, RingDeleter> ring_;
  std::string error_;
  bool keep_ = false;
  std::vector<snapshot::RequestGroup> groups_;
  uint64_t lost_ = 0;                  // groups beyond kMaxGroups, records beyond kMaxPendingBytes
  std::vector<uint8_t> pending_;
};

}  // namespace platoon::collectors
