// Writes a platoon trace file (docs/trace-format.md): `platoon record -o FILE`.
//
// Crash safety is the point of the design: every call writes one or more complete chunks with
// write(2) before it returns, nothing is buffered in user space, so a SIGKILL or power loss
// after a call returned loses nothing the kernel had (and a crash during a call loses only that
// chunk, which readers report as `truncated`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tui/outputs/output_file.hpp"
#include "bpf/snapshot/snapshot.hpp"
#include "tui/trace/trace_format.hpp"

namespace platoon::trace {

class TraceWriter {
 public:
  struct Options {
    bool compress = true;         // zstd (level 1) for SNAP and EVTS chunks when it saves space
    bool zlib = false;            // zlib (level 1) instead, as 1.x writers did (tests: old files)
    bool sync_on_finish = true;   // fdatasync before close in finish()
  };

  // Writes the header and META chunk to a new 0600 file and renames it to `path` (replacing
  // an earlier regular file, refusing anything else: output_file.hpp). nullptr and a one-line
  // *error on failure.
  static std::unique_ptr<TraceWriter> create(const std::string& path, const TraceMeta& meta,
                                             std::string* error);
  static std::unique_ptr<TraceWriter> create(const std::string& path, const TraceMeta& meta,
                                             const Options& options, std::string* error);
  // The same into a file the caller created (top's `r`: a name that replaces nothing).
  static std::unique_ptr<TraceWriter> create(outputs::OutputFile file, const TraceMeta& meta,
                                             const Options& options, std::string* error);
  ~TraceWriter();  // closes without a STOP chunk if finish() was not called: readers see !complete
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Each returns false once anything failed (error() says what); calls after a failure do nothing.
  // Safe to call from several threads: chunks never interleave.
  bool write_snapshot(const snapshot::Snapshot& snapshot);
  // `records` holds `count` ring-buffer records (platoon_ev_*) end to end, each exactly
  // event_record_size(type) bytes. Refused (and nothing written) if they do not parse.
  bool write_events(const void* records, size_t bytes, uint64_t count);
  bool write_note(uint64_t ts_ns, const std::string& text);
  // Writes STOP, syncs (Options::sync_on_finish) and closes. Further writes fail.
  bool finish(const std::string& stop_reason);

  const std::string& error() const { return error_; }
  uint64_t bytes_written() const;
  const std::string& path() const { return path_; }
  bool replaced_earlier_file() const { return replaced_; }

 private:
  TraceWriter(std::string path, outputs::UniqueFd fd, const Options& options);
  std::vector<uint8_t> build_chunk(ChunkType type, const std::vector<uint8_t>& body, bool compressible);
  bool append(const std::vector<uint8_t>& bytes);
  bool write_chunk(ChunkType type, const std::vector<uint8_t>& body, bool compressible);
  bool fail(const std::string& what, int err);

  std::string path_;
  outputs::UniqueFd fd_;
  Options options_;
  mutable std::mutex mu_;
  uint64_t offset_ = 0;  // end of the last complete chunk
  std::string error_;
  bool replaced_ = false;
};

}  // namespace platoon::trace
