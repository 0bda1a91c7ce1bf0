// The platoon trace file, version 3 (reads 1 and 2 too): constants and the layout both sides agree on. The prose
// (why chunks, why this encoding, what a reader must check) is in docs/trace-format.md; this header
// is the part the compiler checks.
//
//   file   := header chunk*
//   header := magic[8] = 89 'P' 'L' 'A' 'T' 'O' 'O' 'N' | u16 major | u16 minor | u32 reserved (0)
//   chunk  := u32 type (fourcc) | u32 length | u32 crc32 | payload[length]
//             crc32 = zlib crc32 over the type and length bytes, then the payload
//   payload:= u8 encoding (0 stored, 1 zlib, 2 zstd) | body    (stored)
//                                            | varint raw_len | zlib stream   (zlib)
//                                            | varint raw_len | zstd frame    (zstd, since 2.0)
//
// Fixed-width integers are little-endian. The first chunk is META; then SNAP, EVTS and NOTE in
// the order they happened; a finished recording ends with STOP.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <zlib.h>

#include "bpf/platoon.h"
#include "bpf/snapshot/snapshot.hpp"  // Source

namespace platoon::trace {

// Event records are stored as the bytes of the platoon_ev_* structs in the host's layout; the
// tool only targets little-endian machines (x86_64, arm64), where host layout = file layout.
static_assert(std::endian::native == std::endian::little, "the trace format stores little-endian host structs");

// 3.0: EVTS chunks may hold request records (PLATOON_EV_REQUEST), which a 2.x reader would take
// for a corrupt chunk, hence the major; SNAP bodies end with the request groups.
// 2.0: chunks may be zstd-compressed (encoding 2), which a 1.x reader cannot read.
// Otherwise as 1.2: this reader reads 1.x and 2.x files too.
inline constexpr uint16_t kTraceMajorVersion = 3;  // readers refuse a larger major
inline constexpr uint16_t kTraceOldestMajorVersion = 1;
inline constexpr uint16_t kTraceMinorVersion = 0;  // a larger minor only adds chunk types / trailing fields

inline constexpr uint8_t kTraceMagic[8] = {0x89, 'P', 'L', 'A', 'T', 'O', 'O', 'N'};
inline constexpr size_t kTraceHeaderBytes = 16;
inline constexpr size_t kChunkHeaderBytes = 12;

// Limits a reader enforces before allocating, so a hostile length cannot ask for gigabytes.
// Writers stay far below them (an events chunk holds at most kEventChunkRawBytes).
inline constexpr uint32_t kMaxChunkBytes = 16u << 20;        // payload, stored and decompressed
inline constexpr uint32_t kEventChunkRawBytes = 1u << 20;     // writer splits event batches here
inline constexpr uint32_t kMaxStringBytes = 1u << 16;
inline constexpr uint32_t kMaxThreadsPerSnapshot = 1u << 17;  // 8x PLATOON_MAX_THREADS
inline constexpr uint32_t kMaxPairsPerSnapshot = 1u << 17;
inline constexpr uint32_t kMaxCpusInTrace = 1u << 14;        // lost_events_per_cpu, cpu_switch_ins
inline constexpr uint32_t kMaxListItems = 1u << 16;           // pids, command words, request groups
inline constexpr uint32_t kMaxHistogramBuckets = 1u << 12;    // a LatencyHistogram's buckets (~3,800 cover 2^64 ns)
// Deflate cannot expand more than ~1032:1; a claimed raw length beyond that is a lie. zstd can
// (runs), so the writer keeps zstd chunks within the same ratio and the reader holds both to it.
inline constexpr uint64_t kMaxZlibRatio = 1040;

// Caps on what a reader keeps, as opposed to the limits above on what is valid. A body within
// the limits can still decode to far more memory than it occupies (a thread is ~30 bytes on
// disk, compressible ~1000:1, and ~1.5 KB in memory), so the reader keeps at most this much and
// counts what it cut (TraceContents::cap_note); the rest of the file is still read. A real
// recording stays below every cap: the BPF maps hold PLATOON_MAX_THREADS threads and pairs and
// PLATOON_MAX_CPUS per-CPU counters.
inline constexpr uint32_t kKeepThreadsPerSnapshot = 1u << 15;  // 2x PLATOON_MAX_THREADS
inline constexpr uint32_t kKeepPairsPerSnapshot = 1u << 15;    // 2x PLATOON_MAX_PAIRS
inline constexpr uint32_t kKeepCpusPerList = 1u << 12;         // CPUs >= 4096 are not kept
inline constexpr uint32_t kKeepCpuSlotsPerSnapshot = 1u << 21; // per-CPU entries, all lists
inline constexpr uint32_t kKeepRequestGroups = 1u << 13;       // 2x the collector's RequestBook::kMaxGroups
// Consumers that hold a whole recording: ReadOptions::max_snapshot_bytes / max_event_bytes bound
// what top --replay and export --format chrome hold in memory (RecordingWindow's own cap on
// vanished threads is kKeepVanishedThreads, tui/analysis/window.hpp).
inline constexpr uint64_t kKeepSnapshotBytes = 256ull << 20;
inline constexpr uint64_t kKeepEventBytes = 128ull << 20;

constexpr uint32_t fourcc(char a, char b, char c, char d) {
  return uint32_t(uint8_t(a)) | uint32_t(uint8_t(b)) << 8 | uint32_t(uint8_t(c)) << 16 |
         uint32_t(uint8_t(d)) << 24;
}

enum class ChunkType : uint32_t {
  meta = fourcc('M', 'E', 'T', 'A'),      // TraceMeta; always the first chunk
  snapshot = fourcc('S', 'N', 'A', 'P'),  // one Snapshot
  events = fourcc('E', 'V', 'T', 'S'),    // varint count | raw platoon_ev_* records end to end
  note = fourcc('N', 'O', 'T', 'E'),      // varint ts_ns (CLOCK_BOOTTIME) | string
  stop = fourcc('S', 'T', 'O', 'P'),      // string stop_reason | varint end_boottime_ns; last chunk
};

enum class ChunkEncoding : uint8_t { stored = 0, zlib = 1, zstd = 2 };

// What the recording was and where; the META chunk.
struct TraceMeta {
  uint32_t version = kTraceMajorVersion;  // set by the reader; the writer always writes its own
  uint32_t minor_version = kTraceMinorVersion;
  std::string tool_version;
  std::string hostname;                   // empty: the writer fills it from uname
  std::string kernel;                     // uname release; empty: filled by the writer
  std::string target;                     // human description, e.g. "pid 1234" or "-- ./server"
  std::string attach_mode;                // e.g. "tp_btf", "raw_tp", "procfs"
  snapshot::Source source = snapshot::Source::bpf;
  uint32_t ncpus = 0;                     // 0: the writer fills sysconf(_SC_NPROCESSORS_CONF)
  uint64_t interval_ns = 0;
  uint64_t start_boottime_ns = 0;         // 0: the writer reads the clocks at create()
  uint64_t start_realtime_ns = 0;         // same instant as start_boottime_ns, for conversion
  std::vector<uint32_t> pids;
  std::string comm;
  std::vector<std::string> command;
  std::string runtime;                    // since 1.2: what the target is (to_string(RuntimeKind)), "" unknown

  bool operator==(const TraceMeta&) const = default;
};

// Conventional stop reasons (free-form strings in the file; these are what `record` writes).
inline constexpr std::string_view kStopDuration = "duration reached";
inline constexpr std::string_view kStopInterrupted = "interrupted";
inline constexpr std::string_view kStopTargetExited = "target exited";

// Size of one ring-buffer record of each type: fixed by version 1 of the format.
constexpr size_t event_record_size(uint16_t type) { return platoon_event_size(type); }
// A struct change without a format version bump would silently misread old files.
static_assert(sizeof(platoon_event_header) == 16);
static_assert(sizeof(platoon_ev_switch) == 72);
static_assert(sizeof(platoon_ev_wake) == 48);
static_assert(sizeof(platoon_ev_migrate) == 48);
static_assert(sizeof(platoon_ev_exit) == 24);
static_assert(sizeof(platoon_ev_epoll) == 32);
static_assert(sizeof(platoon_ev_runtime) == 40);
static_assert(sizeof(platoon_ev_request) == 104);

// Chunk checksum: crc32 of the 8 header bytes before it (type, length) continued over the payload.
inline uint32_t chunk_crc(const uint8_t type_and_length[8], const uint8_t* payload, size_t n) {
  uLong crc = crc32(0L, type_and_length, 8);
  // zlib takes uInt lengths; payloads are bounded by kMaxChunkBytes, far below 4 GiB.
  // (crc32 with a null buffer returns the initial value: skip empty payloads.)
  if (n > 0) crc = crc32(crc, payload, static_cast<uInt>(n));
  return static_cast<uint32_t>(crc);
}

}  // namespace platoon::trace
