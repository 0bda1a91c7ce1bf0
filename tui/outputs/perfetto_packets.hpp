// What every part of the Perfetto export shares: the field numbers of perfetto_trace.proto (=
// Perfetto's published schema; change both together), the track uuid ranges, and the writer that
// frames each TracePacket into the Trace.
#pragma once

#include <cstdint>
#include <ostream>

#include "tui/outputs/proto_encoder.hpp"

namespace platoon::outputs {

namespace perfetto_fields {
constexpr uint32_t kTracePacket = 1;
namespace packet {
constexpr uint32_t kFtraceEvents = 1, kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11,
                   kSequenceFlags = 13, kSystemInfo = 45, kTrackDescriptor = 60;
}
constexpr uint32_t kSystemInfoUtsname = 1, kSystemInfoNumCpus = 8;
constexpr uint32_t kUtsSysname = 1, kUtsRelease = 3;
constexpr uint32_t kBundleCpu = 1, kBundleEvent = 2, kBundleLostEvents = 3;
namespace ftrace {
constexpr uint32_t kTimestamp = 1, kPid = 2, kSchedSwitch = 4, kSchedWaking = 20, kSchedWakeupNew = 114,
                   kSchedMigrateTask = 491;
}
namespace sched_switch {
constexpr uint32_t kPrevComm = 1, kPrevPid = 2, kPrevPrio = 3, kPrevState = 4, kNextComm = 5, kNextPid = 6,
                   kNextPrio = 7;
}
namespace wake {  // sched_waking and sched_wakeup_new share the layout
constexpr uint32_t kComm = 1, kPid = 2, kPrio = 3, kSuccess = 4, kTargetCpu = 5;
}
namespace migrate {
constexpr uint32_t kComm = 1, kPid = 2, kPrio = 3, kOrigCpu = 4, kDestCpu = 5;
}
namespace track {
constexpr uint32_t kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kParentUuid = 5, kCounter = 8;
}
constexpr uint32_t kProcessPid = 1, kProcessName = 6;
constexpr uint32_t kThreadPid = 1, kThreadTid = 2, kThreadName = 5;
namespace track_event {
constexpr uint32_t kDebugAnnotations = 4, kType = 9, kTrackUuid = 11, kName = 23, kDoubleCounterValue = 44,
                   kFlowIds = 47, kTerminatingFlowIds = 48;
constexpr uint64_t kTypeSliceBegin = 1, kTypeSliceEnd = 2, kTypeInstant = 3, kTypeCounter = 4;
}
namespace debug_annotation {
constexpr uint32_t kBoolValue = 2, kUintValue = 3, kStringValue = 6, kName = 10;
}
}  // namespace perfetto_fields

// Track uuids are global to the trace: each kind of track has its own range, in the top byte.
enum class TrackRange : uint64_t { process = 1, thread = 2, counter = 3, cgroup = 4, request = 5 };
constexpr uint64_t track_uuid(TrackRange range, uint64_t id) { return (static_cast<uint64_t>(range) << 56) | id; }
constexpr uint64_t process_uuid(uint32_t pid) { return track_uuid(TrackRange::process, pid); }
constexpr uint64_t thread_uuid(uint32_t tid) { return track_uuid(TrackRange::thread, tid); }

class PacketWriter {
 public:
  explicit PacketWriter(std::ostream& out) : out_(out) {}
  // Every packet carries the sequence id; the first one also says the sequence starts clean
  // (trace_processor drops track events of a sequence whose state it cannot vouch for).
  void write(ProtoMessage& packet) {
    packet.add_varint(perfetto_fields::packet::kSequenceId, kSequenceId);
    if (count_ == 0) packet.add_varint(perfetto_fields::packet::kSequenceFlags, kSeqIncrementalStateCleared);
    frame_.clear();
    frame_.add_message(perfetto_fields::kTracePacket, packet);
    out_.write(frame_.bytes().data(), static_cast<std::streamsize>(frame_.size()));
    ++count_;
  }
  // A track event stamped ts_ns.
  void write_event(uint64_t ts_ns, const ProtoMessage& event) {
    ProtoMessage packet;
    packet.add_varint(perfetto_fields::packet::kTimestamp, ts_ns);
    packet.add_message(perfetto_fields::packet::kTrackEvent, event);
    write(packet);
  }
  void write_descriptor(const ProtoMessage& track) {
    ProtoMessage packet;
    packet.add_message(perfetto_fields::packet::kTrackDescriptor, track);
    write(packet);
  }
  uint64_t count() const { return count_; }

 private:
  static constexpr uint32_t kSequenceId = 1;  // every packet comes from this one writer
  static constexpr uint32_t kSeqIncrementalStateCleared = 1;
  std::ostream& out_;
  ProtoMessage frame_;
  uint64_t count_ = 0;
};

}  // namespace platoon::outputs
