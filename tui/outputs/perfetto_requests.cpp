#include "tui/outputs/perfetto_requests.hpp"

#include <algorithm>
#include <utility>

#include "tui/outputs/request_record.hpp"

namespace platoon::outputs {
namespace {

namespace f = perfetto_fields;

ProtoMessage track_event(uint64_t type, uint64_t track, const char* name = nullptr) {
  ProtoMessage ev;
  ev.add_varint(f::track_event::kType, type);
  ev.add_varint(f::track_event::kTrackUuid, track);
  if (name) ev.add_bytes(f::track_event::kName, name);
  return ev;
}

// The request's measured fields as the slice's arguments; a field the record does not measure
// is left out rather than shown as 0.
void add_arguments(ProtoMessage& ev, const platoon_ev_request& r) {
  for (const RequestField& field : request_fields()) {
    const auto value = field.value(r);
    if (!value) continue;
    ProtoMessage a;
    a.add_bytes(f::debug_annotation::kName, field.key);
    if (field.flag) a.add_bool(f::debug_annotation::kBoolValue, *value != 0);
    else a.add_varint(f::debug_annotation::kUintValue, *value);
    ev.add_message(f::track_event::kDebugAnnotations, a);
  }
}

std::string connection_name(const platoon_ev_request& r) {
  const std::string local = ":" + std::to_string(r.local_port);
  return r.side == PLATOON_REQ_CLIENT ? "client " + local + " -> " + request_remote(r)
                                      : "server " + local + " <- " + request_remote(r);
}

}  // namespace

PerfettoRequests::PerfettoRequests(PacketWriter& writer, const std::map<uint32_t, ExportThread>& threads,
                                   std::set<uint32_t> processes)
    : writer_(writer), threads_(threads), processes_(std::move(processes)) {}

void PerfettoRequests::ensure_process(uint32_t pid) {
  if (!processes_.insert(pid).second) return;
  ProtoMessage proc, track;
  proc.add_int(f::kProcessPid, pid);
  track.add_varint(f::track::kUuid, process_uuid(pid));
  track.add_message(f::track::kProcess, proc);
  writer_.write_descriptor(track);
}

// The reading thread's track: the one every target has, or one made here (a reader the
// snapshots never listed, such as a thread that lived between two of them).
uint64_t PerfettoRequests::reader_track(uint32_t pid, uint32_t tid) {
  if (!threads_.count(tid) && extra_threads_.insert(tid).second) {
    ensure_process(pid);
    ProtoMessage thread, track;
    thread.add_int(f::kThreadPid, pid);
    thread.add_int(f::kThreadTid, tid);
    track.add_varint(f::track::kUuid, thread_uuid(tid));
    track.add_varint(f::track::kParentUuid, process_uuid(pid));
    track.add_message(f::track::kThread, thread);
    writer_.write_descriptor(track);
  }
  return thread_uuid(tid);
}

uint64_t PerfettoRequests::new_track(const std::string& name, uint64_t parent) {
  const uint64_t uuid = track_uuid(TrackRange::request, ++stats_.tracks);
  ProtoMessage track;
  track.add_varint(f::track::kUuid, uuid);
  track.add_varint(f::track::kParentUuid, parent);
  track.add_bytes(f::track::kName, name);
  writer_.write_descriptor(track);
  return uuid;
}

// Sweeps when the number of connections has doubled since the last sweep: each costs a pass
// over them, paid for by as many new connections.
void PerfettoRequests::forget_idle(uint64_t now_ns) {
  if (connections_.size() < sweep_at_) return;
  std::erase_if(connections_, [now_ns](const auto& entry) {
    const auto& lanes = entry.second.lanes;
    const uint64_t last = std::max_element(lanes.begin(), lanes.end(), [](const Lane& a, const Lane& b) {
                            return a.end_ns < b.end_ns;
                          })->end_ns;
    return last + kForgetIdleNs < now_ns;
  });
  sweep_at_ = std::max(kFirstSweep, 2 * connections_.size());
}

// Requests come by their ends, so one that starts at or after the latest end on a lane does not
// overlap anything on it.
uint64_t PerfettoRequests::lane_for(const platoon_ev_request& r, uint64_t start_ns) {
  auto it = connections_.find(r.conn);
  if (it == connections_.end()) {
    forget_idle(r.h.ts_ns);
    it = connections_.emplace(r.conn, Connection{connection_name(r), {}}).first;
    ensure_process(r.pid);
  }
  Connection& c = it->second;
  for (Lane& lane : c.lanes)
    if (lane.end_ns <= start_ns) {
      lane.end_ns = r.h.ts_ns;
      return lane.uuid;
    }
  const uint64_t parent = c.lanes.empty() ? process_uuid(r.pid) : c.lanes.front().uuid;
  c.lanes.push_back({new_track(c.name, parent), r.h.ts_ns});
  return c.lanes.back().uuid;
}

// Packets of equal stamps keep their order when trace_processor sorts, so each request's go out
// as its slices nest: the request, each phase, the read instant as its socket wait ends.
void PerfettoRequests::add(const platoon_event_header& h, const platoon_ev_request& r) {
  namespace te = f::track_event;
  const uint64_t start = request_start_ns(r);
  const uint64_t track = lane_for(r, start);
  const bool partial = request_partial(r);
  ProtoMessage begin = track_event(te::kTypeSliceBegin, track, partial ? "request (partial)" : "request");
  add_arguments(begin, r);
  writer_.write_event(start, begin);
  for (const RequestPhase& phase : request_phases(r)) {
    ProtoMessage b = track_event(te::kTypeSliceBegin, track, phase.name);
    const uint64_t flow = phase.socket_wait ? ++stats_.flows : 0;
    if (flow) b.add_fixed64(te::kFlowIds, flow);
    writer_.write_event(phase.start_ns, b);
    writer_.write_event(phase.end_ns, track_event(te::kTypeSliceEnd, track));
    if (!flow) continue;
    ProtoMessage read = track_event(te::kTypeInstant, reader_track(r.pid, h.tid),
                                    r.side == PLATOON_REQ_CLIENT ? "read reply" : "read request");
    read.add_fixed64(te::kTerminatingFlowIds, flow);
    writer_.write_event(phase.end_ns, read);
  }
  writer_.write_event(h.ts_ns, track_event(te::kTypeSliceEnd, track));
  ++stats_.requests;
  if (partial) ++stats_.partial;
}

}  // namespace platoon::outputs
