#include "tui/trace/trace_writer.hpp"
#include "tui/trace/snapshot_codec.hpp"
#include "bpf/snapshot/clock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <zlib.h>
#include <zstd.h>

namespace platoon::trace {

namespace {

// Length of the valid records at the front of `p` and how many there are; stops at the first
// record a reader would refuse.
size_t valid_event_prefix(const uint8_t* p, size_t bytes, uint64_t* count) {
  size_t off = 0;
  *count = 0;
  while (bytes - off >= sizeof(platoon_event_header)) {
    platoon_event_header h;
    std::memcpy(&h, p + off, sizeof h);
    size_t size = event_record_size(h.type);
    if (size == 0 || bytes - off < size) break;
    off += size;
    ++*count;
  }
  return off;
}

// Loops over short writes and EINTR; returns 0 or the errno that stopped it.
int write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}

}  // namespace

TraceWriter::TraceWriter(std::string path, outputs::UniqueFd fd, const Options& options)
    : path_(std::move(path)), fd_(std::move(fd)), options_(options) {}

TraceWriter::~TraceWriter() = default;

std::unique_ptr<TraceWriter> TraceWriter::create(const std::string& path, const TraceMeta& meta,
                                                 std::string* error) {
  return create(path, meta, Options{}, error);
}

std::unique_ptr<TraceWriter> TraceWriter::create(const std::string& path, const TraceMeta& meta,
                                                 const Options& options, std::string* error) {
  auto file = outputs::OutputFile::create(path, outputs::OutputFile::Existing::replace, error);
  if (!file) return nullptr;
  return create(std::move(*file), meta, options, error);
}

std::unique_ptr<TraceWriter> TraceWriter::create(outputs::OutputFile file, const TraceMeta& meta,
                                                 const Options& options, std::string* error) {
  auto set_error = [&](const std::string& msg) {
    if (error) *error = msg;
    return nullptr;
  };
  const std::string path = file.path();
  TraceMeta m = meta;
  utsname u{};
  bool have_uname = ::uname(&u) == 0;
  if (m.hostname.empty() && have_uname) m.hostname = u.nodename;
  if (m.kernel.empty() && have_uname) m.kernel = u.release;
  if (m.ncpus == 0) {
    long n = ::sysconf(_SC_NPROCESSORS_CONF);
    m.ncpus = n > 0 ? static_cast<uint32_t>(n) : 0;
  }
  if (m.start_boottime_ns == 0 && m.start_realtime_ns == 0) {
    m.start_boottime_ns = snapshot::clock_ns(CLOCK_BOOTTIME);
    m.start_realtime_ns = snapshot::clock_ns(CLOCK_REALTIME);
  }

  std::unique_ptr<TraceWriter> w(new TraceWriter(path, file.take_fd(), options));
  // Header and META leave in one write(2), so there is no window in which a crash leaves a file
  // with a header but no metadata.
  std::vector<uint8_t> start(kTraceHeaderBytes);
  std::memcpy(start.data(), kTraceMagic, sizeof kTraceMagic);
  // zlib only: a file as 1.2 wrote it, which is what it then is.
  const uint16_t major = options.zlib ? 1 : kTraceMajorVersion, minor = options.zlib ? 2 : kTraceMinorVersion;
  start[8] = uint8_t(major);
  start[9] = uint8_t(major >> 8);
  start[10] = uint8_t(minor);
  start[11] = uint8_t(minor >> 8);
  ByteWriter body;
  encode_meta(body, m);
  std::vector<uint8_t> meta_chunk = w->build_chunk(ChunkType::meta, body.buf(), false);
  if (meta_chunk.empty()) return set_error(w->error_);
  start.insert(start.end(), meta_chunk.begin(), meta_chunk.end());
  if (!w->append(start)) return set_error(w->error_);
  // Under its name only once it is a valid trace: from here on, a crash leaves a readable file.
  if (!file.publish(error)) return nullptr;
  w->replaced_ = file.replaced();
  return w;
}

bool TraceWriter::fail(const std::string& what, int err) {
  if (error_.empty()) error_ = path_ + ": " + what + ": " + std::strerror(err);
  return false;
}

uint64_t TraceWriter::bytes_written() const {
  std::lock_guard lock(mu_);
  return offset_;
}

namespace {

struct ZstdCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

// zstd level 1: about a third of zlib level 1's CPU on event batches (the recorder shares the
// target's machine), at a similar or better size. One context per thread, reused: building one
// per chunk would cost more than compressing a small chunk.
size_t zstd_compress(std::vector<uint8_t>& z, const std::vector<uint8_t>& body) {
  static thread_local std::unique_ptr<ZSTD_CCtx, ZstdCtxFree> ctx(ZSTD_createCCtx());
  if (!ctx) return 0;
  z.resize(ZSTD_compressBound(body.size()));
  const size_t n = ZSTD_compressCCtx(ctx.get(), z.data(), z.size(), body.data(), body.size(), 1);
  return ZSTD_isError(n) ? 0 : n;
}

// zlib level 1, for a body zstd would shrink past the ratio readers accept (kMaxZlibRatio).
size_t zlib_compress(std::vector<uint8_t>& z, const std::vector<uint8_t>& body) {
  uLongf cap = compressBound(static_cast<uLong>(body.size()));
  z.resize(cap);
  return compress2(z.data(), &cap, body.data(), static_cast<uLong>(body.size()), Z_BEST_SPEED) == Z_OK ? cap : 0;
}

}  // namespace

// Frames a body as a chunk: header, encoding byte, body (compressed when asked and it pays).
// Empty (and error_ set) if the result would exceed the format's limit.
std::vector<uint8_t> TraceWriter::build_chunk(ChunkType type, const std::vector<uint8_t>& body,
                                              bool compressible) {
  std::vector<uint8_t> chunk(kChunkHeaderBytes);
  bool packed = false;
  if (compressible && options_.compress && body.size() >= 256 && body.size() <= kMaxChunkBytes) {
    std::vector<uint8_t> z;
    ChunkEncoding enc = options_.zlib ? ChunkEncoding::zlib : ChunkEncoding::zstd;
    size_t n = enc == ChunkEncoding::zstd ? zstd_compress(z, body) : 0;
    if (enc == ChunkEncoding::zstd && n * kMaxZlibRatio < body.size()) enc = ChunkEncoding::zlib;
    if (enc == ChunkEncoding::zlib) n = zlib_compress(z, body);
    if (n > 0 && n + 16 < body.size()) {
      ByteWriter pre;
      pre.u8(static_cast<uint8_t>(enc));
      pre.varint(body.size());
      chunk.insert(chunk.end(), pre.buf().begin(), pre.buf().end());
      chunk.insert(chunk.end(), z.begin(), z.begin() + static_cast<std::ptrdiff_t>(n));
      packed = true;
    }
  }
  if (!packed) {
    chunk.push_back(static_cast<uint8_t>(ChunkEncoding::stored));
    chunk.insert(chunk.end(), body.begin(), body.end());
  }
  size_t payload = chunk.size() - kChunkHeaderBytes;
  if (payload > kMaxChunkBytes || body.size() > kMaxChunkBytes) {
    if (error_.empty())
      error_ = path_ + ": a chunk of " + std::to_string(body.size()) + " bytes exceeds the format's limit";
    return {};
  }
  put_u32(chunk.data(), static_cast<uint32_t>(type));
  put_u32(chunk.data() + 4, static_cast<uint32_t>(payload));
  put_u32(chunk.data() + 8, chunk_crc(chunk.data(), chunk.data() + kChunkHeaderBytes, payload));
  return chunk;
}

// One chunk, one write(2): the file only ever ends inside the chunk being written. Caller holds
// mu_ (or owns *this alone, in create()).
bool TraceWriter::append(const std::vector<uint8_t>& bytes) {
  if (int err = write_all(fd_.get(), bytes.data(), bytes.size())) {
    // Cut the partial chunk off so the file still ends on a chunk boundary (best effort; after
    // ENOSPC the truncate frees the space, so it normally works).
    if (::ftruncate(fd_.get(), static_cast<off_t>(offset_)) == 0)
      (void)::lseek(fd_.get(), static_cast<off_t>(offset_), SEEK_SET);
    return fail("write", err);
  }
  offset_ += bytes.size();
  return true;
}

bool TraceWriter::write_chunk(ChunkType type, const std::vector<uint8_t>& body, bool compressible) {
  if (!error_.empty()) return false;
  if (!fd_) {
    error_ = path_ + ": write after finish";
    return false;
  }
  std::vector<uint8_t> chunk = build_chunk(type, body, compressible);
  return !chunk.empty() && append(chunk);
}

bool TraceWriter::write_snapshot(const snapshot::Snapshot& snapshot) {
  ByteWriter body;
  std::string why;
  std::lock_guard lock(mu_);
  if (!encode_snapshot(body, snapshot, &why)) {
    if (error_.empty()) error_ = path_ + ": " + why;
    return false;
  }
  return write_chunk(ChunkType::snapshot, body.buf(), true);
}

bool TraceWriter::write_events(const void* records, size_t bytes, uint64_t count) {
  std::lock_guard lock(mu_);
  if (!error_.empty()) return false;
  auto p = static_cast<const uint8_t*>(records);
  uint64_t parsed = 0;
  if (bytes > 0 && p == nullptr) {
    error_ = path_ + ": write_events: null records";
    return false;
  }
  if (bytes > 0 && (valid_event_prefix(p, bytes, &parsed) != bytes || parsed != count)) {
    error_ = path_ + ": write_events: records do not parse as " + std::to_string(count) +
             " platoon_ev_* records of " + std::to_string(bytes) + " bytes";
    return false;
  }
  if (bytes == 0) {
    if (count == 0) return true;
    error_ = path_ + ": write_events: a count without records";
    return false;
  }
  // Split at record boundaries into chunks of at most kEventChunkRawBytes.
  size_t off = 0;
  while (off < bytes) {
    uint64_t n = 0;
    size_t len = valid_event_prefix(p + off, std::min(bytes - off, size_t{kEventChunkRawBytes}), &n);
    ByteWriter body;
    body.varint(n);
    body.bytes(p + off, len);
    if (!write_chunk(ChunkType::events, body.buf(), true)) return false;
    off += len;
  }
  return true;
}

bool TraceWriter::write_note(uint64_t ts_ns, const std::string& text) {
  ByteWriter body;
  body.varint(ts_ns);
  body.str(text);
  std::lock_guard lock(mu_);
  return write_chunk(ChunkType::note, body.buf(), false);
}

bool TraceWriter::finish(const std::string& stop_reason) {
  ByteWriter body;
  body.str(stop_reason);
  body.varint(snapshot::clock_ns(CLOCK_BOOTTIME));
  std::lock_guard lock(mu_);
  if (!write_chunk(ChunkType::stop, body.buf(), false)) return false;
  if (options_.sync_on_finish && ::fdatasync(fd_.get()) != 0) return fail("fdatasync", errno);
  // close can report a deferred write error (NFS, quotas): a lost file must not look saved.
  if (fd_.reset() != 0) return fail("close", errno);
  return true;
}

}  // namespace platoon::trace
