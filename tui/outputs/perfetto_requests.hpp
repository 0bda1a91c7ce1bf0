// The requests of a recording (platoon record --requests) in the Perfetto export:
//   - one track per connection (the record's socket cookie), under the reading process, named
//     "server :8080 <- 127.0.0.1:40312" or "client :40312 -> 127.0.0.1:9090";
//   - per request a slice from its start to its end, its measured fields (request_record.hpp) as
//     arguments, and its phases as child slices (server: socket wait, service; client: backend,
//     socket wait); a partial request is one slice named "request (partial)";
//   - per complete request a flow from its socket-wait slice to an instant on the reading
//     thread's track at the read, where that thread's scheduling states are: from a slow request
//     to what its reader was doing meanwhile.
// Requests that overlap on one connection (pipelining) go on a further track of the same name
// under the first, which Perfetto's UI shows merged: slices on one track must nest.
// A connection idle for kForgetIdleNs is forgotten, so that a recording of short connections
// does not hold one entry per connection ever seen; if it carries a request again, that goes on
// a new track of the same name, which the UI shows merged with the old one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bpf/platoon.h"
#include "tui/outputs/export_targets.hpp"
#include "tui/outputs/perfetto_packets.hpp"

namespace platoon::outputs {

struct PerfettoRequestStats {
  uint64_t requests = 0;  // request slices
  uint64_t partial = 0;   // of which partial
  uint64_t tracks = 0;    // connection tracks, overlap tracks included
  uint64_t flows = 0;
};

class PerfettoRequests {
 public:
  // threads: the targets with a thread track already written; processes: the pids with a
  // process track. Readers and processes not among them get a track before their first use.
  PerfettoRequests(PacketWriter& writer, const std::map<uint32_t, ExportThread>& threads,
                   std::set<uint32_t> processes);
  // A request, once the reorder buffer lets it go (by its end).
  void add(const platoon_event_header& h, const platoon_ev_request& r);
  const PerfettoRequestStats& stats() const { return stats_; }

 private:
  struct Lane {
    uint64_t uuid;
    uint64_t end_ns;  // the end of its latest request
  };
  struct Connection {
    std::string name;
    std::vector<Lane> lanes;
  };
  static constexpr uint64_t kForgetIdleNs = 10'000'000'000;
  static constexpr size_t kFirstSweep = 1024;  // connections held before the first look for idle ones

  uint64_t lane_for(const platoon_ev_request& r, uint64_t start_ns);
  void forget_idle(uint64_t now_ns);
  uint64_t new_track(const std::string& name, uint64_t parent);
  uint64_t reader_track(uint32_t pid, uint32_t tid);
  void ensure_process(uint32_t pid);

  PacketWriter& writer_;
  const std::map<uint32_t, ExportThread>& threads_;
  std::set<uint32_t> processes_;
  std::set<uint32_t> extra_threads_;  // readers given a track here
  std::map<uint64_t, Connection> connections_;
  size_t sweep_at_ = kFirstSweep;     // the number of connections that starts the next sweep
  PerfettoRequestStats stats_;
};

}  // namespace platoon::outputs
