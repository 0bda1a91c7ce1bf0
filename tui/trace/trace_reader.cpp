#include "tui/trace/trace_reader.hpp"
#include "tui/outputs/output_file.hpp"  // UniqueFd
#include "tui/trace/snapshot_codec.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include <zlib.h>
#include <zstd.h>

namespace platoon::trace {
namespace {

// Where the bytes come from: a span (fuzzer, tests) or a file read chunk by chunk, so that a
// long recording is never read into memory whole.
class Input {
 public:
  virtual ~Input() = default;
  virtual uint64_t size() const = 0;
  // n bytes at off (off + n <= size()), possibly copied into scratch; empty + *err on failure.
  virtual std::span<const uint8_t> get(uint64_t off, size_t n, std::vector<uint8_t>& scratch,
                                       std::string* err) = 0;
};

class SpanInput : public Input {
 public:
  explicit SpanInput(std::span<const uint8_t> b) : b_(b) {}
  uint64_t size() const override { return b_.size(); }
  std::span<const uint8_t> get(uint64_t off, size_t n, std::vector<uint8_t>&, std::string*) override {
    return b_.subspan(static_cast<size_t>(off), n);
  }

 private:
  std::span<const uint8_t> b_;
};

class FileInput : public Input {
 public:
  FileInput(outputs::UniqueFd fd, uint64_t size) : fd_(std::move(fd)), size_(size) {}
  uint64_t size() const override { return size_; }
  std::span<const uint8_t> get(uint64_t off, size_t n, std::vector<uint8_t>& scratch,
                               std::string* err) override {
    scratch.resize(n);
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_.get(), scratch.data() + done, n - done, static_cast<off_t>(off + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {  // 0: the file shrank under us
        *err = r < 0 ? std::string("read error: ") + std::strerror(errno) : "file shrank while reading";
        return {};
      }
      done += static_cast<size_t>(r);
    }
    return scratch;
  }

 private:
  outputs::UniqueFd fd_;
  uint64_t size_;
};

uint32_t get_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

struct Chunk {
  ChunkType type{};
  std::span<const uint8_t> body;  // decoded (decompressed) body
  uint64_t next = 0;              // offset of the following chunk
};

// Reads and checks the chunk at `off`. nullopt + *why if it is incomplete or corrupt.
std::optional<Chunk> next_chunk(Input& in, uint64_t off, bool verify_crc, std::vector<uint8_t>& raw,
                                std::vector<uint8_t>& inflated, std::string* why) {
  uint64_t left = in.size() - off;
  if (left < kChunkHeaderBytes) return *why = "incomplete chunk header", std::nullopt;
  std::vector<uint8_t> hscratch;
  auto h = in.get(off, kChunkHeaderBytes, hscratch, why);
  if (h.empty()) return std::nullopt;
  uint8_t head[kChunkHeaderBytes];
  std::copy(h.begin(), h.end(), head);
  uint32_t length = get_u32(head + 4);
  if (length > kMaxChunkBytes) return *why = "chunk length over the format's limit", std::nullopt;
  if (length > left - kChunkHeaderBytes) return *why = "incomplete chunk", std::nullopt;
  if (length == 0) return *why = "empty chunk payload", std::nullopt;
  auto payload = in.get(off + kChunkHeaderBytes, length, raw, why);
  if (payload.empty()) return std::nullopt;
  if (verify_crc && chunk_crc(head, payload.data(), payload.size()) != get_u32(head + 8))
    return *why = "checksum mismatch", std::nullopt;

  Chunk c;
  c.type = static_cast<ChunkType>(get_u32(head));
  c.next = off + kChunkHeaderBytes + length;
  ByteReader r(payload);
  uint8_t encoding = r.u8();
  if (encoding == static_cast<uint8_t>(ChunkEncoding::stored)) {
    c.body = r.rest();
  } else if (encoding == static_cast<uint8_t>(ChunkEncoding::zlib) ||
             encoding == static_cast<uint8_t>(ChunkEncoding::zstd)) {
    uint64_t raw_len = r.varint();
    auto z = r.rest();
    // Bound the allocation by what the compressed bytes could possibly expand to.
    if (!r.ok() || raw_len == 0 || raw_len > kMaxChunkBytes || raw_len > z.size() * kMaxZlibRatio)
      return *why = "bad compressed length", std::nullopt;
    inflated.resize(static_cast<size_t>(raw_len));
    bool whole;
    if (encoding == static_cast<uint8_t>(ChunkEncoding::zlib)) {
      uLongf out = static_cast<uLongf>(raw_len);
      whole = uncompress(inflated.data(), &out, z.data(), static_cast<uLong>(z.size())) == Z_OK && out == raw_len;
    } else {
      const size_t out = ZSTD_decompress(inflated.data(), inflated.size(), z.data(), z.size());
      whole = !ZSTD_isError(out) && out == raw_len;
    }
    if (!whole) return *why = "bad compressed data", std::nullopt;
    c.body = inflated;
  } else {
    return *why = "unknown chunk encoding " + std::to_string(encoding), std::nullopt;
  }
  return c;
}

// Validates an EVTS body whole before delivering anything from it.
bool take_events(std::span<const uint8_t> body, const ReadOptions& options, TraceContents& out) {
  ByteReader r(body);
  uint64_t count = r.varint();
  auto records = r.rest();
  if (!r.ok()) return false;
  uint64_t seen = 0;
  size_t used = 0;
  bool valid = for_each_event(records, [&](const platoon_event_header&, const void*, size_t size) {
    ++seen;
    used += size;
  });
  if (!valid || used != records.size() || seen != count) return false;
  if (options.on_event)
    for_each_event(records, options.on_event);
  else if (options.max_event_bytes && records.size() > options.max_event_bytes - std::min<uint64_t>(options.max_event_bytes, out.events.size()))
    out.cut_events += count;
  else
    out.events.insert(out.events.end(), records.begin(), records.end());
  out.event_count += count;
  return true;
}

// Applies one data chunk to `out`; false if its body does not decode.
bool take_chunk(const Chunk& c, const ReadOptions& options, TraceContents& out, uint64_t& kept_snapshot_bytes) {
  ByteReader r(c.body);
  switch (c.type) {
    case ChunkType::snapshot: {
      snapshot::Snapshot s;
      if (!decode_snapshot(r, s, out)) return false;
      ++out.snapshot_count;
      const uint64_t bytes = options.max_snapshot_bytes ? snapshot_bytes(s) : 0;
      if (options.on_snapshot) {
        options.on_snapshot(std::move(s));
      } else if (options.max_snapshot_bytes && (out.cut_snapshots || bytes > options.max_snapshot_bytes - kept_snapshot_bytes)) {
        ++out.cut_snapshots;  // keep a prefix: a gap in the middle would fake one long interval
      } else {
        kept_snapshot_bytes += bytes;
        out.snapshots.push_back(std::move(s));
      }
      return true;
    }
    case ChunkType::events:
      return take_events(c.body, options, out);
    case ChunkType::note: {
      TraceNote n;
      n.ts_ns = r.varint();
      n.text = r.str();
      if (!r.ok()) return false;
      out.notes.push_back(std::move(n));
      return true;
    }
    case ChunkType::stop:
      out.stop_reason = r.str();
      out.end_boottime_ns = r.varint();
      out.complete = r.ok();
      return r.ok();
    case ChunkType::meta:
      return false;  // only once, first
  }
  ++out.skipped_chunks;  // a chunk type from a newer minor version
  return true;
}

// The header and META chunk: the contents' metadata and the offset of the first data chunk,
// or nullopt with the reason.
std::optional<uint64_t> read_head(Input& in, bool verify_crc, TraceContents& out, std::string* error) {
  auto fail = [&](const std::string& msg) -> std::optional<uint64_t> {
    if (error) *error = msg;
    return std::nullopt;
  };
  std::vector<uint8_t> scratch, raw, inflated;
  std::string why;
  const uint64_t size = in.size();
  if (size < sizeof kTraceMagic) return fail("not a platoon trace");
  auto head = in.get(0, std::min<uint64_t>(size, kTraceHeaderBytes), scratch, &why);
  if (head.empty()) return fail(why);
  if (!std::equal(std::begin(kTraceMagic), std::end(kTraceMagic), head.begin()))
    return fail("not a platoon trace");
  if (size < kTraceHeaderBytes) return fail("truncated trace header");
  out.meta.version = uint32_t(head[8]) | uint32_t(head[9]) << 8;
  out.meta.minor_version = uint32_t(head[10]) | uint32_t(head[11]) << 8;
  if (out.meta.version < kTraceOldestMajorVersion || out.meta.version > kTraceMajorVersion)
    return fail("unsupported trace version " + std::to_string(out.meta.version) + " (this platoon reads " +
                std::to_string(kTraceOldestMajorVersion) + " to " + std::to_string(kTraceMajorVersion) + ")");
  auto meta = next_chunk(in, kTraceHeaderBytes, verify_crc, raw, inflated, &why);
  if (meta && meta->type != ChunkType::meta) why = "first chunk is not META";
  if (meta && meta->type == ChunkType::meta) {
    ByteReader r(meta->body);
    if (!decode_meta(r, out.meta)) why = "malformed META chunk";
  }
  if (!why.empty()) return fail("trace metadata missing or corrupt (" + why + " at byte 16)");
  return meta->next;
}

}  // namespace

// What a cursor holds between chunks.
struct TraceCursor::State {
  std::unique_ptr<Input> in;
  ReadOptions options;
  TraceContents out;
  uint64_t off = 0;
  uint64_t kept_snapshot_bytes = 0;
  bool done = false;
  std::vector<uint8_t> raw, inflated;
};

TraceCursor::TraceCursor(std::unique_ptr<State> st) : st_(std::move(st)) {}
TraceCursor::~TraceCursor() = default;

bool TraceCursor::next() {
  State& st = *st_;
  if (st.done || st.off >= st.in->size()) return !(st.done = true);
  std::string why;
  auto c = next_chunk(*st.in, st.off, st.options.verify_crc, st.raw, st.inflated, &why);
  if (c && !take_chunk(*c, st.options, st.out, st.kept_snapshot_bytes)) why = "malformed chunk";
  if (!why.empty()) {
    st.out.truncated = true;
    st.out.truncated_at = st.off;
    st.out.truncated_reason = why;
    return !(st.done = true);
  }
  st.off = c->next;
  if (st.out.complete) st.done = true;  // STOP is the last chunk; anything after it is not ours
  return true;
}

const TraceContents& TraceCursor::contents() const { return st_->out; }
TraceContents TraceCursor::take_contents() { return std::move(st_->out); }

namespace {

std::unique_ptr<TraceCursor::State> start(std::unique_ptr<Input> in, const ReadOptions& options, std::string* error) {
  auto st = std::make_unique<TraceCursor::State>();
  st->options = options;
  auto first = read_head(*in, options.verify_crc, st->out, error);
  if (!first) return nullptr;
  st->off = *first;
  st->in = std::move(in);
  return st;
}

std::optional<TraceContents> read_all(std::unique_ptr<TraceCursor> c) {
  while (c->next()) {
  }
  return c->take_contents();
}

}  // namespace

uint64_t snapshot_bytes(const snapshot::Snapshot& s) {
  uint64_t n = sizeof(snapshot::Snapshot) + s.threads.capacity() * sizeof(snapshot::ThreadSample) +
               s.pairs.capacity() * sizeof(snapshot::PairSample) + s.lost_events_per_cpu.capacity() * sizeof(uint64_t);
  for (const auto& t : s.threads) n += t.cpu_switch_ins.capacity() * sizeof(uint64_t) + t.comm.capacity();
  for (const auto& p : s.pairs) n += p.other_comm.capacity();
  return n;
}

std::string TraceContents::cap_note() const {
  std::string parts;
  auto add = [&](uint64_t n, const char* what) {
    if (n == 0) return;
    parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(cut_threads, "threads");
  add(cut_pairs, "pairs");
  add(cut_cpu_slots, "per-CPU counters");
  add(cut_snapshots, "snapshots");
  add(cut_events, "events");
  if (parts.empty()) return {};
  return "the reader's memory caps (docs/trace-format.md, \"Reader caps\") dropped " + parts +
         ": figures that depend on them are incomplete";
}

bool for_each_event(std::span<const uint8_t> records, const EventFn& fn) {
  size_t off = 0;
  while (off < records.size()) {
    platoon_event_header h;
    if (records.size() - off < sizeof h) return false;
    std::memcpy(&h, records.data() + off, sizeof h);
    size_t size = event_record_size(h.type);
    if (size == 0 || records.size() - off < size) return false;
    fn(h, records.data() + off, size);
    off += size;
  }
  return true;
}

std::unique_ptr<TraceCursor> TraceCursor::open(const std::string& path, std::string* error, const ReadOptions& options) {
  auto fail = [&](const std::string& msg) -> std::unique_ptr<TraceCursor> {
    if (error) *error = path + ": " + msg;
    return nullptr;
  };
  outputs::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  std::string why;
  auto state = start(std::make_unique<FileInput>(std::move(fd), static_cast<uint64_t>(st.st_size)), options, &why);
  if (!state) return fail(why);
  return std::unique_ptr<TraceCursor>(new TraceCursor(std::move(state)));
}

std::optional<TraceContents> read_trace_bytes(std::span<const uint8_t> bytes, std::string* error,
                                              const ReadOptions& options) {
  auto state = start(std::make_unique<SpanInput>(bytes), options, error);
  if (!state) return std::nullopt;
  return read_all(std::unique_ptr<TraceCursor>(new TraceCursor(std::move(state))));
}

std::optional<TraceContents> read_trace(const std::string& path, std::string* error,
                                        const ReadOptions& options) {
  auto c = TraceCursor::open(path, error, options);
  if (!c) return std::nullopt;
  return read_all(std::move(c));
}

}  // namespace platoon::trace
